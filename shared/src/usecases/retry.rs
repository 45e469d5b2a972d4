//! Optimistic writes: re-read, re-plan and commit again while a concurrent writer wins a
//! condition, within a time budget, so that contention costs latency rather than a 409.

use crate::error::Failure;
use crate::store::StoreError;
use std::future::Future;
use tokio::time::{Duration, Instant};

/// How long a write keeps retrying lost conditions before it answers 409: half of the API
/// functions' 10-second timeout, so the answer always comes from the function.
pub const WRITE_RETRY_BUDGET: Duration = Duration::from_secs(5);

/// A write is tried at least this often, however slow each attempt is.
const MIN_WRITE_ATTEMPTS: u32 = 3;

/// Upper bound of one backoff pause.
const MAX_BACKOFF: Duration = Duration::from_millis(320);

/// Runs `attempt` (read, plan, commit) until it succeeds or fails for good; a lost condition
/// ([`Retry::Again`]) is retried after a jittered exponential backoff until
/// [`WRITE_RETRY_BUDGET`] is spent, then answered 409 naming `what`.
pub async fn with_retries<T, F, Fut>(what: &str, attempt: F) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Retry>>,
{
    retry_within(WRITE_RETRY_BUDGET, what, attempt).await
}

async fn retry_within<T, F, Fut>(budget: Duration, what: &str, mut attempt: F) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Retry>>,
{
    let started = Instant::now();
    let mut n: u32 = 0;
    // Whether an attempt committed part of its writes: then no failure may look like a
    // refusal that changed nothing.
    let mut partial = false;
    let answer = |partial: bool, e: Failure| if partial { e.after_partial() } else { e };
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(Retry::Fail(e)) => return Err(answer(partial, e)),
            Err(Retry::Again) => {}
            Err(Retry::AgainAfterPartial) => partial = true,
        }
        n += 1;
        let pause = backoff(n);
        if n >= MIN_WRITE_ATTEMPTS && started.elapsed() + pause > budget {
            let e = Failure::conflict(format!(
                "{what} was changed concurrently by other writers; retry the request"
            ));
            return Err(answer(partial, e));
        }
        tokio::time::sleep(pause).await;
    }
}

/// The outcome of a failed write attempt.
pub enum Retry {
    /// A condition was lost to a concurrent writer: read again and re-plan.
    Again,
    /// The same, after earlier transactions of the attempt were committed: read again and
    /// re-plan (the plan completes what is missing); should the write still fail, its answer
    /// says it was partially applied.
    AgainAfterPartial,
    Fail(Failure),
}

impl From<Failure> for Retry {
    fn from(e: Failure) -> Self {
        Self::Fail(e)
    }
}

impl From<crate::domain::Invalid> for Retry {
    fn from(e: crate::domain::Invalid) -> Self {
        Self::Fail(e.into())
    }
}

impl From<StoreError> for Retry {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::ConditionFailed => Self::Again,
            StoreError::Partial { cause, .. } if matches!(*cause, StoreError::ConditionFailed) => {
                Self::AgainAfterPartial
            }
            other => Self::Fail(other.into()),
        }
    }
}

/// Full-jitter exponential backoff before attempt `n + 1`: uniform in 1 ms ..= min(10 ms · 2ⁿ,
/// [`MAX_BACKOFF`]).
fn backoff(n: u32) -> Duration {
    let cap_ms = (10u64 << n.min(5)).min(MAX_BACKOFF.as_millis() as u64);
    let mut b = [0u8; 2];
    let jitter = getrandom::fill(&mut b)
        .map(|_| u16::from_le_bytes(b))
        .unwrap_or(0);
    Duration::from_millis(u64::from(jitter) % cap_ms + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn backoff_grows_and_stays_under_its_cap() {
        for n in 1..40 {
            let b = backoff(n);
            assert!(b >= Duration::from_millis(1), "{b:?}");
            assert!(
                b <= Duration::from_millis((10u64 << n.min(5)).min(320)),
                "{n}: {b:?}"
            );
        }
    }

    #[tokio::test]
    async fn lost_conditions_are_retried_within_the_budget_then_409() {
        let calls = Cell::new(0u32);
        let budget = Duration::from_millis(400);
        let started = Instant::now();
        let r: Result<(), Failure> = retry_within(budget, "product 'p'", || async {
            calls.set(calls.get() + 1);
            Err(Retry::Again)
        })
        .await;
        assert_eq!(
            r,
            Err(Failure::Conflict(
                "product 'p' was changed concurrently by other writers; retry the request".into()
            ))
        );
        // No pause is started that would end past the budget: a pause that did could overrun
        // it by up to MAX_BACKOFF (320 ms); timer lateness on a loaded machine stays well
        // under the 200 ms allowed here.
        assert!(
            started.elapsed() <= budget + Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
        assert!(calls.get() > MIN_WRITE_ATTEMPTS, "{}", calls.get());
    }

    #[tokio::test]
    async fn a_write_that_wins_late_succeeds_and_a_failure_is_not_retried() {
        let calls = Cell::new(0u32);
        let r = with_retries("x", || async {
            calls.set(calls.get() + 1);
            if calls.get() < 5 {
                Err(Retry::Again)
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!((r.ok(), calls.get()), (Some(7), 5));
        calls.set(0);
        let r: Result<(), Failure> = with_retries("x", || async {
            calls.set(calls.get() + 1);
            Err(Retry::Fail(Failure::invalid("no")))
        })
        .await;
        assert_eq!((r, calls.get()), (Err(Failure::invalid("no")), 1));
    }

    /// The first of two transactions committed, the second lost its condition.
    fn lost_after_first() -> Retry {
        Retry::from(StoreError::Partial {
            committed: 1,
            total: 2,
            cause: Box::new(StoreError::ConditionFailed),
        })
    }

    #[tokio::test]
    async fn a_failure_after_a_partial_commit_is_never_a_plain_refusal() {
        let calls = Cell::new(0u32);
        let r: Result<(), Failure> = with_retries("x", || async {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                Err(lost_after_first())
            } else {
                Err(Retry::Fail(Failure::conflict(
                    "sku 's' already exists under another variant",
                )))
            }
        })
        .await;
        assert_eq!(
            r,
            Err(Failure::Partial(
                "the request was partially applied: part of its writes are stored, then it stopped (sku 's' already exists under another variant); repeat the same request to complete it".into()
            ))
        );
        // completed by the retry: a success
        calls.set(0);
        let r = with_retries("x", || async {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                Err(lost_after_first())
            } else {
                Ok(1)
            }
        })
        .await;
        assert_eq!(r.ok(), Some(1));
    }

    #[tokio::test]
    async fn a_spent_budget_still_gets_the_minimum_number_of_tries() {
        let calls = Cell::new(0u32);
        let r: Result<(), Failure> = retry_within(Duration::ZERO, "x", || async {
            calls.set(calls.get() + 1);
            Err(Retry::Again)
        })
        .await;
        assert_eq!(
            (r.err().map(|e| e.status()), calls.get()),
            (Some(409), MIN_WRITE_ATTEMPTS)
        );
    }
}
