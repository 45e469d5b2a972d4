//! The delivery queue (SQS): what a message carries and the log entry it starts, sending it
//! with the coalescing delay, pushing a failed one back by the next retry step, and the
//! dead-letter queue.

use super::config::WebhookConfig;
use super::topics::{event_name, Action};
use crate::domain::time::Timestamp;
use crate::store::webhooks::PendingKey;
use crate::store::webhooks::{Delivery, DeliveryStatus};
use aws_sdk_sqs::Client;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A delivery id: a ULID, so a subscription's log reads in time order.
pub fn new_delivery_id() -> String {
    crate::auth::apikey::prefixed_ulid("dlv_")
}

/// A new delivery log entry, not attempted yet.
pub fn new_delivery(m: &QueueMessage, occurred_at: Timestamp, retention: Duration) -> Delivery {
    let now = Timestamp::now();
    Delivery {
        id: m.delivery_id.clone(),
        webhook_id: m.webhook_id.clone(),
        event: event_name(&m.entity_type, m.action),
        entity_type: m.entity_type.clone(),
        identifier: m.identifier.clone(),
        occurred_at,
        status: DeliveryStatus::Pending,
        attempts: 0,
        last_status_code: None,
        last_error: None,
        created_at: now,
        updated_at: now,
        next_attempt_at: None,
        replay_of: None,
        attempt_log: Vec::new(),
        changes: 0,
        delta: None,
        changes_omitted: false,
        matched: None,
        expires: now.millis() / 1000 + retention.as_secs() as i64,
    }
}

/// One delivery to attempt. The delivery's payload lives in the table; the message names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueMessage {
    pub org: String,
    pub webhook_id: String,
    pub delivery_id: String,
    pub entity_type: String,
    pub action: Action,
    pub identifier: String,
}

impl QueueMessage {
    /// The pending window this delivery closes.
    pub fn pending_key(&self) -> PendingKey<'_> {
        PendingKey::of(
            &self.org,
            &self.webhook_id,
            &self.entity_type,
            self.action.as_str(),
            &self.identifier,
        )
    }
}

/// A queue operation failed (logged; the caller retries through the event source).
#[derive(Debug, thiserror::Error)]
#[error("queue: {0}")]
pub struct QueueError(String);

fn failed<E: std::fmt::Debug>(op: &'static str) -> impl Fn(E) -> QueueError {
    move |e| QueueError(format!("{op}: {e:?}"))
}

/// The delivery queue and its dead-letter queue.
#[derive(Debug, Clone)]
pub struct DeliveryQueue {
    client: Client,
    url: String,
    dead_letter_url: Option<String>,
    feed_failure_url: Option<String>,
}

impl DeliveryQueue {
    /// The queue of `config`, or `None` when no queue is configured.
    pub fn new(client: Client, config: &WebhookConfig) -> Option<Self> {
        Some(Self {
            client,
            url: config.queue_url.clone()?,
            dead_letter_url: config.dead_letter_queue_url.clone(),
            feed_failure_url: config.feed_failure_queue_url.clone(),
        })
    }

    /// Sends `message`, invisible for `delay` (whole seconds, at most 15 minutes).
    pub async fn send(&self, message: &QueueMessage, delay: Duration) -> Result<(), QueueError> {
        let body = serde_json::to_string(message).map_err(failed("encode"))?;
        self.send_body(&body, delay).await
    }

    /// Sends message bodies as they are, visible at once: SendMessageBatch, ten at a time.
    pub async fn send_bodies(&self, bodies: &[String]) -> Result<(), QueueError> {
        for chunk in bodies.chunks(10) {
            let sent = self.send_batch(chunk, Duration::ZERO).await?;
            if sent.iter().any(|ok| !ok) {
                return Err(QueueError("SendMessageBatch: an entry failed".into()));
            }
        }
        Ok(())
    }

    /// Sends up to ten messages in one SendMessageBatch, invisible for `delay`; which
    /// entries went through, in order.
    pub async fn send_many(
        &self,
        messages: &[&QueueMessage],
        delay: Duration,
    ) -> Result<Vec<bool>, QueueError> {
        let bodies = messages
            .iter()
            .map(|m| serde_json::to_string(m).map_err(failed("encode")))
            .collect::<Result<Vec<_>, _>>()?;
        self.send_batch(&bodies, delay).await
    }

    /// One SendMessageBatch of at most ten bodies; per entry, whether it was sent.
    async fn send_batch(
        &self,
        bodies: &[String],
        delay: Duration,
    ) -> Result<Vec<bool>, QueueError> {
        let entries = bodies
            .iter()
            .enumerate()
            .map(|(i, body)| {
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(body)
                    .delay_seconds(delay.as_secs().min(900) as i32)
                    .build()
                    .map_err(failed("SendMessageBatch entry"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let out = self
            .client
            .send_message_batch()
            .queue_url(&self.url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(failed("SendMessageBatch"))?;
        let failed_ids: Vec<&str> = out.failed.iter().map(|f| f.id.as_str()).collect();
        Ok((0..bodies.len())
            .map(|i| !failed_ids.contains(&i.to_string().as_str()))
            .collect())
    }

    /// Sends a message body as it is, invisible for `delay` (at most 15 minutes).
    pub async fn send_body(&self, body: &str, delay: Duration) -> Result<(), QueueError> {
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .delay_seconds(delay.as_secs().min(900) as i32)
            .send()
            .await
            .map_err(failed("SendMessage"))?;
        Ok(())
    }

    /// Makes a received message visible again after `after` (the next retry step), rounded
    /// up to whole seconds.
    pub async fn retry_after(
        &self,
        receipt_handle: &str,
        after: Duration,
    ) -> Result<(), QueueError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(after.as_millis().div_ceil(1000).min(43_200) as i32)
            .send()
            .await
            .map_err(failed("ChangeMessageVisibility"))?;
        Ok(())
    }

    /// Sends the change feed's set-aside records to its failure queue (when one is
    /// configured), ten per SendMessageBatch.
    pub async fn set_aside(&self, bodies: &[String]) -> Result<(), QueueError> {
        let Some(url) = &self.feed_failure_url else {
            return Ok(());
        };
        let to = Self {
            client: self.client.clone(),
            url: url.clone(),
            dead_letter_url: None,
            feed_failure_url: None,
        };
        to.send_bodies(bodies).await
    }

    /// Moves a message body to the dead-letter queue (when one is configured).
    pub async fn dead_letter(&self, body: &str) -> Result<(), QueueError> {
        let Some(url) = &self.dead_letter_url else {
            return Ok(());
        };
        self.client
            .send_message()
            .queue_url(url)
            .message_body(body)
            .send()
            .await
            .map_err(failed("SendMessage (dead-letter)"))?;
        Ok(())
    }
}
