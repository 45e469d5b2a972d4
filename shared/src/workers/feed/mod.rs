//! The change feed: DynamoDB stream records of entity items become `<entity>.created`,
//! `.updated` and `.deleted` events, coalesced per (subscription, entity, event) into
//! pending deliveries. The first change of a window queues one message delayed by the
//! window; later changes only move the window's `occurredAt`.

use crate::context::Context;
use crate::domain::changes::{self, PayloadKind};
use crate::domain::entity_types::EntityType;
use crate::domain::time::Timestamp;
use crate::store::changes::image_org;
use crate::store::webhooks::{Opening, PendingKey, Queueing, Sides, Subscription};
use crate::store::StoreError;
use crate::webhooks::queue::{new_delivery_id, QueueMessage};
use crate::webhooks::topics::{self, Action};
use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures_util::future::join_all;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

mod filtering;
mod history;

/// One entity change, read off a stream record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub org: String,
    pub entity_type: String,
    pub identifier: String,
    pub action: Action,
    pub occurred_at: Timestamp,
    /// What an update changed: `name` and `<entity>.<key>` of each attribute value that
    /// differs between the stream's old and new image (empty for creates and deletes).
    pub changed: Vec<String>,
}

/// The fields of an item image that tell whether it is an entity, and which.
#[derive(Deserialize)]
struct EntityImage {
    /// The organization of the entity the image is, from its keys (`None`: not an entity).
    #[serde(skip)]
    org: Option<String>,
    /// An item whose `kind` names no entity type is not an entity: it fails to decode.
    kind: EntityType,
    id: String,
    /// A metaobject's definition: its REST identifier is `<definition>/<identifier>`.
    #[serde(default)]
    def: Option<String>,
    #[serde(default)]
    #[serde(rename = "su")]
    self_updated_at: Option<Timestamp>,
    #[serde(default)]
    #[serde(rename = "tu")]
    updated_at: Option<Timestamp>,
    #[serde(default)]
    del: Option<bool>,
}

impl EntityImage {
    /// The image's organization, when it is an item of one of `types` (not a tombstone, an
    /// identity item, a setting or webhook state): every entity sits in its type's index
    /// partition.
    fn org_in(&self, kept: fn(EntityType) -> bool) -> Option<&str> {
        if !kept(self.kind) || self.del == Some(true) {
            return None;
        }
        self.org.as_deref()
    }
}

fn image(item: &serde_dynamo::Item) -> Option<EntityImage> {
    // Most records without a `kind` are webhook state and tombstones: skip them unread.
    if !item.contains_key("kind") {
        return None;
    }
    let mut image: EntityImage = serde_dynamo::from_item(item.clone()).ok()?;
    image.org = image_org(item, image.kind.as_str());
    Some(image)
}

/// The change a stream record stands for, if any: INSERT is `created`, REMOVE `deleted`,
/// and MODIFY `updated` only when the entity itself changed (`su` moved); a MODIFY that
/// only moved the tree timestamp `tu` (a child changed) is not an event of the parent.
pub fn change_of(record: &EventRecord) -> Option<Change> {
    change_in(record, |_| true)
}

/// [`change_of`] for items of the types `kept` keeps.
fn change_in(record: &EventRecord, kept: fn(EntityType) -> bool) -> Option<Change> {
    let mut changed = Vec::new();
    let (action, entity) = match record.event_name.as_str() {
        "INSERT" => (Action::Created, image(&record.change.new_image)?),
        "MODIFY" => {
            let new = image(&record.change.new_image)?;
            let old = image(&record.change.old_image);
            if old.is_some_and(|o| o.self_updated_at == new.self_updated_at) {
                return None;
            }
            changed = changed_fields(
                new.kind.as_str(),
                &record.change.old_image,
                &record.change.new_image,
            );
            (Action::Updated, new)
        }
        "REMOVE" => (Action::Deleted, image(&record.change.old_image)?),
        _ => return None,
    };
    let org = entity.org_in(kept)?.to_string();
    let recorded = Timestamp::from_millis(
        record
            .change
            .approximate_creation_date_time
            .timestamp_millis(),
    );
    let occurred_at = match action {
        Action::Deleted => entity.updated_at.map_or(recorded, |tu| tu.max(recorded)),
        _ => entity
            .self_updated_at
            .or(entity.updated_at)
            .unwrap_or(recorded),
    };
    let identifier = match entity.def {
        Some(def) => format!("{def}/{}", entity.id),
        None => entity.id,
    };
    Some(Change {
        org,
        entity_type: entity.kind.as_str().to_string(),
        identifier,
        action,
        occurred_at,
        changed,
    })
}

