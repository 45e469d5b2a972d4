//! Creating or replacing a category (`PUT /categories/{identifier}`): its parent must exist
//! and not be the category or below it, and concurrent moves must not close a cycle.

use super::etags;
use super::etags::check;
use super::retry::Retry;
use super::write_plan::{WritePlan, Writer};
use crate::domain::time::Timestamp;
use crate::error::Failure;
use crate::store::resources::{ResourceItem, Shelf};
use crate::store::writes::{Expect, TreeWrite};
use std::collections::HashMap;

/// Deepest category tree accepted: the write checks every ancestor.
pub const MAX_DEPTH: usize = 32;

/// A category's fields as a PUT sets them (validated).
pub struct CategoryInput<'a> {
    pub name: &'a str,
    pub parent: Option<&'a str>,
}

/// The category `id` as `input` sets it, under `if_match`: whether it was created, and the
/// category as stored. One Query of the categories, then one transaction: the category, the
/// parent's version moved (so a concurrent delete of the parent sees the new child) and
/// every further ancestor checked unchanged (so concurrent moves cannot close a cycle).
pub async fn put_category(
    w: &Writer<'_>,
    id: &str,
    input: &CategoryInput<'_>,
) -> Result<(bool, ResourceItem), Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    let read = || cx.store.list_resources(org, Shelf::CATEGORIES);
    let plan = |all: Vec<ResourceItem>| plan_put(org, id, input, if_match, &all);
    w.run(&format!("category '{id}'"), read, plan, Retry::from)
        .await
}

/// The attempt's writes, from every category of the organization.
fn plan_put(
    org: &str,
    id: &str,
    input: &CategoryInput<'_>,
    if_match: Option<&str>,
    all: &[ResourceItem],
) -> Result<WritePlan<(bool, ResourceItem)>, Failure> {
    let by_id: HashMap<&str, &ResourceItem> = all.iter().map(|c| (c.id.as_str(), c)).collect();
    let chain = match input.parent {
        Some(p) => ancestors(&by_id, id, p)?,
        None => Vec::new(),
    };
    let existing = by_id.get(id).copied();
    check(
        if_match,
        existing.map(etags::resource).as_deref(),
        "category",
    )?;
    let at = Timestamp::next_after(existing.map(|c| c.updated_at));
    let (mut item, expect) = match existing {
        Some(c) => (c.clone(), Expect::Version(c.ver)),
        None => (
            ResourceItem::new(org, Shelf::CATEGORIES, id, input.name, at),
            Expect::Absent,
        ),
    };
    let created = existing.is_none();
    let changed = item.name != input.name || item.parent.as_deref() != input.parent;
    if !created && !changed {
        return Ok(WritePlan::unchanged((created, item)));
    }
    item.name = input.name.to_string();
    item.parent = input.parent.map(str::to_string);
    item.touch(at);
    let mut write = TreeWrite::new();
    write.put_resource(org, &item, expect)?;
    for (n, a) in chain.iter().enumerate() {
        // the parent's version moves, every further ancestor's is checked
        write.resource_version(a, n == 0)?;
    }
    Ok(WritePlan {
        write,
        outcome: (created, item),
    })
}

/// The ancestors of `parent` (itself first), or a 400 when `id` is among them (a cycle) or
/// the chain is deeper than `MAX_DEPTH`.
fn ancestors<'a>(
    by_id: &HashMap<&str, &'a ResourceItem>,
    id: &str,
    parent: &str,
) -> Result<Vec<&'a ResourceItem>, Failure> {
    let mut chain = Vec::new();
    let mut next = Some(parent);
    while let Some(p) = next {
        if p == id {
            return Err(Failure::invalid(format!(
                "field 'parent': category '{parent}' is '{id}' or one of its descendants"
            )));
        }
        let Some(c) = by_id.get(p) else {
            return Err(Failure::invalid(format!(
                "field 'parent': category '{p}' does not exist"
            )));
        };
        chain.push(*c);
        if chain.len() > MAX_DEPTH {
            return Err(Failure::invalid(format!(
                "field 'parent': categories nest at most {MAX_DEPTH} levels"
            )));
        }
        next = c.parent.as_deref();
    }
    Ok(chain)
}
