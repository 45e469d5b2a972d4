//! The delivery worker: for each queued message, closes the delivery's coalescing window,
//! POSTs the signed payload, logs the attempt, and on failure pushes the message back by the
//! next step of the retry schedule (ChangeMessageVisibility) or, after the last attempt,
//! marks the delivery failed and moves the message to the dead-letter queue.

use super::queue::QueueMessage;
use super::signature;
use super::topics::{self, event_name};
use super::url_guard::{self, GuardedResolver};
use crate::app::App;
use crate::domain::time::Timestamp;
use crate::store::webhooks::{
    Attempt, Delivery, DeliveryStatus, Pending, PendingKey, Subscription,
};
use crate::store::StoreError;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use futures_util::future::join_all;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const USER_AGENT: &str = "Catalog-Webhooks/1.0";
/// How early a message may come back for its next step and still be attempted.
const EARLY_SLACK_MS: i64 = 2_000;
/// Attempts kept in one delivery's log (the schedule is shorter; replays are new deliveries).
const MAX_LOGGED_ATTEMPTS: usize = 20;

/// The body of every delivery, exactly as the spec lists it.
#[derive(Debug, Serialize)]
pub struct Payload<'a> {
    pub id: &'a str,
    pub event: &'a str,
    pub identifier: &'a str,
    pub entity_type: &'a str,
    pub occurred_at: String,
}

impl<'a> Payload<'a> {
    pub fn of(d: &'a Delivery) -> Self {
        Self {
            id: &d.id,
            event: &d.event,
            identifier: &d.identifier,
            entity_type: &d.entity_type,
            occurred_at: d.occurred_at.to_string(),
        }
    }
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
        expires: now.millis() / 1000 + retention.as_secs() as i64,
    }
}

/// What became of a message.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Nothing more to do: delete it from the queue.
    Done,
    /// Leave it on the queue (its visibility says when it comes back).
    Again,
}

/// The HTTP client deliveries go out with: no redirects, names resolved by the guarded
/// resolver, and no proxy, whatever the environment says (a proxy would resolve the name
/// itself, past the guard).
pub fn client(cfg: &super::WebhookConfig) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(cfg.timeout)
        .connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver(cfg.policy)))
        .https_only(!cfg.policy.allow_loopback)
        .user_agent(USER_AGENT)
        .build()
        .expect("the delivery HTTP client builds")
}

/// The delivery Lambda's handler, with its HTTP client built once.
pub struct Deliverer {
    app: &'static App,
    http: reqwest::Client,
}

impl Deliverer {
    pub fn new(app: &'static App) -> Self {
        let http = client(&app.config.webhooks);
        Self { app, http }
    }

