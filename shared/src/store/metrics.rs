//! Counts DynamoDB requests per API call, and the sequential round trips they took, so tests
//! can assert the cost of each route.
//!
//! An SDK interceptor updates the counters of the task-local scope the request runs in
//! (every attempt counts, retries included). Round trips are counted where the code decides
//! them: an operation started on its own is one; a group of operations the store sends in
//! parallel (`in_parallel`, `parallel::try_all`) is one, however many requests it holds.
//! Timing would make the count depend on the machine; this makes it a property of the code. Handlers that run
//! sub-requests concurrently use `join`, never `spawn`, so the scope covers them.

use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The DynamoDB traffic of one API call.
#[derive(Debug, Default)]
struct Traffic {
    requests: AtomicU32,
    /// Parallel groups currently running (see `in_parallel`).
    groups: AtomicU32,
    round_trips: AtomicU32,
}

/// What one API call cost in DynamoDB traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub requests: u32,
    pub round_trips: u32,
}

tokio::task_local! {
    static TRAFFIC: Arc<Traffic>;
}

/// The interceptor attached to every DynamoDB client the library builds.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestCounter;

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "CatalogRequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let _ = TRAFFIC.try_with(|t| t.requests.fetch_add(1, Ordering::Relaxed));
        Ok(())
    }

    fn read_before_execution(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let _ = TRAFFIC.try_with(|t| {
            if t.groups.load(Ordering::SeqCst) == 0 {
                t.round_trips.fetch_add(1, Ordering::SeqCst);
            }
        });
        Ok(())
    }
}

/// Runs `fut`, whose requests go out in parallel, as one round trip (however many
/// requests it sends). Nested groups count once.
pub async fn in_parallel<F: Future>(fut: F) -> F::Output {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            let _ = TRAFFIC.try_with(|t| t.groups.fetch_sub(1, Ordering::SeqCst));
        }
    }
    let _ = TRAFFIC.try_with(|t| {
        if t.groups.fetch_add(1, Ordering::SeqCst) == 0 {
            t.round_trips.fetch_add(1, Ordering::SeqCst);
        }
    });
    let _leave = Leave;
    fut.await
}

/// Runs `fut` and returns its output with the DynamoDB traffic it caused.
pub async fn counted<F: Future>(fut: F) -> (F::Output, Cost) {
    let traffic = Arc::new(Traffic::default());
    let out = TRAFFIC.scope(traffic.clone(), fut).await;
    let cost = Cost {
        requests: traffic.requests.load(Ordering::Relaxed),
        round_trips: traffic.round_trips.load(Ordering::Relaxed),
    };
    (out, cost)
}
