//! `GET /{products|variants|skus|assets}/{identifier}/history` (scope `catalog:read`,
//! decisions.md "Change history"): who changed an entity, when and what, newest first, by
//! cursor in the list envelope, kept for the organization's `historyRetentionDays` (at
//! most 90 days, `api/settings/organization.rs`) and at most `MAX_HISTORY_ENTRIES` entries,
//! readable after the entity is deleted. The first page is one Query (with the history's
//! head) and the oldest entry's one-item Query beside it for the total (one round trip,
//! whatever the history's length); a later page is one Query, its cursor carrying the first
//! page's total. A page holds at most 4 MiB of changes (`store/history/pages.rs`), so no
//! answer nears Lambda's 6 MB. One GetItem more only when the history is empty, to tell an
//! entity without history from none. The change feed writes the entries
//! (`workers/feed/history.rs`). `DELETE` on the same paths (scope `settings:manage`)
//! erases an entity's history, for personal data (`store/history/erase.rs`).

use crate::app::{handler, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::actor::ActorView;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::doc::{QueryDoc, NO_QUERY};
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

/// How long and how much history is kept, as the routes' summaries say it.
macro_rules! kept {
    () => {
        "kept for the organization's `historyRetentionDays`, at most 90 days, and at most 1,000 entries; also after its deletion"
    };
}

/// The erasure of a history, as its route's summary says it.
macro_rules! erases {
    ($whose:literal) => {
        concat!(
            "Erase ",
            $whose,
            " history (personal data): every entry goes, and the stream's records of those changes are not recorded again; 404 when there is none and the entity does not exist"
        )
    };
}

/// The erasure's answer.
const fn erase_doc(summary: &'static str) -> Doc {
    Doc::new(summary, NO_QUERY, None, 200, Body::Single("HistoryErased"))
}

/// The history routes of each entity type, for its function's table: the history, and
/// its erasure.
pub const PRODUCTS: [Endpoint; 2] = [
    Endpoint::new(
        Route::new(
            "GET",
            "/products/{identifier}/history",
            Scope::CatalogRead,
            doc(concat!("A product's changes, newest first (", kept!(), ")")),
        ),
        handler!(history),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/products/{identifier}/history",
            Scope::SettingsManage,
            erase_doc(erases!("a product's")),
        ),
        handler!(erase),
    ),
];
pub const VARIANTS: [Endpoint; 2] = [
    Endpoint::new(
        Route::new(
            "GET",
            "/variants/{identifier}/history",
            Scope::CatalogRead,
            doc(concat!("A variant's changes, newest first (", kept!(), ")")),
        ),
        handler!(history),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/variants/{identifier}/history",
            Scope::SettingsManage,
            erase_doc(erases!("a variant's")),
        ),
        handler!(erase),
    ),
];
pub const SKUS: [Endpoint; 2] = [
    Endpoint::new(
        Route::new(
            "GET",
            "/skus/{identifier}/history",
            Scope::CatalogRead,
            doc(concat!("A SKU's changes, newest first (", kept!(), ")")),
        ),
        handler!(history),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/skus/{identifier}/history",
            Scope::SettingsManage,
            erase_doc(erases!("a SKU's")),
        ),
        handler!(erase),
    ),
];
pub const ASSETS: [Endpoint; 2] = [
    Endpoint::new(
        Route::new(
            "GET",
            "/assets/{identifier}/history",
            Scope::CatalogRead,
            doc(concat!("An asset's changes, newest first (", kept!(), ")")),
        ),
        handler!(history),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/assets/{identifier}/history",
            Scope::SettingsManage,
            erase_doc(erases!("an asset's")),
        ),
        handler!(erase),
    ),
];

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

/// What erasing a history answers: a DELETE's answer, with how many entries went.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "HistoryErased")]
struct Erased<'a> {
    identifier: &'a str,
    #[schemars(schema_with = "always")]
    deleted: bool,
    /// The entries erased (0: the entity had none).
    erased: u64,
}

fn always(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"const": true})
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] = &[
    crate::http::schema::answer::<EntryView>,
    crate::http::schema::answer::<Erased>,
];

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

/// DELETE …/history: erases every entry of the entity's history (`Store::erase_history`):
/// 200 with how many went; 404 when there was none and the entity does not exist, as GET.
/// Scope `settings:manage`: a key that writes the catalog cannot erase the record of its
/// own changes.
async fn erase(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let kind = entity_type(call);
    let id = call.route.identifier(0, kind)?;
    let erased = app
        .store
        .erase_history(call.org(), kind, id)
        .await?
        .ok_or_else(|| ApiError::entity_not_found(kind, id))?;
    let answer = Erased {
        identifier: id,
        deleted: true,
        erased: erased as u64,
    };
    Ok(ApiResponse::single(200, to_json(answer)))
}
