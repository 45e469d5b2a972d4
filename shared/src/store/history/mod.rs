//! Change history (decisions.md, "Change history"): one item per change of a product,
//! variant, SKU or asset, written by the change feed from the table's stream (never on a
//! request's path), in a partition per entity (`history_pk`) that outlives the entity,
//! read newest first. An item's key is a function of the change alone (its time and
//! event). Each entry also carries its number in the entity's history (`n`, from 1), and
//! the partition a head item (`~head`, after every entry) with the newest entry's number
//! and position: a page's total is the head's number less the oldest entry's, two small
//! reads whatever the history's length (`pages.rs`). A batch delivered again finds its
//! entries at or before the head's position, written already, and writes them no more.

use super::keys::HISTORY_HEAD_SK;
use super::keys::{history_pk, history_sk, item_key, tombstone_pk, TOMBSTONE_SK};
use super::ops::Item;
use super::writes::BY;
use super::{Store, StoreError};
use crate::domain::actor::Actor;
use crate::domain::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

mod pages;

pub use pages::HistoryPage;

/// How long history is kept.
pub const HISTORY_RETENTION_SECS: i64 = 90 * 24 * 3600;

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
/// long as that entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct HeadItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    n: u64,
    pos: String,
    ttl: i64,
}

/// Numbers `entries` (of one organization) after the heads of their histories, which
/// `heads` holds by partition: the items to write, the entries the heads show written
/// already left out, and the heads to write after them.
fn numbered(
    org: &str,
    entries: &[Entry],
    heads: &HashMap<String, HeadItem>,
) -> (Vec<EntryItem>, Vec<HeadItem>) {
    let mut by_history: BTreeMap<String, Vec<EntryItem>> = BTreeMap::new();
    for e in entries {
        let item = EntryItem::of(org, e);
        by_history.entry(item.pk.clone()).or_default().push(item);
    }
    let (mut items, mut new_heads) = (Vec::new(), Vec::new());
    for (pk, mut list) in by_history {
        list.sort_by(|a, b| a.sk.cmp(&b.sk));
        let head = heads.get(&pk);
        let mut n = head.map_or(0, |h| h.n);
        let mut last: Option<(String, i64)> = None;
        for mut item in list {
            if head.is_some_and(|h| item.sk <= h.pos) {
                continue;
            }
            n += 1;
            item.n = Some(n);
            last = Some((item.sk.clone(), item.ttl));
            items.push(item);
        }
        if let Some((pos, ttl)) = last {
            new_heads.push(HeadItem {
                pk: pk.clone(),
                sk: HISTORY_HEAD_SK.to_string(),
                n,
                pos,
                ttl,
            });
        }
    }
    (items, new_heads)
}

impl EntryItem {
    fn of(org: &str, e: &Entry) -> Self {
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
            ttl: e.at.millis() / 1000 + HISTORY_RETENTION_SECS,
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
    /// Writes entries of `org`'s history (at most one per key), numbered after their
    /// histories' heads: one BatchGetItem of the heads (per 100 histories), the entries
    /// (BatchWriteItem, 25 a request, in parallel), then the heads, once every entry is
    /// written. The entries of a batch delivered again are at or before their heads: not
    /// written again.
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
        keys.sort_by_key(|k| text(k, super::keys::PK).map(str::to_string));
        keys.dedup();
        let heads: HashMap<String, HeadItem> = self
            .batch_get(keys)
            .await?
            .into_iter()
            .filter_map(|item| serde_dynamo::from_item::<_, HeadItem>(item).ok())
            .map(|h| (h.pk.clone(), h))
            .collect();
        let (items, heads) = numbered(org, entries, &heads);
        self.batch_put(to_items(&items, "history entry")?).await?;
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
mod tests {
    use super::*;

    #[test]
    fn an_entry_keys_by_its_change_alone_and_reads_back() {
        let e = Entry {
            entity_type: "sku".into(),
            identifier: "s#1".into(),
            state: Timestamp::parse("2026-11-27T10:00:00.123Z").unwrap(),
            at: Timestamp::parse("2026-11-27T10:00:00.123Z").unwrap(),
            event: Event::Updated,
            by: Some(Actor::Import("imp_1".into())),
            changes: Some(r#"{"name":{"old":"a","new":"b"}}"#.into()),
        };
        let item = EntryItem::of("org1", &e);
        assert_eq!(item.pk, "O#org1#H#sku#s#1");
        assert_eq!(item.sk, "2026-11-27T10:00:00.123Z#3");
        assert_eq!(item.ttl, e.at.millis() / 1000 + 90 * 24 * 3600);
        let av: Item = serde_dynamo::to_item(&item).unwrap();
        // the same change makes the same item: a batch delivered again rewrites it as it was
        assert_eq!(
            av,
            serde_dynamo::to_item(EntryItem::of("org1", &e.clone())).unwrap()
        );
        let back: EntryItem = serde_dynamo::from_item(av).unwrap();
        assert_eq!(back.entry(), Some(e.clone()));
        assert_eq!(e.id(), format!("h{}3", e.at.millis()));
        // a deletion is keyed by the state it ended: newest first, it comes before the
        // update or creation that made that state
        let rank = |event| history_sk("t", Event::rank(event));
        assert!(rank(Event::Deleted) > rank(Event::Updated));
        assert!(rank(Event::Updated) > rank(Event::Created));
    }

    #[test]
    fn entries_are_numbered_after_their_head_and_a_batch_again_writes_nothing() {
        let e = |id: &str, ms: i64, event| Entry {
            entity_type: "product".into(),
            identifier: id.into(),
            state: Timestamp::from_millis(ms),
            at: Timestamp::from_millis(ms),
            event,
            by: None,
            changes: None,
        };
        let batch = vec![
            e("a", 2_000, Event::Updated),
            e("b", 1_000, Event::Created),
            e("a", 1_000, Event::Created),
            e("a", 2_000, Event::Deleted),
        ];
        let (items, heads) = numbered("o", &batch, &HashMap::new());
        let numbers: Vec<(&str, &str, Option<u64>)> = items
            .iter()
            .map(|i| (i.eid.as_str(), i.ev.as_str(), i.n))
            .collect();
        assert_eq!(
            numbers,
            vec![
                ("a", "created", Some(1)),
                ("a", "updated", Some(2)),
                ("a", "deleted", Some(3)),
                ("b", "created", Some(1)),
            ]
        );
        let heads: HashMap<String, HeadItem> =
            heads.into_iter().map(|h| (h.pk.clone(), h)).collect();
        let a = &heads["O#o#H#product#a"];
        assert_eq!((a.n, a.sk.as_str()), (3, HISTORY_HEAD_SK));
        assert_eq!(a.pos, EntryItem::of("o", &batch[3]).sk);
        // the same batch again: every entry is at or before its head
        assert_eq!(numbered("o", &batch, &heads), (Vec::new(), Vec::new()));
        // the next change goes on from the head
        let (items, next) = numbered("o", &[e("a", 3_000, Event::Created)], &heads);
        assert_eq!(items[0].n, Some(4));
        assert_eq!(next[0].n, 4);
    }
}
