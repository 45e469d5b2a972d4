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
use crate::domain::changes::PayloadKind;
use crate::domain::destinations::{Destination, Kind};
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, ReturnValue, TransactWriteItem};
use serde::{Deserialize, Serialize};

mod deliveries;
mod endpoints;
mod subscriptions;

#[cfg(test)]
mod tests;

/// A webhook subscription. `secret` signs deliveries; it is shown once (at creation and
/// rotation) and never rendered otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    pub id: String,
    /// Where it delivers: an HTTPS URL, an event bus ARN or a queue URL, by `kind`.
    pub url: String,
    /// The destination's type (absent in subscriptions made before AWS destinations: HTTPS).
    #[serde(default, rename = "destinationType")]
    pub kind: Kind,
    /// While an AWS destination has not proved it is the subscriber's: the token of the
    /// latest verification message (never rendered) and when it expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    pub topics: Vec<String>,
    /// `changedFields`: an update is delivered only when one of these changed (absent:
    /// every update; `webhooks/changed_fields.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_fields: Option<Vec<String>>,
    /// What its deliveries carry: the notice alone, or with `changes` (`domain/changes.rs`).
    #[serde(default)]
    pub payload: PayloadKind,
    /// `filter`: only changes of entities that match it before or after are delivered
    /// (absent: every change; `webhooks/filters.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<EventFilter>,
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

/// A subscription's `filter` as kept: the lists' `search` object (JSON text), its mode, and
/// the type of each attribute it names, read at creation so that the change feed evaluates
/// it without reading definitions (`webhooks/filters.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventFilter {
    pub search: String,
    /// `searchMode: "any"`: one top-level key matching is enough.
    #[serde(default)]
    pub any: bool,
    /// `<entity>.<key>` → the attribute's type.
    #[serde(default)]
    pub types: std::collections::BTreeMap<String, crate::domain::attributes::AttributeType>,
}

/// Where a filtered delivery's entity stands to the filter: before the first change the
/// delivery coalesces and after the last (decisions.md: `match`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SetMatch {
    /// It matches only after.
    Entered,
    /// It matches before and after.
    Stayed,
    /// It matches only before (a delete of a matching entity too).
    Left,
    /// It matched neither (entered and left within one window): never sent.
    Outside,
}

impl SetMatch {
    pub fn of(before: bool, after: bool) -> Self {
        match (before, after) {
            (false, true) => Self::Entered,
            (true, true) => Self::Stayed,
            (true, false) => Self::Left,
            (false, false) => Self::Outside,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Entered => "entered",
            Self::Stayed => "stayed",
            Self::Left => "left",
            Self::Outside => "outside",
        }
    }
}

/// An AWS destination's pending proof of ownership.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    pub token: String,
    pub expires_at: Timestamp,
}

impl Subscription {
    /// Whether catalog events go to it: enabled, and its destination verified.
    pub fn delivers(&self) -> bool {
        self.enabled && self.verification.is_none()
    }

    /// Its destination, from the stored type and address.
    pub fn destination(&self) -> Destination {
        Destination::stored(self.kind, &self.url)
    }

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
/// the time of its next try). See `workers/deliver/` for how attempts are gated on it.
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    /// Queued, not attempted yet.
    Pending,
    /// Attempted and failed; another attempt is scheduled.
    Retrying,
    /// The endpoint answered 2xx.
    Succeeded,
    /// Every attempt failed; the message went to the dead-letter queue.
    Failed,
    /// Not sent: the subscription was disabled or no longer covers the event.
    Cancelled,
}

impl DeliveryStatus {
    pub const ALL: [Self; 5] = [
        Self::Pending,
        Self::Retrying,
        Self::Succeeded,
        Self::Failed,
        Self::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Retrying => "retrying",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether no further attempt will be made.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }
}

