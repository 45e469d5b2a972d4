//! Runtime configuration, read once from the environment at cold start.
//!
//! Endpoints are not configured here: the AWS SDK reads the standard `AWS_ENDPOINT_URL` and
//! `AWS_ENDPOINT_URL_DYNAMODB` variables itself, so DynamoDB Local needs no custom switch.

use std::time::Duration;

/// Settings every function shares.
#[derive(Clone, Debug)]
pub struct Config {
    /// DynamoDB table name (`CATALOG_TABLE`, default `catalog`).
    pub table_name: String,
    /// Local mode (`CATALOG_LOCAL_MODE=1`): relaxes rules that only make sense on AWS:
    /// webhook URLs may use http on loopback (decisions.md).
    pub local_mode: bool,
    /// How long a resolved API key stays cached in a warm Lambda (`CATALOG_AUTH_CACHE_SECONDS`).
    pub auth_cache_ttl: Duration,
    /// Adds `X-Catalog-Ddb-Requests` to every response (`CATALOG_DEBUG_HEADERS=1`); tests and
    /// the local stack use it to assert request counts. Off in production.
    pub debug_headers: bool,
    /// Largest accepted request body in bytes (`CATALOG_MAX_BODY_BYTES`, default 1 MiB).
    pub max_body_bytes: usize,
    /// Largest accepted bulk body (`PATCH /products`) in bytes (`CATALOG_MAX_BULK_BODY_BYTES`,
    /// default 6 MiB, decisions.md).
    pub max_bulk_body_bytes: usize,
    /// How many items of one bulk request are written at once (`CATALOG_BULK_CONCURRENCY`,
    /// default 16).
    pub bulk_concurrency: usize,
    /// How long after it arrived a call may start writes (`CATALOG_WRITE_BUDGET_MS`, default
    /// 4000: a line's own write retries lost conditions for up to 5 s more, within the API
    /// functions' 10 s timeout); never later than
    /// [`WRITE_MARGIN`](crate::http::request::WRITE_MARGIN) before the invocation's deadline.
    /// A bulk line whose write has not started by then answers 503 in its line status.
    pub write_budget: Duration,
    /// How the warm list snapshots are kept: `CATALOG_LIST_LOAD_BUDGET_MS` (default 5000), the
    /// time one call may spend on a cold read; `CATALOG_SNAPSHOT_MAX_BYTES` (default half of
    /// the function's memory, `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, else 1 GiB);
    /// `CATALOG_LIST_RELOAD_SECONDS` (default 900), the age at which a snapshot is read again
    /// in full.
    pub snapshots: crate::store::changes::SnapshotPolicy,
    /// The import bucket, queue and batching (`imports/mod.rs`).
    pub imports: crate::imports::ImportConfig,
    /// Queues, coalescing window, retry schedule and URL policy of webhooks.
    pub webhooks: crate::webhooks::WebhookConfig,
    /// What list cursors are sealed with (`CATALOG_CURSOR_KEY`, else derived from the table).
    pub cursor_key: crate::http::cursor::CursorKey,
    /// Whether `CATALOG_CURSOR_KEY` holds a deployment secret (outside local mode a process
    /// refuses to start without one).
    pub cursor_secret_set: bool,
    /// Every organization's rate limit unless it has its own (`CATALOG_RATE_LIMIT_RATE`
    /// tokens per second, default 100, 0 for none; `CATALOG_RATE_LIMIT_BURST`, default 200).
    pub rate_limit: crate::domain::rate::Policy,
    /// How often a process adds what it counted to the organizations' usage
    /// (`CATALOG_USAGE_FLUSH_SECONDS`, default 30; 0: after every call, as tests need).
    pub usage_flush: Duration,
    /// The usage metrics: their CloudWatch namespace (`CATALOG_METRICS_NAMESPACE`; the
    /// template sets `Catalog/<stage>`; unset: no metric lines, as in local stacks and tests)
    /// and which are published (`CATALOG_ORG_METRICS`: `off`, `totals`, the default, or
    /// `per-organization`; `usage/emf.rs`).
    pub metrics: Option<crate::usage::Metrics>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            table_name: "catalog".into(),
            local_mode: false,
            auth_cache_ttl: Duration::from_secs(60),
            debug_headers: false,
            max_body_bytes: 1024 * 1024,
            max_bulk_body_bytes: 6 * 1024 * 1024,
            bulk_concurrency: 16,
            write_budget: Duration::from_secs(4),
            snapshots: Default::default(),
            imports: Default::default(),
            webhooks: Default::default(),
            cursor_key: crate::http::cursor::CursorKey::new(None, "catalog"),
            cursor_secret_set: false,
            rate_limit: crate::domain::rate::Policy {
                rate: 100,
                burst: 200,
            },
            usage_flush: Duration::from_secs(30),
            metrics: None,
        }
    }
}

impl Config {
    /// What keeps a process from starting: outside local mode, list cursors must be sealed
    /// with a deployment secret, or anyone who knows the table name could forge them.
    pub fn refusal(&self) -> Option<String> {
        (!self.local_mode && !self.cursor_secret_set).then(|| {
            format!(
                "CATALOG_CURSOR_KEY must be set to a secret of at least {} bytes outside local mode (infra/template.yaml generates one)",
                crate::http::cursor::CursorKey::MIN_SECRET_BYTES
            )
        })
    }

    /// What a deployment tags the credentials it issues with: a key derived from its
    /// `CATALOG_CURSOR_KEY` secret. `None` without one (a local stack tags by table name).
    pub fn credential_tags(&self) -> Option<crate::domain::credential_tags::CredentialTags> {
        self.cursor_secret_set.then(|| {
            crate::domain::credential_tags::CredentialTags::new(
                self.cursor_key.derive("catalog credential tags"),
            )
        })
    }

