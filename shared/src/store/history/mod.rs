//! Change history (decisions.md, "Change history"): one item per change of a product,
//! variant, SKU or asset, written by the change feed from the table's stream (never on a
//! request's path), in a partition per entity (`history_pk`) that outlives the entity,
//! read newest first. An item's key is a function of the change alone (its time and
//! event). Each entry also carries its number in the entity's history (`n`, from 1), and
//! the partition a head item (`~head`, after every entry) with the newest entry's number
//! and position: a page's total is the head's number less the oldest entry's, two small
//! reads whatever the history's length (`pages.rs`). A batch delivered again finds its
//! entries at or before the head's position, written already, and writes them no more.
//! A history keeps its newest `MAX_HISTORY_ENTRIES` entries (`trim.rs` finds the oldest
//! past it) for the organization's `historyRetentionDays`, and can be erased (`erase.rs`).

use super::items::OrgItem;
use super::keys::{history_pk, history_sk, item_key, tombstone_pk, TOMBSTONE_SK};
use super::keys::{org_pk, HISTORY_HEAD_SK, ORG_SK};
use super::ops::Item;
use super::writes::BY;
use super::{Store, StoreError};
use crate::domain::actor::Actor;
use crate::domain::limits::{HISTORY_RETENTION_DAYS, MAX_HISTORY_ENTRIES};
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

mod erase;
mod pages;
mod trim;

pub use pages::HistoryPage;
use trim::Trim;

/// Seconds in a day of retention.
const DAY_SECS: i64 = 24 * 3600;

/// The largest `changes` an entry keeps (an item holds at most 400 KB): a larger one is
/// kept as omitted.
pub const MAX_CHANGES_BYTES: usize = 350_000;

/// What happened to the entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Created,
    Updated,
    Deleted,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Created => "created",
            Event::Updated => "updated",
            Event::Deleted => "deleted",
        }
    }

    /// Its place among entries keyed by one time (`history_sk`): a deletion is keyed by the
    /// state it ended, so it follows the creation or update that made that state.
    fn rank(self) -> u8 {
        match self {
            Event::Created => 2,
            Event::Updated => 3,
            Event::Deleted => 4,
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Event::Created, Event::Updated, Event::Deleted]
            .into_iter()
            .find(|e| e.as_str() == s)
    }
}

/// One change of one entity, as history keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub entity_type: String,
    pub identifier: String,
    /// The `su` of the state the change made (a deletion: of the state it ended). With the
    /// event it keys the entry, so the same stream record always makes the same key.
    pub state: Timestamp,
    /// When the change happened (a deletion: its tombstone's time).
    pub at: Timestamp,
    pub event: Event,
    /// Who made it (`None`: a write that recorded no one, or one from before history).
    pub by: Option<Actor>,
    /// The `changes` JSON text (`None`: larger than [`MAX_CHANGES_BYTES`], omitted).
    pub changes: Option<String>,
}

impl Entry {
    /// Its position in the entity's history (also its cursor position).
    pub fn position(&self) -> String {
        history_sk(&self.state.to_string(), self.event.rank())
    }

    /// Its id: opaque, unique in the entity's history.
    pub fn id(&self) -> String {
        format!("h{}{}", self.state.millis(), self.event.rank())
    }
}

/// An entry as the table keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct EntryItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    /// `<type>`, `<identifier>`: the entity, so an item reads back alone.
    et: String,
    eid: String,
    at: Timestamp,
    ev: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ch: Option<String>,
    /// Its number in the entity's history, from 1 (absent on entries written before
    /// entries were numbered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    n: Option<u64>,
    ttl: i64,
}

/// The head of an entity's history: the newest entry's number and position, kept as
/// long as every entry (its time to live is theirs, the latest). After an erasure it is
/// the erasure's mark (`erase.rs`): no entry is left, and its position is the erasure's
/// time, so that the stream's records of what it erased are written no more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct HeadItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    n: u64,
    pos: String,
    ttl: i64,
    /// When the history was last erased (only on the erasure's mark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    erased: Option<Timestamp>,
}

/// What writing a batch's entries of one organization takes: the entries (numbered after
/// their histories' heads, each with its time to live), the oldest entries past the bound
/// to delete with them, and the heads to write once both are done.
#[derive(Debug, Default, PartialEq)]
struct Numbered {
    items: Vec<EntryItem>,
    trims: Vec<Trim>,
    heads: Vec<HeadItem>,
}

