//! Webhook settings, read once at cold start: the queues, the coalescing window, the retry
//! schedule, the delivery and connect timeouts and the failing period that disables a
//! subscription. All are configuration so that tests run the whole
//! schedule in seconds while production spreads it over more than a day.

use super::url_guard::UrlPolicy;
use crate::domain::destinations::Allowed;
use std::time::Duration;

/// SQS caps a message's delay at 15 minutes.
pub const MAX_COALESCE_SECS: u64 = 900;
/// SQS caps a visibility timeout at 12 hours from the receive; a step stays under it.
pub const MAX_RETRY_STEP_SECS: u64 = 43_000;
/// Most waits in a schedule. The queue's redrive (maxReceiveCount 100 in the template) must
/// never take a delivery before its last attempt: each attempt is one receive, and a
/// delivery carrying a failing endpoint's probes is received about twice per probe (see
/// `deliver/`; other deliveries park out of the queue), so 18 attempts and the probes of
/// a 5-day failing period stay under it.
pub const MAX_RETRY_STEPS: usize = 18;
/// The production failing period after which a subscription is disabled: 5 days.
pub const DEFAULT_DISABLE_AFTER_SECS: u64 = 5 * 86_400;
/// The production schedule: waits between attempts (8 attempts over about 29.5 hours).
pub const DEFAULT_RETRY_SCHEDULE: &[u64] = &[60, 300, 1_800, 7_200, 18_000, 36_000, 43_000];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookConfig {
    /// The delivery queue (`CATALOG_DELIVERY_QUEUE_URL`); unset, nothing is queued.
    pub queue_url: Option<String>,
    /// Where deliveries go after their last attempt (`CATALOG_DEAD_LETTER_QUEUE_URL`).
    pub dead_letter_queue_url: Option<String>,
    /// Where the change feed sets aside a record it cannot process
    /// (`CATALOG_FEED_FAILURE_QUEUE_URL`, the template's alarmed ChangeFeedFailures).
    pub feed_failure_queue_url: Option<String>,
    /// Changes to one entity within this window become one delivery
    /// (`CATALOG_WEBHOOK_COALESCE_SECONDS`, default 10, at most 900).
    pub coalesce_window: Duration,
    /// Waits before the 2nd, 3rd, ... attempt (`CATALOG_WEBHOOK_RETRY_SCHEDULE`, comma
    /// separated seconds); the attempt count is one more than its length.
    pub retry_schedule: Vec<Duration>,
    /// A receiver must answer 2xx within this (`CATALOG_WEBHOOK_TIMEOUT_SECONDS`, default 15).
    pub timeout: Duration,
    /// A receiver must accept the connection within this
    /// (`CATALOG_WEBHOOK_CONNECT_TIMEOUT_SECONDS`, default 3, at most the timeout): an address
    /// that drops packets costs seconds, not the whole timeout.
    pub connect_timeout: Duration,
    /// A subscription whose deliveries have all failed for this long is disabled
    /// (`CATALOG_WEBHOOK_DISABLE_AFTER_SECONDS`, default 5 days).
    pub disable_after: Duration,
    /// How long delivery log entries are kept (`CATALOG_WEBHOOK_LOG_DAYS`, default 30).
    pub log_retention: Duration,
    /// Which addresses deliveries may reach: loopback over http only in local mode.
    pub policy: UrlPolicy,
    /// Which AWS queues and buses subscriptions may deliver to (`destinations.rs`).
    pub allowed: Allowed,
    /// The role deliveries to AWS destinations assume (`CATALOG_DESTINATION_ROLE_ARN`):
    /// it may write only the allow-list, never the stack's own queues. Unset (local mode),
    /// the function's own credentials send.
    pub destination_role: Option<String>,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            queue_url: None,
            dead_letter_queue_url: None,
            feed_failure_queue_url: None,
            coalesce_window: Duration::from_secs(10),
            retry_schedule: secs(DEFAULT_RETRY_SCHEDULE),
            timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(3),
            disable_after: Duration::from_secs(DEFAULT_DISABLE_AFTER_SECS),
            log_retention: Duration::from_secs(30 * 86_400),
            policy: UrlPolicy::default(),
            allowed: Allowed::default(),
            destination_role: None,
        }
    }
}

fn secs(list: &[u64]) -> Vec<Duration> {
    list.iter().copied().map(Duration::from_secs).collect()
}

