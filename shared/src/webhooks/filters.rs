//! A subscription's `filter` (decisions.md, "Subscription filters and change payloads"): the
//! lists' `search` grammar (same parser, same validation and error texts) tested on one
//! change. A key on the event's own level tests the entity, a key on an ancestor's level its
//! ancestor (`product.*` on a `sku.*` event: the SKU's product), and a key on a descendant's
//! level is refused when the filter is set. The change feed tests the entity before and
//! after each change; the delivery says whether it `entered`, `stayed` or `left`.

use crate::domain::attributes::{AttributeDefinition, AttributeType, TargetEntity};
use crate::domain::changes::decode_fields;
use crate::domain::entity_types::EntityType;
use crate::domain::time::Timestamp;
use crate::domain::values::{raw_scalars, StoredValues};
use crate::error::Failure;
use crate::search::eval::matches;
use crate::search::parse::{parse_json, Field, Filter, Operand, RawSearch};
use crate::store::items::EntityKind;
use crate::store::webhooks::EventFilter;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// The `filter` field of a request body, its JSON checked (no I/O).
#[derive(Debug)]
pub struct FilterBody {
    raw: RawSearch,
    text: String,
    any: bool,
}

/// Largest `search` a filter may keep, in bytes of its JSON: every subscription is read by
/// the change feed with each batch of its organization, and kept in one item.
pub const MAX_FILTER_BYTES: usize = 8_192;

fn bad(problem: impl std::fmt::Display) -> Failure {
    Failure::invalid(format!("field 'filter': {problem}"))
}

/// The body field as sent: `None` when absent, `Some(None)` for `null` (every change is
/// delivered), else the filter, its `search` checked as the lists check theirs.
pub fn parse(value: Option<&Value>) -> Result<Option<Option<FilterBody>>, Failure> {
    let Some(value) = value else {
        return Ok(None);
    };
    let obj = match value {
        Value::Null => return Ok(Some(None)),
        Value::Object(obj) => obj,
        _ => {
            return Err(bad(
                r#"expected null or {"search": {...}, "searchMode"?: "all"|"any"}"#,
            ))
        }
    };
    if let Some(extra) = obj.keys().find(|k| *k != "search" && *k != "searchMode") {
        return Err(bad(format!("unknown field '{extra}'")));
    }
    let any = match obj.get("searchMode") {
        None | Some(Value::Null) => false,
        Some(v) if v == "all" => false,
        Some(v) if v == "any" => true,
        Some(v) => return Err(bad(format!("'searchMode' {v} is not one of all, any"))),
    };
    let search = match obj.get("search") {
        Some(search @ Value::Object(map)) if !map.is_empty() => search,
        Some(Value::Object(_)) => return Err(bad("'search' must name at least one filter")),
        _ => {
            return Err(bad(
                "'search' is required: an object of filters, as the lists' search parameter",
            ))
        }
    };
    let text = search.to_string();
    if text.len() > MAX_FILTER_BYTES {
        return Err(bad(format!(
            "'search' must be at most {MAX_FILTER_BYTES} bytes of JSON; this one has {}",
            text.len()
        )));
    }
    Ok(Some(Some(FilterBody {
        raw: parse_json(&text)?,
        text,
        any,
    })))
}

impl FilterBody {
    /// The attribute definitions to read before [`FilterBody::kept`].
    pub fn attribute_keys(&self) -> Vec<(TargetEntity, String)> {
        self.raw.attribute_keys()
    }

    /// The filter as a subscription keeps it, each filter checked against `defs` (the lists'
    /// 400 texts).
    pub fn kept(
        &self,
        defs: &HashMap<TargetEntity, HashMap<String, AttributeDefinition>>,
    ) -> Result<EventFilter, Failure> {
        let mut types = BTreeMap::new();
        for f in self.raw.validate(defs)? {
            if let Field::Attribute {
                entity,
                key,
                attr_type,
            } = f.field
            {
                types.insert(format!("{}.{key}", entity.as_str()), attr_type);
            }
        }
        Ok(EventFilter {
            search: self.text.clone(),
            any: self.any,
            types,
        })
    }
}

/// The level of the tree an entity type is on (`None`: not a product, variant or SKU).
fn level(entity_type: &str) -> Option<EntityKind> {
    EntityKind::parse(entity_type)
}

fn depth(kind: EntityKind) -> u8 {
    match kind {
        EntityKind::Product => 1,
        EntityKind::Variant => 2,
        EntityKind::Sku => 3,
    }
}