/// Numbers `entries` (of one organization) after the heads of their histories, which
/// `heads` holds by partition, leaving out those the heads show written already. Each
/// entry lives `retention` seconds from its change, and no shorter than the entries before
/// it (a history expires from its oldest entry, so its numbers stay contiguous and its
/// total exact). A history that passes `bound` entries keeps its newest `bound`: the
/// entries numbered up to its new number less `bound` go, the batch's own unwritten and the
/// oldest written ones (`Trim`, a count of them, since their keys are not known here).
fn numbered(
    org: &str,
    entries: &[Entry],
    heads: &HashMap<String, HeadItem>,
    retention: i64,
    bound: u64,
) -> Numbered {
    let mut by_history: BTreeMap<String, Vec<EntryItem>> = BTreeMap::new();
    for e in entries {
        let item = EntryItem::of(org, e, retention);
        by_history.entry(item.pk.clone()).or_default().push(item);
    }
    let mut out = Numbered::default();
    for (pk, mut list) in by_history {
        list.sort_by(|a, b| a.sk.cmp(&b.sk));
        let head = heads.get(&pk);
        let before = head.map_or(0, |h| h.n);
        let mut n = before;
        let mut ttl = head.map_or(i64::MIN, |h| h.ttl);
        let mut last = None;
        let mut items = Vec::new();
        for mut item in list {
            if head.is_some_and(|h| item.sk <= h.pos) {
                continue;
            }
            n += 1;
            ttl = ttl.max(item.ttl);
            (item.n, item.ttl) = (Some(n), ttl);
            last = Some(item.sk.clone());
            items.push(item);
        }
        let Some(pos) = last else {
            continue;
        };
        // past the bound: every entry numbered up to `through` goes (those up to `gone`
        // went before, with the writes that passed them)
        let (through, gone) = (n.saturating_sub(bound), before.saturating_sub(bound));
        items.retain(|i| i.n.is_some_and(|k| k > through));
        let count = through.min(before).saturating_sub(gone);
        if count > 0 {
            out.trims.push(Trim {
                pk: pk.clone(),
                through,
                count: count as usize,
            });
        }
        out.items.extend(items);
        out.heads.push(HeadItem {
            pk,
            sk: HISTORY_HEAD_SK.to_string(),
            n,
            pos,
            ttl,
            erased: None,
        });
    }
    out
}

impl EntryItem {
    /// The item of `e`, kept `retention` seconds from the change.
    fn of(org: &str, e: &Entry, retention: i64) -> Self {
        Self {
            pk: history_pk(org, &e.entity_type, &e.identifier),
            sk: e.position(),
            et: e.entity_type.clone(),
            eid: e.identifier.clone(),
            at: e.at,
            ev: e.event.as_str().to_string(),
            by: e.by.as_ref().map(Actor::encode),
            ch: e.changes.clone(),
            n: None,
            ttl: e.at.millis() / 1000 + retention,
        }
    }

    fn entry(self) -> Option<Entry> {
        let state = Timestamp::parse(self.sk.split('#').next()?)?;
        Some(Entry {
            entity_type: self.et,
            identifier: self.eid,
            state,
            at: self.at,
            event: Event::parse(&self.ev)?,
            by: self.by.as_deref().and_then(Actor::decode),
            changes: self.ch,
        })
    }
}

/// A deletion as its tombstone tells it: when, by whom, and the state it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Deletion {
    pub at: Timestamp,
    pub by: Option<Actor>,
    /// The `su` of the state the deletion ended.
    pub was: Option<Timestamp>,
}

/// `values` as table items.
fn to_items<T: Serialize>(values: &[T], what: &str) -> Result<Vec<Item>, StoreError> {
    values
        .iter()
        .map(|v| serde_dynamo::to_item(v).map_err(|e| StoreError::serde(what, e)))
        .collect()
}

/// A string attribute of an item.
fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

