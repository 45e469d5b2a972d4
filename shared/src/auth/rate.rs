//! Per-organization rate limits at the edge: each process takes tokens from the
//! organization's bucket in the table (`store/rate.rs`) in small chunks (a lease, valid one
//! second), so a request costs a DynamoDB write only once per chunk, and answers every
//! authenticated call with the IETF `RateLimit-Policy` / `RateLimit` fields.
//!
//! Accuracy: every token a process hands out was taken from the shared bucket first, so the
//! fleet never admits more than the bucket allows, give or take the one second a lease may
//! be held (at most `burst + rate × (t + 1 s)` in any `t` seconds). A lease's unused tokens
//! lapse after that second, and go back to the bucket with the process's next take of the
//! organization's tokens (one write: the bucket moves by what it takes less what it gives
//! back), so a tenant spread over many instances is not refused below its rate by tokens
//! leased and never used (before, each lapsed lease was lost).
//!
//! When the table cannot be reached, each process keeps the bucket itself from the last
//! `tat` it saw: it admits at most the organization's policy on its own (a fleet of N
//! processes at most N times it) and refuses beyond, instead of admitting every call. The
//! calls themselves need the table, so this only bounds what a failing store would let
//! through; it never turns a storage failure into a 5xx of the limiter's.

use crate::domain::rate::{ceil_secs, Policy, Take};
use crate::error::ApiError;
use crate::store::rate::{Bucket, Taken};
use crate::store::Store;
use lru::LruCache;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long leased tokens may be handed out.
const LEASE: Duration = Duration::from_secs(1);
/// Organizations a process keeps leases for.
const MAX_ORGS: usize = 10_000;

/// What this process holds of one organization's bucket.
#[derive(Debug, Clone, Copy)]
struct Lease {
    policy: Policy,
    tokens: u32,
    until: Instant,
    /// The bucket's `tat` as last seen (µs).
    tat: i64,
}

/// The state a response reports in its rate-limit fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateState {
    pub policy: Policy,
    pub remaining: i64,
    /// Seconds until the bucket is full.
    pub reset: i64,
}

