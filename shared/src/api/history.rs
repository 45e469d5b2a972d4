//! `GET /{products|variants|skus|assets}/{identifier}/history` (scope `catalog:read`,
//! decisions.md "Change history"): who changed an entity, when and what, newest first, by
//! cursor in the list envelope, kept 90 days and readable after the entity is deleted. A
//! page is one Query, and a COUNT Query for the totals beside it (one round trip; the COUNT
//! takes one request per 1 MB of history); one GetItem more only when the history is empty,
//! to tell an entity without history from none. The change feed writes the entries
//! (`workers/feed/history.rs`).

use crate::app::{handler, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::actor::ActorView;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::doc::QueryDoc;
use crate::http::query::{Cursor, Limit};
use crate::http::render::to_json;
use crate::http::response::pagination;
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::store::history::Entry;
use crate::store::metrics::in_parallel;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// The query of a history page.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct HistoryParams {
    #[serde(default)]
    limit: Limit,
    cursor: Option<Cursor>,
}

const fn doc(summary: &'static str) -> Doc {
    Doc::new(
        summary,
        QueryDoc::of::<HistoryParams>(),
        None,
        200,
        Body::List("HistoryEntry"),
    )
}

/// The history route of each entity type, for its function's table.
pub const PRODUCTS: Endpoint = Endpoint::new(
    Route::new(
        "GET",
        "/products/{identifier}/history",
        Scope::CatalogRead,
        doc("A product's changes, newest first (kept 90 days, also after its deletion)"),
    ),
    handler!(history),
);
pub const VARIANTS: Endpoint = Endpoint::new(
    Route::new(
        "GET",
        "/variants/{identifier}/history",
        Scope::CatalogRead,
        doc("A variant's changes, newest first (kept 90 days, also after its deletion)"),
    ),
    handler!(history),
);
pub const SKUS: Endpoint = Endpoint::new(
    Route::new(
        "GET",
        "/skus/{identifier}/history",
        Scope::CatalogRead,
        doc("A SKU's changes, newest first (kept 90 days, also after its deletion)"),
    ),
    handler!(history),
);
pub const ASSETS: Endpoint = Endpoint::new(
    Route::new(
        "GET",
        "/assets/{identifier}/history",
        Scope::CatalogRead,
        doc("An asset's changes, newest first (kept 90 days, also after its deletion)"),
    ),
    handler!(history),
);

/// One change as history shows it.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "HistoryEntry")]
struct EntryView {
    /// Opaque, unique in the entity's history.
    id: String,
    #[schemars(with = "Timestamp")]
    at: String,
    /// `<entity>.created`, `.updated` or `.deleted`.
    event: String,
    /// Who made the change; null for a change recorded without one.
    by: Option<ActorView>,
    /// What differs between the state before and after, as in `payload: "changes"`
    /// deliveries; null when it passed the bound (then `changesOmitted` is true).
    changes: Option<Value>,
    #[serde(rename = "changesOmitted", skip_serializing_if = "std::ops::Not::not")]
    changes_omitted: bool,
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] =
    &[crate::http::schema::answer::<EntryView>];

/// The entity type a history route is of, from its path.
fn entity_type(call: &Call) -> &'static str {
    use crate::domain::entity_types::EntityType;
    let t = match call.route.route.path.split('/').nth(1) {
        Some("products") => EntityType::Product,
        Some("variants") => EntityType::Variant,
        Some("skus") => EntityType::Sku,
        _ => EntityType::Asset,
    };
    t.as_str()
}

fn view(e: &Entry) -> EntryView {
    let changes = e
        .changes
        .as_deref()
        .and_then(|text| serde_json::from_str::<Value>(text).ok());
    EntryView {
        id: e.id(),
        at: e.at.to_string(),
        event: format!("{}.{}", e.entity_type, e.event.as_str()),
        by: e.by.as_ref().map(|a| a.view()),
        changes_omitted: changes.is_none(),
        changes,
    }
}

async fn history(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let kind = entity_type(call);
    let id = call.route.identifier(0, kind)?;
    let params = call.query.typed::<HistoryParams>()?;
    let limit = params.limit.0;
    let key = &app.config.cursor_key;
    let scope = format!("history/{kind}/{id}");
    let after = match &params.cursor {
        Some(c) => Some(key.open(call.org(), &scope, &c.0)?),
        None => None,
    };
    // the page and the totals in one round trip
    let (page, total) = in_parallel(async {
        futures_util::try_join!(
            app.store
                .history_page(call.org(), kind, id, after.as_deref(), limit as usize),
            app.store.history_count(call.org(), kind, id)
        )
    })
    .await?;
    if total == 0 && !app.store.entity_exists(call.org(), kind, id).await? {
        return Err(ApiError::entity_not_found(kind, id));
    }
    let mut pagination = pagination(limit, 1, total);
    if after.is_some() {
        pagination.page = None;
    }
    pagination.next_cursor = Some(page.next_after.map(|p| key.seal(call.org(), &scope, &p)));
    let result: Vec<Value> = page.entries.iter().map(|e| to_json(view(e))).collect();
    Ok(ApiResponse::json(
        200,
        serde_json::json!({"result": result, "pagination": pagination}),
    ))
}
