//! Change history (decisions.md, "Change history"): one item per change of a product,
//! variant, SKU or asset, written by the change feed from the table's stream (never on a
//! request's path), in a partition per entity (`history_pk`) that outlives the entity,
//! read newest first. An item's key is a function of the change alone (its time and
//! event), so a stream batch delivered again writes the same items again.

use super::keys::{history_pk, history_sk, item_key, tombstone_pk, TOMBSTONE_SK};
use super::ops::Item;
use super::writes::BY;
use super::{Store, StoreError};
use crate::domain::actor::Actor;
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

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
#[derive(Serialize, Deserialize)]
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
    ttl: i64,
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

/// A string attribute of an item.
fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

/// One page of an entity's history, newest first.
#[derive(Debug)]
pub struct HistoryPage {
    pub entries: Vec<Entry>,
    /// The position of the page's last entry when more follow.
    pub next_after: Option<String>,
}

impl Store {
    /// Writes entries of `org`'s history (at most one per key): BatchWriteItem, 25 a
    /// request, in parallel. Writing the same entries again changes nothing.
    pub async fn put_history(&self, org: &str, entries: &[Entry]) -> Result<(), StoreError> {
        let items = entries
            .iter()
            .map(|e| {
                serde_dynamo::to_item(EntryItem::of(org, e))
                    .map_err(|e| StoreError::serde("history entry", e))
            })
            .collect::<Result<Vec<Item>, StoreError>>()?;
        self.batch_put(items).await
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

    /// How many entries the history of `entity_type` `identifier` holds: a COUNT Query
    /// (one request per 1 MB of entries).
    pub async fn history_count(
        &self,
        org: &str,
        entity_type: &str,
        identifier: &str,
    ) -> Result<u64, StoreError> {
        let pk = history_pk(org, entity_type, identifier);
        let mut start = None;
        let mut total = 0u64;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk")
                .expression_attribute_values(":pk", AttributeValue::S(pk.clone()))
                .select(aws_sdk_dynamodb::types::Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query", e))?;
            total += page.count.max(0) as u64;
            start = page.last_evaluated_key.filter(|k| !k.is_empty());
            if start.is_none() {
                return Ok(total);
            }
        }
    }

    /// A page of at most `limit` entries of the history of `entity_type` `identifier`,
    /// newest first, after the position `after` (a previous page's `next_after`): one
    /// Query (more only when the entries pass 1 MB).
    pub async fn history_page(
        &self,
        org: &str,
        entity_type: &str,
        identifier: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, StoreError> {
        let pk = history_pk(org, entity_type, identifier);
        let mut start = after.map(|sk| item_key(pk.clone(), sk));
        let mut items: Vec<EntryItem> = Vec::new();
        // one more than the page, to know whether another follows
        let want = limit + 1;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk")
                .expression_attribute_values(":pk", AttributeValue::S(pk.clone()))
                .scan_index_forward(false)
                .limit((want - items.len()) as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query", e))?;
            let found: Vec<EntryItem> = serde_dynamo::from_items(page.items.unwrap_or_default())
                .map_err(|e| StoreError::serde("history entry", e))?;
            items.extend(found);
            start = page.last_evaluated_key.filter(|k| !k.is_empty());
            if items.len() >= want || start.is_none() {
                break;
            }
        }
        let more = items.len() > limit;
        items.truncate(limit);
        let next_after = more.then(|| items.last().map(|i| i.sk.clone())).flatten();
        let entries = items.into_iter().filter_map(EntryItem::entry).collect();
        Ok(HistoryPage {
            entries,
            next_after,
        })
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
}
