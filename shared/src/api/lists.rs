//! What the three list endpoints share: their query parameters, and which entities a list
//! returns (`updated_after`, `search`, `search_mode`, completeness), computed over the warm
//! snapshots (`search/snapshot/`) in identifier order before a page is cut.

use super::include::Include;
use crate::app::{App, Call};
use crate::context::Context;
use crate::domain::attributes::TargetEntity;
use crate::domain::limits::MAX_EMBEDDED_PER_PAGE;
use crate::domain::selection::Selection;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::cursor::{CursorPaging, Start};
use crate::http::{ApiResponse, Query};
use crate::search::engine::{Cut, Page};
use crate::search::parse::{parse_json, RawSearch};
use crate::search::select::{levels_needed, Completeness, Criteria, Requirement};
use crate::store::items::EntityKind;
use crate::store::lists::IndexEntry;
use crate::store::metrics::in_parallel;
use crate::store::settings::{CompletenessProfile, Scopes};
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

/// `completeness_profile`, `completeness` and `channel`, checked for shape.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletenessQuery {
    pub profile: String,
    /// `None`: the profile is only checked, nothing is filtered.
    pub complete: Option<bool>,
    pub channel: Option<String>,
}

/// A checked list request.
#[derive(Debug)]
pub struct ListRequest {
    pub paging: CursorPaging,
    pub include: Include,
    pub selection: Selection,
    pub updated_after: Option<Timestamp>,
    pub search: Option<RawSearch>,
    pub any: bool,
    pub completeness: Option<CompletenessQuery>,
}

fn bad_param(name: &str, problem: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("query parameter '{name}': {problem}"))
}

