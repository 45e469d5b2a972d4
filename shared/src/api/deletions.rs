//! `GET /deletions` (scope `catalog:read`, served by the `products` function): the entities
//! of one type deleted after a time, oldest first, kept 30 days, so that a client that
//! missed a webhook learns of every deletion since its last sync.

use crate::app::{handler, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::cursor::{CursorPaging, Start};
use crate::http::{ApiResponse, Body, Doc, Query, Route};
use crate::store::writes::DELETION_RETENTION_SECS;
use serde_json::json;

pub const ENDPOINT: Endpoint = Endpoint::new(
    Route::new(
        "GET",
        "/deletions",
        Scope::CatalogRead,
        Doc::new(
            "Entities of one type deleted after a time, oldest first (kept 30 days)",
            &["entity_type", "updated_after", "limit", "page", "cursor"],
            None,
            200,
            Body::List("Deletion"),
        ),
    ),
    handler!(list),
);

/// The entity types whose deletions are kept.
pub const ENTITY_TYPES: &[&str] = &[
    "product",
    "variant",
    "sku",
    "asset",
    "category",
    "bundle",
    "metaobject",
];

/// GET /deletions?entity_type=&updated_after=: one Query for the page, one COUNT Query for
/// the total.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let query = Query::parse(
        &call.request.query,
        &["entity_type", "updated_after", "limit", "page", "cursor"],
    )?;
    let entity_type = query
        .get("entity_type")
        .ok_or_else(|| ApiError::bad_request("query parameter 'entity_type' is required"))?;
    if !ENTITY_TYPES.contains(&entity_type) {
        return Err(ApiError::bad_request(format!(
            "query parameter 'entity_type': '{entity_type}' is not one of {}",
            ENTITY_TYPES.join(", ")
        )));
    }
    let horizon =
        Timestamp::from_millis(Timestamp::now().millis() - DELETION_RETENTION_SECS * 1000);
    let since = match query.get("updated_after") {
        None => None,
        Some(raw) => {
            let t = Timestamp::parse(raw).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "query parameter 'updated_after': '{raw}' is not an RFC 3339 time"
                ))
            })?;
            if t < horizon {
                return Err(ApiError::bad_request(
                    "query parameter 'updated_after': deletions are kept 30 days and this is older; resync in full",
                ));
            }
            Some(t)
        }
    };
    // Positions are `<deletedAt>#<identifier>`: everything of a time sorts below `<time>$`,
    // and every time above a space (a key condition takes no empty string).
    let floor = since.map_or_else(|| " ".to_string(), |t| format!("{t}$"));
    let scope = format!(
        "deletions?entity_type={entity_type}&updated_after={}",
        query.get("updated_after").unwrap_or_default()
    );
    let paging = CursorPaging::from_query(&query, &app.config.cursor_key, call.org(), scope)?;
    let after = match &paging.start {
        Start::After(position) => position.as_str(),
        Start::Page(_) => floor.as_str(),
    };
    let org = call.org();
    let limit = paging.limit as usize;
    let page = app
        .store
        .deletions_after(org, entity_type, after, paging.offset(), limit);
    let total = app.store.count_deletions_after(org, entity_type, &floor);
    let ((page, more), total) =
        crate::store::metrics::in_parallel(async { futures_util::try_join!(page, total) }).await?;
    let next = more
        .then(|| page.last().map(|d| d.position.clone()))
        .flatten();
    let result = page
        .iter()
        .map(|d| json!({"entity_type": d.entity_type, "identifier": d.identifier, "deletedAt": d.deleted_at}))
        .collect();
    Ok(paging.respond(result, total, next.as_deref()))
}
