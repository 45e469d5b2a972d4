//! `/api-keys` (scope `settings:manage`): the organization's API keys, made and revoked
//! through the API (the spec's "Settings"). Served by the `settings` function
//! (`settings.rs`). The operator CLI still makes an organization's first key.

use crate::admin;
use crate::app::{handler, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::names;
use crate::domain::time::Timestamp;
use crate::error::{ApiError, Failure};
use crate::http::doc::{NO_QUERY, PAGE};
use crate::http::render::to_json;
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Credential, Doc, Paging, Route};
use crate::store::items::KeyItem;
use crate::store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/api-keys",
            Scope::SettingsManage,
            Doc::new(
                "List the organization's live API keys, oldest first (never their secrets)",
                PAGE,
                None,
                200,
                Body::List("ApiKey"),
            ),
        ),
        handler!(list),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/api-keys",
            Scope::SettingsManage,
            Doc::new(
                "Create an API key, shown once in `key`; it may hold only scopes the calling key holds",
                NO_QUERY,
                Some(request::<NewKey>),
                201,
                Body::Single("ApiKeyCreated"),
            ),
        ),
        handler!(create),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/api-keys/{id}",
            Scope::SettingsManage,
            Doc::delete(
                "Revoke an API key other than the calling one: refused at once by this function, everywhere within 60 s",
            ),
        ),
        handler!(revoke),
    ),
];

/// Most live keys one organization may have.
pub const MAX_KEYS: usize = 100;

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] =
    &[schema::answer::<KeyView>, schema::answer::<ApiKeyCreated>];

/// An API key as served; `key` (the secret) only in the answer that created it.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ApiKey")]
struct KeyView<'a> {
    id: &'a str,
    name: &'a str,
    #[schemars(schema_with = "scope_list")]
    scopes: Vec<&'a str>,
    created_at: Timestamp,
    /// To the hour; null until first used
    last_used_at: Option<Timestamp>,
    /// The key, shown only in the answer that created it (null in an idempotent replay of
    /// that answer: no credential is kept)
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "secret")]
    key: Option<Credential<'a>>,
}

schema::requiring!(
    /// An API key just created, with its secret `key` (shown only here).
    ApiKeyCreated = KeyView<'static>, ["key"]
);

fn scope_list(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "array", "items": {"$ref": "#/components/schemas/Scope"}})
}

fn secret(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    // issued keys have 46-character secrets; keys issued before tags, 40
    schemars::json_schema!({"type": ["string", "null"], "pattern": "^cat_[a-z0-9]{12}_[A-Za-z0-9]{40}(?:[A-Za-z0-9]{6})?$"})
}

/// The body of POST /api-keys.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ApiKeyCreate")]
struct NewKey {
    #[schemars(schema_with = "schema::name")]
    name: String,
    #[schemars(schema_with = "scopes")]
    scopes: Vec<Value>,
}

/// One scope or more.
fn scopes(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/Scope"}})
}

fn render(k: &KeyItem) -> Value {
    to_json(&KeyView {
        id: &k.key_id,
        name: &k.name,
        scopes: k.scopes.iter().map(|s| s.as_str()).collect(),
        created_at: k.created_at,
        last_used_at: k.last_used_at,
        key: None,
    })
}

async fn live_keys(app: &App, org: &str) -> Result<Vec<KeyItem>, StoreError> {
    let mut keys: Vec<KeyItem> = app
        .store
        .list_keys(org)
        .await?
        .into_iter()
        .filter(|k| !k.revoked)
        .collect();
    keys.sort_by(|a, b| (a.created_at, &a.key_id).cmp(&(b.created_at, &b.key_id)));
    Ok(keys)
}

/// GET /api-keys.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let query = &call.query;
    let paging = Paging::from_query(query)?;
    Ok(paging.envelope(&live_keys(app, call.org()).await?, render))
}

/// The requested scopes: known, at least one, each at most once, and each held by the caller.
fn scopes_field(raw: &[Value], held: &[Scope]) -> Result<Vec<Scope>, ApiError> {
    let mut scopes = Vec::new();
    for v in raw {
        let scope = v.as_str().and_then(Scope::parse).ok_or_else(|| {
            ApiError::bad_request(format!(
                "field 'scopes': {v} is not one of catalog:read, catalog:write, settings:manage"
            ))
        })?;
        if !held.contains(&scope) {
            return Err(ApiError::forbidden(format!(
                "this API key cannot grant the '{}' scope: it does not hold it",
                scope.as_str()
            )));
        }
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    if scopes.is_empty() {
        return Err(ApiError::bad_request(
            "field 'scopes' must name at least one scope",
        ));
    }
    Ok(scopes)
}

/// POST /api-keys: 201 with the key in `key`, shown this once.
async fn create(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: NewKey = call.body(app)?;
    let name = body.name.as_str();
    names::validate("name", name)?;
    let scopes = scopes_field(&body.scopes, &call.principal.scopes)?;
    // counted atomically with the create (`api/quotas.rs`)
    let count = || async { Ok(live_keys(app, call.org()).await?.len()) };
    let scopes = &scopes;
    let create = |claim| async move {
        admin::create_key_within(&app.store, call.org(), (name, scopes), Some(&claim)).await
    };
    let quota = (MAX_KEYS, "live API keys");
    let created = crate::usecases::quotas::create_within(
        app,
        (call.org(), "api-keys"),
        quota,
        count,
        create,
        Failure::from,
    )
    .await?;
    let view = KeyView {
        id: &created.key_id,
        name,
        scopes: created.scopes.iter().map(|s| s.as_str()).collect(),
        created_at: created.created_at,
        last_used_at: None,
        key: Some(Credential(&created.plain)),
    };
    Ok(ApiResponse::shown(201, &view))
}

/// DELETE /api-keys/{id}: revokes a live key of the organization; a key cannot revoke itself.
async fn revoke(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.params[0].as_str();
    if id == call.principal.key_id {
        return Err(ApiError::bad_request(
            "an API key cannot revoke itself; use another key with settings:manage",
        ));
    }
    let not_found = || ApiError::not_found(format!("API key '{id}' not found"));
    // Key ids start with their organization's id: another organization's id is not found.
    let ours = id.len() == 12
        && id.starts_with(call.org())
        && id.bytes().all(|b| b.is_ascii_alphanumeric());
    if !ours || !app.store.revoke_live_key(call.org(), id).await? {
        return Err(not_found());
    }
    app.auth.forget(id);
    Ok(ApiResponse::single(200, crate::http::render::deleted(id)))
}
