//! Which entities a list of products, variants or SKUs holds (`updated_after`, `search`,
//! `search_mode`, completeness), computed by the list engine in identifier order: the list
//! routes page through it, and exports walk it to the end.

use crate::context::Context;
use crate::domain::attributes::TargetEntity;
use crate::domain::time::Timestamp;
use crate::error::Failure;
use crate::search::engine::{Cut, Page};
use crate::search::parse::RawSearch;
use crate::search::select::{levels_needed, Completeness, Criteria, Requirement};
use crate::store::items::EntityKind;
use crate::store::metrics::in_parallel;
use crate::store::settings::{CompletenessProfile, Scopes};

/// Which entities a list holds, checked for shape (the definitions its filters name are
/// read when it runs).
#[derive(Debug, Default)]
pub struct Selecting {
    pub updated_after: Option<Timestamp>,
    pub search: Option<RawSearch>,
    /// `search_mode=any`: a match of any key, not all.
    pub any: bool,
    pub completeness: Option<CompletenessQuery>,
}

/// Whether a list call first brings the engine up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    Now,
    Skip,
}

/// A refused query parameter.
pub(crate) fn bad_param(name: &str, problem: impl std::fmt::Display) -> Failure {
    Failure::invalid(format!("query parameter '{name}': {problem}"))
}

/// `completeness_profile`, `completeness` and `channel`, checked for shape.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletenessQuery {
    pub profile: String,
    /// `None`: the profile is only checked, nothing is filtered.
    pub complete: Option<bool>,
    pub channel: Option<String>,
}

/// The entity types whose snapshots answer `req` for a list of `target`, known before the
/// attribute definitions are read (so both reads go out together).
fn levels(target: EntityKind, req: &Selecting) -> Vec<EntityKind> {
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

/// The requested page of the entities of `target` the list returns (identifier order), and
/// their total, from the list engine (`search/engine.rs`): one round trip brings it up to
/// date (the embedded engine: one delta Query per shard of each entity type involved) and,
/// with `search` or completeness, reads the definitions, scopes and profile they name (one
/// BatchGetItem). Only the page's entries are copied out of the engine. With
/// [`Refresh::Skip`] the engine answers from what it knows (an export's later pages: the
/// first page of its run brought it up to date past the export's `asOf`).
pub async fn matching(
    cx: &Context,
    org: &str,
    target: EntityKind,
    req: &Selecting,
    (cut, limit): (Cut<'_>, usize),
    refresh: Refresh,
) -> Result<Page, Failure> {
    let engine = &cx.lists;
    let kinds = levels(target, req);
    let refresh = async {
        match refresh {
            Refresh::Now => engine.refresh(org, &kinds).await,
            Refresh::Skip => Ok(()),
        }
    };
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
    Ok(engine.page(org, target, &criteria, cut, limit))
}

/// The completeness condition of a request: the profile must exist, the channel must exist
/// and be one of the profile's (when it names channels); without `channel`, the default
/// channel (the profile's first channel when the profile does not apply to the default).
/// Locales: the profile's, else the channel's, else the default language.
fn completeness(
    q: &CompletenessQuery,
    profile: Option<&CompletenessProfile>,
    scopes: &Scopes,
) -> Result<Option<Completeness>, Failure> {
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
