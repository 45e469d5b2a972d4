//! The delivery queue (SQS): what a message carries, sending it with the coalescing delay,
//! pushing a failed one back by the next retry step, and the dead-letter queue.

use super::config::WebhookConfig;
use super::topics::Action;
use crate::store::keys::pending_sk;
use aws_sdk_sqs::Client;
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
    /// The sort key of the pending window this delivery closes.
    pub fn pending_sk(&self) -> String {
        pending_sk(&self.entity_type, self.action.as_str(), &self.identifier)
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
}

impl DeliveryQueue {
    /// The queue of `config`, or `None` when no queue is configured.
    pub fn new(client: Client, config: &WebhookConfig) -> Option<Self> {
        Some(Self {
            client,
            url: config.queue_url.clone()?,
            dead_letter_url: config.dead_letter_queue_url.clone(),
        })
    }

    /// Sends `message`, invisible for `delay` (whole seconds, at most 15 minutes).
    pub async fn send(&self, message: &QueueMessage, delay: Duration) -> Result<(), QueueError> {
        let body = serde_json::to_string(message).map_err(failed("encode"))?;
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

    /// Makes a received message visible again after `after` (the next retry step).
    pub async fn retry_after(
        &self,
        receipt_handle: &str,
        after: Duration,
    ) -> Result<(), QueueError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(after.as_secs().min(43_200) as i32)
            .send()
            .await
            .map_err(failed("ChangeMessageVisibility"))?;
        Ok(())
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
