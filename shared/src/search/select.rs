//! Which entities a list returns, computed over the warm snapshots: `updated_after`, the
//! `search` filters (across levels: a descendant filter matches through any descendant, an
//! ancestor filter through the ancestor), `search_mode` and completeness, in identifier order.

use super::eval::{matches, scalars};
use super::operators::Operator;
use super::parse::{Field, Filter};
use crate::domain::attributes::{AttributeType, TargetEntity};
use crate::domain::time::Timestamp;
use crate::search::entities::Entry;
use crate::search::packed::{Attr, Value};
use crate::search::selections::SelectedIds;
use crate::search::snapshot::Levels;
use crate::store::items::EntityKind;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

#[cfg(test)]
pub(crate) mod scale;
#[cfg(test)]
mod tests;

/// One required attribute of a completeness profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub level: EntityKind,
    pub key: String,
    /// `<entity>.name` without an attribute `name`: the entity's own name.
    pub builtin_name: bool,
}

/// A completeness condition on /products.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completeness {
    pub required: Vec<Requirement>,
    /// Locales every localized required attribute needs a value in.
    pub locales: Vec<String>,
    /// The channel channel-scoped required attributes need a value for.
    pub channel: Option<String>,
    /// `true`: complete products; `false`: incomplete ones.
    pub complete: bool,
}

/// What a list asks for.
#[derive(Debug, Clone, Default)]
pub struct Criteria {
    pub filters: Vec<Filter>,
    /// `search_mode=any`.
    pub any: bool,
    pub updated_after: Option<Timestamp>,
    pub completeness: Option<Completeness>,
    pub now: Option<Timestamp>,
}

impl Criteria {
    /// Whether the criteria select every entity (no filter of any kind).
    pub fn is_everything(&self) -> bool {
        self.filters.is_empty() && self.updated_after.is_none() && self.completeness.is_none()
    }

    /// What names these criteria's selection while the data stays the same: `None` when the
    /// selection also depends on the clock (`IN_THE_LAST`, `NOT_IN_THE_LAST`).
    pub fn selection_key(&self) -> Option<String> {
        let relative = self.filters.iter().any(|f| {
            f.conditions
                .iter()
                .any(|c| matches!(c.op, Operator::InTheLast | Operator::NotInTheLast))
        });
        (!relative).then(|| format!("{self:?}"))
    }
}

/// The entity types a list of `target` needs snapshots of, for filters on `keys` (as given,
/// before validation) and `updated_after`.
pub fn levels_needed<'a>(
    target: EntityKind,
    keys: impl IntoIterator<Item = &'a str>,
    updated_after: bool,
) -> Vec<EntityKind> {
    let mut kinds = vec![target];
    // updatedAt of variants and SKUs takes their ancestors' own changes into account
    let mut ancestors = updated_after;
    for key in keys {
        match key {
            "_family" => kinds.push(EntityKind::Product),
            "_updated_at" => ancestors = true,
            _ => kinds.extend(
                key.split_once('.')
                    .and_then(|(e, _)| TargetEntity::parse(e))
                    .and_then(kind_of),
            ),
        }
    }
    if ancestors && target != EntityKind::Product {
        kinds.push(EntityKind::Product);
        if target == EntityKind::Sku {
            kinds.push(EntityKind::Variant);
        }
    }
    let mut unique = Vec::new();
    for k in kinds {
        if !unique.contains(&k) {
            unique.push(k);
        }
    }
    unique
}

fn kind_of(entity: TargetEntity) -> Option<EntityKind> {
    match entity {
        TargetEntity::Product => Some(EntityKind::Product),
        TargetEntity::Variant => Some(EntityKind::Variant),
        TargetEntity::Sku => Some(EntityKind::Sku),
        TargetEntity::Bundle | TargetEntity::Asset => None,
    }
}

