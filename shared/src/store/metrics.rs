//! Counts DynamoDB requests per API call, and the sequential round trips they took, so tests
//! can assert the cost of each route.
//!
//! An SDK interceptor updates the counters of the task-local scope the request runs in
//! (every attempt counts, retries included). Round trips are counted where the code decides
//! them: an operation started on its own is one; a group of operations the store sends in
//! parallel (`in_parallel`, `parallel::try_all`) is one, however many requests it holds.
//! Timing would make the count depend on the machine; this makes it a property of the code. Handlers that run
//! sub-requests concurrently use `join`, never `spawn`, so the scope covers them.
//!
//! The same interceptor asks DynamoDB for the capacity every request consumes
//! (`ReturnConsumedCapacity: TOTAL`, which costs nothing) and adds it up, so each call's
//! capacity reaches the organization's usage (`usage/`).

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextMut,
    BeforeSerializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation as op;
use aws_sdk_dynamodb::types::{ConsumedCapacity, ReturnConsumedCapacity};
use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// The DynamoDB traffic of one API call.
#[derive(Debug, Default)]
struct Traffic {
    requests: AtomicU32,
    /// Parallel groups currently running (see `in_parallel`).
    groups: AtomicU32,
    round_trips: AtomicU32,
    /// Capacity units consumed, in thousandths.
    capacity_milli: AtomicU64,
}

/// What one API call cost in DynamoDB traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub requests: u32,
    pub round_trips: u32,
    /// The read and write capacity units DynamoDB reported, in thousandths of a unit.
    pub capacity_milli: u64,
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

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let input = context.input_mut();
        macro_rules! ask {
            ($($t:ty),*) => {$(
                if let Some(i) = input.downcast_mut::<$t>() {
                    i.return_consumed_capacity.get_or_insert(ReturnConsumedCapacity::Total);
                    return Ok(());
                }
            )*};
        }
        ask!(
            op::get_item::GetItemInput,
            op::put_item::PutItemInput,
            op::update_item::UpdateItemInput,
            op::delete_item::DeleteItemInput,
            op::query::QueryInput,
            op::scan::ScanInput,
            op::batch_get_item::BatchGetItemInput,
            op::batch_write_item::BatchWriteItemInput,
            op::transact_get_items::TransactGetItemsInput,
            op::transact_write_items::TransactWriteItemsInput
        );
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let Ok(output) = context.output_or_error() else {
            return Ok(());
        };
        let units = |c: &ConsumedCapacity| c.capacity_units.unwrap_or(0.0);
        macro_rules! one {
            ($($t:ty),*) => {$(
                if let Some(o) = output.downcast_ref::<$t>() {
                    return Ok(add_capacity(o.consumed_capacity.as_ref().map_or(0.0, units)));
                }
            )*};
        }
        macro_rules! many {
            ($($t:ty),*) => {$(
                if let Some(o) = output.downcast_ref::<$t>() {
                    return Ok(add_capacity(o.consumed_capacity().iter().map(units).sum()));
                }
            )*};
        }
        one!(
            op::get_item::GetItemOutput,
            op::put_item::PutItemOutput,
            op::update_item::UpdateItemOutput,
            op::delete_item::DeleteItemOutput,
            op::query::QueryOutput,
            op::scan::ScanOutput
        );
        many!(
            op::batch_get_item::BatchGetItemOutput,
            op::batch_write_item::BatchWriteItemOutput,
            op::transact_get_items::TransactGetItemsOutput,
            op::transact_write_items::TransactWriteItemsOutput
        );
        Ok(())
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

/// Adds `units` of consumed capacity to the current scope's traffic.
fn add_capacity(units: f64) {
    let milli = (units * 1000.0).round().max(0.0) as u64;
    let _ = TRAFFIC.try_with(|t| t.capacity_milli.fetch_add(milli, Ordering::Relaxed));
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
        capacity_milli: traffic.capacity_milli.load(Ordering::Relaxed),
    };
    (out, cost)
}