/// The fields an update changed (`webhooks/changed_fields.rs`): `name` when the stored
/// name differs, and `<kind>.<key>` for each key of the stored values (`vals`) whose value
/// differs, was added or was removed.
fn changed_fields(kind: &str, old: &serde_dynamo::Item, new: &serde_dynamo::Item) -> Vec<String> {
    use serde_dynamo::AttributeValue;
    let mut changed = Vec::new();
    if old.get("name") != new.get("name") {
        changed.push(crate::webhooks::changed_fields::NAME.to_string());
    }
    fn values(item: &serde_dynamo::Item) -> Option<&HashMap<String, AttributeValue>> {
        match item.get("vals") {
            Some(AttributeValue::M(m)) => Some(m),
            _ => None,
        }
    }
    let (old, new) = (values(old), values(new));
    let mut keys: Vec<&String> = old
        .iter()
        .chain(new.iter())
        .flat_map(|m| m.keys())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        if old.and_then(|m| m.get(key)) != new.and_then(|m| m.get(key)) {
            changed.push(format!("{kind}.{key}"));
        }
    }
    changed
}

/// Whether `sub` asks for `change`: an update only when it changed one of the
/// subscription's `changedFields` (when it names any).
fn asks_for(sub: &Subscription, change: &Change) -> bool {
    match (&sub.changed_fields, change.action) {
        (Some(fields), Action::Updated) => {
            crate::webhooks::changed_fields::any_changed(fields, &change.changed)
        }
        _ => true,
    }
}

/// `f`'s output and how long it took (ms).
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, u64) {
    let t = std::time::Instant::now();
    (f.await, t.elapsed().as_millis() as u64)
}

/// One (subscription, entity, event) window touched by a batch.
#[derive(Debug)]
struct Window<'a> {
    change: &'a Change,
    webhook_id: &'a str,
    /// The first record of the batch that touched it (for partial-failure reporting).
    first: usize,
    /// The last record of the batch that touched it.
    last: usize,
    /// The subscription asks for `changes`: the window keeps the states around it.
    states: bool,
    occurred_at: Timestamp,
    /// How many of the batch's changes it holds.
    changes: u32,
    /// For a filtered subscription: whether the entity matched before the window's first
    /// change in the batch, and after its last.
    matched: Option<(bool, bool)>,
}

/// Whether a failure may pass on a retry (storage throttled or unreachable); any other
/// (a refused key, an undecodable item) would fail the same way every time.
fn retryable(e: &StoreError) -> bool {
    matches!(e, StoreError::Unavailable(_) | StoreError::ConditionFailed)
}

/// What becomes of record `i`'s change when what it needs could not be read: it is tried
/// again when a retry may cure it (`failed` moves to it), else set aside.
fn unreadable(
    failed: &mut Option<usize>,
    dropped: &mut Vec<SetAside>,
    (i, change): (usize, &Change),
    webhook_id: Option<&str>,
    what: &str,
    e: &StoreError,
) {
    if retryable(e) {
        tracing::warn!(error = %e, org = %change.org, webhook = webhook_id.unwrap_or_default(), "{what}");
        *failed = Some(failed.map_or(i, |f| f.min(i)));
        return;
    }
    dropped.push(SetAside {
        record: i,
        change: change.clone(),
        webhook_id: webhook_id.map(str::to_string),
        reason: format!("{what}: {e}"),
    });
}

/// A record the feed gave up on, for the failure queue.
struct SetAside {
    /// Its position in the batch.
    record: usize,
    change: Change,
    webhook_id: Option<String>,
    reason: String,
}

