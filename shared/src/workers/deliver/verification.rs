//! The verification message of an AWS destination awaiting verification, sent so that its
//! tenant learns nothing from it but what a reader of the destination learns: the token.
//! Whether the queue or bus exists and took the message, or AWS refused it (no such queue,
//! access denied), the delivery log, the endpoint's health and the usage counts read the
//! same: the log entry is written as sent before the message goes out (so neither its
//! fields nor its timing hold AWS's answer), one attempt, never retried, never counted
//! against the endpoint's health. The real outcome goes to the operators' log only.

use super::*;

impl Deliverer {
    /// Records the verification delivery `delivery` as sent, then sends it once.
    pub(super) async fn verification(
        &self,
        m: &QueueMessage,
        sub: &Subscription,
        delivery: Delivery,
        previous: u32,
    ) -> Result<Outcome, StoreError> {
        let delivery = sent(delivery, Timestamp::now());
        if !self.record(m, &delivery, previous).await? {
            return Ok(Outcome::Done); // another worker took this attempt
        }
        self.cx
            .meter
            .record(&m.org, crate::usage::Tally::delivery(true));
        let attempt = self.send(&m.org, sub, &delivery).await;
        let destination = sub.destination();
        match attempt.error {
            Some(error) => tracing::warn!(
                org = %m.org,
                webhook = %m.webhook_id,
                delivery = %m.delivery_id,
                destination = destination.address(),
                %error,
                "verification message not accepted by its destination (the delivery log shows it as sent)"
            ),
            None => tracing::info!(
                org = %m.org,
                webhook = %m.webhook_id,
                delivery = %m.delivery_id,
                destination = destination.address(),
                duration_ms = attempt.duration_ms,
                "verification message accepted by its destination"
            ),
        }
        Ok(Outcome::Done)
    }
}

/// A verification delivery's log entry as its tenant sees it whatever AWS answers: one
/// attempt at `at`, `succeeded`, no status code, no error, no duration.
pub(super) fn sent(mut delivery: Delivery, at: Timestamp) -> Delivery {
    delivery.attempts += 1;
    delivery.status = DeliveryStatus::Succeeded;
    delivery.last_status_code = None;
    delivery.last_error = None;
    delivery.next_attempt_at = None;
    delivery.updated_at = at;
    delivery.attempt_log.push(Attempt {
        at,
        status_code: None,
        duration_ms: 0,
        error: None,
    });
    if delivery.attempt_log.len() > MAX_LOGGED_ATTEMPTS {
        delivery.attempt_log.remove(0);
    }
    delivery
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verification_entry_holds_nothing_of_the_destinations_answer() {
        let message = QueueMessage {
            org: "org_1".into(),
            webhook_id: "wh_1".into(),
            delivery_id: "dlv_1".into(),
            entity_type: topics::TEST_ENTITY_TYPE.into(),
            action: topics::Action::Verification,
            identifier: "wh_1".into(),
        };
        let created = Timestamp::from_millis(1_000);
        let queued = new_delivery(&message, created, Duration::from_secs(86_400));
        let at = Timestamp::from_millis(2_000);
        let entry = sent(queued, at);
        assert_eq!(entry.status, DeliveryStatus::Succeeded);
        assert_eq!(
            (
                entry.attempts,
                entry.last_status_code,
                entry.last_error.as_deref()
            ),
            (1, None, None)
        );
        assert_eq!((entry.next_attempt_at, entry.updated_at), (None, at));
        assert_eq!(
            entry.attempt_log,
            vec![Attempt {
                at,
                status_code: None,
                duration_ms: 0,
                error: None
            }]
        );
    }
}