/// The entity's hierarchy-aware `updatedAt` (docs/design/table.md, "Change tracking").
fn updated_at(levels: &Levels<'_>, kind: EntityKind, e: &Entry) -> Timestamp {
    let su = |k: EntityKind, id: &Option<Arc<str>>| {
        id.as_deref()
            .and_then(|id| levels.of(k).get(id))
            .map(|p| p.self_updated_at)
    };
    let mut t = e.updated_at;
    if kind != EntityKind::Product {
        t = t.max(su(EntityKind::Product, &e.pid).unwrap_or(t));
    }
    if kind == EntityKind::Sku {
        t = t.max(su(EntityKind::Variant, &e.vid).unwrap_or(t));
    }
    t
}

/// How a filter is decided for the target's entities.
enum Test<'a, 'f> {
    /// On the entity itself.
    Own(&'f Filter),
    /// The entity (`Own`), its product (`Pid`) or its variant (`Vid`) is in the set.
    Member(HashSet<&'a str>, Via),
}

#[derive(Clone, Copy)]
enum Via {
    Own,
    Pid,
    Vid,
}

impl Via {
    fn key(self, e: &Entry) -> Option<&str> {
        match self {
            Via::Own => Some(&*e.id),
            Via::Pid => e.pid.as_deref(),
            Via::Vid => e.vid.as_deref(),
        }
    }
}

fn filter_level(f: &Filter, target: EntityKind) -> EntityKind {
    match &f.field {
        Field::Attribute { entity, .. } => kind_of(*entity).unwrap_or(target),
        Field::Family => EntityKind::Product,
        Field::UpdatedAt | Field::Identifier => target,
    }
}

/// Whether one entity of `kind` satisfies every condition of `f`.
fn entity_matches(
    levels: &Levels<'_>,
    kind: EntityKind,
    e: &Entry,
    f: &Filter,
    now: Timestamp,
) -> bool {
    let (t, values) = match &f.field {
        Field::Attribute { key, attr_type, .. } => {
            (*attr_type, scalars(e.packed.values().get(key)))
        }
        Field::Family => (
            AttributeType::Select,
            e.family_id
                .map(|i| Cow::Owned(i.to_string()))
                .into_iter()
                .collect(),
        ),
        Field::UpdatedAt => (
            AttributeType::Datetime,
            vec![Cow::Owned(updated_at(levels, kind, e).to_string())],
        ),
        Field::Identifier => (AttributeType::Text, vec![Cow::Borrowed(&*e.id)]),
    };
    f.conditions.iter().all(|c| matches(c, t, &values, now))
}

fn plan<'a, 'f>(
    levels: &'a Levels<'_>,
    target: EntityKind,
    f: &'f Filter,
    now: Timestamp,
) -> Test<'a, 'f> {
    let level = filter_level(f, target);
    if level == target {
        return Test::Own(f);
    }
    let hits = levels
        .of(level)
        .values()
        .filter(|e| entity_matches(levels, level, e, f, now));
    if level < target {
        let via = if level == EntityKind::Product {
            Via::Pid
        } else {
            Via::Vid
        };
        Test::Member(hits.map(|e| &*e.id).collect(), via)
    } else {
        // a descendant matches: its product (or variant) does
        let up = if target == EntityKind::Product {
            Via::Pid
        } else {
            Via::Vid
        };
        Test::Member(hits.filter_map(|e| up.key(e)).collect(), Via::Own)
    }
}

/// Whether `attr` holds a value in every locale of `locales` (when localized) and for
/// `channel` (when channel-scoped). Values are validated on write, so an attribute is
/// localized (scoped) exactly when its entries carry locales (channels).
pub fn has_value(attr: Option<Attr<'_>>, locales: &[String], channel: Option<&str>) -> bool {
    let Some(attr) = attr else {
        return false;
    };
    let entries: Vec<Value<'_>> = attr
        .values()
        .filter(|e| !e.value.is_empty() && e.value != "[]")
        .collect();
    let scoped = entries.iter().any(|e| e.channel.is_some());
    let localized = entries.iter().any(|e| e.locale.is_some());
    let in_channel = |e: &Value<'_>| !scoped || (channel.is_some() && e.channel == channel);
    if localized && !locales.is_empty() {
        locales.iter().all(|l| {
            entries
                .iter()
                .any(|e| in_channel(e) && e.locale == Some(l.as_str()))
        })
    } else {
        entries.iter().any(in_channel)
    }
}

fn satisfies(e: &Entry, r: &Requirement, c: &Completeness) -> bool {
    if r.builtin_name {
        return !e.name().trim().is_empty();
    }
    has_value(
        e.packed.values().get(&r.key),
        &c.locales,
        c.channel.as_deref(),
    )
}

/// Products that are not complete because of one of their variants or SKUs.
fn incomplete_through_children<'a>(levels: &'a Levels<'_>, c: &Completeness) -> HashSet<&'a str> {
    let mut out = HashSet::new();
    for level in [EntityKind::Variant, EntityKind::Sku] {
        let required: Vec<&Requirement> = c.required.iter().filter(|r| r.level == level).collect();
        if required.is_empty() {
            continue;
        }
        for e in levels.of(level).values() {
            if !required.iter().all(|r| satisfies(e, r, c)) {
                out.extend(e.pid.as_deref());
            }
        }
    }
    out
}

/// The entities of `target` whose hierarchy-aware `updatedAt` is after `t`, in identifier
/// order, found through the change indexes (their own tree changes, and the children of
/// products and variants that themselves changed): the others are not looked at.
fn updated_after<'a>(levels: &'a Levels<'_>, target: EntityKind, t: Timestamp) -> Vec<&'a Entry> {
    let own = levels.of(target);
    let mut ids: BTreeSet<&'a str> = own.tree_changed_after(t).map(|id| &**id).collect();
    if target != EntityKind::Product {
        for pid in levels.of(EntityKind::Product).changed_after(t) {
            ids.extend(own.of_product(pid).map(|id| &**id));
        }
    }
    if target == EntityKind::Sku {
        for vid in levels.of(EntityKind::Variant).changed_after(t) {
            ids.extend(own.of_variant(vid).map(|id| &**id));
        }
    }
    ids.into_iter().filter_map(|id| own.get(id)).collect()
}

/// Whether `f` holds for `e` of `target`, looked up through `e`'s ancestor or descendants
/// (what `plan` decides for every entity at once, for one entity).
fn filter_holds(
    levels: &Levels<'_>,
    target: EntityKind,
    f: &Filter,
    e: &Entry,
    now: Timestamp,
) -> bool {
    let level = filter_level(f, target);
    if level == target {
        return entity_matches(levels, target, e, f, now);
    }
    let at = levels.of(level);
    if level < target {
        let via = if level == EntityKind::Product {
            Via::Pid
        } else {
            Via::Vid
        };
        return via
            .key(e)
            .and_then(|id| at.get(id))
            .is_some_and(|a| entity_matches(levels, level, a, f, now));
    }
    let below: Box<dyn Iterator<Item = &Arc<str>>> = if target == EntityKind::Product {
        Box::new(at.of_product(&e.id))
    } else {
        Box::new(at.of_variant(&e.id))
    };
    below
        .filter_map(|id| at.get(id))
        .any(|d| entity_matches(levels, level, d, f, now))
}

/// Whether product `e` is complete as `c` counts it (its own values, its variants' and
/// SKUs').
fn complete(levels: &Levels<'_>, e: &Entry, c: &Completeness) -> bool {
    c.required.iter().all(|r| {
        if r.level == EntityKind::Product {
            return satisfies(e, r, c);
        }
        let at = levels.of(r.level);
        at.of_product(&e.id)
            .filter_map(|id| at.get(id))
            .all(|child| satisfies(child, r, c))
    })
}

/// Whether the list of `target` that `criteria` asks for holds `e`: the decision `select`
/// makes, for one entity.
fn holds(levels: &Levels<'_>, target: EntityKind, criteria: &Criteria, e: &Entry) -> bool {
    let now = criteria.now.unwrap_or_else(Timestamp::now);
    if criteria
        .updated_after
        .is_some_and(|t| updated_at(levels, target, e) <= t)
    {
        return false;
    }
    let filtered = criteria.filters.is_empty() || {
        let mut each = criteria
            .filters
            .iter()
            .map(|f| filter_holds(levels, target, f, e, now));
        if criteria.any {
            each.any(|h| h)
        } else {
            each.all(|h| h)
        }
    };
    filtered
        && criteria
            .completeness
            .as_ref()
            .is_none_or(|c| complete(levels, e, c) == c.complete)
}

/// The selection `old` brought up to date after the entities of `target` in `affected`
/// (and only they) may have entered or left it: each is decided again, the rest kept.
pub fn reselect(
    levels: &Levels<'_>,
    target: EntityKind,
    criteria: &Criteria,
    old: SelectedIds,
    affected: &BTreeSet<Arc<str>>,
) -> SelectedIds {
    let entities = levels.of(target);
    let fixed = Criteria {
        now: Some(criteria.now.unwrap_or_else(Timestamp::now)),
        ..criteria.clone()
    };
    let old = Arc::try_unwrap(old).unwrap_or_else(|shared| (*shared).clone());
    Arc::new(merge(old, affected, |id| {
        entities
            .get(id)
            .is_some_and(|e| holds(levels, target, &fixed, e))
    }))
}

/// `old` with each identifier of `affected` taken out, or put in its place when `holds`
/// says so. The runs between them are moved as they are (found by a binary search each):
/// no kept identifier is compared, cloned or dropped, which over a large selection would
/// cost a cache miss each.
fn merge(
    old: Vec<Arc<str>>,
    affected: &BTreeSet<Arc<str>>,
    holds: impl Fn(&Arc<str>) -> bool,
) -> Vec<Arc<str>> {
    let cuts: Vec<(usize, bool)> = affected
        .iter()
        .map(|id| {
            let at = old.partition_point(|x| x < id);
            (at, old.get(at) == Some(id))
        })
        .collect();
    let mut out = Vec::with_capacity(old.len() + affected.len());
    let mut rest = old.into_iter();
    let mut taken = 0;
    for (id, (at, present)) in affected.iter().zip(cuts) {
        out.extend(rest.by_ref().take(at - taken));
        taken = at;
        if present {
            rest.next();
            taken += 1;
        }
        if holds(id) {
            out.push(id.clone());
        }
    }
    out.extend(rest);
    out
}

/// The entities of `target` the list returns, in identifier order.
pub fn select<'a>(
    levels: &'a Levels<'_>,
    target: EntityKind,
    criteria: &Criteria,
) -> Vec<&'a Entry> {
    let now = criteria.now.unwrap_or_else(Timestamp::now);
    let tests: Vec<Test<'a, '_>> = criteria
        .filters
        .iter()
        .map(|f| plan(levels, target, f, now))
        .collect();
    let passes = |e: &Entry, t: &Test<'_, '_>| match t {
        Test::Own(f) => entity_matches(levels, target, e, f, now),
        Test::Member(set, via) => via.key(e).is_some_and(|k| set.contains(k)),
    };
    let completeness = criteria.completeness.as_ref().map(|c| {
        let product_level: Vec<&Requirement> = c
            .required
            .iter()
            .filter(|r| r.level == EntityKind::Product)
            .collect();
        (c, product_level, incomplete_through_children(levels, c))
    });
    let base: Box<dyn Iterator<Item = &'a Entry>> = match criteria.updated_after {
        Some(t) => Box::new(updated_after(levels, target, t).into_iter()),
        None => Box::new(levels.of(target).values()),
    };
    base.filter(|e| {
        tests.is_empty()
            || if criteria.any {
                tests.iter().any(|t| passes(e, t))
            } else {
                tests.iter().all(|t| passes(e, t))
            }
    })
    .filter(|e| match &completeness {
        None => true,
        Some((c, own, children)) => {
            let complete = own.iter().all(|r| satisfies(e, r, c)) && !children.contains(&*e.id);
            complete == c.complete
        }
    })
    .collect()
}
