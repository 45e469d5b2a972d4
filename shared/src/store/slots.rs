//! Work slots: at most *n* of an organization's expensive jobs of a kind (bulk writes,
//! import runs) at once, across every function instance. Slot *i* is the item
//! `O#<org>#S` / `<kind>#<i>`, holding its lease (`lease`, a random id) and when the lease
//! lapses (`until`, ms). Taking a slot is one conditional PutItem (the slot is free, or its
//! lease lapsed: a holder that crashed frees its slot by time); giving it back is one
//! DeleteItem conditioned on the lease. A process tries the slots from a random one, so
//! with free slots the first try nearly always succeeds; with none, it has tried each once.

use super::keys::{slots_pk, TTL};
use super::ops::{item_key, number as n};
use super::{Store, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;
use std::time::Duration;

/// A slot held until given back (or until its lease lapses); a job that outlives its
/// process keeps it in its record and renews it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slot {
    pk: String,
    sk: String,
    lease: String,
}

impl Store {
    /// Takes one of `slots` slots of `kind` for `org`, held at most `hold` (the longest the
    /// work can run); `None` when every slot is held.
    pub async fn take_slot(
        &self,
        org: &str,
        kind: &str,
        slots: u32,
        hold: Duration,
    ) -> Result<Option<Slot>, StoreError> {
        let lease = ulid::Ulid::new();
        let now = chrono::Utc::now().timestamp_millis();
        let until = now + hold.as_millis() as i64;
        let first = (lease.random() % u128::from(slots.max(1))) as u32;
        for i in 0..slots {
            let slot = Slot {
                pk: slots_pk(org),
                sk: format!("{kind}#{}", (first + i) % slots),
                lease: lease.to_string(),
            };
            let mut item = item_key(slot.pk.clone(), slot.sk.clone());
            item.insert("lease".into(), AttributeValue::S(slot.lease.clone()));
            item.insert("until".into(), n(until));
            item.insert(TTL.into(), n(until / 1000 + 3600));
            let put = self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(#until) OR #until < :now")
                .expression_attribute_names("#until", "until")
                .expression_attribute_values(":now", n(now))
                .send()
                .await;
            match put {
                Ok(_) => return Ok(Some(slot)),
                Err(e) => match StoreError::from_sdk("PutItem", e) {
                    StoreError::ConditionFailed => continue,
                    other => return Err(other),
                },
            }
        }
        Ok(None)
    }

    /// Holds `slot` `hold` longer from now, if its lease is still this one: `false` when
    /// it lapsed and another holder took the slot since.
    pub async fn renew_slot(&self, slot: &Slot, hold: Duration) -> Result<bool, StoreError> {
        let until = chrono::Utc::now().timestamp_millis() + hold.as_millis() as i64;
        let renewed = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(slot.pk.clone(), slot.sk.clone())))
            .update_expression("SET #until = :until, #ttl = :ttl")
            .condition_expression("lease = :lease")
            .expression_attribute_names("#until", "until")
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":ttl", n(until / 1000 + 3600))
            .expression_attribute_values(":lease", AttributeValue::S(slot.lease.clone()))
            .send()
            .await;
        match renewed {
            Ok(_) => Ok(true),
            Err(e) => match StoreError::from_sdk("UpdateItem", e) {
                StoreError::ConditionFailed => Ok(false),
                other => Err(other),
            },
        }
    }

    /// Gives `slot` back (a lapsed lease another process took since is left alone).
    pub async fn give_back_slot(&self, slot: &Slot) {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(slot.pk.clone(), slot.sk.clone())))
            .condition_expression("lease = :lease")
            .expression_attribute_values(":lease", AttributeValue::S(slot.lease.clone()))
            .send()
            .await;
        if let Err(e) = deleted {
            match StoreError::from_sdk("DeleteItem", e) {
                StoreError::ConditionFailed => {}
                other => {
                    tracing::warn!(error = %other, "giving a work slot back failed; it lapses by time")
                }
            }
        }
    }
}
