//! The functions that serve no HTTP: the change feed on the table's stream, the webhook
//! delivery worker and the import worker on their queues, the checkpoint builder on its
//! schedule. They run on a
//! [`Context`](crate::context::Context), never on the HTTP app or its handlers.

pub mod checkpoints;
pub mod deliver;
pub(crate) mod export;
pub mod feed;
pub mod import;

use std::time::{Duration, Instant};

/// The invocation's deadline as an `Instant`, from Lambda's `deadline_ms` (epoch millis).
pub fn deadline_from(deadline_ms: u64) -> Instant {
    let now_ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
    Instant::now() + Duration::from_millis(deadline_ms.saturating_sub(now_ms))
}
