//! The one optimistic write loop: read what the write depends on, plan its writes from that
//! in memory, let the store apply the plan, and on a lost condition read and plan again
//! (`retry.rs`). A use case supplies the read and the plan; nothing else commits.

use super::retry::{with_retries, Retry};
use crate::context::Context;
use crate::error::Failure;
use crate::store::writes::{Apply, Origin, TreeWrite};
use crate::store::StoreError;
use std::future::Future;

/// What an attempt decided from what it read: the writes to apply (none when nothing
/// changes; a tree of entity writes unless the plan names another `Apply`) and what the
/// write did, once they are applied.
pub struct WritePlan<T, W = TreeWrite> {
    pub write: W,
    pub outcome: T,
}

impl<T> WritePlan<T> {
    /// Nothing to write: `outcome` as the store holds it already.
    pub fn unchanged(outcome: T) -> Self {
        Self {
            write: TreeWrite::new(),
            outcome,
        }
    }
}

/// What every write of one request shares: the context, the organization, the request's
/// `If-Match` and who writes (with the `Idempotency-Key` claim the commit carries).
pub struct Writer<'a> {
    pub cx: &'a Context,
    pub org: &'a str,
    pub if_match: Option<&'a str>,
    pub origin: Origin<'a>,
}

impl Writer<'_> {
    /// Runs a write named `what` (in the 409 of a write that lost every retry): `read`,
    /// then `plan` from what it read, then the store applies the plan (`Store::apply`); a lost condition
    /// reads and plans again. `failed` judges a failed commit: `Retry::from`, or
    /// `references::named` (a reference to a metaobject deleted meanwhile is the 400
    /// naming its field).
    pub async fn run<R, E, T, W, Rd, RdFut, P, F>(
        &self,
        what: &str,
        read: Rd,
        plan: P,
        failed: F,
    ) -> Result<T, Failure>
    where
        Rd: Fn() -> RdFut,
        RdFut: Future<Output = Result<R, E>>,
        Retry: From<E>,
        W: Apply,
        P: Fn(R) -> Result<WritePlan<T, W>, Failure>,
        F: Fn(StoreError) -> Retry,
    {
        let (read, plan, failed) = (&read, &plan, &failed);
        with_retries(what, move || async move {
            let WritePlan { write, outcome } = plan(read().await?)?;
            self.cx
                .store
                .apply(&write, &self.origin)
                .await
                .map_err(failed)?;
            Ok(outcome)
        })
        .await
    }
}
