//! A batch of queue messages: grouped by endpoint, each group's states read together (one
//! BatchGetItem) and its messages run at once, or its first alone ahead of the others when
//! the endpoint is not known to answer.

use super::*;

impl Deliverer {
    /// Handles one batch of queue messages; the ones to retry are reported as failures.
    /// Endpoints run concurrently; of one endpoint's messages the first goes alone and the
    /// others after it, so that they find its outcome (an endpoint that answered is sent
    /// the rest at once, one that failed or hung gets none of them), unless this process
    /// saw the endpoint answer in the last `answered::FRESH`: then all go at once (each
    /// still gated by the endpoint's health it reads).
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        let mut groups: Vec<(Option<Endpoint>, Vec<&SqsMessage>)> = Vec::new();
        for m in &event.records {
            let endpoint = m
                .body
                .as_deref()
                .and_then(|b| serde_json::from_str::<QueueMessage>(b).ok())
                .map(|q| (q.org, q.webhook_id));
            match groups
                .iter_mut()
                .find(|(e, _)| endpoint.is_some() && *e == endpoint)
            {
                Some((_, group)) => group.push(m),
                None => groups.push((endpoint, vec![m])),
            }
        }
        let outcomes = join_all(groups.iter().map(|(endpoint, group)| async move {
            let (first, rest) = group.split_first().expect("groups are never empty");
            if endpoint.as_ref().is_some_and(|e| self.answered.lately(e)) {
                return self.process_all(group).await;
            }
            let mut out = vec![(*first, self.process(first, None).await)];
            out.extend(self.process_all(rest).await);
            out
        }))
        .await;
        let mut response = SqsBatchResponse::default();
        for (m, outcome) in outcomes.into_iter().flatten() {
            if outcome == Outcome::Again {
                response.add_failure(m.message_id.clone().unwrap_or_default());
            }
        }
        self.cx.meter.flush_due(&self.cx.store).await;
        response
    }

    /// Processes `messages` at once, their states read together first (one BatchGetItem;
    /// if it fails, each message reads its own).
    async fn process_all<'m>(&self, messages: &[&'m SqsMessage]) -> Vec<(&'m SqsMessage, Outcome)> {
        let decoded: Vec<Option<QueueMessage>> = messages
            .iter()
            .map(|m| serde_json::from_str(m.body.as_deref()?).ok())
            .collect();
        let keys: Vec<(PendingKey<'_>, &str)> = decoded
            .iter()
            .flatten()
            .map(|q| (q.pending_key(), q.delivery_id.as_str()))
            .collect();
        let wanted: Vec<(&PendingKey<'_>, &str)> = keys.iter().map(|(k, id)| (k, *id)).collect();
        let mut states = match wanted.len() {
            0 | 1 => None,
            _ => self.cx.store.delivery_states(&wanted).await.ok(),
        }
        .map(|s| s.into_iter());
        let mut prefetched = Vec::with_capacity(messages.len());
        for q in &decoded {
            prefetched.push(match (q, states.as_mut()) {
                (Some(_), Some(states)) => states.next(),
                _ => None,
            });
        }
        join_all(
            messages
                .iter()
                .zip(prefetched)
                .map(|(m, state)| async move { (*m, self.process(m, state).await) }),
        )
        .await
    }
}