impl RateState {
    /// The `RateLimit-Policy` and `RateLimit` fields.
    pub fn headers(&self) -> [(&'static str, String); 2] {
        [
            (
                "ratelimit-policy",
                format!(
                    "\"org\";q={};w={}",
                    self.policy.burst,
                    self.policy.window_secs()
                ),
            ),
            (
                "ratelimit",
                format!("\"org\";r={};t={}", self.remaining, self.reset),
            ),
        ]
    }
}

pub struct Limiter {
    leases: Mutex<LruCache<(String, Bucket), Lease>>,
}

impl Default for Limiter {
    fn default() -> Self {
        Self {
            leases: Mutex::new(LruCache::new(
                NonZeroUsize::new(MAX_ORGS).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Tokens a process leases at once: a twentieth of the burst, 1 to 20.
fn chunk(policy: Policy) -> u32 {
    (policy.burst / 20).clamp(1, 20)
}

impl Limiter {
    /// Admits a call costing `cost` tokens for `org` under `policy`, or refuses it: 429 with
    /// `Retry-After` and the rate-limit fields, naming the limit. Storage failing is not
    /// the caller's fault: the process then keeps the bucket itself (see the module's doc).
    pub async fn admit(
        &self,
        store: &Store,
        org: &str,
        policy: Policy,
        cost: u32,
    ) -> Result<Option<RateState>, ApiError> {
        self.admit_from(store, org, Bucket::Calls, policy, cost)
            .await
    }

    /// [`Limiter::admit`] from one of the organization's buckets.
    pub async fn admit_from(
        &self,
        store: &Store,
        org: &str,
        bucket: Bucket,
        policy: Policy,
        cost: u32,
    ) -> Result<Option<RateState>, ApiError> {
        if policy.rate == 0 {
            return Ok(None); // no limit: no bucket, no fields
        }
        self.take(store, (org, bucket), policy, cost)
            .await
            .map(Some)
    }

    async fn take(
        &self,
        store: &Store,
        (org, bucket): (&str, Bucket),
        policy: Policy,
        cost: u32,
    ) -> Result<RateState, ApiError> {
        let now = now_us();
        let id = (org.to_string(), bucket);
        let (hint, credit) = {
            let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
            match leases.get_mut(&id) {
                Some(l) if l.policy == policy && l.until > Instant::now() && l.tokens >= cost => {
                    l.tokens -= cost;
                    return Ok(state(policy, l.tat, now, l.tokens));
                }
                // When the last `tat` this process saw refuses the call, so would the table's
                // (others only add to it, and a return never moves it below what its
                // returner took): refused at once, with no request, so an organization far
                // over its limit costs storage nothing per refused call. What is left of the
                // lease goes back with the next take, but only as much of it as the bucket
                // still counts: once it has refilled past the grant, those tokens are back
                // already (returning them again would admit beyond the burst).
                Some(l) if l.policy == policy => {
                    let still_counted = ((l.tat - now).max(0) / policy.interval_us()) as u32;
                    let credit = l.tokens.min(still_counted);
                    l.tokens = 0; // given back once, by this take
                    let need = cost.saturating_sub(credit);
                    if let Take::Refused { wait_us } = policy.take(Some(l.tat), now, need) {
                        return Err(refused(policy, cost, wait_us, l.tat, now));
                    }
                    (Some(l.tat), credit)
                }
                Some(l) => (Some(l.tat), 0),
                None => (None, 0),
            }
        };
        // a chunk when the bucket has it, else just what this call costs
        let want = cost.max(chunk(policy));
        let mut granted = want;
        let mut taken = store
            .take_tokens(org, bucket, policy, want, credit, now, hint)
            .await;
        if want > cost && matches!(taken, Ok(Taken::Refused { .. })) {
            granted = cost;
            taken = store
                .take_tokens(org, bucket, policy, cost, credit, now, hint)
                .await;
        }
        let tat = match taken {
            Ok(Taken::Granted { tat }) => tat,
            Ok(Taken::Refused { wait_us, tat }) => {
                // the lapsed lease's tokens were not given back: they go with the next take
                self.keep(id, policy, credit, Instant::now(), tat);
                return Err(refused(policy, cost, wait_us, tat, now));
            }
            Err(e) => return self.unreachable(id, policy, cost, now, hint, &e),
        };
        let left = granted - cost;
        self.keep(id, policy, left, Instant::now() + LEASE, tat);
        Ok(state(policy, tat, now, left))
    }

    /// The table cannot be reached: the call is admitted by this process's own copy of the
    /// bucket (from the `tat` it last saw), within the organization's policy, else refused.
    fn unreachable(
        &self,
        id: (String, Bucket),
        policy: Policy,
        cost: u32,
        now: i64,
        seen: Option<i64>,
        e: &impl std::fmt::Display,
    ) -> Result<RateState, ApiError> {
        tracing::warn!(error = %e, org = %id.0, "rate bucket unreachable; this process keeps it");
        match policy.take(seen, now, cost) {
            Take::Allowed { tat } => {
                self.keep(id, policy, 0, Instant::now(), tat);
                Ok(state(policy, tat, now, 0))
            }
            Take::Refused { wait_us } => {
                let tat = seen.unwrap_or(now);
                Err(refused(policy, cost, wait_us, tat, now))
            }
        }
    }

    /// Keeps what this process knows of `org`'s bucket: `tokens` leased until `until`, and
    /// the bucket's `tat` as last seen.
    fn keep(&self, id: (String, Bucket), policy: Policy, tokens: u32, until: Instant, tat: i64) {
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        leases.put(
            id,
            Lease {
                policy,
                tokens,
                until,
                tat,
            },
        );
    }
}

fn state(policy: Policy, tat: i64, now: i64, leased: u32) -> RateState {
    RateState {
        policy,
        remaining: policy.remaining(tat, now) + i64::from(leased),
        reset: ceil_secs(tat - now),
    }
}

fn refused(policy: Policy, cost: u32, wait_us: i64, tat: i64, now: i64) -> ApiError {
    if cost > policy.burst {
        return over_burst(policy, cost);
    }
    let wait = ceil_secs(wait_us).max(1);
    let detail = format!(
        "the organization's limit is {} requests per second with bursts of {}; retry after {wait} s",
        policy.rate, policy.burst
    );
    with_fields(
        ApiError::new(429, format!("rate limit exceeded: {detail}")),
        policy,
        wait,
        ceil_secs(tat - now),
    )
}

/// A call that costs more than the whole burst: it can never pass as it is.
pub fn over_burst(policy: Policy, cost: u32) -> ApiError {
    let detail = format!(
        "this call costs {cost} tokens (one per 10 lines), more than the organization's burst of {}; send fewer lines per request",
        policy.burst
    );
    with_fields(
        ApiError::new(429, format!("rate limit exceeded: {detail}")),
        policy,
        policy.window_secs(),
        0,
    )
}

fn with_fields(mut e: ApiError, policy: Policy, retry_after: i64, reset: i64) -> ApiError {
    e = e.with_header("retry-after", retry_after.to_string());
    let state = RateState {
        policy,
        remaining: 0,
        reset,
    };
    for (name, value) in state.headers() {
        e = e.with_header(name, value);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_follow_the_ietf_draft() {
        let s = RateState {
            policy: Policy { rate: 2, burst: 5 },
            remaining: 3,
            reset: 1,
        };
        assert_eq!(
            s.headers(),
            [
                ("ratelimit-policy", "\"org\";q=5;w=3".to_string()),
                ("ratelimit", "\"org\";r=3;t=1".to_string())
            ]
        );
    }

    #[test]
    fn a_refusal_names_the_limit_and_says_when_to_retry() {
        let p = Policy { rate: 2, burst: 5 };
        let e = refused(p, 1, 400_000, 2_500_000, 0);
        assert_eq!(e.status, 429);
        assert_eq!(
            e.message,
            "rate limit exceeded: the organization's limit is 2 requests per second with bursts of 5; retry after 1 s"
        );
        assert!(e.headers.contains(&("retry-after", "1".to_string())));
        assert!(e
            .headers
            .contains(&("ratelimit", "\"org\";r=0;t=3".to_string())));
        let e = refused(p, 6, 500_000, 0, 0);
        assert!(e.message.contains(
            "costs 6 tokens (one per 10 lines), more than the organization's burst of 5"
        ));
    }

    /// A store whose every request fails (no endpoint, no credentials).
    fn unreachable_store() -> Store {
        let conf = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .build();
        Store::new(aws_sdk_dynamodb::Client::from_conf(conf), "t")
    }

    /// A process that saw the bucket empty refuses the next calls itself, without a
    /// request, until the bucket can hold them again (the store here is unreachable: had
    /// the limiter asked it, the call would have been admitted).
    #[tokio::test]
    async fn a_bucket_seen_empty_refuses_without_a_request() {
        let store = unreachable_store();
        let policy = Policy { rate: 2, burst: 5 };
        let limiter = Limiter::default();
        let now = now_us();
        // full up to 0.25 s from now: one token in 0.25 s
        let tat = now + policy.tolerance_us() + 250_000;
        let id = || ("o".to_string(), Bucket::Calls);
        limiter.keep(id(), policy, 0, Instant::now(), tat);
        let e = limiter.admit(&store, "o", policy, 1).await.unwrap_err();
        assert_eq!(e.status, 429);
        assert!(e.headers.contains(&("retry-after", "1".to_string())));
        // once the last seen bucket would take the call, the table is asked again (here it
        // is unreachable: the process keeps the bucket itself)
        limiter.keep(id(), policy, 0, Instant::now(), now);
        assert!(limiter.admit(&store, "o", policy, 1).await.is_ok());
    }

    /// Before, a store that could not be reached admitted every call. Now the process keeps
    /// the bucket itself: the burst passes, the next call is refused with the limit's 429.
    #[tokio::test]
    async fn an_unreachable_bucket_admits_no_more_than_the_policy() {
        let store = unreachable_store();
        let policy = Policy { rate: 1, burst: 5 };
        let limiter = Limiter::default();
        for _ in 0..5 {
            assert!(limiter.admit(&store, "o", policy, 1).await.is_ok());
        }
        let e = limiter.admit(&store, "o", policy, 1).await.unwrap_err();
        assert_eq!(e.status, 429);
        assert!(
            e.message.starts_with("rate limit exceeded"),
            "{}",
            e.message
        );
    }

    #[test]
    fn chunks_are_a_twentieth_of_the_burst() {
        assert_eq!(chunk(Policy { rate: 2, burst: 5 }), 1);
        assert_eq!(
            chunk(Policy {
                rate: 100,
                burst: 200
            }),
            10
        );
        assert_eq!(
            chunk(Policy {
                rate: 1000,
                burst: 5000
            }),
            20
        );
    }
}
