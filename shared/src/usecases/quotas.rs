//! Quotas: how many of each kind of setting an organization may create, counted atomically
//! with the create (`create_within`); beyond one, 409 naming the quota (the limits table
//! lists them).

use super::retry::{with_retries, Retry};
use crate::context::Context;
use crate::error::Failure;
pub use crate::store::quotas::Counted;
use crate::store::quotas::QuotaClaim;
use crate::store::StoreError;
use std::future::Future;

pub use crate::domain::limits::{
    MAX_ATTRIBUTES, MAX_FAMILIES, MAX_METAOBJECT_DEFINITIONS, MAX_PROFILES, MAX_REPLAYS_PER_HOUR,
    MAX_WEBHOOKS_PER_URL,
};

/// Creates one more of a kind the organization holds at most `max` of (`what` names them),
/// atomically with its count: reads the kind's quota version, counts (`count`; it may refuse
/// on its own, a per-URL quota), refuses at `max`, and creates with the version's move in
/// the same transaction (`create`). Before, the count and the create were two steps, and
/// concurrent creators all passed one count (10 at once to one URL made 7 of 5). When
/// another create of the kind came first, it counts and tries again; a create refused for
/// its own reason (the item exists) is answered by `refused`.
pub async fn create_within<T, C, CF, W, WF>(
    cx: &Context,
    (org, kind): (&str, &'static str),
    (max, what): (usize, &str),
    count: C,
    create: W,
    refused: impl Fn(StoreError) -> Failure,
) -> Result<T, Failure>
where
    C: Fn() -> CF,
    CF: Future<Output = Result<usize, Failure>>,
    W: Fn(QuotaClaim) -> WF,
    WF: Future<Output = Result<T, StoreError>>,
{
    // A transaction cancelled by another in flight fails like a refusal while the other's
    // version move is not visible yet: a failure with the version unchanged is tried once
    // more before it is taken as the create's own refusal (the item exists).
    let unchanged = std::sync::atomic::AtomicBool::new(false);
    with_retries(what, || async {
        let claim = cx.store.quota_claim(org, kind).await?;
        if count().await.map_err(Retry::Fail)? >= max {
            return Err(Retry::Fail(over(max, what)));
        }
        match create(claim.clone()).await {
            Ok(created) => Ok(created),
            Err(e @ (StoreError::ConditionFailed | StoreError::Taken(_))) => {
                let moved = cx.store.quota_claim(org, kind).await? != claim;
                if moved || !unchanged.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    Err(Retry::Again)
                } else {
                    Err(Retry::Fail(refused(e)))
                }
            }
            Err(e) => Err(e.into()),
        }
    })
    .await
}

/// [`create_within`] for a kind counted by its partition (`Counted`).
pub async fn create_counted<T, W, WF>(
    cx: &Context,
    org: &str,
    (counted, max, what): (Counted, usize, &str),
    create: W,
    refused: impl Fn(StoreError) -> Failure,
) -> Result<T, Failure>
where
    W: Fn(QuotaClaim) -> WF,
    WF: Future<Output = Result<T, StoreError>>,
{
    let count = || async { Ok(cx.store.count_of(org, counted).await?) };
    create_within(
        cx,
        (org, counted.name()),
        (max, what),
        count,
        create,
        refused,
    )
    .await
}

/// The answer beyond a quota: `an organization may have at most 100 completeness profiles`.
pub fn over(max: usize, what: &str) -> Failure {
    Failure::conflict(format!(
        "quota exceeded: an organization may have at most {max} {what}"
    ))
}
