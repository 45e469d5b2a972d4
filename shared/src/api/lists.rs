//! What the three list endpoints share: their query parameters, and which entities a list
//! returns (`updated_after`, `search`, `search_mode`, completeness), computed over the warm
//! snapshots (`search/snapshot/`) in identifier order before a page is cut.

use super::include::{with_included, DetailParams, Include, ProductInclude, Relations};
use crate::app::{App, Call};
use crate::domain::limits::MAX_EMBEDDED_PER_PAGE;
use crate::domain::selection::Selection;
use crate::error::ApiError;
use crate::http::cursor::{CursorPageParams, CursorPaging, Start};
use crate::http::query::{query_values, QueryValue, UpdatedAfter};
use crate::http::ApiResponse;
use crate::search::engine::Cut;
use crate::search::parse::{parse_json, RawSearch};
use crate::store::items::EntityKind;
use crate::store::lists::IndexEntry;
use crate::usecases::listing::{matching, Refresh};
pub use crate::usecases::listing::{CompletenessQuery, Selecting};
use schemars::{json_schema, Schema};
use serde_json::{json, Value};

/// A query parameter refused, as the use cases word it (`listing::bad_param`).
fn bad_param(name: &str, problem: impl std::fmt::Display) -> ApiError {
    crate::usecases::listing::bad_param(name, problem).into()
}

/// The query of a list of variants or SKUs (`R`: the relations it embeds), and the most of
/// a list of products'.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct ListParams<R> {
    pub updated_after: Option<UpdatedAfter>,
    pub search: Option<Search>,
    pub search_mode: Option<SearchMode>,
    #[serde(flatten)]
    pub paging: CursorPageParams,
    #[serde(flatten)]
    pub detail: DetailParams<R>,
}

/// The query of `GET /products`: a list's, and the completeness filter.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct ProductListParams {
    #[serde(flatten)]
    pub list: ListParams<ProductInclude>,
    #[serde(flatten)]
    pub completeness: CompletenessParams,
}

/// `completeness_profile`, `completeness` and `channel`.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct CompletenessParams {
    pub completeness_profile: Option<Profile>,
    pub completeness: Option<Completeness>,
    pub channel: Option<Channel>,
}

/// `search`: the filter, parsed (`search/parse.rs`).
#[derive(Debug)]
pub struct Search(RawSearch);

/// `search_mode=any`: a match of any key, not all.
#[derive(Debug, Clone, Copy)]
pub struct SearchMode {
    any: bool,
}

/// `completeness`: complete or incomplete ones.
#[derive(Debug, Clone, Copy)]
pub struct Completeness {
    complete: bool,
}

/// `completeness_profile`: a profile's identifier.
#[derive(Debug, Clone)]
pub struct Profile(String);

/// `channel`: the channel completeness is evaluated against.
#[derive(Debug, Clone)]
pub struct Channel(String);

impl QueryValue for Search {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        Ok(parse_json(raw).map(Self)?)
    }

    fn schema() -> Schema {
        search_schema()
    }
}

impl QueryValue for SearchMode {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        choice("search_mode", raw, &[("all", false), ("any", true)]).map(|any| Self { any })
    }

    fn schema() -> Schema {
        json_schema!({"type": "string", "enum": ["all", "any"], "default": "all", "description": "all: every filter matches; any: at least one top-level key."})
    }
}

impl QueryValue for Completeness {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        choice(
            "completeness",
            raw,
            &[("complete", true), ("incomplete", false)],
        )
        .map(|complete| Self { complete })
    }

    fn schema() -> Schema {
        json_schema!({"type": "string", "enum": ["complete", "incomplete"], "description": "Requires completeness_profile."})
    }
}

impl QueryValue for Profile {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        if raw.trim().is_empty() {
            return Err(bad_param("completeness_profile", "must not be empty"));
        }
        // read by key: an identifier no profile can have is refused before any read
        crate::domain::identifier::validate("completeness profile", raw)
            .map_err(|e| bad_param("completeness_profile", e.message))?;
        Ok(Self(raw.to_string()))
    }

    fn schema() -> Schema {
        json_schema!({"type": "string", "description": "Completeness profile identifier."})
    }
}

impl QueryValue for Channel {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        Ok(Self(raw.to_string()))
    }

    fn schema() -> Schema {
        json_schema!({"type": "string", "description": "Channel the completeness is evaluated against."})
    }
}

query_values!(Search, SearchMode, Completeness, Profile, Channel);

