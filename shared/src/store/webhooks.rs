//! Webhook state in the table: subscriptions, the delivery log, the open coalescing
//! windows ("pending" items) that turn rapid changes to one entity into one delivery, and
//! each endpoint's failing streak ("health"), which spaces its attempts and disables it.
//!
//! A pending item exists while a delivery's window is open. The change feed creates or
//! updates it (one UpdateItem per change); the delivery worker closes it by deleting it and
//! writing the delivery log entry in one transaction, so a change lands either in the
//! closing delivery or in a new one, never in neither.

use super::keys::{
    deliveries_pk, delivery_log_change_pk, delivery_log_sk, health_pk, parked_pk, pending_pk,
    webhooks_pk, HEALTH_SK, PK, SK, TTL,
};
use super::ops::{item_key, Item};
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, ReturnValue, TransactWriteItem};
use serde::{Deserialize, Serialize};

/// A webhook subscription. `secret` signs deliveries; it is shown once (at creation and
/// rotation) and never rendered otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    pub id: String,
    pub url: String,
    pub topics: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub enabled: bool,
    /// Why it is disabled (absent while enabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    pub secret: String,
    /// The secret before the last rotation, signing beside `secret` until
    /// `previous_secret_expires_at` (a rotation with `expireCurrentInSeconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret_expires_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Optimistic-concurrency version, incremented by every update.
    pub ver: u64,
}

impl Subscription {
    /// The secrets deliveries are signed with at `now`: the current one, then the previous
    /// one while its overlap lasts.
    pub fn signing_secrets(&self, now: Timestamp) -> Vec<&str> {
        let mut secrets = vec![self.secret.as_str()];
        if let (Some(old), Some(until)) = (&self.previous_secret, self.previous_secret_expires_at) {
            if until.millis() > now.millis() {
                secrets.push(old);
            }
        }
        secrets
    }
}

/// What the delivery workers know of a subscription's endpoint, shared through the table:
/// it answered lately (`good_until`), one delivery is trying it (`probe_started_at`, with
/// `probe_at` the end of its lease), or every attempt since `failing_since` failed (`probe_at`
/// the time of its next try). See `workers/deliver.rs` for how attempts are gated on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<Timestamp>,
    #[serde(default)]
    pub failures: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good_until: Option<Timestamp>,
    /// The delivery that stays on the queue for the streak's next probe; the others park.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier: Option<String>,
    /// Deliveries are parked for this endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<bool>,
}

impl Health {
    /// Every attempt since `failing_since` failed.
    pub fn failing(&self) -> bool {
        self.failing_since.is_some()
    }
}

#[derive(Serialize, Deserialize)]
struct SubscriptionItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    #[serde(flatten)]
    sub: Subscription,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    /// Queued, not attempted yet.
    Pending,
    /// Attempted and failed; another attempt is scheduled.
    Retrying,
    Succeeded,
    /// Every attempt failed; the message went to the dead-letter queue.
    Failed,
    /// Not sent: the subscription was disabled or no longer covers the event.
    Cancelled,
}

impl DeliveryStatus {
    /// Whether no further attempt will be made.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }
}

/// One delivery attempt, as logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A delivery and its log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub id: String,
    pub webhook_id: String,
    pub event: String,
    pub entity_type: String,
    pub identifier: String,
    pub occurred_at: Timestamp,
    pub status: DeliveryStatus,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status_code: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    #[serde(default)]
    pub attempt_log: Vec<Attempt>,
    /// Epoch seconds after which DynamoDB deletes the entry.
    #[serde(rename = "ttl")]
    pub expires: i64,
}

/// A delivery log entry. Its `byChange` keys (`<createdAt>#<expires>#<id>`) never change
/// after its first write, so that a warm index of the log learns of it once
/// (`warm_sources.rs`) and drops it at its TTL.
#[derive(Serialize, Deserialize)]
struct DeliveryItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    #[serde(rename = "GSI1PK", default, skip_deserializing)]
    gsi1pk: String,
    #[serde(rename = "GSI2SK", default, skip_deserializing)]
    gsi2sk: String,
    #[serde(flatten)]
    delivery: Delivery,
}

