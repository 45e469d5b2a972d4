//! Unit tests of the parent module.

use super::*;

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn subscription() -> Subscription {
    Subscription {
        id: "wh_1".into(),
        url: "https://example.com/hook".into(),
        kind: Kind::Https,
        verification: None,
        topics: vec!["product/updated".into()],
        changed_fields: None,
        payload: Default::default(),
        filter: None,
        description: None,
        enabled: true,
        disabled_reason: None,
        secret: "whsec_new".into(),
        previous_secret: Some("whsec_old".into()),
        previous_secret_expires_at: Some(at(2_000)),
        created_at: at(1_000),
        updated_at: at(1_500),
        ver: 3,
    }
}

fn delivery() -> Delivery {
    Delivery {
        id: "01J000000000000000000000AA".into(),
        webhook_id: "wh_1".into(),
        event: "product/updated".into(),
        entity_type: "product".into(),
        identifier: "shoe".into(),
        occurred_at: at(1_000),
        status: DeliveryStatus::Retrying,
        attempts: 1,
        last_status_code: Some(503),
        last_error: None,
        created_at: at(1_100),
        updated_at: at(1_200),
        next_attempt_at: Some(at(61_200)),
        replay_of: None,
        attempt_log: vec![Attempt {
            at: at(1_200),
            status_code: Some(503),
            duration_ms: 12,
            error: None,
        }],
        changes: 2,
        delta: None,
        changes_omitted: false,
        matched: None,
        expires: 9_999,
    }
}

/// During a rotation's overlap both secrets sign, the new one first; at its end (the
/// expiry itself included) only the new one does.
#[test]
fn the_previous_secret_signs_only_while_its_overlap_lasts() {
    let sub = subscription();
    assert_eq!(sub.signing_secrets(at(1_999)), ["whsec_new", "whsec_old"]);
    assert_eq!(sub.signing_secrets(at(2_000)), ["whsec_new"]);
    let without = Subscription {
        previous_secret_expires_at: None,
        ..sub
    };
    assert_eq!(without.signing_secrets(at(0)), ["whsec_new"]);
}

/// A subscription is stored under the organization's webhooks partition with its
/// fields in camelCase, optional ones absent, and reads back equal.
#[test]
fn a_subscription_item_round_trips_with_its_keys() {
    let sub = subscription();
    let item = encode(
        &SubscriptionItem {
            pk: webhooks_pk("org1"),
            sk: sub.id.clone(),
            sub: sub.clone(),
        },
        "subscription",
    )
    .unwrap();
    assert_eq!(item["PK"], s("O#org1#W"));
    assert_eq!(item["SK"], s("wh_1"));
    assert_eq!(item["previousSecret"], s("whsec_old"));
    assert!(!item.contains_key("description") && !item.contains_key("disabledReason"));
    let back: SubscriptionItem = decode(item, "subscription").unwrap();
    assert_eq!(back.sub, sub);
}

/// A log entry carries its `byChange` keys from its first write: the subscription's log
/// partition and `<createdAt>#<expires>#<id>`, with the TTL attribute `ttl`; the index
/// keys are not read back into the delivery.
#[test]
fn a_delivery_item_carries_its_log_keys_and_ttl() {
    let d = delivery();
    let item = encode(&DeliveryItem::new("org1", &d), "delivery").unwrap();
    assert_eq!(item["PK"], s("O#org1#W#wh_1#D"));
    assert_eq!(item["SK"], s(d.id.clone()));
    assert_eq!(item["GSI1PK"], s("O#org1#W#wh_1#L"));
    assert_eq!(item["GSI2SK"], s(format!("{}#9999#{}", at(1_100), d.id)));
    assert_eq!(item[TTL], AttributeValue::N("9999".into()));
    assert_eq!(item["status"], s("retrying"));
    let back: DeliveryItem = decode(item, "delivery").unwrap();
    assert_eq!(back.delivery, d);
    assert_eq!((back.gsi1pk.as_str(), back.gsi2sk.as_str()), ("", ""));
}

#[test]
fn final_statuses_end_a_delivery() {
    use DeliveryStatus::*;
    let finals: Vec<_> = [Pending, Retrying, Succeeded, Failed, Cancelled]
        .into_iter()
        .filter(|s| s.is_final())
        .collect();
    assert_eq!(finals, [Succeeded, Failed, Cancelled]);
}

/// Health decodes from an item holding only some fields (the others default), and is
/// failing exactly while a streak is open.
#[test]
fn health_defaults_and_failing() {
    let mut item = Item::new();
    item.insert("failures".into(), AttributeValue::N("2".into()));
    let h: Health = decode(item, "health").unwrap();
    assert_eq!((h.failures, h.failing(), h.parked), (2, false, None));
    let failing = Health {
        failing_since: Some(at(5)),
        ..h
    };
    assert!(failing.failing());
}

#[test]
fn a_pending_window_is_keyed_by_subscription_and_entity() {
    let key = PendingKey::of("org1", "wh_1", "product", "updated", "shoe").key();
    assert_eq!(key[PK], s("O#org1#W#wh_1#Q"));
    assert_eq!(key[SK], s("product/updated/shoe"));
}

#[test]
fn the_record_that_opened_a_window_queues_it_and_a_stale_claim_is_taken_over() {
    let window = |claim: Option<&str>, at: Option<i64>| Pending {
        delivery_id: "dlv_1".into(),
        occurred_at: Timestamp::from_millis(0),
        claim: claim.map(str::to_string),
        claimed_at: at,
        changes: 1,
        first_old: None,
        last_new: None,
        changes_omitted: false,
        match_before: None,
        match_after: None,
    };
    let now = 10 * CLAIM_STALE_MS;
    // the opening record, and the same record retried
    assert_eq!(
        window(Some("7"), Some(now)).queueing("7", now),
        Queueing::Queue
    );
    // a later record of the open window
    assert_eq!(
        window(Some("7"), Some(now - CLAIM_STALE_MS)).queueing("9", now),
        Queueing::Claimed
    );
    // the opening record was given up on
    assert_eq!(
        window(Some("7"), Some(now - CLAIM_STALE_MS - 1)).queueing("9", now),
        Queueing::TakeOver
    );
    // a window opened before claims were kept
    assert_eq!(window(None, None).queueing("9", now), Queueing::TakeOver);
}
