//! The `settings` function: families, channels, languages and completeness profiles (what
//! attribute values are validated and measured against), and beside them the
//! organization's own settings (`organization.rs`), API keys (`api_keys.rs`) and usage
//! (`usage.rs`): the workspace Settings.

use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::attributes::{is_valid_key, TargetEntity};
use crate::domain::names;
use crate::domain::values::is_language_tag;
use crate::error::{ApiError, Failure};
use crate::http::body::present;
use crate::http::doc::{NO_QUERY, PAGE};
use crate::http::render::to_json;
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Doc, Paging, Route};
use crate::store::settings::{
    Channel, CompletenessProfile, Family, Language, Scopes, WriteContext,
};
use crate::usecases::settings;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod organization;
mod profiles;

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] = &[
    schema::answer::<organization::SettingsView>,
    schema::answer::<profiles::ProfileView>,
    schema::answer::<Family>,
    schema::answer::<Language>,
    schema::answer::<Channel>,
];

use profiles::{create_profile, get_profile, list_profiles, NewProfile};

const SETTINGS_ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/families",
            Scope::CatalogRead,
            Doc::new("List families", PAGE, None, 200, Body::List("Family")),
        ),
        handler!(list_families),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/families",
            Scope::CatalogWrite,
            Doc::new(
                "Create a family",
                NO_QUERY,
                Some(request::<NewFamily>),
                201,
                Body::Single("Family"),
            ),
        ),
        handler!(create_family),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/families/{id}",
            Scope::CatalogRead,
            Doc::new("Get a family", NO_QUERY, None, 200, Body::Single("Family")),
        ),
        handler!(get_family),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/channels",
            Scope::CatalogRead,
            Doc::new("List channels", PAGE, None, 200, Body::List("Channel")),
        ),
        handler!(list_channels),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/channels",
            Scope::CatalogWrite,
            Doc::new(
                "Create a channel",
                NO_QUERY,
                Some(request::<NewChannel>),
                201,
                Body::Single("Channel"),
            ),
        ),
        handler!(create_channel),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/languages",
            Scope::CatalogRead,
            Doc::new("List languages", PAGE, None, 200, Body::List("Language")),
        ),
        handler!(list_languages),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/languages",
            Scope::CatalogWrite,
            Doc::new(
                "Create a language",
                NO_QUERY,
                Some(request::<NewLanguage>),
                201,
                Body::Single("Language"),
            ),
        ),
        handler!(create_language),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/completeness-profiles",
            Scope::CatalogRead,
            Doc::new(
                "List completeness profiles",
                PAGE,
                None,
                200,
                Body::List("CompletenessProfile"),
            ),
        ),
        handler!(list_profiles),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/completeness-profiles",
            Scope::CatalogWrite,
            Doc::new(
                "Create a completeness profile",
                NO_QUERY,
                Some(request::<NewProfile>),
                201,
                Body::Single("CompletenessProfile"),
            ),
        ),
        handler!(create_profile),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/completeness-profiles/{identifier}",
            Scope::CatalogRead,
            Doc::new(
                "Get a completeness profile",
                NO_QUERY,
                None,
                200,
                Body::Single("CompletenessProfile"),
            ),
        ),
        handler!(get_profile),
    ),
];

/// The organization's keys and usage, beside its settings.
const KEYS_AND_USAGE: &[Endpoint] = &crate::app::concat::<
    Endpoint,
    { super::api_keys::ENDPOINTS.len() + super::usage::ENDPOINTS.len() },
>(super::api_keys::ENDPOINTS, super::usage::ENDPOINTS);

/// The organization's own settings, keys and usage.
const ACCOUNT_ENDPOINTS: &[Endpoint] = &crate::app::concat::<
    Endpoint,
    { organization::ENDPOINTS.len() + KEYS_AND_USAGE.len() },
>(organization::ENDPOINTS, KEYS_AND_USAGE);

const ENDPOINTS: &[Endpoint] = &crate::app::concat::<
    Endpoint,
    { SETTINGS_ENDPOINTS.len() + ACCOUNT_ENDPOINTS.len() },
>(SETTINGS_ENDPOINTS, ACCOUNT_ENDPOINTS);

pub const API: Api = Api {
    function: "settings",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::NONE,
};

/// GET /channels.
async fn list_channels(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    list_scopes(app, call, |s| s.channels.iter().map(json).collect()).await
}

/// GET /languages.
async fn list_languages(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    list_scopes(app, call, |s| s.languages.iter().map(json).collect()).await
}

fn json<T: serde::Serialize>(v: &T) -> Value {
    to_json(v)
}

/// Most languages or channels one organization may have.
const MAX_SCOPES: usize = 200;