impl DeliveryItem {
    fn new(org: &str, delivery: &Delivery) -> Self {
        Self {
            pk: deliveries_pk(org, &delivery.webhook_id),
            sk: delivery.id.clone(),
            gsi1pk: delivery_log_change_pk(org, &delivery.webhook_id),
            gsi2sk: delivery_log_sk(
                &delivery.created_at.to_string(),
                delivery.expires,
                &delivery.id,
            ),
            delivery: delivery.clone(),
        }
    }
}

/// An open coalescing window of one (subscription, entity, event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub delivery_id: String,
    /// The latest change in the window.
    pub occurred_at: Timestamp,
    /// Set once the delivery's message is on the queue.
    #[serde(default)]
    pub queued: bool,
}

/// Where one pending window lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingKey<'a> {
    pub org: &'a str,
    pub webhook_id: &'a str,
    /// `pending_sk(entity_type, action, identifier)`.
    pub sk: &'a str,
}

impl PendingKey<'_> {
    fn key(&self) -> Item {
        item_key(pending_pk(self.org, self.webhook_id), self.sk)
    }
}

/// What the delivery worker reads before an attempt, in one BatchGetItem.
#[derive(Debug, Default)]
pub struct DeliveryState {
    pub subscription: Option<Subscription>,
    pub delivery: Option<Delivery>,
    pub pending: Option<Pending>,
    pub health: Option<Health>,
}

/// A safety net only: a window is normally closed within seconds of its delay.
const PENDING_TTL_SECS: i64 = 86_400;
/// An endpoint's streak outlives its last failure by this much (longer than any disable
/// period), so a deleted subscription's leaves no item behind for good.
const HEALTH_TTL_SECS: i64 = 30 * 86_400;

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn decode<T: serde::de::DeserializeOwned>(item: Item, what: &str) -> Result<T, StoreError> {
    serde_dynamo::from_item(item).map_err(|e| StoreError::serde(what, e))
}

fn encode<T: Serialize>(value: &T, what: &str) -> Result<Item, StoreError> {
    serde_dynamo::to_item(value).map_err(|e| StoreError::serde(what, e))
}

impl Store {
    /// Creates a subscription (its id is new, so only a clash of ids could fail).
    pub async fn create_subscription(
        &self,
        org: &str,
        sub: &Subscription,
    ) -> Result<(), StoreError> {
        let item = SubscriptionItem {
            pk: webhooks_pk(org),
            sk: sub.id.clone(),
            sub: sub.clone(),
        };
        self.put_new(&item, "webhook").await
    }

    pub async fn get_subscription(
        &self,
        org: &str,
        id: &str,
    ) -> Result<Option<Subscription>, StoreError> {
        let item: Option<SubscriptionItem> = self
            .get_item(item_key(webhooks_pk(org), id), "webhook")
            .await?;
        Ok(item.map(|i| i.sub))
    }

    /// Every subscription of the organization, oldest first: one Query.
    pub async fn list_subscriptions(&self, org: &str) -> Result<Vec<Subscription>, StoreError> {
        let items = self
            .query_all(self.partition_query(webhooks_pk(org), None))
            .await?;
        items
            .into_iter()
            .map(|i| decode::<SubscriptionItem>(i, "webhook").map(|i| i.sub))
            .collect()
    }

    /// Replaces a subscription read at version `sub.ver - 1`: `ConditionFailed` when another
    /// write moved it or it was deleted.
    pub async fn save_subscription(&self, org: &str, sub: &Subscription) -> Result<(), StoreError> {
        let item = SubscriptionItem {
            pk: webhooks_pk(org),
            sk: sub.id.clone(),
            sub: sub.clone(),
        };
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(encode(&item, "webhook")?))
            .condition_expression("ver = :prev")
            .expression_attribute_values(":prev", AttributeValue::N((sub.ver - 1).to_string()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("PutItem", e))?;
        Ok(())
    }

