//! Webhook subscription writes: a change under optimistic concurrency, and the quota of
//! subscriptions one URL may have, which a create and a re-point both count.

use super::etags;
use super::quotas::{over, MAX_WEBHOOKS_PER_URL};
use super::retry::Retry;
use super::write_plan::{WritePlan, Writer};
use crate::context::Context;
use crate::domain::time::Timestamp;
use crate::error::Failure;
use crate::store::webhooks::Subscription;
use crate::store::writes::SubscriptionSave;
use crate::webhooks::url_guard;

/// The quota version the organization's subscriptions share: a create, and a re-point to
/// another URL, both move it.
pub const QUOTA: &str = "webhooks";

/// 409 when `url` already has [`MAX_WEBHOOKS_PER_URL`] subscriptions (other than `except`):
/// one receiver does not need more, and each one multiplies the deliveries it gets. URLs
/// are compared as endpoints ([`url_guard::endpoint`]): a query string or fragment does not
/// make another receiver.
pub fn same_url_below_quota(
    subs: &[Subscription],
    url: &str,
    except: Option<&str>,
) -> Result<(), Failure> {
    let endpoint = url_guard::endpoint(url);
    let same = subs
        .iter()
        .filter(|s| url_guard::endpoint(&s.url) == endpoint && Some(s.id.as_str()) != except)
        .count();
    if same >= MAX_WEBHOOKS_PER_URL {
        return Err(over(
            MAX_WEBHOOKS_PER_URL,
            "webhook subscriptions to one URL",
        ));
    }
    Ok(())
}

/// Subscription `id`, or that it does not exist.
pub async fn find(cx: &Context, org: &str, id: &str) -> Result<Subscription, Failure> {
    cx.store
        .get_subscription(org, id)
        .await?
        .ok_or_else(|| Failure::not_found("webhook", id))
}

/// Applies `change` to the stored subscription `id` under optimistic concurrency. A
/// re-point to `url` is counted under the URL's quota like a create, atomically with the
/// save: each attempt reads the quota's version, counts, and saves with the version's move.
pub async fn modify(
    w: &Writer<'_>,
    id: &str,
    url: Option<&str>,
    change: impl Fn(&mut Subscription) -> Result<(), Failure>,
) -> Result<Subscription, Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    // a re-point over the URL's quota is refused before the subscription is read
    let read = || async {
        let claim = match url {
            Some(u) => {
                let claim = cx.store.quota_claim(org, QUOTA).await?;
                let subs = cx.store.list_subscriptions(org).await?;
                same_url_below_quota(&subs, u, Some(id)).map_err(Retry::Fail)?;
                Some(claim)
            }
            None => None,
        };
        Ok::<_, Retry>((claim, find(cx, org, id).await))
    };
    let plan = |(claim, found)| {
        let mut sub = etags::checked(if_match, found, etags::subscription, "webhook")?;
        change(&mut sub)?;
        sub.ver += 1;
        sub.updated_at = Timestamp::next_after([sub.updated_at]);
        Ok(WritePlan {
            outcome: sub.clone(),
            write: SubscriptionSave { org, sub, claim },
        })
    };
    w.run(&format!("webhook '{id}'"), read, plan, Retry::from)
        .await
}
