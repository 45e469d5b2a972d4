//! Erasing an entity's history (`DELETE /{type}s/{identifier}/history`), for personal
//! data: every entry goes, with what changed and who changed it. What stays is the head,
//! made the erasure's mark: the erasure's time as its position and when it was made, and
//! the number 0 (later changes are numbered from 1 again, as in a new history); nothing of
//! a change.
//! The change feed writes no entry at or before a head's position, so the stream's records
//! of the erased changes (a retry, a redelivery, a record still in flight) bring nothing
//! back; the mark lives as long as the stream keeps records (a day).

use super::{history_pk, history_sk, HeadItem, DAY_SECS};
use crate::domain::time::Timestamp;
use crate::store::keys::{item_key, HISTORY_HEAD_SK, SK};
use crate::store::ops::Item;
use crate::store::{Store, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;

/// A rank above every event's (`Event::rank`): the position after every change of its time.
const AFTER_EVERY_EVENT: u8 = 9;

impl Store {
    /// Erases the history of `entity_type` `identifier`: the keys of its entries (one Query,
    /// one more per 1 MB of entries: bounded by `MAX_HISTORY_ENTRIES`), then their deletes
    /// (BatchWriteItem, 25 a request) beside the mark's UpdateItem, all in parallel. How
    /// many entries it erased; `None`, with nothing written, when the history has none and
    /// the entity does not exist (one GetItem more tells).
    ///
    /// A change the feed records in the very instant of the erasure may outlive it (its
    /// entry written after the Query); erasing again removes it.
    pub async fn erase_history(
        &self,
        org: &str,
        entity_type: &str,
        identifier: &str,
    ) -> Result<Option<usize>, StoreError> {
        let at = Timestamp::now();
        let pk = history_pk(org, entity_type, identifier);
        let query = self
            .history_entries(&pk)
            .projection_expression("SK")
            .consistent_read(true);
        let keys: Vec<Item> = self
            .query_all(query)
            .await?
            .into_iter()
            .filter_map(|item| item.get(SK).and_then(|v| v.as_s().ok()).cloned())
            .map(|sk| item_key(pk.clone(), sk))
            .collect();
        if keys.is_empty() && !self.entity_exists(org, entity_type, identifier).await? {
            return Ok(None);
        }
        let erased = keys.len();
        let mark = self.mark_erased(&pk, at);
        let deletes = self.batch_write(Vec::new(), keys);
        crate::store::metrics::in_parallel(async { futures_util::try_join!(mark, deletes) })
            .await?;
        Ok(Some(erased))
    }

    /// Makes the head of history `pk` the mark of an erasure at `at`: its position moves to
    /// `at` (after every change of that time) and its number to 0. One UpdateItem,
    /// conditioned on the head being older: a head already past `at` (a later change, from
    /// a clock ahead) covers the erased entries too, and stays.
    async fn mark_erased(&self, pk: &str, at: Timestamp) -> Result<(), StoreError> {
        let mark = HeadItem {
            pk: pk.to_string(),
            sk: HISTORY_HEAD_SK.to_string(),
            n: 0,
            pos: history_sk(&at.to_string(), AFTER_EVERY_EVENT),
            ttl: at.millis() / 1000 + DAY_SECS,
            erased: Some(at),
        };
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(mark.pk, mark.sk)))
            .update_expression("SET #pos = :pos, #ttl = :ttl, #erased = :at, #n = :zero")
            .condition_expression("attribute_not_exists(#pos) OR #pos < :pos")
            .expression_attribute_names("#pos", "pos")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_names("#erased", "erased")
            .expression_attribute_names("#n", "n")
            .expression_attribute_values(":pos", AttributeValue::S(mark.pos))
            .expression_attribute_values(":ttl", AttributeValue::N(mark.ttl.to_string()))
            .expression_attribute_values(":at", AttributeValue::S(at.to_string()))
            .expression_attribute_values(":zero", AttributeValue::N(mark.n.to_string()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e));
        match out {
            Ok(_) | Err(StoreError::ConditionFailed) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::history::{Entry, Event};

    #[test]
    fn an_erasure_mark_is_after_every_change_of_its_time_and_before_later_ones() {
        let at = Timestamp::parse("2026-12-07T10:00:00.000Z").unwrap();
        let mark = history_sk(&at.to_string(), AFTER_EVERY_EVENT);
        let entry = |ms: i64, event| Entry {
            entity_type: "product".into(),
            identifier: "p".into(),
            state: Timestamp::from_millis(at.millis() + ms),
            at: Timestamp::from_millis(at.millis() + ms),
            event,
            by: None,
            changes: None,
        };
        for event in [Event::Created, Event::Updated, Event::Deleted] {
            assert!(entry(0, event).position() < mark);
            assert!(entry(-1, event).position() < mark);
            assert!(entry(1, event).position() > mark);
        }
        assert!(mark.as_str() < HISTORY_HEAD_SK);
    }
}
