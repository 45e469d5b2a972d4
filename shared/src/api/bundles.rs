//! `/bundles` routes: a bundle sells SKUs together (`items: [{sku, quantity}]`) and carries
//! attributes of target entity `bundle`. Each SKU's identity item lists the bundles that hold
//! it (`bundles` set, written in the bundle's own transaction), so a SKU in a bundle cannot
//! be deleted and a bundle never points at a deleted SKU.

use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::attributes::TargetEntity;
use crate::domain::identifier;
use crate::domain::names;
use crate::domain::time::Timestamp;
use crate::domain::values::{self, ScopeRules};
use crate::error::ApiError;
use crate::http::body::present;
use crate::http::doc::{NO_QUERY, PAGE};
use crate::http::render::{to_json, Attributes};
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::store::resources::{BundleLine, ResourceItem, Shelf};
use crate::store::settings::WriteContext;
use crate::usecases::bundles::{delete_bundle, put_bundle, BundleInput};
use crate::usecases::etags;
use crate::usecases::references;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/bundles",
            Scope::CatalogRead,
            Doc::new("List bundles", PAGE, None, 200, Body::List("Bundle")),
        ),
        handler!(list),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/bundles/{identifier}",
            Scope::CatalogRead,
            Doc::new("Get a bundle", NO_QUERY, None, 200, Body::Single("Bundle")),
        ),
        handler!(get),
    ),
    Endpoint::new(
        Route::new(
            "PUT",
            "/bundles/{identifier}",
            Scope::CatalogWrite,
            Doc::new(
                "Create (201) or replace (200) a bundle",
                NO_QUERY,
                Some(request::<BundleFields>),
                200,
                Body::Single("Bundle"),
            )
            .creates(),
        ),
        handler!(put),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/bundles/{identifier}",
            Scope::CatalogWrite,
            Doc::delete("Delete a bundle"),
        ),
        handler!(delete),
    ),
];

pub const API: Api = Api {
    function: "bundles",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::NONE,
};

/// Most lines in one bundle: a write that replaces every line (the bundle, 40 additions and
/// 40 removals) stays inside one transaction.
pub const MAX_ITEMS: usize = 40;
pub const MAX_QUANTITY: u64 = 1_000_000;

/// A bundle as served.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Bundle")]
struct BundleView<'a> {
    identifier: &'a str,
    name: &'a str,
    attributes: Attributes<'a>,
    items: Vec<LineView<'a>>,
    self_updated_at: Timestamp,
    /// Its own or its SKUs' latest change
    updated_at: Timestamp,
}

/// One line of a bundle, as a bundle shows it and a PUT gives it.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "BundleLine")]
struct LineView<'a> {
    #[schemars(schema_with = "schema::an_identifier")]
    sku: &'a str,
    #[schemars(range(min = 1, max = MAX_QUANTITY))]
    quantity: u32,
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] = &[schema::answer::<BundleView>];

/// A bundle as served.
pub fn render(b: &ResourceItem) -> Value {
    to_json(BundleView {
        identifier: &b.id,
        name: &b.name,
        attributes: Attributes::all("bundle", &b.values),
        items: b
            .items
            .iter()
            .map(|l| LineView {
                sku: &l.sku,
                quantity: l.quantity,
            })
            .collect(),
        self_updated_at: b.self_updated_at,
        updated_at: b.updated_at,
    })
}

/// GET /bundles: the bundles index brought up to date, then the page's items.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    super::shelf_pages::list(app, call, Shelf::BUNDLES, render).await
}

async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "bundle")?;
    let b = app
        .store
        .get_resource(call.org(), Shelf::BUNDLES, id)
        .await?
        .ok_or_else(|| ApiError::entity_not_found("bundle", id))?;
    Ok(ApiResponse::single(200, render(&b)).with_etag(etags::resource(&b)))
}

