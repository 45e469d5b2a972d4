//! Webhook subscription writes: a change under optimistic concurrency, and the quota of
//! subscriptions one URL may have, which a create and a re-point both count.

use super::etags;
use super::quotas::{over, MAX_WEBHOOKS_PER_URL};
use super::retry::Retry;
use super::write_plan::{WritePlan, Writer};
use crate::context::Context;
use crate::domain::destinations::Kind;
use crate::domain::time::Timestamp;
use crate::error::Failure;
use crate::store::webhooks::Subscription;
use crate::store::writes::SubscriptionSave;
use crate::webhooks::url_guard;

/// The quota version the organization's subscriptions share: a create, and a re-point to
/// another URL, both move it.
pub const QUOTA: &str = "webhooks";

/// 409 when the receiver `kind` and `address` name already has [`MAX_WEBHOOKS_PER_URL`]
/// subscriptions (other than `except`): one receiver does not need more, and each one
/// multiplies the deliveries it gets. An HTTPS receiver is the URL's origin
/// ([`url_guard::endpoint`]: scheme, host and port), so another path, query string or
/// fragment does not make another receiver; an AWS destination's is its queue or bus.
pub fn same_url_below_quota(
    subs: &[Subscription],
    kind: Kind,
    address: &str,
    except: Option<&str>,
) -> Result<(), Failure> {
    let receiver = receiver(kind, address);
    let same = subs
        .iter()
        .filter(|s| receiver_of(s) == receiver && Some(s.id.as_str()) != except)
        .count();
    if same >= MAX_WEBHOOKS_PER_URL {
        return Err(over(
            MAX_WEBHOOKS_PER_URL,
            "webhook subscriptions to one receiver (scheme, host and port)",
        ));
    }
    Ok(())
}

/// The receiver a destination of `kind` at `address` delivers to.
fn receiver(kind: Kind, address: &str) -> (Kind, String) {
    match kind {
        Kind::Https => (kind, url_guard::endpoint(address)),
        Kind::EventBridge | Kind::Sqs => (kind, address.to_string()),
    }
}

fn receiver_of(sub: &Subscription) -> (Kind, String) {
    receiver(sub.kind, &sub.url)
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
                // a re-point keeps its destination's type
                let kind = subs.iter().find(|s| s.id == id).map(|s| s.kind);
                same_url_below_quota(&subs, kind.unwrap_or_default(), u, Some(id))
                    .map_err(Retry::Fail)?;
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
