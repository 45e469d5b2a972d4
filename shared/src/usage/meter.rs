//! A process's counts not yet added to the table: every call and delivery attempt is
//! counted in memory, and once the flush interval has passed the counts go out, one
//! UpdateItem per organization and day (all in parallel), and the metric lines the metrics
//! switch asks for (`emf.rs`: none, one of totals, or one per organization). A process that
//! Lambda stops loses at most one interval of counts; usage is an account of load, not a
//! bill.

use super::{emf::Metrics, Tally};
use crate::store::{parallel, Store};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `(organization, UTC day)`.
type Key = (String, String);

pub struct Meter {
    every: Duration,
    metrics: Option<Metrics>,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    counts: HashMap<Key, Tally>,
    /// When the oldest count not yet flushed was made.
    since: Option<Instant>,
}

impl Meter {
    /// Flushes at most once per `every` (zero: after every count); metric lines as
    /// `metrics` says, if any.
    pub fn new(every: Duration, metrics: Option<Metrics>) -> Self {
        Self {
            every,
            metrics,
            open: Mutex::default(),
        }
    }

    /// Counts `tally` for `org` today (UTC).
    pub fn record(&self, org: &str, tally: Tally) {
        self.record_on(org, &today(), tally, Instant::now());
    }

    fn record_on(&self, org: &str, day: &str, tally: Tally, now: Instant) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.counts
            .entry((org.to_string(), day.to_string()))
            .or_default()
            .add(&tally);
        open.since.get_or_insert(now);
    }

    /// Everything counted, once the interval has passed since the oldest count.
    fn take_due(&self, now: Instant) -> Vec<(Key, Tally)> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        match open.since {
            Some(since) if now.duration_since(since) >= self.every => {
                open.since = None;
                open.counts.drain().collect()
            }
            _ => Vec::new(),
        }
    }

    /// Counts whose write failed wait for the next flush.
    fn give_back(&self, failed: Vec<(Key, Tally)>, now: Instant) {
        for ((org, day), tally) in failed {
            self.record_on(&org, &day, tally, now);
        }
    }

    /// Adds what is due to the table and writes its metric lines; a failed write keeps
    /// its counts for the next flush. Never fails the call it follows.
    pub async fn flush_due(&self, store: &Store) {
        let due = self.take_due(Instant::now());
        if due.is_empty() {
            return;
        }
        let written = parallel::try_all(due.into_iter().map(|(key, tally)| async move {
            let result = store.add_usage(&key.0, &key.1, &tally).await;
            Ok::<_, ()>((key, tally, result))
        }))
        .await
        .unwrap_or_default();
        let now_ms = chrono::Utc::now().timestamp_millis();
        let mut failed = Vec::new();
        let mut added = Vec::new();
        for (key, tally, result) in written {
            match result {
                Ok(()) => added.push((key.0, tally)),
                Err(e) => {
                    tracing::warn!(org = %key.0, error = %e, "adding usage failed; kept for the next flush");
                    failed.push((key, tally));
                }
            }
        }
        self.give_back(failed, Instant::now());
        if let Some(metrics) = &self.metrics {
            for line in metrics.lines(added.iter().map(|(org, t)| (org.as_str(), t)), now_ms) {
                println!("{line}");
            }
        }
    }
}

/// Today's UTC date, `YYYY-MM-DD`.
pub fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_wait_for_the_interval_then_leave_together() {
        let meter = Meter::new(Duration::from_secs(30), None);
        let t0 = Instant::now();
        meter.record_on("a", "2026-11-25", Tally::request(200, 1000), t0);
        meter.record_on("a", "2026-11-25", Tally::request(429, 0), t0);
        meter.record_on("b", "2026-11-25", Tally::delivery(false), t0);
        assert!(meter.take_due(t0 + Duration::from_secs(29)).is_empty());
        let mut due = meter.take_due(t0 + Duration::from_secs(30));
        due.sort_by(|x, y| x.0.cmp(&y.0));
        let mut a = Tally::request(200, 1000);
        a.add(&Tally::request(429, 0));
        assert_eq!(
            due,
            [
                (("a".into(), "2026-11-25".into()), a),
                (("b".into(), "2026-11-25".into()), Tally::delivery(false))
            ]
        );
        assert!(
            meter.take_due(t0 + Duration::from_secs(90)).is_empty(),
            "nothing left"
        );
    }

    #[test]
    fn counts_given_back_leave_with_the_next_flush() {
        let meter = Meter::new(Duration::ZERO, None);
        let t0 = Instant::now();
        meter.record_on("a", "2026-11-25", Tally::request(200, 0), t0);
        let due = meter.take_due(t0);
        assert_eq!(due.len(), 1);
        meter.give_back(due, t0);
        meter.record_on("a", "2026-11-25", Tally::request(200, 0), t0);
        let again = meter.take_due(t0);
        assert_eq!(again[0].1.requests, 2);
    }
}
