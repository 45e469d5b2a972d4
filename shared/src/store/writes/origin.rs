//! Where a write comes from: its actor, stamped on every entity and tombstone it puts (the
//! `by` attribute, so that the table's stream carries who changed what to the history), and
//! the claim of the request's Idempotency-Key, when it has one.

use super::super::idempotency::Guard;
use super::super::ops::Item;
use crate::domain::actor::Actor;
use aws_sdk_dynamodb::types::AttributeValue;

/// The attribute that names the actor of an item's last write.
pub const BY: &str = "by";

/// The actor and the Idempotency-Key claim of a write.
#[derive(Debug, Clone, Default)]
pub struct Origin<'a> {
    /// Who writes (`None`: a seed or an operator's tool, shown as no one in history).
    pub actor: Option<Actor>,
    /// The claim of the request's `Idempotency-Key` (`store/idempotency.rs`).
    pub guard: Option<&'a Guard>,
}

impl<'a> Origin<'a> {
    /// A write of `actor`, under the claim `guard` when the request has one.
    pub fn new(actor: Actor, guard: Option<&'a Guard>) -> Self {
        Self {
            actor: Some(actor),
            guard,
        }
    }

    /// A write of no one (seeds, tests).
    pub fn none() -> Self {
        Self::default()
    }
}

/// Whether an item is stamped with its writer: every item that records when it changed
/// (`su`): entities, assets and other resources, and tombstones.
pub(super) fn stamped(item: &Item) -> bool {
    item.contains_key("su")
}

impl Origin<'_> {
    /// The bytes the stamp adds to `item` (as DynamoDB counts an attribute: name and
    /// value), counted before the first request.
    pub(super) fn stamp_bytes(&self, item: &Item) -> usize {
        match &self.actor {
            Some(actor) if stamped(item) => BY.len() + actor.encode().len(),
            _ => 0,
        }
    }

    /// Sets (or, with no actor, removes) the `by` of an item that is stamped.
    pub(super) fn stamp(&self, item: &mut Item) {
        if !stamped(item) {
            return;
        }
        match &self.actor {
            Some(actor) => {
                item.insert(BY.into(), AttributeValue::S(actor.encode()));
            }
            None => {
                item.remove(BY);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_items_that_record_a_change_are_stamped() {
        let s = |v: &str| AttributeValue::S(v.into());
        let entity: Item = [("PK".into(), s("p")), ("su".into(), s("t"))].into();
        let identity: Item = [("PK".into(), s("r"))].into();
        let origin = Origin::new(Actor::ApiKey("abc".into()), None);
        let (mut e, mut i) = (entity.clone(), identity.clone());
        origin.stamp(&mut e);
        origin.stamp(&mut i);
        assert_eq!(e.get(BY), Some(&s("k:abc")));
        assert_eq!(i, identity);
        // a write of no one leaves no earlier writer behind
        Origin::none().stamp(&mut e);
        assert_eq!(e, entity);
    }
}
