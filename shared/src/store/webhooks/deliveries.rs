//! The coalescing windows (pending items) and the delivery log: opened by the change feed, sealed with the log entry by the delivery worker.

use super::*;
use crate::store::idempotency::Guard;
use std::collections::HashMap;

impl Store {
    /// Records `changes` changes (the latest at `occurred_at`) in the (subscription, entity,
    /// event) window: opens it as `opening` says when none is open, else moves its `occurredAt` to this change, and counts them. One
    /// UpdateItem; returns the window as it now stands.
    pub async fn open_pending(
        &self,
        key: &PendingKey<'_>,
        occurred_at: Timestamp,
        changes: u32,
        opening: Opening<'_>,
        sides: Option<Sides<'_>>,
        matched: Option<(bool, bool)>,
    ) -> Result<Pending, StoreError> {
        let ttl = Timestamp::now().millis() / 1000 + PENDING_TTL_SECS;
        // the state before the window's first change stays; the one after its last moves
        let (states, mut values) = match sides {
            None => ("", vec![]),
            Some(Sides {
                first_old: Some(old),
                last_new: Some(new),
            }) => (
                ", firstOld = if_not_exists(firstOld, :fo), lastNew = :ln",
                vec![(":fo", s(old)), (":ln", s(new))],
            ),
            Some(_) => (
                ", changesOmitted = :omit",
                vec![(":omit", AttributeValue::Bool(true))],
            ),
        };
        // so does whether the entity matched the filter before the first and after the last
        let matches = match matched {
            None => "",
            Some((before, after)) => {
                values.push((":mb", AttributeValue::Bool(before)));
                values.push((":ma", AttributeValue::Bool(after)));
                ", matchBefore = if_not_exists(matchBefore, :mb), matchAfter = :ma"
            }
        };
        for _ in 0..3 {
            let mut update = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key.key()))
                .update_expression(format!(
                    "SET deliveryId = if_not_exists(deliveryId, :id), occurredAt = :t, \
                     claim = if_not_exists(claim, :claim), claimedAt = if_not_exists(claimedAt, :now), \
                     #ttl = if_not_exists(#ttl, :ttl){states}{matches} ADD changes :n"
                ));
            for (name, value) in &values {
                update = update.expression_attribute_values(*name, value.clone());
            }
            let out = update
                .condition_expression("attribute_not_exists(occurredAt) OR occurredAt <= :t")
                .expression_attribute_names("#ttl", TTL)
                .expression_attribute_values(":id", s(opening.delivery_id))
                .expression_attribute_values(":claim", s(opening.claim))
                .expression_attribute_values(
                    ":now",
                    AttributeValue::N(Timestamp::now().millis().to_string()),
                )
                .expression_attribute_values(":t", s(occurred_at.to_string()))
                .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string()))
                .expression_attribute_values(":n", AttributeValue::N(changes.to_string()))
                .return_values(ReturnValue::AllNew)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("UpdateItem", e));
            match out {
                Ok(out) => return decode(out.attributes.unwrap_or_default(), "pending"),
                // A later change is already recorded: the window stands as it is.
                Err(StoreError::ConditionFailed) => {
                    if let Some(p) = self.get_item(key.key(), "pending").await? {
                        return Ok(p);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Unavailable(
            "pending window kept changing".into(),
        ))
    }

    /// Takes over the window's stale claim `old` for the stream record `claim`; `false`
    /// when the window closed or another record took it over first.
    pub async fn take_over_claim(
        &self,
        key: &PendingKey<'_>,
        old: Option<&str>,
        claim: &str,
    ) -> Result<bool, StoreError> {
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key.key()))
            .update_expression("SET claim = :claim, claimedAt = :now")
            .expression_attribute_values(":claim", s(claim))
            .expression_attribute_values(
                ":now",
                AttributeValue::N(Timestamp::now().millis().to_string()),
            );
        update = match old {
            Some(old) => update
                .condition_expression("attribute_exists(deliveryId) AND claim = :old")
                .expression_attribute_values(":old", s(old)),
            None => update.condition_expression(
                "attribute_exists(deliveryId) AND attribute_not_exists(claim)",
            ),
        };
        match update
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))
        {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The subscription, the delivery's log entry, its open window and the endpoint's
    /// health: one strongly consistent BatchGetItem.
    pub async fn delivery_state(
        &self,
        key: &PendingKey<'_>,
        delivery_id: &str,
    ) -> Result<DeliveryState, StoreError> {
        let mut states = self.delivery_states(&[(key, delivery_id)]).await?;
        Ok(states.pop().unwrap_or_default())
    }

    /// [`Self::delivery_state`] of several deliveries (a batch of queue messages), in order,
    /// in one strongly consistent BatchGetItem per 100 keys (the items two of them share,
    /// their subscription and endpoint health, read once).
    pub async fn delivery_states(
        &self,
        wanted: &[(&PendingKey<'_>, &str)],
    ) -> Result<Vec<DeliveryState>, StoreError> {
        // each delivery's four keys: subscription, log entry, window, health
        let keys_of = |key: &PendingKey<'_>, delivery_id: &str| {
            [
                item_key(webhooks_pk(key.org), key.webhook_id),
                item_key(deliveries_pk(key.org, key.webhook_id), delivery_id),
                key.key(),
                item_key(health_pk(key.org, key.webhook_id), HEALTH_SK),
            ]
        };
        let all: Vec<Item> = wanted
            .iter()
            .flat_map(|(key, id)| keys_of(key, id))
            .collect();
        let text = |i: &Item, name: &str| i.get(name).and_then(|v| v.as_s().ok()).cloned();
        let found: HashMap<(Option<String>, Option<String>), Item> = self
            .batch_get(all)
            .await?
            .into_iter()
            .map(|i| ((text(&i, PK), text(&i, SK)), i))
            .collect();
        let item = |k: &Item| found.get(&(text(k, PK), text(k, SK))).cloned();
        wanted
            .iter()
            .map(|(key, id)| {
                let [sub, delivery, pending, health] = keys_of(key, id);
                Ok(DeliveryState {
                    subscription: match item(&sub) {
                        Some(i) => Some(decode::<SubscriptionItem>(i, "webhook")?.sub),
                        None => None,
                    },
                    delivery: match item(&delivery) {
                        Some(i) => Some(decode::<DeliveryItem>(i, "delivery")?.delivery),
                        None => None,
                    },
                    pending: item(&pending).map(|i| decode(i, "pending")).transpose()?,
                    health: item(&health)
                        .map(|i| decode(i, "endpoint health"))
                        .transpose()?,
                })
            })
            .collect()
    }

    /// Closes the window and writes its delivery log entry, in one transaction:
    /// `ConditionFailed` when a change moved the window since it was read.
    pub async fn seal_delivery(
        &self,
        key: &PendingKey<'_>,
        pending: &Pending,
        delivery: &Delivery,
    ) -> Result<(), StoreError> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key.key()))
            .condition_expression("deliveryId = :id AND occurredAt = :t")
            .expression_attribute_values(":id", s(&pending.delivery_id))
            .expression_attribute_values(":t", s(pending.occurred_at.to_string()))
            .build()
            .map_err(|e| StoreError::Other(e.to_string()))?;
        let put = self.delivery_put(key.org, delivery)?;
        self.client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().delete(delete).build())
            .transact_items(TransactWriteItem::builder().put(put).build())
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("TransactWriteItems", e))?;
        Ok(())
    }

    fn delivery_put(&self, org: &str, delivery: &Delivery) -> Result<Put, StoreError> {
        let item = DeliveryItem::new(org, delivery);
        Put::builder()
            .table_name(&self.table)
            .set_item(Some(encode(&item, "delivery")?))
            .condition_expression("attribute_not_exists(PK)")
            .build()
            .map_err(|e| StoreError::Other(e.to_string()))
    }

    /// Writes a new delivery log entry (a replay): `ConditionFailed` if its id exists.
    pub async fn create_delivery(
        &self,
        org: &str,
        delivery: &Delivery,
        guard: Option<&Guard>,
    ) -> Result<(), StoreError> {
        let item = DeliveryItem::new(org, delivery);
        self.put_new(&item, "delivery", guard).await
    }

    /// Replaces a delivery log entry after an attempt, unless another worker recorded an
    /// attempt first (`ConditionFailed`).
    pub async fn record_attempt(
        &self,
        org: &str,
        delivery: &Delivery,
        previous_attempts: u32,
    ) -> Result<(), StoreError> {
        let item = DeliveryItem::new(org, delivery);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(encode(&item, "delivery")?))
            .condition_expression("attempts = :prev")
            .expression_attribute_values(":prev", AttributeValue::N(previous_attempts.to_string()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("PutItem", e))?;
        Ok(())
    }

    /// Removes a delivery log entry (a replay whose message could not be queued).
    pub async fn delete_delivery(
        &self,
        org: &str,
        webhook: &str,
        id: &str,
    ) -> Result<(), StoreError> {
        self.delete_key(item_key(deliveries_pk(org, webhook), id))
            .await
    }

    pub async fn get_delivery(
        &self,
        org: &str,
        webhook: &str,
        id: &str,
    ) -> Result<Option<Delivery>, StoreError> {
        let item: Option<DeliveryItem> = self
            .get_item(item_key(deliveries_pk(org, webhook), id), "delivery")
            .await?;
        Ok(item.map(|i| i.delivery))
    }

    /// The log entries `ids` of a subscription, in that order (one BatchGetItem per 100);
    /// entries gone since are left out.
    pub async fn get_deliveries(
        &self,
        org: &str,
        webhook: &str,
        ids: &[String],
    ) -> Result<Vec<Delivery>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys = ids
            .iter()
            .map(|id| item_key(deliveries_pk(org, webhook), id.as_str()))
            .collect();
        let mut by_id = std::collections::HashMap::new();
        for item in self.batch_get(keys).await? {
            let d = decode::<DeliveryItem>(item, "delivery")?.delivery;
            by_id.insert(d.id.clone(), d);
        }
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    /// The log entries of `webhook` in `status` and of `event` (either or both), newest
    /// first: the log's partition queried with a filter, every page of it (⌈log size / 1 MB⌉
    /// requests), for a log narrowed by what its warm index does not hold.
    pub async fn filtered_deliveries(
        &self,
        org: &str,
        webhook: &str,
        status: Option<DeliveryStatus>,
        event: Option<&str>,
    ) -> Result<Vec<Delivery>, StoreError> {
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk")
            .expression_attribute_values(":pk", s(deliveries_pk(org, webhook)))
            .scan_index_forward(false)
            .consistent_read(true);
        let mut conditions = Vec::new();
        if let Some(status) = status {
            conditions.push("#status = :status");
            query = query
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":status", s(status.as_str()));
        }
        if let Some(event) = event {
            conditions.push("#event = :event");
            query = query
                .expression_attribute_names("#event", "event")
                .expression_attribute_values(":event", s(event));
        }
        if !conditions.is_empty() {
            query = query.filter_expression(conditions.join(" AND "));
        }
        self.query_all(query)
            .await?
            .into_iter()
            .map(|i| decode::<DeliveryItem>(i, "delivery").map(|d| d.delivery))
            .collect()
    }
}
