//! `/products` routes.

use super::include::Include;
use super::render::{self, Embed};
use crate::app::{Api, App, Call};
use crate::auth::Scope;
use crate::domain::attributes::TargetEntity;
use crate::domain::selection::Selection;
use crate::domain::time::Timestamp;
use crate::domain::values::{self, ScopeRules, StoredValues};
use crate::error::ApiError;
use crate::http::{ApiResponse, JsonBody, Query, Route};
use crate::store::items::{EntityItem, EntityKind};
use crate::store::products::TreeDepth;
use crate::store::StoreError;
use lambda_http::BoxFuture;
use std::time::Duration;

pub const ROUTES: &[Route] = &[
    Route::new("GET", "/products/{identifier}", Scope::CatalogRead),
    Route::new("PATCH", "/products/{identifier}", Scope::CatalogWrite),
];

pub const API: Api = Api {
    function: "products",
    routes: ROUTES,
    dispatch,
};

fn dispatch(app: &'static App, call: Call) -> BoxFuture<'static, Result<ApiResponse, ApiError>> {
    Box::pin(async move {
        match (call.route.route.method, call.route.route.path) {
            ("GET", "/products/{identifier}") => get_product(app, &call).await,
            ("PATCH", "/products/{identifier}") => patch_product(app, &call).await,
            _ => Err(ApiError::internal()),
        }
    })
}

const DETAIL_PARAMS: &[&str] = &["include", "attributes", "exclude_attributes"];
const PRODUCT_INCLUDES: &[&str] = &["variants", "skus", "metaobjects"];

/// GET /products/{identifier}: one DynamoDB request whatever `include` asks.
async fn get_product(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "product")?;
    let query = Query::parse(&call.request.query, DETAIL_PARAMS)?;
    let include = Include::parse(query.list("include"), PRODUCT_INCLUDES)?;
    let selection = Selection::parse(query.list("attributes"), query.list("exclude_attributes"))?;
    let depth = match (include.variants, include.skus) {
        (true, true) => TreeDepth::Skus,
        (true, false) => TreeDepth::Variants,
        _ => TreeDepth::Product,
    };
    let tree = app
        .store
        .get_product_tree(call.org(), id, depth)
        .await?
        .ok_or_else(|| ApiError::entity_not_found("product", id))?;
    let embed = Embed {
        variants: include.variants,
        skus: include.skus,
    };
    let mut body = serde_json::json!({ "result": render::product(&tree, embed, &selection) });
    if include.metaobjects {
        body["included"] = serde_json::json!([]);
    }
    Ok(ApiResponse::json(200, body))
}

const PATCH_FIELDS: &[&str] = &[
    "name",
    "values",
    "familyId",
    "variants",
    "assets",
    "categories",
];
const MAX_WRITE_ATTEMPTS: u32 = 8;

/// PATCH /products/{identifier}: upsert; 201 when created, 200 when updated.
async fn patch_product(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "product")?;
    let body = JsonBody::from_request(&call.request, app.config.max_body_bytes)?;
    body.only(PATCH_FIELDS)?;
    for later in ["familyId", "variants", "assets", "categories"] {
        if body.has(later) {
            return Err(ApiError::bad_request(format!(
                "field '{later}' is not supported yet by this deployment"
            )));
        }
    }
    let name = body.opt_str("name")?;
    let empty = serde_json::Map::new();
    let values = body.opt_object("values")?.unwrap_or(&empty);
    let defs = if values.is_empty() {
        Default::default()
    } else {
        app.store
            .get_definitions(
                call.org(),
                TargetEntity::Product,
                values.keys().map(String::as_str),
            )
            .await?
    };
    let changes = values::parse_values("product", values, &defs, &ScopeRules::default())?;

    for attempt in 0..MAX_WRITE_ATTEMPTS {
        if attempt > 0 {
            backoff(attempt).await;
        }
        let outcome = match app.store.get_product(call.org(), id).await? {
            None => {
                let mut vals = StoredValues::new();
                values::apply(&mut vals, &changes, &defs);
                let mut item = EntityItem::new(
                    call.org(),
                    EntityKind::Product,
                    id,
                    (None, None),
                    name.unwrap_or(id),
                    vals,
                    Timestamp::now(),
                );
                item.ver = 1;
                app.store
                    .put_product(&item, None)
                    .await
                    .map(|_| (201, item))
            }
            Some(mut item) => {
                let values_changed = values::apply(&mut item.vals, &changes, &defs);
                let name_changed = name.is_some_and(|n| n != item.name);
                if !values_changed && !name_changed {
                    return Ok(ApiResponse::single(
                        200,
                        render::write_result(&item, item.tu),
                    ));
                }
                if let Some(n) = name {
                    item.name = n.to_string();
                }
                let expected = item.ver;
                item.touch(Timestamp::next_after([item.su, item.tu]));
                app.store
                    .put_product(&item, Some(expected))
                    .await
                    .map(|_| (200, item))
            }
        };
        match outcome {
            Ok((status, item)) => {
                return Ok(ApiResponse::single(
                    status,
                    render::write_result(&item, item.tu),
                ))
            }
            Err(StoreError::ConditionFailed) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::conflict(format!(
        "product '{id}' was changed concurrently by other writers; retry the request"
    )))
}

/// Jittered exponential backoff between optimistic-write attempts (at most ~320 ms).
async fn backoff(attempt: u32) {
    let cap_ms = (10u64 << attempt.min(5)).min(320);
    let mut b = [0u8; 2];
    let jitter = getrandom::fill(&mut b)
        .map(|_| u16::from_le_bytes(b))
        .unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(u64::from(jitter) % cap_ms + 1)).await;
}
