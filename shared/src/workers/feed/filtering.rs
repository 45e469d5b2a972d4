//! Where a batch's changes stand to the filtered subscriptions (`webhooks/filters.rs`): the
//! entity before and after each change, from the record's images, with the ancestors its
//! filters test. An ancestor the batch has records of is taken from them, as it stood at the
//! change (the records of one product tree share a shard, in order); any other is read from
//! the table, one BatchGetItem per batch for all of them, and one that is gone (deleted in an
//! earlier or later batch) is taken as its tombstone kept it.

use super::Change;
use crate::domain::time::Timestamp;
use crate::store::items::EntityKind;
use crate::store::webhooks::Subscription;
use crate::store::{Store, StoreError};
use crate::webhooks::filters::{Budget, Compiled, Facts, Tested};
use crate::webhooks::topics::{self, Action};
use aws_lambda_events::event::dynamodb::EventRecord;
use std::cell::RefCell;
use std::collections::HashMap;

/// A tree item's (PK, SK).
type Key = (String, String);

fn key_of(record: &EventRecord) -> Option<Key> {
    crate::store::changes::record_key(&record.change.keys)
}

/// The keys of the ancestors at `levels` of the tree item `record` changed.
fn ancestor_keys(record: &EventRecord, levels: &[EntityKind]) -> Vec<(EntityKind, Key)> {
    let Some((pk, sk)) = key_of(record) else {
        return Vec::new();
    };
    crate::store::products::ancestor_keys(&pk, &sk)
        .into_iter()
        .filter(|(level, _)| levels.contains(level))
        .collect()
}

/// The batch's filters, ready to test its changes.
pub(super) struct Filtering<'a> {
    records: &'a [EventRecord],
    /// By subscription id.
    compiled: HashMap<&'a str, Compiled>,
    /// The batch's records of each tree item, in order.
    by_key: HashMap<Key, Vec<usize>>,
    /// Ancestors the batch has no record of, as the table has them.
    read: HashMap<Key, Facts>,
    /// Why they could not be read, when they could not.
    unreadable: Option<StoreError>,
    /// What each record's filters may still compare, by record (`Budget::PER_RECORD` each,
    /// over all of its subscriptions).
    budgets: RefCell<HashMap<usize, Budget>>,
    now: Timestamp,
}

/// Why a change's place in a filter could not be judged.
#[derive(Debug)]
pub(super) enum Unjudged<'a> {
    /// The ancestors the filter tests could not be read: the change waits for a retry.
    Unreadable(&'a StoreError),
    /// Judging it would compare more bytes than its record's budget had left: it is set
    /// aside, not retried (the same filter on the same data costs the same again).
    OverBudget,
}

