//! What the three list endpoints share: their query parameters, and which entities a list
//! returns (`updated_after`, `search`, `search_mode`, completeness), computed over the warm
//! snapshots (`search/snapshot/`) in identifier order before a page is cut.

use super::include::Include;
use crate::app::{App, Call};
use crate::domain::limits::MAX_EMBEDDED_PER_PAGE;
use crate::domain::selection::Selection;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::cursor::{CursorPaging, Start};
use crate::http::{ApiResponse, Query};
use crate::search::engine::Cut;
use crate::search::parse::parse_json;
use crate::store::items::EntityKind;
use crate::store::lists::IndexEntry;
use crate::usecases::listing::{bad_param, matching, Refresh};
pub use crate::usecases::listing::{CompletenessQuery, Selecting};
use crate::usecases::references::with_included;
use serde_json::Value;

/// The query parameters every list of products, variants and SKUs takes.
pub const LIST_PARAMS: &[&str] = &[
    "updated_after",
    "search",
    "search_mode",
    "limit",
    "page",
    "cursor",
    "include",
    "attributes",
    "exclude_attributes",
];

/// The completeness parameters of `GET /products`.
pub const COMPLETENESS_PARAMS: &[&str] = &["completeness_profile", "completeness", "channel"];

/// A checked list request.
#[derive(Debug)]
pub struct ListRequest {
    pub paging: CursorPaging,
    pub include: Include,
    pub selection: Selection,
    /// Which entities the list holds.
    pub select: Selecting,
}

/// Parses a list request (its parameters, `LIST_PARAMS` and the endpoint's own, were
/// checked against the route's); `includes` are the relations it embeds.
pub fn parse(
    app: &App,
    call: &Call,
    kind: EntityKind,
    includes: &[&str],
) -> Result<ListRequest, ApiError> {
    let query = &call.query;
    // A cursor opens only for the list and selection it was made for.
    let mut scope = kind.as_str().to_string();
    for name in SELECTION_PARAMS {
        scope.push_str(&format!("&{name}={}", query.get(name).unwrap_or_default()));
    }
    let paging = CursorPaging::from_query(query, &app.config.cursor_key, call.org(), scope)?;
    let any = match query.get("search_mode") {
        None | Some("all") => false,
        Some("any") => true,
        Some(mode) => {
            return Err(bad_param(
                "search_mode",
                format!("'{mode}' is not one of all, any"),
            ))
        }
    };
    let updated_after = match query.get("updated_after") {
        None => None,
        Some(raw) => Some(Timestamp::parse(raw).ok_or_else(|| {
            bad_param("updated_after", format!("'{raw}' is not an RFC 3339 time"))
        })?),
    };
    let search = query.get("search").map(parse_json).transpose()?;
    Ok(ListRequest {
        paging,
        include: Include::parse(query.list("include"), includes)?,
        selection: Selection::parse(query.list("attributes"), query.list("exclude_attributes"))?,
        select: Selecting {
            updated_after,
            search,
            any,
            completeness: completeness_query(query)?,
        },
    })
}

fn completeness_query(query: &Query) -> Result<Option<CompletenessQuery>, ApiError> {
    let complete = match query.get("completeness") {
        None => None,
        Some("complete") => Some(true),
        Some("incomplete") => Some(false),
        Some(other) => {
            return Err(bad_param(
                "completeness",
                format!("'{other}' is not one of complete, incomplete"),
            ))
        }
    };
    let channel = query.get("channel").map(str::to_string);
    match query.get("completeness_profile") {
        Some(p) if !p.trim().is_empty() => {
            // read by key: an identifier no profile can have is refused before any read
            crate::domain::identifier::validate("completeness profile", p)
                .map_err(|e| bad_param("completeness_profile", e.message))?;
            Ok(Some(CompletenessQuery {
                profile: p.to_string(),
                complete,
                channel,
            }))
        }
        Some(_) => Err(bad_param("completeness_profile", "must not be empty")),
        None if complete.is_some() => {
            Err(bad_param("completeness", "requires 'completeness_profile'"))
        }
        None if channel.is_some() => Err(bad_param("channel", "requires 'completeness_profile'")),
        None => Ok(None),
    }
}

/// The parameters that decide which entities a list holds (a cursor is tied to them).
const SELECTION_PARAMS: &[&str] = &[
    "updated_after",
    "search",
    "search_mode",
    "completeness_profile",
    "completeness",
    "channel",
];

/// One page of a list: the request, the page's entries, the true total, and the identifier
/// the next page starts after (when more follow).
pub struct ListPage {
    pub req: ListRequest,
    pub entries: Vec<IndexEntry>,
    pub total: usize,
    pub next_after: Option<String>,
}

/// The page of `kind` a list request asks for, with the true total: the request parsed
/// (`includes`: its relations), then matched.
pub async fn page(
    app: &App,
    call: &Call,
    kind: EntityKind,
    includes: &[&str],
) -> Result<ListPage, ApiError> {
    let req = parse(app, call, kind, includes)?;
    let cut = match &req.paging.start {
        Start::Page(_) => Cut::Index(req.paging.offset()),
        Start::After(id) => Cut::After(id),
    };
    let limit = req.paging.limit as usize;
    let (entries, total, more) = matching(
        app,
        call.org(),
        kind,
        &req.select,
        (cut, limit),
        Refresh::Now,
    )
    .await?;
    let next_after = more.then(|| entries.last().map(|e| e.id.clone())).flatten();
    Ok(ListPage {
        req,
        entries,
        total,
        next_after,
    })
}

/// The list response of a rendered page, with the metaobjects it references when asked.
/// Refuses a page whose `include` embeds more than [`MAX_EMBEDDED_PER_PAGE`] variants and
/// SKUs (`embedded`): each tree is bounded by the product limits, so the read was bounded;
/// the answer would not be.
pub fn check_embedded(embedded: usize) -> Result<(), ApiError> {
    if embedded > MAX_EMBEDDED_PER_PAGE {
        return Err(ApiError::bad_request(format!(
            "query parameter 'include': this page would embed {embedded} variants and SKUs, more than the {MAX_EMBEDDED_PER_PAGE} a page holds; ask for a lower 'limit'"
        )));
    }
    Ok(())
}

pub async fn respond(
    app: &App,
    call: &Call,
    page: &ListPage,
    result: Vec<Value>,
) -> Result<ApiResponse, ApiError> {
    let req = &page.req;
    let response = req
        .paging
        .respond(result, page.total, page.next_after.as_deref());
    with_included(&app.store, call.org(), response, req.include.metaobjects).await
}
