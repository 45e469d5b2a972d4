//! Counts DynamoDB requests per API call, so tests can assert the cost of each route.
//!
//! An SDK interceptor increments the counter of the task-local scope the request runs in
//! (every attempt counts, retries included). Handlers that run sub-requests concurrently use
//! `join`, never `spawn`, so the scope covers them.

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

tokio::task_local! {
    static REQUESTS: Arc<AtomicU32>;
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
        let _ = REQUESTS.try_with(|n| n.fetch_add(1, Ordering::Relaxed));
        Ok(())
    }
}

/// Runs `fut` and returns its output with the number of DynamoDB requests it sent.
pub async fn counted<F: Future>(fut: F) -> (F::Output, u32) {
    let counter = Arc::new(AtomicU32::new(0));
    let out = REQUESTS.scope(counter.clone(), fut).await;
    (out, counter.load(Ordering::Relaxed))
}