/// One delivery attempt, as logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub at: Timestamp,
    /// The endpoint's answer; absent when it gave none
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u16")]
    pub status_code: Option<u16>,
    pub duration_ms: u64,
    /// Why the attempt failed, when it did
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
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
    /// The changes to the entity coalesced into this delivery (0: a replay or a test event).
    #[serde(default)]
    pub changes: u32,
    /// For `payload: "changes"`: the body's `changes` (JSON), from the window's first old
    /// and last new state; kept so that a replay carries it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    /// The states were too large to keep or send: the body says `changesOmitted`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changes_omitted: bool,
    /// For a filtered subscription: where the entity stands to the filter.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub matched: Option<SetMatch>,
    /// Epoch seconds after which DynamoDB deletes the entry.
    #[serde(rename = "ttl")]
    pub expires: i64,
}

/// A delivery log entry. Its `byChange` keys (`<createdAt>#<expires>#<id>`) never change
/// after its first write, so that a warm index of the log learns of it once
/// (`flat_lists.rs`) and drops it at its TTL.
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
    /// The stream record that opened the window (its sequence number): the change feed
    /// invocation handling that record queues the delivery's message, again when the
    /// record is retried; any later record finds the window claimed and queues nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    /// When the claim was made (unix millis): a claim older than [`CLAIM_STALE_MS`] on a
    /// window still open is taken over by the next record (its record was given up on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_at: Option<i64>,
    /// The changes recorded in the window (a change the feed records twice, after a
    /// retried batch, counts twice).
    #[serde(default)]
    pub changes: u32,
    /// For `payload: "changes"`: the entity's state before the window's first change and
    /// after its last (`domain/changes.rs` kept sides), or `changes_omitted` when a side was
    /// too large to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_old: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_new: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changes_omitted: bool,
    /// For a filtered subscription: whether the entity matched before the window's first
    /// change, and after its last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_before: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_after: Option<bool>,
}

/// What a window gets when a change opens it: its delivery's id, and the stream record
/// that claims it (its sequence number).
#[derive(Debug, Clone, Copy)]
pub struct Opening<'a> {
    pub delivery_id: &'a str,
    pub claim: &'a str,
}

/// How old a claim on a window still open may be before the next record takes it over
/// and queues the delivery again: longer than the change feed's retries of one record can
/// take (50 retries, backoff capped at 5 s, 60 s each at most), so only a record given up
/// on leaves such a claim.
pub const CLAIM_STALE_MS: i64 = 60 * 60 * 1000;

/// Whether the stream record `claim` must queue the window's delivery, as the window
/// stands after it recorded its change, at `now` (unix millis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queueing {
    /// The record opened the window (or is that record, retried): queue it.
    Queue,
    /// Another record claimed it lately: its invocation queues the delivery.
    Claimed,
    /// Another record's claim is stale: take it over, then queue.
    TakeOver,
}

impl Pending {
    /// What the record `claim` does about the window's message at `now` (unix millis).
    pub fn queueing(&self, claim: &str, now: i64) -> Queueing {
        match (&self.claim, self.claimed_at) {
            (Some(c), _) if c == claim => Queueing::Queue,
            (Some(_), Some(at)) if now - at <= CLAIM_STALE_MS => Queueing::Claimed,
            _ => Queueing::TakeOver,
        }
    }

    /// Where the window's entity stands to its subscription's filter (`None`: unfiltered).
    pub fn matched(&self) -> Option<SetMatch> {
        Some(SetMatch::of(self.match_before?, self.match_after?))
    }
}

/// The sides of a window's states a change records (`None`: too large to keep).
#[derive(Debug, Clone, Copy)]
pub struct Sides<'a> {
    pub first_old: Option<&'a str>,
    pub last_new: Option<&'a str>,
}

/// Where one pending window lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingKey<'a> {
    org: &'a str,
    webhook_id: &'a str,
    sk: String,
}

impl<'a> PendingKey<'a> {
    /// The window of `webhook_id`'s changes of one kind (`action`) to one entity.
    pub fn of(
        org: &'a str,
        webhook_id: &'a str,
        entity_type: &str,
        action: &str,
        identifier: &str,
    ) -> Self {
        Self {
            org,
            webhook_id,
            sk: super::keys::pending_sk(entity_type, action, identifier),
        }
    }

    fn key(&self) -> Item {
        item_key(pending_pk(self.org, self.webhook_id), &self.sk)
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