/// `raw` as one of the parameter `name`'s `choices` (its text, its value), else refused
/// naming them.
fn choice(name: &str, raw: &str, choices: &[(&str, bool)]) -> Result<bool, ApiError> {
    match choices.iter().find(|(text, _)| *text == raw) {
        Some((_, value)) => Ok(*value),
        None => {
            let texts: Vec<&str> = choices.iter().map(|(text, _)| *text).collect();
            Err(bad_param(
                name,
                format!("'{raw}' is not one of {}", texts.join(", ")),
            ))
        }
    }
}

/// `search`, with the operator matrix (decisions.md, "Filtering") as `x-operators`: each
/// attribute type's operators and each system filter's, in the order the parser lists them,
/// so that a client (the console) builds its conditions from the document.
fn search_schema() -> Schema {
    use crate::domain::attributes::AttributeType;
    use crate::search::operators::Category;
    use crate::search::parse::SYSTEM_FILTERS;
    let names = |c: Category| -> Vec<&str> { c.operators().iter().map(|o| o.name()).collect() };
    let types: serde_json::Map<String, Value> = AttributeType::ALL
        .iter()
        .map(|t| (t.as_str().into(), json!(names(Category::of(*t)))))
        .collect();
    let system: serde_json::Map<String, Value> = SYSTEM_FILTERS
        .iter()
        .map(|(key, field)| (key.to_string(), json!(names(field.category()))))
        .collect();
    json_schema!({
        "type": "string",
        "description": "URL-encoded JSON filter: {\"<entity>.<key>\": [{\"operator\": ..., \"value\": ...}]}. `x-operators` lists the operators each attribute type and each system filter accepts.",
        "x-operators": {"types": types, "system": system}
    })
}

impl CompletenessParams {
    /// The completeness filter, its parameters checked together.
    pub fn check(self) -> Result<Option<CompletenessQuery>, ApiError> {
        let complete = self.completeness.map(|c| c.complete);
        let channel = self.channel.map(|c| c.0);
        match self.completeness_profile {
            Some(Profile(profile)) => Ok(Some(CompletenessQuery {
                profile,
                complete,
                channel,
            })),
            None if complete.is_some() => {
                Err(bad_param("completeness", "requires 'completeness_profile'"))
            }
            None if channel.is_some() => {
                Err(bad_param("channel", "requires 'completeness_profile'"))
            }
            None => Ok(None),
        }
    }
}

/// A checked list request.
#[derive(Debug)]
pub struct ListRequest {
    pub paging: CursorPaging,
    pub include: Include,
    pub selection: Selection,
    /// Which entities the list holds.
    pub select: Selecting,
}

/// Checks a list request (`params`, and `completeness` on products) and opens its cursor.
pub fn parse<R: Relations>(
    app: &App,
    call: &Call,
    kind: EntityKind,
    params: ListParams<R>,
    completeness: Option<CompletenessQuery>,
) -> Result<ListRequest, ApiError> {
    let query = &call.query;
    // A cursor opens only for the list and selection it was made for.
    let mut scope = kind.as_str().to_string();
    for name in SELECTION_PARAMS {
        scope.push_str(&format!("&{name}={}", query.get(name).unwrap_or_default()));
    }
    let paging = CursorPaging::open(&params.paging, &app.config.cursor_key, call.org(), scope)?;
    let (include, selection) = params.detail.parts()?;
    Ok(ListRequest {
        paging,
        include,
        selection,
        select: Selecting {
            updated_after: params.updated_after.map(|t| t.0),
            search: params.search.map(|s| s.0),
            any: params.search_mode.is_some_and(|m| m.any),
            completeness,
        },
    })
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

/// The page of `kind` a list request asks for, with the true total: the request checked,
/// then matched.
pub async fn page<R: Relations>(
    app: &App,
    call: &Call,
    kind: EntityKind,
    params: ListParams<R>,
    completeness: Option<CompletenessQuery>,
) -> Result<ListPage, ApiError> {
    let req = parse(app, call, kind, params, completeness)?;
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
    // an entity's position in its list is its identifier
    let entries = result
        .into_iter()
        .zip(&page.entries)
        .map(|(v, e)| {
            let position = v["identifier"].as_str().unwrap_or(&e.id).to_string();
            (v, position)
        })
        .collect();
    let response = req
        .paging
        .respond(entries, page.total, page.next_after.as_deref())?;
    with_included(&app.store, call.org(), response, req.include.metaobjects).await
}
