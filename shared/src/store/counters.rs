//! Metaobject reference counters: how many stored items reference each metaobject, kept in
//! the same transactions as the items, so that deleting a metaobject and a write that starts
//! referencing it exclude each other.
//!
//! Each metaobject has [`REF_SHARDS`] counter items (`ref_counter_pk`, sort key its
//! identifier); a referencing item counts on the shard its own identifier hashes to, so a
//! metaobject referenced by a whole import spreads over that many items and partitions.
//! A write adds `ADD refs :delta` per shard it changes; a shard it adds a reference to must
//! not be `closed`. Deleting the metaobject closes every shard, each only while its count is
//! 0, in the delete's transaction. Transactions are serializable: either the write commits
//! first (a count is not 0, the delete is refused) or the delete does (a shard is closed,
//! the write is refused). Creating the metaobject again opens the shards.
//!
//! Each item records which references its counts hold (`mr`, `def/id` strings; absent when
//! none), so a write or delete knows what to take back without the values as they were
//! read. An item written before counting existed has no `mr` either: it holds nothing yet,
//! and its first write counts its references.

use super::keys::ref_counter_pk;
use super::ops::{item_key, Item};
use super::{Store, StoreError};
use crate::domain::values::{referenced_identifiers, StoredValues};
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use std::collections::{BTreeMap, BTreeSet};

/// Counter items per metaobject. Fixed for a table's life: a reference is taken back from
/// the shard its referrer's identifier hashes to, so changing it would unbalance counts.
pub const REF_SHARDS: u32 = 16;

/// The attribute of an item that lists the references its counts hold.
pub const COUNTED: &str = "mr";
/// The count on a counter item.
const REFS: &str = "refs";
/// Set on every shard of a deleted metaobject: no reference may be added to it.
const CLOSED: &str = "closed";

/// A metaobject: (definition, identifier).
pub type Ref = (String, String);

/// The metaobjects `vals` reference.
pub fn refs_of(vals: &StoredValues) -> BTreeSet<Ref> {
    vals.values()
        .filter_map(|a| {
            let def = a.metaobject_definition.as_ref()?;
            Some(
                referenced_identifiers(a)
                    .into_iter()
                    .map(move |id| (def.clone(), id)),
            )
        })
        .flatten()
        .collect()
}

/// `mr` as stored: `<definition>/<identifier>` (neither can hold `/`).
pub fn encode(refs: &BTreeSet<Ref>) -> Vec<String> {
    refs.iter().map(|(d, i)| format!("{d}/{i}")).collect()
}

/// The references an item's `mr` says its counts hold (none for an item from before
/// counting).
pub fn decode(counted: Option<&[String]>) -> BTreeSet<Ref> {
    counted
        .into_iter()
        .flatten()
        .filter_map(|s| s.split_once('/'))
        .map(|(d, i)| (d.to_string(), i.to_string()))
        .collect()
}

/// A change of one counter item: the delta, and whether it adds a reference the write did
/// not read (then the metaobject must not have been deleted since its existence check).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    pub delta: i64,
    pub guarded: bool,
}

/// The counter changes of a write, one per counter item (by partition and sort key, with
/// its metaobject): a transaction may name an item only once, so the changes of every
/// entity it holds are merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(BTreeMap<(String, String), (Ref, Count)>);

impl Counts {
    /// The changes when item `referrer` of `org`, whose counts held `counted`, is written
    /// referencing `after`; `read` is what its values referenced as read (a reference in
    /// `after` but not in `read` is new, so guarded).
    pub fn of(
        org: &str,
        referrer: &str,
        counted: &BTreeSet<Ref>,
        after: &BTreeSet<Ref>,
        read: &BTreeSet<Ref>,
    ) -> Self {
        let shard = super::keys::shard_of(referrer, REF_SHARDS);
        let mut counts = Counts::default();
        for r in after.difference(counted) {
            counts.add(org, r, shard, 1, !read.contains(r));
        }
        for r in counted.difference(after) {
            counts.add(org, r, shard, -1, false);
        }
        // a new reference to what was already counted changes no count, but is guarded
        for r in after.intersection(counted).filter(|r| !read.contains(*r)) {
            counts.add(org, r, shard, 0, true);
        }
        counts
    }

    fn add(&mut self, org: &str, r: &Ref, shard: u32, delta: i64, guarded: bool) {
        let key = (ref_counter_pk(org, &r.0, shard), r.1.clone());
        let (_, c) = self
            .0
            .entry(key)
            .or_insert_with(|| (r.clone(), Count::default()));
        c.delta += delta;
        c.guarded |= guarded;
    }

    /// Adds `other`'s changes.
    pub fn merge(&mut self, other: &Counts) {
        for (key, (r, c)) in &other.0 {
            let (_, mine) = self
                .0
                .entry(key.clone())
                .or_insert_with(|| (r.clone(), Count::default()));
            mine.delta += c.delta;
            mine.guarded |= c.guarded;
        }
    }

    /// The counter items changed.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The keys of the guarded counter items, with their metaobject.
    pub fn guarded(&self) -> Vec<(Item, Ref)> {
        self.0
            .iter()
            .filter(|(_, (_, c))| c.guarded)
            .map(|((pk, sk), (r, _))| (item_key(pk.clone(), sk.clone()), r.clone()))
            .collect()
    }

