//! The delivery worker: for each queued message, closes the delivery's coalescing window,
//! POSTs the signed payload, logs the attempt, and on failure pushes the message back by the
//! next step of the retry schedule (ChangeMessageVisibility) or, after the last attempt,
//! marks the delivery failed and moves the message to the dead-letter queue.
//!
//! Endpoints are isolated from each other. Messages of a batch run concurrently, and an
//! endpoint whose last attempt failed is in a failing streak (`Health`): until its next
//! probe time none of its deliveries is attempted (each goes back to the queue until then,
//! without using an attempt), and at that time one delivery, the probe, claims the attempt.
//! A probe that succeeds ends the streak and the waiting deliveries follow; one that fails
//! moves the next probe by the retry schedule's step for the streak's length. So a dead
//! endpoint costs one attempt per probe, not one per queued delivery, and never holds more
//! than one delivery's timeout at a time. A streak that lasts the configured period
//! (5 days) disables the subscription.

use crate::context::Context;
use crate::domain::changes;
use crate::domain::time::Timestamp;
use crate::store::webhooks::{
    Attempt, Delivery, DeliveryState, DeliveryStatus, Health, Pending, PendingKey, SetMatch,
    Subscription,
};
use crate::store::StoreError;
use crate::webhooks::queue::{new_delivery, QueueMessage};
use crate::webhooks::signature;
use crate::webhooks::topics;
use crate::webhooks::url_guard::{self, GuardedResolver};
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use futures_util::future::join_all;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod answered;
mod aws;
mod batch;
mod gating;
mod parking;
mod payload;
mod verification;

use gating::*;
pub use gating::{disabled_reason, gate, Gate};
pub use payload::Payload;
pub(crate) use payload::ANSWERS;

#[cfg(test)]
mod tests;

pub const USER_AGENT: &str = "Catalog-Webhooks/1.0";
/// How early a message may come back for its next step and still be attempted.
const EARLY_SLACK_MS: i64 = 2_000;
/// Attempts kept in one delivery's log (the schedule is shorter; replays are new deliveries).
const MAX_LOGGED_ATTEMPTS: usize = 20;
/// Parked deliveries put back on the queue per answer of their endpoint (each of them,
/// delivered, releases the next chunk).
const UNPARK_CHUNK: i32 = 100;
/// Parked deliveries put back at once when their subscription is disabled, to be cancelled.
const DISABLE_RELEASE: i32 = 1_000;
/// A parked delivery is kept as long as the queue keeps a message (14 days).
const PARKED_TTL_SECS: i64 = 14 * 86_400;
/// A probe holds its endpoint for the delivery timeout and this much more.
const PROBE_LEASE_SLACK: Duration = Duration::from_secs(2);
/// An endpoint that answered is sent to freely for this long (refreshed by later answers).
const GOOD_FOR_MS: i64 = 60_000;
/// A probe younger than this may still answer at once: deliveries waiting for it look again
/// in a second rather than at the end of its lease.
const YOUNG_PROBE_MS: i64 = 1_000;

/// A subscription's endpoint: (organization, webhook id).
type Endpoint = (String, String);

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
pub fn client(cfg: &crate::webhooks::WebhookConfig) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(cfg.timeout)
        .connect_timeout(cfg.connect_timeout)
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
    cx: &'static Context,
    http: reqwest::Client,
    aws: aws::AwsSenders,
    /// The endpoints this process saw answer lately.
    answered: answered::Answered,
}

impl Deliverer {
    pub fn new(cx: &'static Context) -> Self {
        let http = client(&cx.config.webhooks);
        let aws = aws::AwsSenders::new(&cx.config.webhooks);
        Self {
            cx,
            http,
            aws,
            answered: Default::default(),
        }
    }