impl<'a> Filtering<'a> {
    /// Compiles the filters of `subs` and reads the ancestors they test on `changes` that
    /// the batch has no record of (none: no request). When they cannot be read, only the
    /// changes that need them wait ([`Filtering::matched`] says which).
    pub(super) async fn new(
        store: &Store,
        records: &'a [EventRecord],
        changes: &[(usize, Change)],
        subs: impl Fn(&str) -> &'a [Subscription],
    ) -> Filtering<'a> {
        let (mut f, unread) = Self::plan(records, changes, subs);
        if !unread.is_empty() {
            match read_ancestors(store, &unread).await {
                Ok(read) => f.read = read,
                Err(e) => f.unreadable = Some(e),
            }
        }
        f
    }

    /// The batch's filters compiled, and the ancestors they test that it has no record of.
    fn plan(
        records: &'a [EventRecord],
        changes: &[(usize, Change)],
        subs: impl Fn(&str) -> &'a [Subscription],
    ) -> (Filtering<'a>, Vec<Key>) {
        let mut f = Filtering {
            records,
            compiled: HashMap::new(),
            by_key: HashMap::new(),
            read: HashMap::new(),
            unreadable: None,
            budgets: RefCell::new(HashMap::new()),
            now: Timestamp::now(),
        };
        for (i, record) in records.iter().enumerate() {
            if let Some(key) = key_of(record) {
                f.by_key.entry(key).or_default().push(i);
            }
        }
        let mut unread: Vec<Key> = Vec::new();
        for (i, change) in changes {
            for sub in subs(&change.org) {
                let Some(filter) = &sub.filter else { continue };
                if !topics::any_matches(&sub.topics, &change.entity_type, change.action) {
                    continue;
                }
                let compiled = f
                    .compiled
                    .entry(sub.id.as_str())
                    .or_insert_with(|| Compiled::of(filter).unwrap_or_else(|| nothing(sub)));
                let levels = compiled.ancestors(&change.entity_type);
                for (_, key) in ancestor_keys(&records[*i], &levels) {
                    if !f.by_key.contains_key(&key) && !unread.contains(&key) {
                        unread.push(key);
                    }
                }
            }
        }
        (f, unread)
    }

    /// The ancestor at `key` as it stood at record `i`: after the batch's last record of it
    /// before `i` (as it was last, if that record removed it), else before its first record
    /// after `i`, else as the table has it.
    fn ancestor(&self, key: &Key, i: usize) -> Option<Facts> {
        let Some(seen) = self.by_key.get(key) else {
            return self.read.get(key).cloned();
        };
        let change = |j: usize| &self.records[j].change;
        match seen.iter().rev().find(|j| **j < i) {
            Some(&j) => Facts::of(&change(j).new_image).or_else(|| Facts::of(&change(j).old_image)),
            None => {
                let j = seen[0];
                Facts::of(&change(j).old_image).or_else(|| Facts::of(&change(j).new_image))
            }
        }
    }

    /// Whether the entity of record `i` matched `sub`'s filter before the change and after
    /// it (`None`: the subscription has no filter); why not when an ancestor it tests could
    /// not be read, or its judgement would go over the record's budget.
    pub(super) fn matched(
        &self,
        i: usize,
        change: &Change,
        sub: &Subscription,
    ) -> Result<Option<(bool, bool)>, Unjudged<'_>> {
        let Some(c) = self.compiled.get(sub.id.as_str()) else {
            return Ok(None);
        };
        let record = &self.records[i];
        let levels = c.ancestors(&change.entity_type);
        let mut product = None;
        let mut variant = None;
        for (level, key) in ancestor_keys(record, &levels) {
            if let (Some(e), false) = (&self.unreadable, self.by_key.contains_key(&key)) {
                return Err(Unjudged::Unreadable(e));
            }
            let facts = self.ancestor(&key, i);
            match level {
                EntityKind::Product => product = facts,
                EntityKind::Variant => variant = facts,
                EntityKind::Sku => {}
            }
        }
        let mut budgets = self.budgets.borrow_mut();
        let budget = budgets
            .entry(i)
            .or_insert_with(|| Budget::new(Budget::PER_RECORD));
        let mut side = |image: &serde_dynamo::Item, exists: bool| {
            let Some(own) = exists.then(|| Facts::of(image)).flatten() else {
                return Ok(false);
            };
            let t = Tested {
                own: &own,
                product: product.as_ref(),
                variant: variant.as_ref(),
            };
            c.judge(&change.entity_type, &t, self.now, budget)
        };
        let judged =
            side(&record.change.old_image, change.action != Action::Created).and_then(|before| {
                side(&record.change.new_image, change.action != Action::Deleted)
                    .map(|after| (before, after))
            });
        judged.map(Some).map_err(|_| Unjudged::OverBudget)
    }
}

/// The ancestors at `keys` as the table has them; those it no longer has, as their
/// tombstones kept them: a deletion cascading from a product (or variant) can reach the feed
/// in a later batch than the ancestor's own removal, and is judged by the state the
/// ancestor ended (one more BatchGetItem, only when an ancestor is gone).
async fn read_ancestors(store: &Store, keys: &[Key]) -> Result<HashMap<Key, Facts>, StoreError> {
    let facts = |(k, item): (Key, serde_dynamo::Item)| Some((k, Facts::of(&item)?));
    let mut read: HashMap<Key, Facts> = store
        .items_at(keys)
        .await?
        .into_iter()
        .filter_map(facts)
        .collect();
    let gone: Vec<Key> = keys
        .iter()
        .filter(|k| !read.contains_key(*k))
        .cloned()
        .collect();
    if !gone.is_empty() {
        read.extend(
            store
                .last_states_at(&gone)
                .await?
                .into_iter()
                .filter_map(facts),
        );
    }
    Ok(read)
}

/// A kept filter that no longer compiles (it was validated when set): it matches nothing,
/// and says so.
fn nothing(sub: &Subscription) -> Compiled {
    tracing::error!(webhook = %sub.id, "a kept filter does not compile: nothing matches it");
    Compiled::nothing()
}

#[cfg(test)]
mod tests;