    /// The table of this configuration over `client`, credentials tagged as this
    /// deployment's.
    pub fn store(&self, client: aws_sdk_dynamodb::Client) -> crate::store::Store {
        let store = crate::store::Store::new(client, self.table_name.clone());
        match self.credential_tags() {
            Some(tags) => store.with_credential_tags(tags),
            None => store,
        }
    }

    /// Reads the configuration from the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup`, so tests need not touch the real environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let defaults = Self::default();
        let flag = |name: &str| {
            lookup(name).is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"))
        };
        let number = |name: &str| lookup(name).and_then(|v| v.trim().parse::<u64>().ok());
        let local_mode = flag("CATALOG_LOCAL_MODE");
        Self {
            table_name: lookup("CATALOG_TABLE")
                .filter(|v| !v.trim().is_empty())
                .unwrap_or(defaults.table_name),
            local_mode,
            auth_cache_ttl: number("CATALOG_AUTH_CACHE_SECONDS")
                .map(Duration::from_secs)
                .unwrap_or(defaults.auth_cache_ttl),
            debug_headers: flag("CATALOG_DEBUG_HEADERS"),
            max_body_bytes: number("CATALOG_MAX_BODY_BYTES")
                .map(|n| n as usize)
                .unwrap_or(defaults.max_body_bytes),
            max_bulk_body_bytes: number("CATALOG_MAX_BULK_BODY_BYTES")
                .map(|n| n as usize)
                .unwrap_or(defaults.max_bulk_body_bytes),
            bulk_concurrency: number("CATALOG_BULK_CONCURRENCY")
                .map(|n| n.clamp(1, 256) as usize)
                .unwrap_or(defaults.bulk_concurrency),
            write_budget: number("CATALOG_WRITE_BUDGET_MS")
                .map(Duration::from_millis)
                .unwrap_or(defaults.write_budget),
            snapshots: crate::store::changes::SnapshotPolicy {
                load_budget: number("CATALOG_LIST_LOAD_BUDGET_MS")
                    .map(Duration::from_millis)
                    .unwrap_or(defaults.snapshots.load_budget),
                max_bytes: number("CATALOG_SNAPSHOT_MAX_BYTES")
                    .or_else(|| number("AWS_LAMBDA_FUNCTION_MEMORY_SIZE").map(|mb| mb << 19))
                    .map(|n| n as usize)
                    .unwrap_or(defaults.snapshots.max_bytes),
                reload_after: number("CATALOG_LIST_RELOAD_SECONDS")
                    .map(Duration::from_secs)
                    .unwrap_or(defaults.snapshots.reload_after),
                load_page_items: number("CATALOG_LIST_LOAD_PAGE_ITEMS")
                    .map(|n| n.clamp(1, 10_000) as i32),
                ..defaults.snapshots
            },
            imports: crate::imports::ImportConfig::from_lookup(&lookup),
            webhooks: crate::webhooks::WebhookConfig::from_lookup(&lookup, local_mode),
            cursor_key: crate::http::cursor::CursorKey::new(
                lookup("CATALOG_CURSOR_KEY").as_deref(),
                &lookup("CATALOG_TABLE").unwrap_or_default(),
            ),
            cursor_secret_set: crate::http::cursor::CursorKey::is_secret(
                lookup("CATALOG_CURSOR_KEY").as_deref(),
            ),
            rate_limit: crate::domain::rate::Policy {
                // 0: no limit (the test stack and benchmarks; the template admits 1 and up)
                rate: number("CATALOG_RATE_LIMIT_RATE")
                    .filter(|n| *n <= 1_000_000)
                    .map_or(defaults.rate_limit.rate, |n| n as u32),
                burst: number("CATALOG_RATE_LIMIT_BURST")
                    .filter(|n| (1..=10_000_000).contains(n))
                    .map_or(defaults.rate_limit.burst, |n| n as u32),
            },
            usage_flush: number("CATALOG_USAGE_FLUSH_SECONDS")
                .map(|n| Duration::from_secs(n.min(3600)))
                .unwrap_or(defaults.usage_flush),
            metrics: crate::usage::Metrics::from_lookup(&lookup),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_values_and_falls_back_to_defaults() {
        let cfg = Config::from_lookup(|name| match name {
            "CATALOG_TABLE" => Some("t1".into()),
            "CATALOG_LOCAL_MODE" => Some("1".into()),
            "CATALOG_AUTH_CACHE_SECONDS" => Some("5".into()),
            "CATALOG_MAX_BODY_BYTES" => Some("oops".into()),
            _ => None,
        });
        assert_eq!(cfg.table_name, "t1");
        assert!(cfg.local_mode);
        assert!(!cfg.debug_headers);
        assert_eq!(cfg.auth_cache_ttl, Duration::from_secs(5));
        assert_eq!(cfg.max_body_bytes, 1024 * 1024);
        assert_eq!(cfg.refusal(), None, "local mode needs no cursor secret");
    }

    #[test]
    fn outside_local_mode_a_cursor_secret_is_required() {
        let strict = Config::from_lookup(|_| None);
        assert!(strict
            .refusal()
            .unwrap()
            .starts_with("CATALOG_CURSOR_KEY must be set"));
        let short = Config::from_lookup(|n| (n == "CATALOG_CURSOR_KEY").then(|| "x".repeat(31)));
        assert!(short.refusal().is_some());
        let set = Config::from_lookup(|n| (n == "CATALOG_CURSOR_KEY").then(|| "x".repeat(32)));
        assert_eq!(set.refusal(), None);
    }
}