/// Parses a list request; `extra` are the endpoint's own parameters, `includes` the
/// relations it embeds.
pub fn parse(
    app: &App,
    call: &Call,
    kind: EntityKind,
    extra: &[&str],
    includes: &[&str],
) -> Result<ListRequest, ApiError> {
    let allowed: Vec<&str> = LIST_PARAMS.iter().chain(extra).copied().collect();
    let query = Query::parse(&call.request.query, &allowed)?;
    // A cursor opens only for the list and selection it was made for.
    let mut scope = kind.as_str().to_string();
    for name in SELECTION_PARAMS {
        scope.push_str(&format!("&{name}={}", query.get(name).unwrap_or_default()));
    }
    let paging = CursorPaging::from_query(&query, &app.config.cursor_key, call.org(), scope)?;
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
        updated_after,
        search,
        any,
        completeness: completeness_query(&query)?,
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

/// The entity types whose snapshots answer `req` for a list of `target`, known before the
/// attribute definitions are read (so both reads go out together).
fn levels(target: EntityKind, req: &ListRequest) -> Vec<EntityKind> {
    let mut kinds = levels_needed(
        target,
        req.search.iter().flat_map(|s| s.keys()),
        req.updated_after.is_some(),
    );
    if req.completeness.is_some() {
        for k in [EntityKind::Variant, EntityKind::Sku] {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    kinds
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
/// (`extra`: the endpoint's own parameters, `includes`: its relations), then matched.
pub async fn page(
    app: &App,
    call: &Call,
    kind: EntityKind,
    extra: &[&str],
    includes: &[&str],
) -> Result<ListPage, ApiError> {
    let req = parse(app, call, kind, extra, includes)?;
    let (entries, total, more) = matching(app, call.org(), kind, &req).await?;
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

/// The requested page of the entities of `target` the list returns (identifier order), and
/// their total, from the list engine (`search/engine.rs`): one round trip brings it up to
/// date (the embedded engine: one delta Query per shard of each entity type involved) and,
/// with `search` or completeness, reads the definitions, scopes and profile they name (one
/// BatchGetItem). Only the page's entries are copied out of the engine.
pub async fn matching(
    cx: &Context,
    org: &str,
    target: EntityKind,
    req: &ListRequest,
) -> Result<Page, ApiError> {
    let engine = &cx.lists;
    let kinds = levels(target, req);
    let refresh = engine.refresh(org, &kinds);
    let mut criteria = Criteria {
        any: req.any,
        updated_after: req.updated_after,
        ..Criteria::default()
    };
    if req.search.is_none() && req.completeness.is_none() {
        refresh.await?;
    } else {
        let wanted = req
            .search
            .as_ref()
            .map(RawSearch::attribute_keys)
            .unwrap_or_default();
        let profile = req.completeness.as_ref().map(|c| c.profile.as_str());
        let context = cx.store.settings_context(org, &wanted, &[], profile);
        let (ctx, ()) = in_parallel(async { futures_util::try_join!(context, refresh) }).await?;
        if let Some(search) = &req.search {
            criteria.filters = search.validate(&ctx.defs)?;
        }
        if let Some(q) = &req.completeness {
            criteria.completeness = completeness(q, ctx.profile.as_ref(), &ctx.scopes)?;
        }
    }
    let cut = match &req.paging.start {
        Start::Page(_) => Cut::Index(req.paging.offset()),
        Start::After(id) => Cut::After(id),
    };
    Ok(engine.page(org, target, &criteria, cut, req.paging.limit as usize))
}

/// The completeness condition of a request: the profile must exist, the channel must exist
/// and be one of the profile's (when it names channels); without `channel`, the default
/// channel (the profile's first channel when the profile does not apply to the default).
/// Locales: the profile's, else the channel's, else the default language.
fn completeness(
    q: &CompletenessQuery,
    profile: Option<&CompletenessProfile>,
    scopes: &Scopes,
) -> Result<Option<Completeness>, ApiError> {
    let profile = profile.ok_or_else(|| {
        bad_param(
            "completeness_profile",
            format!("unknown completeness profile '{}'", q.profile),
        )
    })?;
    let channel = match &q.channel {
        Some(c) => {
            let found = scopes
                .channels
                .iter()
                .find(|ch| &ch.identifier == c)
                .ok_or_else(|| bad_param("channel", format!("unknown channel '{c}'")))?;
            if !profile.channels.is_empty() && !profile.channels.contains(c) {
                return Err(bad_param(
                    "channel",
                    format!(
                        "completeness profile '{}' does not apply to channel '{c}'",
                        profile.identifier
                    ),
                ));
            }
            Some(found)
        }
        // the default channel, or the profile's first when it does not apply to the default
        None => scopes
            .channels
            .iter()
            .find(|ch| ch.is_default)
            .filter(|ch| profile.channels.is_empty() || profile.channels.contains(&ch.identifier))
            .or_else(|| {
                let first = profile.channels.first()?;
                scopes.channels.iter().find(|ch| &ch.identifier == first)
            }),
    };
    let Some(complete) = q.complete else {
        return Ok(None);
    };
    let locales = if !profile.locales.is_empty() {
        profile.locales.clone()
    } else if let Some(ch) = channel.filter(|ch| !ch.locales.is_empty()) {
        ch.locales.clone()
    } else {
        scopes
            .languages
            .iter()
            .filter(|l| l.is_default)
            .map(|l| l.code.clone())
            .collect()
    };
    let required = profile
        .required_attributes
        .iter()
        .filter_map(|key| {
            let (entity, k) = key.split_once('.')?;
            let level = match TargetEntity::parse(entity)? {
                TargetEntity::Product => EntityKind::Product,
                TargetEntity::Variant => EntityKind::Variant,
                TargetEntity::Sku => EntityKind::Sku,
                TargetEntity::Bundle | TargetEntity::Asset => return None,
            };
            Some(Requirement {
                level,
                key: k.to_string(),
                builtin_name: profile.builtin_names.contains(key),
            })
        })
        .collect();
    Ok(Some(Completeness {
        required,
        locales,
        channel: channel.map(|c| c.identifier.clone()),
        complete,
    }))
}