    /// One `UpdateItem ADD refs :delta` per counter item, conditioned on the shard being
    /// open when guarded; each with its metaobject and whether it is guarded.
    pub fn actions(&self) -> Result<Vec<(TransactWriteItem, Ref, bool)>, StoreError> {
        self.0
            .iter()
            .map(|((pk, sk), (r, c))| {
                let mut update = Update::builder()
                    .table_name("")
                    .set_key(Some(item_key(pk.clone(), sk.clone())))
                    .update_expression("ADD #r :d")
                    .expression_attribute_names("#r", REFS)
                    .expression_attribute_values(":d", AttributeValue::N(c.delta.to_string()));
                if c.guarded {
                    update = update
                        .condition_expression("attribute_not_exists(#c)")
                        .expression_attribute_names("#c", CLOSED);
                }
                let action = TransactWriteItem::builder()
                    .update(update.build().map_err(build_err)?)
                    .build();
                Ok((action, r.clone(), c.guarded))
            })
            .collect()
    }
}

fn build_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Other(e.to_string())
}

/// The counter item of metaobject `def`/`id` on `shard`.
pub fn counter_key(org: &str, def: &str, id: &str, shard: u32) -> Item {
    item_key(ref_counter_pk(org, def, shard), id)
}

/// Whether a counter item as read is closed (its metaobject was deleted).
pub fn is_closed(item: &Item) -> bool {
    item.contains_key(CLOSED)
}

/// Closes every shard of metaobject `def`/`id`, each only while its count is 0: the
/// actions of its delete.
pub fn close_all(org: &str, def: &str, id: &str) -> Result<Vec<TransactWriteItem>, StoreError> {
    (0..REF_SHARDS)
        .map(|n| {
            let update = Update::builder()
                .table_name("")
                .set_key(Some(counter_key(org, def, id, n)))
                .update_expression("SET #c = :t")
                .condition_expression("attribute_not_exists(#r) OR #r = :zero")
                .expression_attribute_names("#c", CLOSED)
                .expression_attribute_names("#r", REFS)
                .expression_attribute_values(":t", AttributeValue::Bool(true))
                .expression_attribute_values(":zero", AttributeValue::N("0".into()))
                .build()
                .map_err(build_err)?;
            Ok(TransactWriteItem::builder().update(update).build())
        })
        .collect()
}

/// Opens every shard of metaobject `def`/`id` again: the actions of its creation (a shard
/// closed by the delete of an earlier metaobject of that identifier would refuse every
/// reference to the new one).
pub fn open_all(org: &str, def: &str, id: &str) -> Result<Vec<TransactWriteItem>, StoreError> {
    (0..REF_SHARDS)
        .map(|n| {
            let update = Update::builder()
                .table_name("")
                .set_key(Some(counter_key(org, def, id, n)))
                .update_expression("REMOVE #c")
                .expression_attribute_names("#c", CLOSED)
                .build()
                .map_err(build_err)?;
            Ok(TransactWriteItem::builder().update(update).build())
        })
        .collect()
}

impl Store {
    /// How many stored items reference metaobject `def`/`id`, as counted (items from before
    /// counting excluded): one BatchGetItem of its shards.
    pub async fn reference_count(&self, org: &str, def: &str, id: &str) -> Result<i64, StoreError> {
        let keys = (0..REF_SHARDS)
            .map(|n| counter_key(org, def, id, n))
            .collect();
        Ok(self
            .batch_get(keys)
            .await?
            .iter()
            .filter_map(|i| i.get(REFS).and_then(|v| v.as_n().ok()))
            .filter_map(|n| n.parse::<i64>().ok())
            .sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(list: &[&str]) -> BTreeSet<Ref> {
        list.iter()
            .map(|i| ("color".to_string(), i.to_string()))
            .collect()
    }

    fn deltas(c: &Counts) -> Vec<(String, i64, bool)> {
        c.0.values()
            .map(|((_, i), c)| (i.clone(), c.delta, c.guarded))
            .collect()
    }

    #[test]
    fn added_references_count_up_guarded_and_removed_ones_down() {
        let c = Counts::of(
            "o1",
            "p1",
            &refs(&["red", "blue"]),
            &refs(&["blue", "green"]),
            &refs(&["red", "blue"]),
        );
        assert_eq!(
            deltas(&c),
            vec![("green".into(), 1, true), ("red".into(), -1, false)]
        );
    }

    #[test]
    fn an_item_from_before_counting_counts_its_references_guarding_only_new_ones() {
        // nothing counted yet: the references it had as read count without a guard (the
        // metaobject may be gone; the count then waits for one created again)
        let c = Counts::of(
            "o1",
            "p1",
            &refs(&[]),
            &refs(&["red", "blue"]),
            &refs(&["red"]),
        );
        assert_eq!(
            deltas(&c),
            vec![("blue".into(), 1, true), ("red".into(), 1, false)]
        );
    }

    #[test]
    fn merged_changes_name_each_counter_item_once() {
        let mut c = Counts::of("o1", "p1", &refs(&[]), &refs(&["red"]), &refs(&[]));
        let shard = super::super::keys::shard_of("p1", REF_SHARDS);
        // another referrer on the same shard dropping red: the deltas cancel, the guard stays
        let mut other = Counts::default();
        other.add("o1", &("color".into(), "red".into()), shard, -1, false);
        c.merge(&other);
        assert_eq!(deltas(&c), vec![("red".into(), 0, true)]);
        assert_eq!(c.actions().unwrap().len(), 1);
        assert_eq!(c.guarded().len(), 1);
        let stored = encode(&refs(&["a", "b"]));
        assert_eq!(stored, vec!["color/a", "color/b"]);
        assert_eq!(decode(Some(&stored)), refs(&["a", "b"]));
        assert!(decode(None).is_empty());
    }
}