/// A language or a channel: what adding one to its list needs to know.
trait ScopeEntry: Clone + serde::Serialize {
    /// "language" or "channel".
    const WHAT: &'static str;
    /// The code or identifier, the list's sort key.
    fn key(&self) -> &str;
    /// Whether `other` names the same entry (language codes ignore case).
    fn same(&self, other: &Self) -> bool;
    fn default_flag(&mut self) -> &mut bool;
}

impl ScopeEntry for Language {
    const WHAT: &'static str = "language";
    fn key(&self) -> &str {
        &self.code
    }
    fn same(&self, other: &Self) -> bool {
        self.code.eq_ignore_ascii_case(&other.code)
    }
    fn default_flag(&mut self) -> &mut bool {
        &mut self.is_default
    }
}

impl ScopeEntry for Channel {
    const WHAT: &'static str = "channel";
    fn key(&self) -> &str {
        &self.identifier
    }
    fn same(&self, other: &Self) -> bool {
        self.identifier == other.identifier
    }
    fn default_flag(&mut self) -> &mut bool {
        &mut self.is_default
    }
}

/// Adds `entry` to its list: 409 when it exists, 400 past [`MAX_SCOPES`]. The first entry,
/// or one marked default, becomes the one default. The list stays sorted by key.
fn add_scope<T: ScopeEntry>(list: &mut Vec<T>, mut entry: T) -> Result<Value, Failure> {
    let what = T::WHAT;
    if list.iter().any(|e| e.same(&entry)) {
        return Err(Failure::conflict(format!(
            "{what} '{}' already exists",
            entry.key()
        )));
    }
    if list.len() >= MAX_SCOPES {
        return Err(Failure::invalid(format!(
            "a workspace has at most {MAX_SCOPES} {what}s"
        )));
    }
    if *entry.default_flag() {
        list.iter_mut().for_each(|e| *e.default_flag() = false);
    }
    *entry.default_flag() |= list.is_empty();
    list.push(entry.clone());
    list.sort_by(|a, b| a.key().cmp(b.key()));
    Ok(json(&entry))
}

/// POST /families: 201 with the new integer `id`.
async fn create_family(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: NewFamily = call.body(app)?;
    names::validate("name", &body.name)?;
    let name = body.name;
    let keys = attribute_keys(body.attributes.as_deref(), "attributes", ALL_ENTITIES)?;
    if !keys.is_empty() {
        let wanted: Vec<_> = keys.iter().map(|(e, k, _)| (*e, k.clone())).collect();
        let ctx = app.store.write_context(call.org(), &wanted, &[]).await?;
        if let Some((_, _, key)) = keys.iter().find(|(e, k, _)| !defined(&ctx, *e, k)) {
            return Err(missing_attribute("attributes", key));
        }
    }
    let attributes: Vec<String> = keys.into_iter().map(|(_, _, key)| key).collect();
    let quota = (
        crate::usecases::quotas::Counted::Families,
        crate::usecases::quotas::MAX_FAMILIES,
        "families",
    );
    let create = |claim| {
        let attributes = attributes.clone();
        let name = &name;
        async move {
            app.store
                .create_family(call.org(), name, attributes, call.guard(), Some(&claim))
                .await
        }
    };
    let family =
        crate::usecases::quotas::create_counted(app, call.org(), quota, create, Failure::from)
            .await?;
    Ok(ApiResponse::single(201, json(&family)))
}

const ALL_ENTITIES: &[TargetEntity] = &[
    TargetEntity::Product,
    TargetEntity::Variant,
    TargetEntity::Sku,
    TargetEntity::Bundle,
];
const TREE_ENTITIES: &[TargetEntity] = &[
    TargetEntity::Product,
    TargetEntity::Variant,
    TargetEntity::Sku,
];

/// A body array of distinct attribute keys `<entity>.<key>` with `entity` one of
/// `entities`: (entity, key, qualified key) each.
fn attribute_keys(
    list: Option<&[Value]>,
    field: &str,
    entities: &[TargetEntity],
) -> Result<Vec<(TargetEntity, String, String)>, ApiError> {
    let mut out: Vec<(TargetEntity, String, String)> = Vec::new();
    for v in list.unwrap_or_default() {
        let key = v.as_str().unwrap_or_default();
        let parsed = key
            .split_once('.')
            .and_then(|(e, k)| Some((TargetEntity::parse(e)?, k)))
            .filter(|(e, k)| entities.contains(e) && is_valid_key(k));
        let Some((entity, k)) = parsed else {
            let names: Vec<&str> = entities.iter().map(|e| e.as_str()).collect();
            return Err(ApiError::bad_request(format!(
                "field '{field}': {v} is not an attribute key like 'product.color' (entity one of {})",
                names.join(", ")
            )));
        };
        if out.iter().any(|(_, _, a)| a == key) {
            return Err(ApiError::bad_request(format!(
                "field '{field}': '{key}' is given twice"
            )));
        }
        out.push((entity, k.to_string(), key.to_string()));
    }
    Ok(out)
}