impl WebhookConfig {
    /// Reads the settings through `lookup`; a malformed value keeps its default.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>, local_mode: bool) -> Self {
        let d = Self::default();
        let text = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let number = |name: &str| text(name).and_then(|v| v.trim().parse::<u64>().ok());
        let schedule = text("CATALOG_WEBHOOK_RETRY_SCHEDULE").and_then(|v| {
            v.split(',')
                .map(|s| {
                    s.trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|n| *n <= MAX_RETRY_STEP_SECS)
                })
                .collect::<Option<Vec<u64>>>()
                .filter(|s| s.len() <= MAX_RETRY_STEPS)
        });
        let timeout = number("CATALOG_WEBHOOK_TIMEOUT_SECONDS")
            .filter(|n| (1..=900).contains(n))
            .map(Duration::from_secs)
            .unwrap_or(d.timeout);
        let (queue_url, dead_letter_queue_url, feed_failure_queue_url) = (
            text("CATALOG_DELIVERY_QUEUE_URL"),
            text("CATALOG_DEAD_LETTER_QUEUE_URL"),
            text("CATALOG_FEED_FAILURE_QUEUE_URL"),
        );
        let own_queues = [
            queue_url.clone(),
            dead_letter_queue_url.clone(),
            feed_failure_queue_url.clone(),
            text("CATALOG_IMPORT_QUEUE_URL"),
        ];
        Self {
            allowed: Allowed::from_lookup(&text, local_mode, &own_queues),
            destination_role: text("CATALOG_DESTINATION_ROLE_ARN"),
            queue_url,
            dead_letter_queue_url,
            feed_failure_queue_url,
            coalesce_window: number("CATALOG_WEBHOOK_COALESCE_SECONDS")
                .filter(|n| *n <= MAX_COALESCE_SECS)
                .map(Duration::from_secs)
                .unwrap_or(d.coalesce_window),
            retry_schedule: schedule.map(|s| secs(&s)).unwrap_or(d.retry_schedule),
            timeout,
            connect_timeout: number("CATALOG_WEBHOOK_CONNECT_TIMEOUT_SECONDS")
                .filter(|n| *n >= 1)
                .map(Duration::from_secs)
                .unwrap_or(d.connect_timeout)
                .min(timeout),
            disable_after: number("CATALOG_WEBHOOK_DISABLE_AFTER_SECONDS")
                .filter(|n| *n >= 1)
                .map(Duration::from_secs)
                .unwrap_or(d.disable_after),
            log_retention: number("CATALOG_WEBHOOK_LOG_DAYS")
                .filter(|n| (1..=365).contains(n))
                .map(|n| Duration::from_secs(n * 86_400))
                .unwrap_or(d.log_retention),
            policy: UrlPolicy {
                allow_loopback: local_mode,
            },
        }
    }

    /// Attempts per delivery, the first included.
    pub fn attempts(&self) -> u32 {
        self.retry_schedule.len() as u32 + 1
    }

    /// The wait after failed attempt number `attempt` (1-based), `None` after the last.
    pub fn wait_after(&self, attempt: u32) -> Option<Duration> {
        self.retry_schedule.get(attempt as usize - 1).copied()
    }

    /// How long an endpoint that has failed `failures` attempts in a row gets no attempt:
    /// the retry schedule's step for that count, its last step beyond it (none without one).
    pub fn endpoint_backoff(&self, failures: u32) -> Duration {
        let steps = self.retry_schedule.len();
        if steps == 0 {
            return Duration::ZERO;
        }
        self.retry_schedule[(failures.max(1) as usize).min(steps) - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_and_window_come_from_the_environment() {
        let cfg = WebhookConfig::from_lookup(
            &|name| match name {
                "CATALOG_WEBHOOK_RETRY_SCHEDULE" => Some("1, 2,3".into()),
                "CATALOG_WEBHOOK_COALESCE_SECONDS" => Some("2".into()),
                "CATALOG_DELIVERY_QUEUE_URL" => Some("http://q".into()),
                _ => None,
            },
            true,
        );
        assert_eq!(cfg.attempts(), 4);
        assert_eq!(cfg.wait_after(1), Some(Duration::from_secs(1)));
        assert_eq!(cfg.wait_after(3), Some(Duration::from_secs(3)));
        assert_eq!(cfg.wait_after(4), None);
        assert_eq!(cfg.coalesce_window, Duration::from_secs(2));
        assert_eq!(cfg.queue_url.as_deref(), Some("http://q"));
        assert!(cfg.policy.allow_loopback);
        assert_eq!(cfg.endpoint_backoff(1), Duration::from_secs(1));
        assert_eq!(cfg.endpoint_backoff(2), Duration::from_secs(2));
        assert_eq!(cfg.endpoint_backoff(50), Duration::from_secs(3));
    }

    #[test]
    fn connect_timeout_and_disable_period_come_from_the_environment() {
        let d = WebhookConfig::from_lookup(&|_| None, false);
        assert_eq!(d.connect_timeout, Duration::from_secs(3));
        assert_eq!(d.disable_after, Duration::from_secs(5 * 86_400));
        let cfg = WebhookConfig::from_lookup(
            &|name| match name {
                "CATALOG_WEBHOOK_TIMEOUT_SECONDS" => Some("2".into()),
                "CATALOG_WEBHOOK_CONNECT_TIMEOUT_SECONDS" => Some("9".into()),
                "CATALOG_WEBHOOK_DISABLE_AFTER_SECONDS" => Some("20".into()),
                _ => None,
            },
            false,
        );
        // never longer than the whole timeout
        assert_eq!(cfg.connect_timeout, Duration::from_secs(2));
        assert_eq!(cfg.disable_after, Duration::from_secs(20));
        assert_eq!(
            WebhookConfig::default().endpoint_backoff(100),
            Duration::from_secs(43_000)
        );
    }

    #[test]
    fn the_default_schedule_spans_more_than_a_day_in_8_attempts() {
        let cfg = WebhookConfig::from_lookup(
            &|name| (name == "CATALOG_WEBHOOK_RETRY_SCHEDULE").then(|| "1,x".into()),
            false,
        );
        assert_eq!(cfg.attempts(), 8);
        let total: u64 = cfg.retry_schedule.iter().map(Duration::as_secs).sum();
        assert!(total >= 86_400, "{total}");
        assert!(!cfg.policy.allow_loopback);
    }
}