impl SetAside {
    /// The failure queue's message: the record's identity, the change and why.
    fn body(&self, record: &EventRecord) -> String {
        serde_json::json!({
            "source": "change-feed",
            "reason": self.reason,
            "sequenceNumber": record.change.sequence_number,
            "eventName": record.event_name,
            "org": self.change.org,
            "entityType": self.change.entity_type,
            "identifier": self.change.identifier,
            "action": self.change.action.as_str(),
            "occurredAt": self.change.occurred_at.to_string(),
            "webhookId": self.webhook_id,
        })
        .to_string()
    }
}

/// The change-feed Lambda's handler.
pub struct ChangeFeed {
    pub cx: &'static Context,
}

impl ChangeFeed {
    /// Handles one batch of stream records. Records that are not entity changes are
    /// skipped; when storage or the queue fails, the first record whose work failed is
    /// reported, so the event source retries from it (coalescing makes the retry safe).
    ///
    /// A record whose work fails for a reason retrying cannot cure (storage refuses its
    /// window's key, a subscription cannot be decoded) never holds the shard: it goes to the
    /// failure queue (`CATALOG_FEED_FAILURE_QUEUE_URL`, alarmed) with its identity, and the
    /// rest of the batch goes on.
    pub async fn handle(&self, event: Event) -> DynamoDbEventResponse {
        let changes: Vec<(usize, Change)> = event
            .records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| change_of(r).map(|c| (i, c)))
            .collect();
        let started = std::time::Instant::now();
        let work = async {
            // each side's time, for the batch's log line
            let ((feed, windows_ms), (history, history_ms)) = futures_util::join!(
                timed(self.process(&event.records, &changes)),
                timed(history::record(&self.cx.store, &event.records))
            );
            let (mut failed, mut dropped) = feed;
            if let Some(i) = history.failed {
                failed = Some(failed.map_or(i, |f| f.min(i)));
            }
            dropped.extend(history.dropped);
            ((failed, dropped), history.entries, (windows_ms, history_ms))
        };
        let (((mut failed, dropped), entries, (windows_ms, history_ms)), cost) =
            crate::store::metrics::counted(work).await;
        // the feed's cost per batch, for the logs' metric filters and the bench
        tracing::info!(
            records = event.records.len(),
            changes = changes.len(),
            history = entries,
            ddb_requests = cost.requests,
            ms = started.elapsed().as_millis() as u64,
            windows_ms,
            history_ms,
            "change-feed batch"
        );
        for d in &dropped {
            tracing::error!(
                org = %d.change.org, entity_type = %d.change.entity_type,
                identifier = %d.change.identifier, webhook = d.webhook_id.as_deref().unwrap_or_default(),
                reason = %d.reason, "change-feed record set aside"
            );
        }
        if !dropped.is_empty() {
            let bodies: Vec<String> = dropped
                .iter()
                .map(|d| d.body(&event.records[d.record]))
                .collect();
            let sent = match self.cx.queue.as_ref() {
                Some(queue) => queue.set_aside(&bodies).await,
                None => Ok(()),
            };
            if let Err(e) = sent {
                // not set aside: the records are tried again rather than lost
                tracing::warn!(error = %e, "change-feed failures not queued");
                for d in &dropped {
                    failed = Some(failed.map_or(d.record, |f| f.min(d.record)));
                }
            }
        }
        let mut response = DynamoDbEventResponse::default();
        if let Some(i) = failed {
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = event.records[i].change.sequence_number.clone();
            response.batch_item_failures.push(failure);
        }
        response
    }

    /// Coalesces the batch's changes and opens their windows: the index of the first record
    /// whose work failed and may succeed on a retry, if any, and the records set aside.
    async fn process(
        &self,
        records: &[EventRecord],
        changes: &[(usize, Change)],
    ) -> (Option<usize>, Vec<SetAside>) {
        let mut dropped: Vec<SetAside> = Vec::new();
        let mut orgs: Vec<&str> = changes.iter().map(|(_, c)| c.org.as_str()).collect();
        orgs.sort_unstable();
        orgs.dedup();
        let lists = join_all(orgs.iter().map(|org| self.cx.store.list_subscriptions(org))).await;
        let subscriptions: HashMap<&str, Result<Vec<Subscription>, StoreError>> =
            orgs.into_iter().zip(lists).collect();
        let subs_of = |org: &str| match &subscriptions[org] {
            Ok(subs) => subs.as_slice(),
            Err(_) => &[],
        };
        let filtering = filtering::Filtering::new(&self.cx.store, records, changes, subs_of).await;

        let mut failed: Option<usize> = None;
        let mut windows: BTreeMap<(&str, &str, &str, Action, &str), Window> = BTreeMap::new();
        for (i, change) in changes {
            let subs = match &subscriptions[change.org.as_str()] {
                Ok(subs) => subs,
                Err(e) => {
                    let what = "subscriptions unreadable";
                    unreadable(&mut failed, &mut dropped, (*i, change), None, what, e);
                    continue;
                }
            };
            for sub in subs.iter().filter(|s| {
                s.delivers()
                    && topics::any_matches(&s.topics, &change.entity_type, change.action)
                    && asks_for(s, change)
            }) {
                let matched = match filtering.matched(*i, change, sub) {
                    Ok(m) => m,
                    // a filter too costly to judge on this change: set aside for the
                    // failure queue (alarmed), the batch and every other record go on
                    Err(filtering::Unjudged::OverBudget) => {
                        dropped.push(SetAside {
                            record: *i,
                            change: change.clone(),
                            webhook_id: Some(sub.id.clone()),
                            reason: format!(
                                "filter over its budget: judging this change would compare more than {} bytes",
                                crate::webhooks::filters::Budget::PER_RECORD
                            ),
                        });
                        continue;
                    }
                    // the ancestors its filter tests could not be read: only this waits
                    Err(filtering::Unjudged::Unreadable(e)) => {
                        let what = "filter's ancestors unreadable";
                        unreadable(
                            &mut failed,
                            &mut dropped,
                            (*i, change),
                            Some(&sub.id),
                            what,
                            e,
                        );
                        continue;
                    }
                };
                if matched == Some((false, false)) {
                    // outside the filter before and after: not a change of its set
                    continue;
                }
                let key = (
                    change.org.as_str(),
                    sub.id.as_str(),
                    change.entity_type.as_str(),
                    change.action,
                    change.identifier.as_str(),
                );
                let w = windows.entry(key).or_insert(Window {
                    change,
                    webhook_id: &sub.id,
                    first: *i,
                    last: *i,
                    states: sub.payload == PayloadKind::Changes,
                    occurred_at: change.occurred_at,
                    changes: 0,
                    matched,
                });
                if let (Some(m), Some((_, after))) = (&mut w.matched, matched) {
                    m.1 = after;
                }
                w.occurred_at = w.occurred_at.max(change.occurred_at);
                w.changes += 1;
                w.last = *i;
            }
        }
        // ten windows at a time: each ten opened, then queued in one SendMessageBatch while
        // the next ten open, so the queue's round trips overlap the table's
        let windows: Vec<&Window> = windows.values().collect();
        let chunks = join_all(
            windows
                .chunks(10)
                .map(|chunk| self.open_and_queue(chunk, records)),
        )
        .await;
        for (chunk_failed, chunk_dropped) in chunks {
            if let Some(i) = chunk_failed {
                failed = Some(failed.map_or(i, |f| f.min(i)));
            }
            dropped.extend(chunk_dropped);
        }
        (failed, dropped)
    }

    /// Opens up to ten windows and queues the deliveries of the new ones: the first record
    /// whose work failed and may succeed on a retry, if any, and the records set aside.
    async fn open_and_queue(
        &self,
        chunk: &[&Window<'_>],
        records: &[EventRecord],
    ) -> (Option<usize>, Vec<SetAside>) {
        let mut failed: Option<usize> = None;
        let mut dropped: Vec<SetAside> = Vec::new();
        let results = join_all(chunk.iter().map(|w| self.open(w, records))).await;
        let mut to_queue: Vec<(usize, QueueMessage)> = Vec::new();
        for (w, result) in chunk.iter().zip(results) {
            match result {
                Ok(Some(message)) => to_queue.push((w.first, message)),
                Ok(None) => {}
                Err(e) if retryable(&e) => {
                    tracing::warn!(error = %e, webhook = w.webhook_id, "window not opened");
                    failed = Some(failed.map_or(w.first, |f| f.min(w.first)));
                }
                Err(e) => dropped.push(SetAside {
                    record: w.first,
                    change: w.change.clone(),
                    webhook_id: Some(w.webhook_id.to_string()),
                    reason: format!("window not opened: {e}"),
                }),
            }
        }
        for first in self.queue_all(&to_queue).await {
            failed = Some(failed.map_or(first, |f| f.min(first)));
        }
        (failed, dropped)
    }

    /// Queues the new windows' deliveries, ten per SendMessageBatch (requests in parallel):
    /// the batch positions of the windows that failed. A window is claimed by the record
    /// that opened it, so nothing is written after the send: a retry of that record sends
    /// again (a copy that finds its window sealed is dropped, or delivered once more with
    /// the same delivery id, as SQS may anyway), a later record none.
    async fn queue_all(&self, to_queue: &[(usize, QueueMessage)]) -> Vec<usize> {
        if to_queue.is_empty() {
            return Vec::new();
        }
        let Some(queue) = self.cx.queue.as_ref() else {
            tracing::warn!("no delivery queue is configured");
            return to_queue.iter().map(|(first, _)| *first).collect();
        };
        let delay = self.cx.config.webhooks.coalesce_window;
        let chunks: Vec<&[(usize, QueueMessage)]> = to_queue.chunks(10).collect();
        let sent = join_all(chunks.iter().map(|chunk| {
            let messages: Vec<&QueueMessage> = chunk.iter().map(|(_, m)| m).collect();
            async move { queue.send_many(&messages, delay).await }
        }))
        .await;
        let mut failed = Vec::new();
        for (chunk, outcome) in chunks.iter().zip(sent) {
            match outcome {
                Ok(ok) => {
                    for ((first, _), ok) in chunk.iter().zip(ok) {
                        if !ok {
                            failed.push(*first);
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "deliveries not queued");
                    failed.extend(chunk.iter().map(|(first, _)| *first));
                }
            }
        }
        failed
    }

    /// Records the change in its window: the delivery to queue when the window is new (or an
    /// earlier try opened it but could not queue it).
    async fn open(
        &self,
        w: &Window<'_>,
        records: &[EventRecord],
    ) -> Result<Option<QueueMessage>, StoreError> {
        let c = w.change;
        // the state before the batch's first change of the window and after its last
        let side = |record: &EventRecord, old: bool| {
            let (name, image) = match old {
                true => ("INSERT", &record.change.old_image),
                false => ("REMOVE", &record.change.new_image),
            };
            let state = (record.event_name != name).then(|| changes::state_of(image));
            changes::kept(state.as_ref())
        };
        let kept = w
            .states
            .then(|| (side(&records[w.first], true), side(&records[w.last], false)));
        let sides = kept.as_ref().map(|(old, new)| Sides {
            first_old: old.as_deref(),
            last_new: new.as_deref(),
        });
        let key = PendingKey::of(
            &c.org,
            w.webhook_id,
            &c.entity_type,
            c.action.as_str(),
            &c.identifier,
        );
        // the record that opened the window queues its delivery (its retries too)
        let claim = records[w.first].change.sequence_number.as_deref();
        let claim = claim.unwrap_or_default();
        let store = &self.cx.store;
        let pending = store
            .open_pending(
                &key,
                w.occurred_at,
                w.changes,
                Opening {
                    delivery_id: &new_delivery_id(),
                    claim,
                },
                sides,
                w.matched,
            )
            .await?;
        match pending.queueing(claim, Timestamp::now().millis()) {
            Queueing::Queue => {}
            Queueing::Claimed => return Ok(None),
            Queueing::TakeOver => {
                if !store
                    .take_over_claim(&key, pending.claim.as_deref(), claim)
                    .await?
                {
                    return Ok(None);
                }
            }
        }
        Ok(Some(QueueMessage {
            org: c.org.clone(),
            webhook_id: w.webhook_id.to_string(),
            delivery_id: pending.delivery_id.clone(),
            entity_type: c.entity_type.clone(),
            action: c.action,
            identifier: c.identifier.clone(),
        }))
    }
}

#[cfg(test)]
mod tests;