fn defined(ctx: &WriteContext, entity: TargetEntity, key: &str) -> bool {
    ctx.defs.get(&entity).is_some_and(|d| d.contains_key(key))
}

fn missing_attribute(field: &str, key: &str) -> ApiError {
    ApiError::bad_request(format!("field '{field}': attribute '{key}' does not exist"))
}

async fn get_family(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let raw = call.route.params[0].as_str();
    let not_found = || ApiError::not_found(format!("family '{raw}' not found"));
    let id: i64 = raw.parse().ok().filter(|n| *n > 0).ok_or_else(not_found)?;
    let family: Family = app
        .store
        .get_family(call.org(), id)
        .await?
        .ok_or_else(not_found)?;
    Ok(ApiResponse::single(200, json(&family)))
}

async fn list_families(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let paging = Paging::from_query(&call.query)?;
    let families = app.store.list_families(call.org()).await?;
    Ok(paging.envelope(&families, json))
}

async fn list_scopes(
    app: &App,
    call: &Call,
    pick: impl Fn(&Scopes) -> Vec<Value>,
) -> Result<ApiResponse, ApiError> {
    let paging = Paging::from_query(&call.query)?;
    let scopes = app.store.get_scopes(call.org()).await?;
    Ok(paging.envelope(&pick(&scopes), Value::clone))
}

/// Applies `change` to the organization's scopes (`usecases::settings::update_scopes`):
/// 201 with what it made.
async fn update_scopes(
    app: &App,
    call: &Call,
    change: impl Fn(&mut Scopes) -> Result<Value, Failure>,
) -> Result<ApiResponse, ApiError> {
    let created = settings::update_scopes(&call.writer(app), change).await?;
    Ok(ApiResponse::single(201, created))
}

/// The body of POST /families.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "FamilyCreate")]
struct NewFamily {
    #[schemars(schema_with = "schema::name")]
    name: String,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "family_keys")]
    attributes: Option<Vec<Value>>,
}

fn family_keys(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schema::qualified_keys(ALL_ENTITIES)
}

/// The body of POST /languages.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "LanguageCreate")]
struct NewLanguage {
    #[schemars(schema_with = "schema::language_tag")]
    code: String,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::name")]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    is_default: Option<bool>,
}

/// The body of POST /channels.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "ChannelCreate")]
struct NewChannel {
    #[schemars(schema_with = "schema::an_identifier")]
    identifier: String,
    #[schemars(schema_with = "schema::name")]
    name: String,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::language_tags")]
    locales: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    is_default: Option<bool>,
}

/// POST /languages {code, name?, isDefault?}: the first language is the default until
/// another is created with `isDefault: true`.
async fn create_language(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: NewLanguage = call.body(app)?;
    let code = body.code;
    if !is_language_tag(&code) {
        return Err(ApiError::bad_request(format!(
            "field 'code': '{code}' is not a BCP 47 language tag"
        )));
    }
    if let Some(n) = &body.name {
        names::validate("name", n)?;
    }
    let name = body.name.unwrap_or_else(|| code.clone());
    let is_default = body.is_default.unwrap_or(false);
    update_scopes(app, call, |scopes| {
        let language = Language {
            code: code.clone(),
            name: name.clone(),
            is_default,
        };
        add_scope(&mut scopes.languages, language)
    })
    .await
}

/// POST /channels {identifier, name, locales?, isDefault?}: the first channel is the
/// default until another is created with `isDefault: true`.
async fn create_channel(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: NewChannel = call.body(app)?;
    let identifier = body.identifier;
    crate::domain::identifier::validate("identifier", &identifier)?;
    names::validate("name", &body.name)?;
    let name = body.name;
    let mut locales = Vec::new();
    for v in body.locales.unwrap_or_default() {
        match v.as_str() {
            Some(l) if is_language_tag(l) => locales.push(l.to_string()),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "field 'locales': {v} is not a BCP 47 language tag"
                )))
            }
        }
    }
    let is_default = body.is_default.unwrap_or(false);
    update_scopes(app, call, |scopes| {
        let codes = scopes.language_codes();
        if let Some(l) = locales.iter().find(|l| !codes.contains(l)) {
            return Err(Failure::invalid(format!(
                "field 'locales': language '{l}' does not exist"
            )));
        }
        let channel = Channel {
            identifier: identifier.clone(),
            name: name.clone(),
            locales: locales.clone(),
            is_default,
        };
        add_scope(&mut scopes.channels, channel)
    })
    .await
}