    /// Handles one batch of queue messages; the ones to retry are reported as failures.
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        let outcomes = join_all(event.records.iter().map(|m| self.process(m))).await;
        let mut response = SqsBatchResponse::default();
        for (m, outcome) in event.records.iter().zip(outcomes) {
            if outcome == Outcome::Again {
                response.add_failure(m.message_id.clone().unwrap_or_default());
            }
        }
        response
    }

    async fn process(&self, m: &SqsMessage) -> Outcome {
        let body = m.body.as_deref().unwrap_or_default();
        let Ok(message) = serde_json::from_str::<QueueMessage>(body) else {
            tracing::error!(
                body,
                "undecodable delivery message: moved to the dead-letter queue"
            );
            return self.dead_letter(body).await;
        };
        let receipt = m.receipt_handle.as_deref().unwrap_or_default();
        match self.attempt(&message, body, receipt).await {
            Ok(outcome) => outcome,
            Err(e) => {
                // Storage failed around the attempt: the message comes back after the
                // queue's visibility timeout and is tried again.
                tracing::warn!(error = %e, delivery = %message.delivery_id, "delivery deferred");
                Outcome::Again
            }
        }
    }

    async fn dead_letter(&self, body: &str) -> Outcome {
        let Some(queue) = &self.app.queue else {
            return Outcome::Done;
        };
        match queue.dead_letter(body).await {
            Ok(()) => Outcome::Done,
            Err(e) => {
                tracing::warn!(error = %e, "dead-letter send failed");
                Outcome::Again
            }
        }
    }

    async fn attempt(
        &self,
        m: &QueueMessage,
        body: &str,
        receipt: &str,
    ) -> Result<Outcome, StoreError> {
        let store = &self.app.store;
        let sk = m.pending_sk();
        let key = PendingKey {
            org: &m.org,
            webhook_id: &m.webhook_id,
            sk: &sk,
        };
        let state = store.delivery_state(&key, &m.delivery_id).await?;
        let Some(sub) = state.subscription else {
            // The subscription was deleted: nothing to send; its state expires by TTL.
            return Ok(Outcome::Done);
        };
        let mut delivery = match state.delivery {
            Some(d) => d,
            None => match self.seal(&key, m, state.pending).await? {
                Some(d) => d,
                None => {
                    tracing::info!(delivery = %m.delivery_id, "no window and no log entry: dropped");
                    return Ok(Outcome::Done);
                }
            },
        };
        match delivery.status {
            // The last attempt failed but the dead-letter send did not go through.
            DeliveryStatus::Failed => return Ok(self.dead_letter(body).await),
            s if s.is_final() => return Ok(Outcome::Done),
            _ => {}
        }
        // A copy that comes before the next step (a duplicate message, or a visibility
        // change that did not go through) waits for it instead of sending early.
        if let Some(next) = delivery.next_attempt_at {
            let early_ms = next.millis() - Timestamp::now().millis();
            if early_ms > EARLY_SLACK_MS {
                if let Some(queue) = &self.app.queue {
                    let wait = Duration::from_millis(early_ms as u64 + 999);
                    if let Err(e) = queue.retry_after(receipt, wait).await {
                        tracing::warn!(error = %e, "visibility not changed; the queue's timeout applies");
                    }
                }
                return Ok(Outcome::Again);
            }
        }
        let previous = delivery.attempts;
        if !sub.enabled || !topics::any_matches(&sub.topics, &delivery.entity_type, m.action) {
            delivery.status = DeliveryStatus::Cancelled;
            delivery.last_error = Some(if sub.enabled {
                format!("the subscription no longer covers {}", delivery.event)
            } else {
                "the subscription is disabled".into()
            });
            delivery.updated_at = Timestamp::now();
            return self
                .record(m, &delivery, previous)
                .await
                .map(|_| Outcome::Done);
        }

        let attempt = self.send(&sub, &delivery).await;
        let ok = attempt.error.is_none();
        delivery.attempts += 1;
        delivery.last_status_code = attempt.status_code;
        delivery.last_error = attempt.error.clone();
        delivery.updated_at = Timestamp::now();
        delivery.attempt_log.push(attempt);
        if delivery.attempt_log.len() > MAX_LOGGED_ATTEMPTS {
            delivery.attempt_log.remove(0);
        }
        let wait = (!ok)
            .then(|| self.app.config.webhooks.wait_after(delivery.attempts))
            .flatten();
        delivery.status = match (ok, wait) {
            (true, _) => DeliveryStatus::Succeeded,
            (false, Some(_)) => DeliveryStatus::Retrying,
            (false, None) => DeliveryStatus::Failed,
        };
        delivery.next_attempt_at =
            wait.map(|w| Timestamp::from_millis(Timestamp::now().millis() + w.as_millis() as i64));
        if !self.record(m, &delivery, previous).await? {
            return Ok(Outcome::Done); // another worker took this attempt
        }
        Ok(match (delivery.status, wait) {
            (DeliveryStatus::Retrying, Some(wait)) => {
                if let Some(queue) = &self.app.queue {
                    if let Err(e) = queue.retry_after(receipt, wait).await {
                        tracing::warn!(error = %e, "visibility not changed; the queue's timeout applies");
                    }
                }
                Outcome::Again
            }
            (DeliveryStatus::Failed, _) => self.dead_letter(body).await,
            _ => Outcome::Done,
        })
    }

    /// Writes the attempt; `false` when another worker recorded this attempt first.
    async fn record(
        &self,
        m: &QueueMessage,
        delivery: &Delivery,
        previous: u32,
    ) -> Result<bool, StoreError> {
        match self
            .app
            .store
            .record_attempt(&m.org, delivery, previous)
            .await
        {
            Ok(()) => Ok(true),
            Err(StoreError::ConditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Closes the delivery's window and writes its log entry; `None` when there is nothing
    /// for this message to attempt (no window, or another copy closed it).
    async fn seal(
        &self,
        key: &PendingKey<'_>,
        m: &QueueMessage,
        mut pending: Option<Pending>,
    ) -> Result<Option<Delivery>, StoreError> {
        let store = &self.app.store;
        for _ in 0..5 {
            let Some(p) = pending.filter(|p| p.delivery_id == m.delivery_id) else {
                return Ok(None);
            };
            let delivery = new_delivery(m, p.occurred_at, self.app.config.webhooks.log_retention);
            match store.seal_delivery(key, &p, &delivery).await {
                Ok(()) => return Ok(Some(delivery)),
                // A change moved the window (read it again), or another copy of this
                // message closed it first and makes the attempt (drop this copy).
                Err(StoreError::ConditionFailed) => {
                    let state = store.delivery_state(key, &m.delivery_id).await?;
                    if state.delivery.is_some() {
                        return Ok(None);
                    }
                    pending = state.pending;
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Unavailable("the window kept moving".into()))
    }

    /// One POST of the signed payload; success is a 2xx within the timeout.
    async fn send(&self, sub: &Subscription, d: &Delivery) -> Attempt {
        let at = Timestamp::now();
        let started = Instant::now();
        let body = serde_json::to_string(&Payload::of(d)).unwrap_or_default();
        let result = match url_guard::parse(&sub.url, self.app.config.webhooks.policy) {
            Err(e) => Err(e),
            Ok(url) => {
                let signed = signature::sign(&sub.secret, at.millis() / 1000, body.as_bytes());
                self.http
                    .post(url)
                    .header("content-type", "application/json")
                    .header(signature::ID_HEADER, &d.id)
                    .header(signature::HEADER, signed)
                    .body(body)
                    .send()
                    .await
                    .map_err(|e| self.describe(&e))
            }
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let (status_code, error) = match result {
            Ok(r) if r.status().is_success() => (Some(r.status().as_u16()), None),
            Ok(r) if r.status().is_redirection() => (
                Some(r.status().as_u16()),
                Some("redirects are not followed; answer 2xx at the registered URL".into()),
            ),
            Ok(r) => (
                Some(r.status().as_u16()),
                Some(format!("receiver answered {}", r.status().as_u16())),
            ),
            Err(e) => (None, Some(e)),
        };
        Attempt {
            at,
            status_code,
            duration_ms,
            error,
        }
    }

    /// A delivery error for the log: what went wrong, without internals.
    fn describe(&self, e: &reqwest::Error) -> String {
        if e.is_timeout() {
            return format!(
                "no response within {} s",
                self.app.config.webhooks.timeout.as_secs()
            );
        }
        let mut cause: &dyn std::error::Error = e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        if e.is_connect() {
            format!("could not connect: {cause}")
        } else {
            format!("request failed: {cause}")
        }
    }
}