/// The body of PUT /bundles/{identifier}.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "BundlePut", transform = schema::Required(&["items"]))]
struct BundleFields {
    #[schemars(schema_with = "schema::name")]
    name: String,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::values")]
    values: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "lines")]
    items: Option<Vec<Value>>,
}

/// The schema of `items`: bundle lines as a bundle shows them.
fn lines(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "array", "minItems": 1, "maxItems": MAX_ITEMS, "items": {"$ref": "#/components/schemas/BundleLine"}})
}

/// The `items` of a PUT body: 1 to `MAX_ITEMS` lines with distinct SKUs.
fn parse_items(list: Option<&[Value]>) -> Result<Vec<BundleLine>, ApiError> {
    let list = list.ok_or_else(|| ApiError::bad_request("field 'items' is required"))?;
    if list.is_empty() || list.len() > MAX_ITEMS {
        return Err(ApiError::bad_request(format!(
            "field 'items' must hold 1 to {MAX_ITEMS} lines"
        )));
    }
    let mut lines: Vec<BundleLine> = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let bad = |m: &str| ApiError::bad_request(format!("items[{i}]: {m}"));
        let obj = v
            .as_object()
            .ok_or_else(|| bad("expected an object {sku, quantity}"))?;
        if let Some(k) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "sku" | "quantity"))
        {
            return Err(bad(&format!(
                "unknown field '{k}' (allowed: sku, quantity)"
            )));
        }
        let sku = obj
            .get("sku")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("field 'sku' is required and must be a string"))?;
        identifier::validate("sku", sku).map_err(|e| bad(&e.message))?;
        let quantity = obj
            .get("quantity")
            .and_then(Value::as_u64)
            .filter(|q| (1..=MAX_QUANTITY).contains(q))
            .ok_or_else(|| {
                bad(&format!(
                    "field 'quantity' must be an integer from 1 to {MAX_QUANTITY}"
                ))
            })?;
        if lines.iter().any(|l| l.sku == sku) {
            return Err(bad(&format!("sku '{sku}' is given twice")));
        }
        lines.push(BundleLine {
            sku: sku.to_string(),
            quantity: quantity as u32,
        });
    }
    Ok(lines)
}

/// PUT /bundles/{identifier} {name, values?, items}: creates (201) or replaces (200) the
/// bundle through `usecases/bundles.rs` (one round trip of reads, one transaction); every
/// SKU must exist.
async fn put(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "bundle")?;
    let body: BundleFields = call.body(app)?;
    let name = body.name.as_str();
    names::validate("name", name)?;
    let items = &parse_items(body.items.as_deref())?;
    let input = body.values.as_ref();
    let wanted: Vec<_> = input
        .into_iter()
        .flat_map(|m| m.keys().map(|k| (TargetEntity::Bundle, k.clone())))
        .collect();
    let ctx = if wanted.is_empty() {
        WriteContext::default()
    } else {
        app.store.write_context(call.org(), &wanted, &[]).await?
    };
    let languages = ctx.scopes.language_codes();
    let channels = ctx.scopes.channel_ids();
    let rules = ScopeRules {
        languages: Some(&languages),
        channels: Some(&channels),
    };
    let changes = match input {
        Some(m) => values::parse_values("bundle", m, &ctx.defs_of(TargetEntity::Bundle), &rules)?,
        None => Vec::new(),
    };
    references::check_exist(&app.store, call.org(), &[(String::new(), &changes)]).await?;
    let input = BundleInput {
        name,
        items,
        changes: &changes,
    };
    let (created, bundle) = put_bundle(&call.writer(app), id, &input).await?;
    Ok(super::saved(
        created,
        render(&bundle),
        etags::resource(&bundle),
    ))
}

/// DELETE /bundles/{identifier}: the bundle and its place in its SKUs' `bundles` sets, in one
/// transaction.
async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "bundle")?;
    delete_bundle(&call.writer(app), id).await?;
    Ok(ApiResponse::single(200, crate::http::render::deleted(id)))
}