impl Store {
    /// A Query of the entries of history partition `pk` (its head excluded), oldest first.
    fn history_entries(&self, pk: &str) -> super::ops::QueryBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk AND SK < :head")
            .expression_attribute_values(":pk", AttributeValue::S(pk.to_string()))
            .expression_attribute_values(":head", AttributeValue::S(HISTORY_HEAD_SK.into()))
    }

    /// Writes entries of `org`'s history (at most one per key), numbered after their
    /// histories' heads and kept for the organization's retention: one BatchGetItem of the
    /// heads and the organization's settings item (per 100 histories); for each history
    /// that passes the bound, the keys of its oldest entries past it (`trim.rs`: one
    /// Query, in parallel); the entries and those deletes (BatchWriteItem, 25 a request,
    /// in parallel), then the heads, once every entry is written. The entries of a batch
    /// delivered again are at or before their heads: not written again.
    pub async fn put_history(&self, org: &str, entries: &[Entry]) -> Result<(), StoreError> {
        let mut keys: Vec<Item> = entries
            .iter()
            .map(|e| {
                item_key(
                    history_pk(org, &e.entity_type, &e.identifier),
                    HISTORY_HEAD_SK,
                )
            })
            .collect();
        keys.push(item_key(org_pk(org), ORG_SK));
        let mut heads: HashMap<String, HeadItem> = HashMap::new();
        let mut days = *HISTORY_RETENTION_DAYS.end();
        for item in self.batch_get(keys).await? {
            if text(&item, super::keys::SK) == Some(ORG_SK) {
                if let Ok(settings) = serde_dynamo::from_item::<_, OrgItem>(item) {
                    days = settings.history_retention_days();
                }
            } else if let Ok(h) = serde_dynamo::from_item::<_, HeadItem>(item) {
                heads.insert(h.pk.clone(), h);
            }
        }
        let retention = i64::from(days) * DAY_SECS;
        let Numbered {
            items,
            trims,
            heads,
        } = numbered(org, entries, &heads, retention, MAX_HISTORY_ENTRIES);
        let past_bound = self.oldest_past_bound(&trims).await?;
        self.batch_write(to_items(&items, "history entry")?, past_bound)
            .await?;
        self.batch_put(to_items(&heads, "history head")?).await
    }

    /// The tombstones of deleted entities `(type, identifier)` of `org`, by entity: one
    /// BatchGetItem per 100 (absent: no tombstone, or it expired).
    pub async fn deletions_of(
        &self,
        org: &str,
        deleted: &[(&str, &str)],
    ) -> Result<HashMap<(String, String), Deletion>, StoreError> {
        if deleted.is_empty() {
            return Ok(HashMap::new());
        }
        let keys = deleted
            .iter()
            .map(|(t, id)| item_key(tombstone_pk(org, t, id), TOMBSTONE_SK))
            .collect();
        let mut out = HashMap::new();
        for item in self.batch_get(keys).await? {
            let pk = text(&item, super::keys::PK).unwrap_or_default();
            let Some(&(t, id)) = deleted
                .iter()
                .find(|(t, id)| tombstone_pk(org, t, id) == pk)
            else {
                continue;
            };
            let Some(at) = text(&item, "su").and_then(Timestamp::parse) else {
                continue;
            };
            out.insert(
                (t.to_string(), id.to_string()),
                Deletion {
                    at,
                    by: text(&item, BY).and_then(Actor::decode),
                    was: text(&item, "was").and_then(Timestamp::parse),
                },
            );
        }
        Ok(out)
    }

    /// Whether `entity_type` `identifier` exists now: one GetItem of its item (a variant's
    /// or SKU's identity item), for telling an entity without history from none.
    pub async fn entity_exists(
        &self,
        org: &str,
        entity_type: &str,
        identifier: &str,
    ) -> Result<bool, StoreError> {
        use super::keys::{
            product_pk, resource_pk, sku_ref_pk, variant_ref_pk, PRODUCT_SK, REF_SK,
        };
        let key = match entity_type {
            "product" => item_key(product_pk(org, identifier), PRODUCT_SK),
            "variant" => item_key(variant_ref_pk(org, identifier), REF_SK),
            "sku" => item_key(sku_ref_pk(org, identifier), REF_SK),
            _ => item_key(resource_pk(org, entity_type), identifier),
        };
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .projection_expression("PK")
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("GetItem", e))?;
        Ok(out.item.is_some_and(|i| !i.is_empty()))
    }
}

#[cfg(test)]
mod tests;
