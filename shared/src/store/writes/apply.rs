//! What a write plan hands the store (`Store::apply`): a tree of conditional entity writes,
//! committed in transactions (`TreeWrite`), or one of the single conditional writes of an
//! organization's state (its scopes, a subscription, a resource). Each says how the store
//! applies it; the use cases' one write loop (`usecases/write_plan.rs`) runs them all alike.

use super::{Expect, Origin, TreeWrite};
use crate::store::quotas::QuotaClaim;
use crate::store::resources::ResourceItem;
use crate::store::settings::Scopes;
use crate::store::webhooks::Subscription;
use crate::store::{Store, StoreError};
use std::future::Future;

/// A write the store applies as one conditional unit: a lost condition is
/// `StoreError::ConditionFailed`, and the loop reads and plans again.
pub trait Apply: Sync {
    /// Whether there is nothing to write (the plan changed nothing).
    fn is_empty(&self) -> bool {
        false
    }

    /// Sends the write, under `origin` (who writes, and the Idempotency-Key claim).
    fn apply<'a>(
        &'a self,
        store: &'a Store,
        origin: &'a Origin<'a>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a;
}

impl Store {
    /// Applies `write` as it says (nothing when it is empty).
    pub async fn apply<W: Apply>(&self, write: &W, origin: &Origin<'_>) -> Result<(), StoreError> {
        if write.is_empty() {
            return Ok(());
        }
        write.apply(self, origin).await
    }
}

impl Apply for TreeWrite {
    fn is_empty(&self) -> bool {
        TreeWrite::is_empty(self)
    }

    fn apply<'a>(
        &'a self,
        store: &'a Store,
        origin: &'a Origin<'a>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
        store.commit(self, origin)
    }
}

/// The organization's scopes, saved over the version they were read at (`ver` moved on).
pub struct ScopesPut<'a> {
    pub org: &'a str,
    pub scopes: Scopes,
}

impl Apply for ScopesPut<'_> {
    fn apply<'a>(
        &'a self,
        store: &'a Store,
        _: &'a Origin<'a>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
        store.put_scopes(self.org, &self.scopes)
    }
}

/// A subscription, saved over the version it was read at (`ver` moved on), with the
/// quota's version moved in the same transaction when `claim` counted it.
pub struct SubscriptionSave<'a> {
    pub org: &'a str,
    pub sub: Subscription,
    pub claim: Option<QuotaClaim>,
}

impl Apply for SubscriptionSave<'_> {
    fn apply<'a>(
        &'a self,
        store: &'a Store,
        _: &'a Origin<'a>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
        store.save_subscription(self.org, &self.sub, self.claim.as_ref())
    }
}

/// One resource, put alone with one conditional PutItem (a transaction only when the
/// request's Idempotency-Key claim moves with it): the cheapest write of a resource that
/// opens no counters.
pub struct ResourcePut {
    pub item: ResourceItem,
    pub expect: Expect,
}

impl Apply for ResourcePut {
    fn apply<'a>(
        &'a self,
        store: &'a Store,
        origin: &'a Origin<'a>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'a {
        store.put_resource(&self.item, self.expect, origin.guard)
    }
}

/// One of two writes, as a plan decides from what it read (a create that opens counters in
/// a transaction, or a replace with one PutItem).
pub enum Either<A, B> {
    Left(A),
    Right(B),
}

impl<A: Apply, B: Apply> Apply for Either<A, B> {
    fn is_empty(&self) -> bool {
        match self {
            Self::Left(a) => a.is_empty(),
            Self::Right(b) => b.is_empty(),
        }
    }

    async fn apply<'a>(
        &'a self,
        store: &'a Store,
        origin: &'a Origin<'a>,
    ) -> Result<(), StoreError> {
        match self {
            Self::Left(a) => a.apply(store, origin).await,
            Self::Right(b) => b.apply(store, origin).await,
        }
    }
}
