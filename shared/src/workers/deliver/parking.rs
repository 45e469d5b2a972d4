//! Deliveries to a failing endpoint: the probe claim, parking the others in the table until it answers, releasing them, and counting a failure against the endpoint.

use super::*;

impl Deliverer {
    /// Parks the delivery in the table until its endpoint answers (the message leaves the
    /// queue: waiting costs nothing per probe). The flag is set after the item is written,
    /// always: a release that took the flag before this item existed leaves it flagged.
    pub(super) async fn park(&self, m: &QueueMessage, body: &str) -> Result<Outcome, StoreError> {
        let expires = Timestamp::now().millis() / 1000 + PARKED_TTL_SECS;
        let store = &self.cx.store;
        store
            .park_delivery(&m.org, &m.webhook_id, &m.delivery_id, body, expires)
            .await?;
        store.flag_parked(&m.org, &m.webhook_id).await?;
        Ok(Outcome::Done)
    }

    /// Puts up to `limit` parked deliveries of the endpoint back on the queue (visible at
    /// once), when this worker takes the endpoint's parked flag; flags it again when more
    /// are left. Best effort: what fails stays parked and flagged for the next answer.
    pub(super) async fn release_parked(&self, m: &QueueMessage, limit: i32) {
        let (store, Some(queue)) = (&self.cx.store, &self.cx.queue) else {
            return;
        };
        let released = async {
            let parked = store.take_parked(&m.org, &m.webhook_id, limit).await?;
            if parked.is_empty() {
                return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(());
            }
            let bodies: Vec<String> = parked.iter().map(|(_, b)| b.clone()).collect();
            let ids: Vec<String> = parked.into_iter().map(|(id, _)| id).collect();
            let sent = queue.send_bodies(&bodies).await;
            if sent.is_ok() {
                store.delete_parked(&m.org, &m.webhook_id, &ids).await?;
            }
            if sent.is_err() || ids.len() as i32 >= limit {
                store.flag_parked(&m.org, &m.webhook_id).await?;
            }
            Ok(sent?)
        };
        if let Err(e) = released.await {
            tracing::warn!(error = %e, webhook = %m.webhook_id, "parked deliveries not released");
        }
    }

    /// The carrier of a failing endpoint's probes used its last attempt: the oldest parked
    /// delivery carries the next one (back on the queue for the probe time).
    pub(super) async fn hand_over(&self, m: &QueueMessage) {
        let (store, Some(queue)) = (&self.cx.store, &self.cx.queue) else {
            return;
        };
        let handed = async {
            let Some((id, body)) = store
                .first_parked(&m.org, &m.webhook_id, 1)
                .await?
                .into_iter()
                .next()
            else {
                return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(());
            };
            let health = store.endpoint_health(&m.org, &m.webhook_id).await?;
            let until = health
                .and_then(|h| h.probe_at)
                .map_or(0, |p| (p.millis() - Timestamp::now().millis()).max(0));
            store.set_carrier(&m.org, &m.webhook_id, &id).await?;
            queue
                .send_body(&body, Duration::from_millis(until as u64))
                .await?;
            Ok(store.delete_parked(&m.org, &m.webhook_id, &[id]).await?)
        };
        if let Err(e) = handed.await {
            tracing::warn!(error = %e, webhook = %m.webhook_id, "no carrier for the next probe");
        }
    }

    /// Claims the probe of an endpoint not known to answer: `None` when this delivery may
    /// attempt (it makes the probe, or a probe that just started answered), else how long
    /// to wait. A probe that started less than [`YOUNG_PROBE_MS`] ago is watched here for
    /// its outcome (a GetItem every 100 ms), so that the deliveries of a burst to a healthy
    /// endpoint follow its first answer at once instead of a queue round later.
    pub(super) async fn claim(&self, m: &QueueMessage) -> Result<Option<Duration>, StoreError> {
        let store = &self.cx.store;
        let lease = self.cx.config.webhooks.timeout + PROBE_LEASE_SLACK;
        let watch_until = Instant::now() + Duration::from_millis(YOUNG_PROBE_MS as u64);
        loop {
            let now = Timestamp::now();
            let claimed = store
                .claim_probe(
                    &m.org,
                    &m.webhook_id,
                    now,
                    Timestamp::from_millis(now.millis() + lease.as_millis() as i64),
                )
                .await?;
            let mut current = match claimed {
                Ok(()) => return Ok(None),
                Err(current) => current,
            };
            loop {
                let now = Timestamp::now().millis();
                match gate(current.as_ref(), now) {
                    Gate::Send => return Ok(None),
                    Gate::Claim => break, // the probe ended without an answer: claim again
                    Gate::Wait(wait) if !probe_is_young(current.as_ref(), now) => {
                        return Ok(Some(wait))
                    }
                    Gate::Wait(wait) if Instant::now() >= watch_until => return Ok(Some(wait)),
                    Gate::Wait(_) => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        current = store.endpoint_health(&m.org, &m.webhook_id).await?;
                    }
                }
            }
            if Instant::now() >= watch_until {
                return Ok(Some(Duration::from_secs(1)));
            }
        }
    }

    /// Counts a failed attempt against the endpoint; disables the subscription when the
    /// streak has lasted the configured period. Returns the endpoint's next probe time.
    pub(super) async fn endpoint_failed(
        &self,
        m: &QueueMessage,
        before: Option<&Health>,
    ) -> Result<Timestamp, StoreError> {
        let config = &self.cx.config.webhooks;
        let now = Timestamp::now();
        let failures = before.map_or(0, |h| h.failures) + 1;
        let failing_since = |h: &Health| h.failing_since.unwrap_or(now);
        let probe_at = Timestamp::from_millis(
            now.millis() + config.endpoint_backoff(failures).as_millis() as i64,
        );
        let store = &self.cx.store;
        let health = store
            .record_endpoint_failure(&m.org, &m.webhook_id, &m.delivery_id, now, probe_at)
            .await?;
        let since = failing_since(&health);
        if now.millis() - since.millis() >= config.disable_after.as_millis() as i64 {
            let reason = disabled_reason(since, config.disable_after);
            if store
                .disable_subscription(&m.org, &m.webhook_id, &reason, now)
                .await?
            {
                tracing::warn!(webhook = %m.webhook_id, org = %m.org, "{reason}");
                // its parked deliveries come back to be cancelled
                self.release_parked(m, DISABLE_RELEASE).await;
            }
        }
        Ok(health.probe_at.unwrap_or(probe_at))
    }
}