    /// Handles one message; `state`, when read with others', saves its own read.
    async fn process(&self, m: &SqsMessage, state: Option<DeliveryState>) -> Outcome {
        let body = m.body.as_deref().unwrap_or_default();
        let Ok(message) = serde_json::from_str::<QueueMessage>(body) else {
            tracing::error!(
                body,
                "undecodable delivery message: moved to the dead-letter queue"
            );
            return self.dead_letter(body).await;
        };
        let receipt = m.receipt_handle.as_deref().unwrap_or_default();
        match self.attempt(&message, body, receipt, state).await {
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
        let Some(queue) = &self.cx.queue else {
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
        state: Option<DeliveryState>,
    ) -> Result<Outcome, StoreError> {
        let store = &self.cx.store;
        let key = m.pending_key();
        let state = match state {
            Some(state) => state,
            None => store.delivery_state(&key, &m.delivery_id).await?,
        };
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
                self.push_back(receipt, Duration::from_millis(early_ms as u64))
                    .await;
                return Ok(Outcome::Again);
            }
        }
        let previous = delivery.attempts;
        if sub.filter.is_none() {
            // the filter was removed while the window was open: no `match`
            delivery.matched = None;
        }
        if let Some(why) = not_sent(&sub, m.action, &delivery) {
            delivery.status = DeliveryStatus::Cancelled;
            delivery.last_error = Some(why);
            delivery.updated_at = Timestamp::now();
            return self
                .record(m, &delivery, previous)
                .await
                .map(|_| Outcome::Done);
        }
        // A verification message is never held behind its destination's streak, and its
        // outcome is not the tenant's to see (verification.rs).
        if m.action == topics::Action::Verification {
            return self.verification(m, &sub, delivery, previous).await;
        }
        // An endpoint not known to answer gets one attempt at a time (the probe).
        let now = Timestamp::now();
        let health = state.health.as_ref();
        let wait = match gate(health, now.millis()) {
            Gate::Send => None,
            Gate::Wait(wait) => Some(wait),
            Gate::Claim => self.claim(m).await?,
        };
        if let Some(wait) = wait {
            // A failing endpoint's deliveries wait out of the queue, but for the one that
            // carries its next probe; others (a probe in flight) come back after `wait`.
            let parks = health.is_some_and(|h| {
                h.failing() && h.carrier.as_deref() != Some(m.delivery_id.as_str())
            });
            if parks {
                return self.park(m, body).await;
            }
            self.push_back(receipt, wait).await;
            return Ok(Outcome::Again);
        }

        let attempt = self.send(&m.org, &sub, &delivery).await;
        let ok = attempt.error.is_none();
        self.answered
            .note((m.org.clone(), m.webhook_id.clone()), ok);
        self.cx
            .meter
            .record(&m.org, crate::usage::Tally::delivery(ok));
        let config = &self.cx.config.webhooks;
        delivery.attempts += 1;
        delivery.last_status_code = attempt.status_code;
        delivery.last_error = attempt.error.clone();
        delivery.updated_at = Timestamp::now();
        delivery.attempt_log.push(attempt);
        if delivery.attempt_log.len() > MAX_LOGGED_ATTEMPTS {
            delivery.attempt_log.remove(0);
        }
        let mut wait = (!ok)
            .then(|| config.wait_after(delivery.attempts))
            .flatten();
        if ok {
            if !known_good(health, Timestamp::now().millis() + GOOD_FOR_MS / 2) {
                let until = Timestamp::from_millis(Timestamp::now().millis() + GOOD_FOR_MS);
                store
                    .record_endpoint_success(&m.org, &m.webhook_id, until)
                    .await?;
            }
            if health.is_some_and(|h| h.parked == Some(true)) {
                self.release_parked(m, UNPARK_CHUNK).await;
            }
        } else {
            let probe_at = self.endpoint_failed(m, health).await?;
            // The next attempt waits for the endpoint's next probe too.
            let until_probe = (probe_at.millis() - Timestamp::now().millis()).max(0) as u64;
            wait = wait.map(|w| w.max(Duration::from_millis(until_probe)));
        }
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
                self.push_back(receipt, wait).await;
                Outcome::Again
            }
            (DeliveryStatus::Failed, _) => {
                self.hand_over(m).await;
                self.dead_letter(body).await
            }
            _ => Outcome::Done,
        })
    }

    /// Makes the message visible again after `wait` (the queue's timeout applies if this
    /// does not go through).
    async fn push_back(&self, receipt: &str, wait: Duration) {
        if let Some(queue) = &self.cx.queue {
            if let Err(e) = queue.retry_after(receipt, wait).await {
                tracing::warn!(error = %e, "visibility not changed; the queue's timeout applies");
            }
        }
    }

    /// Writes the attempt; `false` when another worker recorded this attempt first.
    async fn record(
        &self,
        m: &QueueMessage,
        delivery: &Delivery,
        previous: u32,
    ) -> Result<bool, StoreError> {
        match self
            .cx
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
        let store = &self.cx.store;
        for _ in 0..5 {
            let Some(p) = pending.filter(|p| p.delivery_id == m.delivery_id) else {
                return Ok(None);
            };
            let mut delivery =
                new_delivery(m, p.occurred_at, self.cx.config.webhooks.log_retention);
            delivery.changes = p.changes.max(1);
            (delivery.delta, delivery.changes_omitted) = delta_of(&p, &m.entity_type);
            delivery.matched = p.matched();
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

    /// One attempt: the payload to the subscription's destination.
    async fn send(&self, org: &str, sub: &Subscription, d: &Delivery) -> Attempt {
        let mut payload = Payload::of(d);
        payload.token = sub.verification.as_ref().map(|v| v.token.as_str());
        let mut body = serde_json::to_string(&payload).unwrap_or_default();
        if body.len() > changes::MAX_BODY_BYTES && payload.changes.is_some() {
            (payload.changes, payload.changes_omitted) = (None, Some(true));
            body = serde_json::to_string(&payload).unwrap_or_default();
        }
        let destination = sub.destination();
        if !destination.kind().is_aws() {
            return self.post(sub, d, body).await;
        }
        let at = Timestamp::now();
        let started = Instant::now();
        let envelope = aws::Envelope {
            org,
            event: &d.event,
            delivery_id: &d.id,
            group: aws::message_group(&d.entity_type, &d.identifier),
        };
        let error = self.aws.send(&destination, &body, &envelope).await.err();
        Attempt {
            at,
            status_code: None,
            duration_ms: started.elapsed().as_millis() as u64,
            error,
        }
    }

    /// One POST of the signed payload; success is a 2xx within the timeout.
    async fn post(&self, sub: &Subscription, d: &Delivery, body: String) -> Attempt {
        let at = Timestamp::now();
        let started = Instant::now();
        let result = match url_guard::parse(&sub.url, self.cx.config.webhooks.policy) {
            Err(e) => Err(e),
            Ok(url) => {
                let t = at.millis() / 1000;
                let secrets = sub.signing_secrets(at);
                let signed = signature::sign_with(&secrets, t, body.as_bytes());
                let standard = signature::standard_signature(&secrets, &d.id, t, &body);
                self.http
                    .post(url)
                    .header("content-type", "application/json")
                    .header(signature::ID_HEADER, &d.id)
                    .header(signature::HEADER, signed)
                    .header(signature::STANDARD_ID, &d.id)
                    .header(signature::STANDARD_TIMESTAMP, t.to_string())
                    .header(signature::STANDARD_SIGNATURE, standard)
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
                self.cx.config.webhooks.timeout.as_secs()
            );
        }
        let mut cause: &dyn std::error::Error = e;
        let mut os_error = false;
        while let Some(next) = cause.source() {
            cause = next;
            os_error |= cause.is::<std::io::Error>();
        }
        describe_failure(e.is_connect(), os_error, &cause.to_string())
    }
}

/// The `changes` a window's states make (`payload: "changes"`), as the log entry keeps them,
/// or that they are omitted (a side too large to keep, or a delta past the body's bound).
fn delta_of(p: &Pending, entity_type: &str) -> (Option<String>, bool) {
    let (old, new) = match (&p.first_old, &p.last_new, p.changes_omitted) {
        // a thin subscription's window
        (None, None, omitted) => return (None, omitted),
        (Some(old), Some(new), false) => (changes::unkept(old), changes::unkept(new)),
        // omitted, or one side only (the subscription asked for changes mid-window)
        _ => return (None, true),
    };
    let (Some(old), Some(new)) = (old, new) else {
        return (None, true);
    };
    let delta = changes::delta(entity_type, old.as_ref(), new.as_ref()).to_string();
    match delta.len() <= changes::MAX_BODY_BYTES {
        true => (Some(delta), false),
        false => (None, true),
    }
}

/// Why a delivery is cancelled rather than sent, if it is: an AWS destination gets only its
/// verification message until it is verified; a test event goes whatever the topics
/// (decisions.md); any other event only while the subscription is enabled and covers it.
fn not_sent(sub: &Subscription, action: topics::Action, d: &Delivery) -> Option<String> {
    use topics::Action;
    let pending = sub.verification.is_some();
    let expired = sub
        .verification
        .as_ref()
        .is_some_and(|v| v.expires_at.millis() <= Timestamp::now().millis());
    match action {
        Action::Verification if !pending => Some("the destination is verified already".into()),
        Action::Verification if expired => Some(format!(
            "the verification token expired; POST /webhooks/{}/verification sends a new one",
            sub.id
        )),
        Action::Verification => None,
        _ if pending => Some("the destination is not verified yet".into()),
        _ if !sub.enabled => Some("the subscription is disabled".into()),
        Action::Test => None,
        _ if d.matched == Some(SetMatch::Outside) => Some(
            "the entity matched the filter neither before nor after the changes coalesced".into(),
        ),
        _ if !topics::any_matches(&sub.topics, &d.entity_type, action) => {
            Some(format!("the subscription no longer covers {}", d.event))
        }
        _ => None,
    }
}

/// A failed attempt in words the delivery log may show. Our own refusals (the address
/// guard's) are named; an operating-system error never is, whatever it was: its text would
/// tell a subscriber which private ports are open (refused, reset or timed out).
fn describe_failure(connect: bool, os_error: bool, cause: &str) -> String {
    match (connect, os_error) {
        (true, false) if cause == crate::webhooks::url_guard::UNRESOLVED => {
            format!("could not connect: {cause}")
        }
        (true, _) => "could not connect to the receiver".to_string(),
        (false, true) => "request failed: the connection failed".to_string(),
        (false, false) => format!("request failed: {cause}"),
    }
}

#[cfg(test)]
mod describe_tests {
    use super::describe_failure;
    use crate::webhooks::url_guard::UNRESOLVED;

    #[test]
    fn no_os_error_reaches_the_delivery_log() {
        for os in [
            "Connection refused (os error 111)",
            "Connection reset by peer (os error 104)",
        ] {
            assert_eq!(
                describe_failure(true, true, os),
                "could not connect to the receiver"
            );
            assert_eq!(
                describe_failure(false, true, os),
                "request failed: the connection failed"
            );
        }
        assert_eq!(
            describe_failure(true, false, UNRESOLVED),
            format!("could not connect: {UNRESOLVED}")
        );
        assert_eq!(
            describe_failure(true, false, "tcp connect error"),
            "could not connect to the receiver"
        );
    }
}
