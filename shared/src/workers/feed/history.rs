//! History from the stream (decisions.md, "Change history"): every record of a product,
//! variant, SKU or asset whose own state changed becomes one entry, with its time, its
//! actor (the `by` the write stamped on the item) and what changed (the stream's old and
//! new images, in the `changes` shape of the event payloads). A deletion's time and actor
//! are its tombstone's, read for the batch in one BatchGetItem: the REMOVE itself carries
//! only the state it ended. Entries are keyed by the record alone (the `su` of the state it
//! made or ended, and its event), so a batch delivered again writes the same items. The
//! store keeps each entry for its organization's `historyRetentionDays` (read with the
//! batch's history heads, no request more) and each history to its newest
//! `MAX_HISTORY_ENTRIES`, deleting the oldest beyond in the same write (`store/history/`).

use super::{change_in, retryable, Change, SetAside};
use crate::domain::actor::Actor;
use crate::domain::changes::{delta, state_of};
use crate::domain::entity_types::EntityType;
use crate::domain::time::Timestamp;
use crate::store::history::{Entry, Event, MAX_CHANGES_BYTES};
use crate::store::writes::BY;
use crate::store::Store;
use crate::webhooks::topics::Action;
use aws_lambda_events::event::dynamodb::EventRecord;
use futures_util::future::join_all;
use std::collections::BTreeMap;

/// What recording a batch's history came to.
#[derive(Default)]
pub(super) struct Recorded {
    /// Entries written.
    pub entries: usize,
    /// The first record whose entry could not be written and may be on a retry.
    pub failed: Option<usize>,
    /// The records whose entries a retry could not write either (for the failure queue).
    pub dropped: Vec<SetAside>,
}

/// A string attribute of a stream image.
fn text<'a>(image: &'a serde_dynamo::Item, name: &str) -> Option<&'a str> {
    match image.get(name) {
        Some(serde_dynamo::AttributeValue::S(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// The entry of a record's change, before its deletion is known (a deletion's time and
/// actor come from its tombstone).
fn entry_of(record: &EventRecord, change: &Change) -> Entry {
    let (old, new) = (&record.change.old_image, &record.change.new_image);
    let (event, before, after, image) = match change.action {
        Action::Created => (Event::Created, None, Some(state_of(new)), new),
        Action::Deleted => (Event::Deleted, Some(state_of(old)), None, old),
        // a stream record is created, updated or deleted
        _ => (
            Event::Updated,
            Some(state_of(old)),
            Some(state_of(new)),
            new,
        ),
    };
    let changes = delta(&change.entity_type, before.as_ref(), after.as_ref()).to_string();
    Entry {
        entity_type: change.entity_type.clone(),
        identifier: change.identifier.clone(),
        // the state it made (a deletion: the one it ended)
        state: text(image, "su")
            .and_then(Timestamp::parse)
            .unwrap_or(change.occurred_at),
        at: change.occurred_at,
        event,
        by: match event {
            Event::Deleted => None,
            _ => text(image, BY).and_then(Actor::decode),
        },
        changes: (changes.len() <= MAX_CHANGES_BYTES).then_some(changes),
    }
}

/// The batch's entries by organization, each with its record's position.
fn entries(records: &[EventRecord]) -> BTreeMap<String, Vec<(usize, Entry)>> {
    let mut by_org: BTreeMap<String, Vec<(usize, Entry)>> = BTreeMap::new();
    for (i, record) in records.iter().enumerate() {
        if let Some(change) = change_in(record, EntityType::has_history) {
            let entry = entry_of(record, &change);
            by_org.entry(change.org).or_default().push((i, entry));
        }
    }
    by_org
}

/// Writes the history of the batch's changes: per organization, the tombstones of its
/// deletions (one BatchGetItem), then its entries (`Store::put_history`: one BatchGetItem
/// of the heads and the organization's settings, a Query per history past its bound, the
/// entries and the deletes past it in BatchWriteItem requests of 25, then the heads).
pub(super) async fn record(store: &Store, records: &[EventRecord]) -> Recorded {
    let by_org = entries(records);
    let written = join_all(by_org.into_iter().map(|(org, mut entries)| async move {
        let first = entries.iter().map(|(i, _)| *i).min().unwrap_or_default();
        let records: Vec<(usize, Change)> = entries
            .iter()
            .map(|(i, e)| (*i, entry_change(&org, e)))
            .collect();
        let result = async {
            complete_deletions(store, &org, &mut entries).await?;
            // one entry per key: a record delivered twice in one batch is one change
            let mut unique: BTreeMap<(String, String, String), Entry> = BTreeMap::new();
            for (_, e) in entries {
                unique.insert(
                    (e.entity_type.clone(), e.identifier.clone(), e.position()),
                    e,
                );
            }
            let unique: Vec<Entry> = unique.into_values().collect();
            store.put_history(&org, &unique).await?;
            Ok(unique.len())
        }
        .await;
        (org, first, records, result)
    }))
    .await;
    let mut out = Recorded::default();
    for (org, first, records, result) in written {
        match result {
            Ok(n) => out.entries += n,
            Err(e) if retryable(&e) => {
                tracing::warn!(error = %e, org = %org, "history not written");
                out.failed = Some(out.failed.map_or(first, |f| f.min(first)));
            }
            // a retry would fail the same way: the shard goes on, and the records go to
            // the failure queue (alarmed) with the reason
            Err(e) => out
                .dropped
                .extend(records.into_iter().map(|(record, change)| SetAside {
                    record,
                    change,
                    webhook_id: None,
                    reason: format!("history not written: {e}"),
                })),
        }
    }
    out
}

/// The change an entry records, as the failure queue names it.
fn entry_change(org: &str, e: &Entry) -> Change {
    Change {
        org: org.to_string(),
        entity_type: e.entity_type.clone(),
        identifier: e.identifier.clone(),
        action: match e.event {
            Event::Created => Action::Created,
            Event::Updated => Action::Updated,
            Event::Deleted => Action::Deleted,
        },
        occurred_at: e.at,
        changed: Vec::new(),
    }
}

/// Gives each deletion of `entries` its time and actor from its tombstone, when the
/// tombstone ends the state the REMOVE shows (`was`); otherwise (the entity was created
/// and deleted again since, or the tombstone expired) the record's own time, actor unknown.
/// Either way its key is the same: the state it ended.
async fn complete_deletions(
    store: &Store,
    org: &str,
    entries: &mut [(usize, Entry)],
) -> Result<(), crate::store::StoreError> {
    let deleted: Vec<(&str, &str)> = entries
        .iter()
        .filter(|(_, e)| e.event == Event::Deleted)
        .map(|(_, e)| (e.entity_type.as_str(), e.identifier.as_str()))
        .collect();
    if deleted.is_empty() {
        return Ok(());
    }
    let tombstones = store.deletions_of(org, &deleted).await?;
    for (_, e) in entries.iter_mut() {
        if e.event != Event::Deleted {
            continue;
        }
        let key = (e.entity_type.clone(), e.identifier.clone());
        if let Some(t) = tombstones.get(&key).filter(|t| t.was == Some(e.state)) {
            e.at = t.at;
            e.by = t.by.clone();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
