//! `GET /{products|variants|skus|assets}/{identifier}/history` (scope `catalog:read`,
//! decisions.md "Change history"): who changed an entity, when and what, newest first, by
//! cursor in the list envelope, kept 90 days and readable after the entity is deleted. The
//! first page is one Query (with the history's head) and the oldest entry's one-item Query
//! beside it for the total (one round trip, whatever the history's length); a later page
//! is one Query, its cursor carrying the first page's total. A page holds at most 4 MiB of
//! changes (`store/history/pages.rs`), so no answer nears Lambda's 6 MB. One GetItem more
//! only when the history is empty, to tell an entity without history from none. The
//! change feed writes the entries (`workers/feed/history.rs`).

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

/// What separates a cursor's position from the total it carries (a position holds none).
const TOTAL_MARK: char = '|';

async fn history(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let kind = entity_type(call);
    let id = call.route.identifier(0, kind)?;
    let params = call.query.typed::<HistoryParams>()?;
    let limit = params.limit.0;
    let key = &app.config.cursor_key;
    let scope = format!("history/{kind}/{id}");
    let opened = match &params.cursor {
        Some(c) => Some(key.open(call.org(), &scope, &c.0)?),
        None => None,
    };
    let (page, total) = match opened.as_deref() {
        // the first page, and the total beside it (one round trip)
        None => {
            let (page, total) =
                in_parallel(
                    app.store
                        .history_first_page(call.org(), kind, id, limit as usize),
                )
                .await?;
            if total == 0 && !app.store.entity_exists(call.org(), kind, id).await? {
                return Err(ApiError::entity_not_found(kind, id));
            }
            (page, total)
        }
        // a later page: its cursor carries the first page's total
        Some(opened) => {
            let (after, total) = match opened.rsplit_once(TOTAL_MARK) {
                Some((after, total)) => (after, total.parse::<u64>().ok()),
                None => (opened, None),
            };
            let page = app
                .store
                .history_page(call.org(), kind, id, after, limit as usize);
            match total {
                Some(total) => (page.await?, total),
                // a cursor made before cursors carried it
                None => {
                    futures_util::try_join!(page, app.store.history_total(call.org(), kind, id))?
                }
            }
        }
    };
    let mut pagination = pagination(limit, 1, total);
    if opened.is_some() {
        pagination.page = None;
    }
    pagination.next_cursor = Some(
        page.next_after
            .map(|p| key.seal(call.org(), &scope, &format!("{p}{TOTAL_MARK}{total}"))),
    );
    let result: Vec<Value> = page.entries.iter().map(|e| to_json(view(e))).collect();
    Ok(ApiResponse::json(
        200,
        serde_json::json!({"result": result, "pagination": pagination}),
    ))
}