/// The level a search key tests (`None`: the event's own, for `_identifier` and
/// `_updated_at`, or a key validation refuses).
fn key_level(key: &str) -> Option<EntityKind> {
    if key == "_family" {
        return Some(EntityKind::Product);
    }
    level(key.split_once('.')?.0)
}

/// Checks that `filter` can test every event of `topics`: product, variant and SKU events
/// only, and no key below the event's level.
pub fn check_levels(filter: &EventFilter, topics: &[String]) -> Result<(), Failure> {
    let raw = parse_json(&filter.search)?;
    for topic in topics {
        let types: Vec<&str> = match topic.split_once('.') {
            Some((entity, _)) => vec![entity],
            None => EntityType::NAMES.to_vec(),
        };
        for entity_type in types {
            let Some(event_level) = level(entity_type) else {
                return Err(bad(format!(
                    "a filter tests product, variant and sku events; topic '{topic}' covers {entity_type} events"
                )));
            };
            for key in raw.keys() {
                match key_level(key) {
                    Some(k) if depth(k) > depth(event_level) => {
                        return Err(Failure::invalid(format!(
                            "filter '{key}': a {} key cannot test {entity_type} events (topic '{topic}'); a filter may name the event's own level and its ancestors, not its descendants",
                            k.as_str()
                        )))
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// An entity's state as a filter tests it, from a stream image or a stored item.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Facts {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub vals: StoredValues,
    #[serde(default, rename = "familyId")]
    pub family_id: Option<i64>,
    /// The hierarchy-aware `updatedAt`.
    #[serde(default, rename = "tu")]
    pub updated_at: Option<Timestamp>,
    /// The entity's own last change (an ancestor's counts in its descendants' `updatedAt`).
    #[serde(default, rename = "su")]
    pub self_updated_at: Option<Timestamp>,
}

impl Facts {
    /// The facts of an item (`None`: it is empty, or does not decode as an entity).
    pub fn of(item: &serde_dynamo::Item) -> Option<Self> {
        if item.is_empty() {
            return None;
        }
        decode_fields(item, &["id", "vals", "familyId", "tu", "su"])
    }
}

/// What a filter tests for one side of a change: the entity and its ancestors.
#[derive(Debug, Clone, Copy)]
pub struct Tested<'a> {
    pub own: &'a Facts,
    pub product: Option<&'a Facts>,
    pub variant: Option<&'a Facts>,
}

/// A kept filter, ready to test changes.
#[derive(Debug, Clone)]
pub struct Compiled {
    filters: Vec<Filter>,
    any: bool,
}

impl Compiled {
    /// The filter of a subscription (`None`: it no longer parses, which a kept filter
    /// cannot: it was validated when it was set).
    pub fn of(filter: &EventFilter) -> Option<Self> {
        let mut defs: HashMap<TargetEntity, HashMap<String, AttributeDefinition>> = HashMap::new();
        for (qualified, t) in &filter.types {
            let (entity, key) = qualified.split_once('.')?;
            let entity = TargetEntity::parse(entity)?;
            defs.entry(entity).or_default().insert(
                key.to_string(),
                AttributeDefinition::simple(entity, key, *t),
            );
        }
        let filters = parse_json(&filter.search).ok()?.validate(&defs).ok()?;
        Some(Self {
            filters,
            any: filter.any,
        })
    }

    /// A filter nothing matches.
    pub fn nothing() -> Self {
        Self {
            filters: Vec::new(),
            any: true,
        }
    }

    /// The ancestor levels it tests on events of `entity_type`.
    pub fn ancestors(&self, entity_type: &str) -> Vec<EntityKind> {
        let Some(own) = level(entity_type) else {
            return Vec::new();
        };
        // `_updated_at` is hierarchy-aware, as on the lists: every ancestor's own change counts
        let hierarchy = self.filters.iter().any(|f| f.field == Field::UpdatedAt);
        let mut out: Vec<EntityKind> = self
            .filters
            .iter()
            .filter_map(|f| key_level(&f.key))
            .chain(
                [EntityKind::Product, EntityKind::Variant]
                    .into_iter()
                    .filter(|_| hierarchy),
            )
            .filter(|k| depth(*k) < depth(own))
            .collect();
        out.sort_by_key(|k| depth(*k));
        out.dedup();
        out
    }

    /// Whether the entity of an `entity_type` event matches, as `t` shows it at `now`.
    pub fn matches(&self, entity_type: &str, t: &Tested<'_>, now: Timestamp) -> bool {
        self.judge(entity_type, t, now, &mut Budget::new(usize::MAX))
            .unwrap_or(false)
    }

    /// [`Compiled::matches`] within `budget`: every condition is charged the bytes it
    /// compares before it runs (all of its operators are linear in them), so a filter whose
    /// judgement would cost more than is left stops there, its work bounded.
    pub fn judge(
        &self,
        entity_type: &str,
        t: &Tested<'_>,
        now: Timestamp,
        budget: &mut Budget,
    ) -> Result<bool, OverBudget> {
        let own = level(entity_type);
        let any = self.any;
        for f in &self.filters {
            let facts = match key_level(&f.key) {
                Some(k) if Some(k) != own => match k {
                    EntityKind::Product => t.product,
                    EntityKind::Variant => t.variant,
                    EntityKind::Sku => None,
                },
                _ => Some(t.own),
            };
            // an entity whose ancestor is gone matches no key of it, as on the lists
            let holds = match facts {
                Some(facts) => one(f, facts, hierarchy_updated_at(own, t), now, budget)?,
                None => false,
            };
            if holds == any {
                // `any`: the first that holds decides; `all`: the first that does not
                return Ok(any);
            }
        }
        Ok(!any)
    }
}

/// How many bytes the filters of one change may still compare (the change feed gives each
/// record [`Budget::PER_RECORD`] over all of its subscriptions' filters).
#[derive(Debug)]
pub struct Budget {
    left: usize,
}

/// A filter's judgement would have compared more bytes than its budget had left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget;

impl Budget {
    /// One record's budget: 16 MiB of compared bytes (a 400 KB entity tested by a filter of
    /// 20 keys, before and after its change), a few milliseconds of linear work, so a batch
    /// of 100 records is judged in well under the feed's timeout whatever its filters hold.
    pub const PER_RECORD: usize = 16 << 20;

    pub fn new(bytes: usize) -> Self {
        Self { left: bytes }
    }

    fn charge(&mut self, bytes: usize) -> Result<(), OverBudget> {
        self.left = self.left.checked_sub(bytes).ok_or(OverBudget)?;
        Ok(())
    }
}

/// The entity's hierarchy-aware `updatedAt`: its own tree time, or its product's or variant's
/// own last change when later (`search/select.rs` computes the lists' the same way).
fn hierarchy_updated_at(own: Option<EntityKind>, t: &Tested<'_>) -> Option<Timestamp> {
    let mut at = t.own.updated_at;
    let above: &[Option<&Facts>] = match own {
        Some(EntityKind::Variant) => &[t.product][..],
        Some(EntityKind::Sku) => &[t.product, t.variant][..],
        _ => &[],
    };
    for a in above.iter().flatten() {
        at = at.max(a.self_updated_at);
    }
    at
}

/// Whether `facts` satisfy every condition of `f` (`updated_at`: the tested entity's
/// hierarchy-aware `updatedAt`).
fn one(
    f: &Filter,
    facts: &Facts,
    updated_at: Option<Timestamp>,
    now: Timestamp,
    budget: &mut Budget,
) -> Result<bool, OverBudget> {
    let (t, values): (AttributeType, Vec<String>) = match &f.field {
        Field::Attribute { key, attr_type, .. } => (
            *attr_type,
            facts
                .vals
                .get(key)
                .map(|a| {
                    a.entries
                        .iter()
                        .flat_map(|e| raw_scalars(a.is_multi, &e.value))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        Field::Family => (
            AttributeType::Select,
            facts.family_id.map(|i| i.to_string()).into_iter().collect(),
        ),
        Field::UpdatedAt => (
            AttributeType::Datetime,
            updated_at.map(|t| t.to_string()).into_iter().collect(),
        ),
        Field::Identifier => (AttributeType::Text, vec![facts.id.clone()]),
    };
    // each value is read once, and compared with the whole operand at most once
    let tested: usize = values.iter().map(String::len).sum();
    for c in &f.conditions {
        budget.charge(tested + values.len().max(1) * operand_bytes(&c.operand))?;
        if !matches(c, t, &values, now) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The bytes of a condition's operand (an `IN` set's in all).
fn operand_bytes(operand: &Operand) -> usize {
    match operand {
        Operand::Text(s) => s.len(),
        Operand::Texts(set) => set.iter().map(String::len).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