    /// Deletes a subscription; `false` when there was none. Its delivery log expires by TTL.
    pub async fn delete_subscription(
        &self,
        org: &str,
        id: &str,
        at_version: Option<u64>,
    ) -> Result<bool, StoreError> {
        let mut delete = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(webhooks_pk(org), id)))
            .condition_expression("attribute_exists(PK)");
        if let Some(v) = at_version {
            delete = delete
                .condition_expression("attribute_exists(PK) AND ver = :v")
                .expression_attribute_values(":v", AttributeValue::N(v.to_string()));
        }
        let out = delete
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("DeleteItem", e));
        match out {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Records a change in the (subscription, entity, event) window: opens it with
    /// `new_delivery_id` when none is open, else moves its `occurredAt` to this change. One
    /// UpdateItem; returns the window as it now stands.
    pub async fn open_pending(
        &self,
        key: &PendingKey<'_>,
        occurred_at: Timestamp,
        new_delivery_id: &str,
    ) -> Result<Pending, StoreError> {
        let ttl = Timestamp::now().millis() / 1000 + PENDING_TTL_SECS;
        for _ in 0..3 {
            let out = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key.key()))
                .update_expression(
                    "SET deliveryId = if_not_exists(deliveryId, :id), occurredAt = :t, \
                     #ttl = if_not_exists(#ttl, :ttl)",
                )
                .condition_expression("attribute_not_exists(occurredAt) OR occurredAt <= :t")
                .expression_attribute_names("#ttl", TTL)
                .expression_attribute_values(":id", s(new_delivery_id))
                .expression_attribute_values(":t", s(occurred_at.to_string()))
                .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string()))
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

    /// Notes that the window's message is on the queue (a no-op once the window closed).
    pub async fn mark_queued(
        &self,
        key: &PendingKey<'_>,
        delivery_id: &str,
    ) -> Result<(), StoreError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key.key()))
            .update_expression("SET queued = :yes")
            .condition_expression("deliveryId = :id")
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .expression_attribute_values(":id", s(delivery_id))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e));
        match out {
            Ok(_) | Err(StoreError::ConditionFailed) => Ok(()),
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
        let sub_key = item_key(webhooks_pk(key.org), key.webhook_id);
        let delivery_key = item_key(deliveries_pk(key.org, key.webhook_id), delivery_id);
        let health_key = item_key(health_pk(key.org, key.webhook_id), HEALTH_SK);
        let items = self
            .batch_get(vec![sub_key, delivery_key, key.key(), health_key])
            .await?;
        let mut state = DeliveryState::default();
        let pk_of = |i: &Item| i.get(PK).and_then(|v| v.as_s().ok()).cloned();
        for item in items {
            let pk = pk_of(&item).unwrap_or_default();
            if pk == webhooks_pk(key.org) {
                state.subscription = Some(decode::<SubscriptionItem>(item, "webhook")?.sub);
            } else if pk == deliveries_pk(key.org, key.webhook_id) {
                state.delivery = Some(decode::<DeliveryItem>(item, "delivery")?.delivery);
            } else if pk == health_pk(key.org, key.webhook_id) {
                state.health = Some(decode(item, "endpoint health")?);
            } else {
                state.pending = Some(decode(item, "pending")?);
            }
        }
        Ok(state)
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
    pub async fn create_delivery(&self, org: &str, delivery: &Delivery) -> Result<(), StoreError> {
        let item = DeliveryItem::new(org, delivery);
        self.put_new(&item, "delivery").await
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

    /// Takes the endpoint's next attempt for one delivery (the probe), holding it until
    /// `lease_until`: allowed when nothing is known of the endpoint, or it is not known good
    /// and its probe time has come by `now`. `Err(health)` with the endpoint as it stands when
    /// another delivery holds it or it is not due (`None` if the store did not return it).
    pub async fn claim_probe(
        &self,
        org: &str,
        webhook: &str,
        now: Timestamp,
        lease_until: Timestamp,
    ) -> Result<Result<(), Option<Health>>, StoreError> {
        let ttl = now.millis() / 1000 + HEALTH_TTL_SECS;
        let out = self.update_health(org, webhook)
            .update_expression("SET probeAt = :lease, probeStartedAt = :now, #ttl = :ttl")
            .condition_expression(
                "attribute_not_exists(PK) OR ((attribute_not_exists(goodUntil) OR goodUntil < :now) \
                 AND (attribute_not_exists(probeAt) OR probeAt <= :now))",
            )
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":lease", s(lease_until.to_string()))
            .expression_attribute_values(":now", s(now.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string()))
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .send()
            .await;
        match out {
            Ok(_) => Ok(Ok(())),
            Err(e) => {
                use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
                if let Some(UpdateItemError::ConditionalCheckFailedException(c)) =
                    e.as_service_error()
                {
                    let current = c
                        .item
                        .clone()
                        .and_then(|i| decode(i, "endpoint health").ok());
                    return Ok(Err(current));
                }
                Err(StoreError::from_sdk("UpdateItem", e))
            }
        }
    }

    /// Counts a failed attempt against the endpoint: starts its streak at `now` unless one
    /// runs, and gives it no attempt before `probe_at`. One UpdateItem; the endpoint as it
    /// now stands.
    pub async fn record_endpoint_failure(
        &self,
        org: &str,
        webhook: &str,
        delivery_id: &str,
        now: Timestamp,
        probe_at: Timestamp,
    ) -> Result<Health, StoreError> {
        let ttl = now.millis() / 1000 + HEALTH_TTL_SECS;
        let out = self
            .update_health(org, webhook)
            .update_expression(
                "SET failures = if_not_exists(failures, :zero) + :one, \
                 failingSince = if_not_exists(failingSince, :now), probeAt = :probe, \
                 carrier = :carrier, #ttl = :ttl REMOVE goodUntil, probeStartedAt",
            )
            .expression_attribute_values(":carrier", s(delivery_id))
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":zero", AttributeValue::N("0".into()))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":now", s(now.to_string()))
            .expression_attribute_values(":probe", s(probe_at.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string()))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        decode(out.attributes.unwrap_or_default(), "endpoint health")
    }

    /// The endpoint's state (strongly consistent), `None` when nothing is known of it.
    pub async fn endpoint_health(
        &self,
        org: &str,
        webhook: &str,
    ) -> Result<Option<Health>, StoreError> {
        self.get_item(
            item_key(health_pk(org, webhook), HEALTH_SK),
            "endpoint health",
        )
        .await
    }

    /// Records that the endpoint answered: known good until `good_until`, any streak ended.
    pub async fn record_endpoint_success(
        &self,
        org: &str,
        webhook: &str,
        good_until: Timestamp,
    ) -> Result<(), StoreError> {
        let ttl = good_until.millis() / 1000 + HEALTH_TTL_SECS;
        self.update_health(org, webhook)
            .update_expression(
                "SET goodUntil = :good, #ttl = :ttl \
                 REMOVE failingSince, failures, probeAt, probeStartedAt, carrier",
            )
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":good", s(good_until.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        Ok(())
    }

    /// An UpdateItem of the endpoint's health item.
    fn update_health(&self, org: &str, webhook: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(health_pk(org, webhook), HEALTH_SK)))
    }

    /// Forgets what is known of the endpoint (it was enabled again: try it at once), but
    /// not its parked deliveries: they are released by its next answer.
    pub async fn clear_endpoint_health(&self, org: &str, webhook: &str) -> Result<(), StoreError> {
        let out = self
            .update_health(org, webhook)
            .update_expression(
                "REMOVE failingSince, failures, probeAt, probeStartedAt, goodUntil, carrier",
            )
            .condition_expression("attribute_exists(PK)")
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e));
        match out {
            Ok(_) | Err(StoreError::ConditionFailed) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Disables an enabled subscription with `reason` (a new version, so a PATCH read before
    /// it fails its condition and reads again); `false` when it was no longer enabled.
    pub async fn disable_subscription(
        &self,
        org: &str,
        webhook: &str,
        reason: &str,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(webhooks_pk(org), webhook)))
            .update_expression(
                "SET enabled = :no, disabledReason = :why, updatedAt = :at, ver = ver + :one",
            )
            .condition_expression("enabled = :yes")
            .expression_attribute_values(":no", AttributeValue::Bool(false))
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .expression_attribute_values(":why", s(reason))
            .expression_attribute_values(":at", s(at.to_string()))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e));
        match out {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Parks a delivery (its queue message `body`) until its failing endpoint answers (the
    /// caller flags the endpoint with [`Store::flag_parked`] unless it is flagged): a PutItem.
    pub async fn park_delivery(
        &self,
        org: &str,
        webhook: &str,
        delivery_id: &str,
        body: &str,
        expires: i64,
    ) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(parked_pk(org, webhook)))
            .item(SK, s(delivery_id))
            .item("body", s(body))
            .item(TTL, AttributeValue::N(expires.to_string()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("PutItem", e))?;
        Ok(())
    }

    /// Notes that the endpoint has parked deliveries.
    pub async fn flag_parked(&self, org: &str, webhook: &str) -> Result<(), StoreError> {
        self.set_health(org, webhook, "parked", AttributeValue::Bool(true))
            .await
    }

    /// Sets one attribute of the endpoint's health item: one UpdateItem.
    async fn set_health(
        &self,
        org: &str,
        webhook: &str,
        attribute: &str,
        value: AttributeValue,
    ) -> Result<(), StoreError> {
        self.update_health(org, webhook)
            .update_expression("SET #a = :v")
            .expression_attribute_names("#a", attribute)
            .expression_attribute_values(":v", value)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        Ok(())
    }

    /// Takes the flag of parked deliveries (so one worker releases them), then reads up to
    /// `limit` of them: `(delivery id, queue message body)`. Empty when another worker took
    /// the flag. A delivery parked meanwhile flags the endpoint again itself.
    pub async fn take_parked(
        &self,
        org: &str,
        webhook: &str,
        limit: i32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let out = self
            .update_health(org, webhook)
            .update_expression("REMOVE parked")
            .condition_expression("attribute_exists(parked)")
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e));
        match out {
            Ok(_) => {}
            Err(StoreError::ConditionFailed) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        }
        self.first_parked(org, webhook, limit).await
    }

    /// Up to `limit` parked deliveries, oldest first, without taking the flag.
    pub async fn first_parked(
        &self,
        org: &str,
        webhook: &str,
        limit: i32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let out = self
            .partition_query(parked_pk(org, webhook), None)
            .limit(limit)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        Ok(out
            .items
            .unwrap_or_default()
            .into_iter()
            .filter_map(|i| {
                let id = i.get(SK)?.as_s().ok()?.clone();
                let body = i.get("body")?.as_s().ok()?.clone();
                Some((id, body))
            })
            .collect())
    }

    /// Removes released parked deliveries (they are on the queue again).
    pub async fn delete_parked(
        &self,
        org: &str,
        webhook: &str,
        ids: &[String],
    ) -> Result<(), StoreError> {
        let pk = parked_pk(org, webhook);
        let deletes = ids
            .iter()
            .map(|id| self.delete_key(item_key(pk.clone(), id)));
        futures_util::future::try_join_all(deletes).await?;
        Ok(())
    }

    /// Makes `delivery_id` the delivery that carries the endpoint's next probe.
    pub async fn set_carrier(
        &self,
        org: &str,
        webhook: &str,
        delivery_id: &str,
    ) -> Result<(), StoreError> {
        self.set_health(org, webhook, "carrier", s(delivery_id))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn subscription() -> Subscription {
        Subscription {
            id: "wh_1".into(),
            url: "https://example.com/hook".into(),
            topics: vec!["product/updated".into()],
            description: None,
            enabled: true,
            disabled_reason: None,
            secret: "whsec_new".into(),
            previous_secret: Some("whsec_old".into()),
            previous_secret_expires_at: Some(at(2_000)),
            created_at: at(1_000),
            updated_at: at(1_500),
            ver: 3,
        }
    }

    fn delivery() -> Delivery {
        Delivery {
            id: "01J000000000000000000000AA".into(),
            webhook_id: "wh_1".into(),
            event: "product/updated".into(),
            entity_type: "product".into(),
            identifier: "shoe".into(),
            occurred_at: at(1_000),
            status: DeliveryStatus::Retrying,
            attempts: 1,
            last_status_code: Some(503),
            last_error: None,
            created_at: at(1_100),
            updated_at: at(1_200),
            next_attempt_at: Some(at(61_200)),
            replay_of: None,
            attempt_log: vec![Attempt {
                at: at(1_200),
                status_code: Some(503),
                duration_ms: 12,
                error: None,
            }],
            expires: 9_999,
        }
    }

    /// During a rotation's overlap both secrets sign, the new one first; at its end (the
    /// expiry itself included) only the new one does.
    #[test]
    fn the_previous_secret_signs_only_while_its_overlap_lasts() {
        let sub = subscription();
        assert_eq!(sub.signing_secrets(at(1_999)), ["whsec_new", "whsec_old"]);
        assert_eq!(sub.signing_secrets(at(2_000)), ["whsec_new"]);
        let without = Subscription {
            previous_secret_expires_at: None,
            ..sub
        };
        assert_eq!(without.signing_secrets(at(0)), ["whsec_new"]);
    }

    /// A subscription is stored under the organization's webhooks partition with its
    /// fields in camelCase, optional ones absent, and reads back equal.
    #[test]
    fn a_subscription_item_round_trips_with_its_keys() {
        let sub = subscription();
        let item = encode(
            &SubscriptionItem {
                pk: webhooks_pk("org1"),
                sk: sub.id.clone(),
                sub: sub.clone(),
            },
            "subscription",
        )
        .unwrap();
        assert_eq!(item["PK"], s("O#org1#W"));
        assert_eq!(item["SK"], s("wh_1"));
        assert_eq!(item["previousSecret"], s("whsec_old"));
        assert!(!item.contains_key("description") && !item.contains_key("disabledReason"));
        let back: SubscriptionItem = decode(item, "subscription").unwrap();
        assert_eq!(back.sub, sub);
    }

    /// A log entry carries its `byChange` keys from its first write: the subscription's log
    /// partition and `<createdAt>#<expires>#<id>`, with the TTL attribute `ttl`; the index
    /// keys are not read back into the delivery.
    #[test]
    fn a_delivery_item_carries_its_log_keys_and_ttl() {
        let d = delivery();
        let item = encode(&DeliveryItem::new("org1", &d), "delivery").unwrap();
        assert_eq!(item["PK"], s("O#org1#W#wh_1#D"));
        assert_eq!(item["SK"], s(d.id.clone()));
        assert_eq!(item["GSI1PK"], s("O#org1#W#wh_1#L"));
        assert_eq!(item["GSI2SK"], s(format!("{}#9999#{}", at(1_100), d.id)));
        assert_eq!(item[TTL], AttributeValue::N("9999".into()));
        assert_eq!(item["status"], s("retrying"));
        let back: DeliveryItem = decode(item, "delivery").unwrap();
        assert_eq!(back.delivery, d);
        assert_eq!((back.gsi1pk.as_str(), back.gsi2sk.as_str()), ("", ""));
    }

    #[test]
    fn final_statuses_end_a_delivery() {
        use DeliveryStatus::*;
        let finals: Vec<_> = [Pending, Retrying, Succeeded, Failed, Cancelled]
            .into_iter()
            .filter(|s| s.is_final())
            .collect();
        assert_eq!(finals, [Succeeded, Failed, Cancelled]);
    }

    /// Health decodes from an item holding only some fields (the others default), and is
    /// failing exactly while a streak is open.
    #[test]
    fn health_defaults_and_failing() {
        let mut item = Item::new();
        item.insert("failures".into(), AttributeValue::N("2".into()));
        let h: Health = decode(item, "health").unwrap();
        assert_eq!((h.failures, h.failing(), h.parked), (2, false, None));
        let failing = Health {
            failing_since: Some(at(5)),
            ..h
        };
        assert!(failing.failing());
    }

    #[test]
    fn a_pending_window_is_keyed_by_subscription_and_entity() {
        let key = PendingKey {
            org: "org1",
            webhook_id: "wh_1",
            sk: "product/updated/shoe",
        }
        .key();
        assert_eq!(key[PK], s("O#org1#W#wh_1#Q"));
        assert_eq!(key[SK], s("product/updated/shoe"));
    }
}
