//! Unit tests of the parent module.

use super::*;
use serde_json::json;

fn record(name: &str, sk: &str, old: serde_json::Value, new: serde_json::Value) -> EventRecord {
    serde_json::from_value(json!({
        "eventID": "1", "eventName": name, "eventVersion": "1.1",
        "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1_700_000_000.0,
            "Keys": {"PK": {"S": "O#abc123#P#chair"}, "SK": {"S": sk}},
            "OldImage": old, "NewImage": new,
            "SequenceNumber": "100", "SizeBytes": 10,
            "StreamViewType": "NEW_AND_OLD_IMAGES"
        },
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:1:table/catalog/stream/x"
    }))
    .unwrap()
}

/// A tree item's image with one text value.
fn item(kind: &str, sk: &str, id: &str, su: &str, key: &str, value: &str) -> serde_json::Value {
    json!({
        "PK": {"S": "O#abc123#P#chair"}, "SK": {"S": sk},
        "GSI1PK": {"S": format!("O#abc123#T#{kind}#0")},
        "kind": {"S": kind}, "id": {"S": id}, "su": {"S": su}, "tu": {"S": su},
        "vals": {"M": {key: {"M": {"t": {"S": "text"}, "e": {"L": [{"M": {"v": {"S": value}}}]}}}}}
    })
}

/// The batch's changes, by position.
fn changes_of(records: &[EventRecord]) -> Vec<(usize, Change)> {
    records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| super::super::change_of(r).map(|c| (i, c)))
        .collect()
}

const T1: &str = "2026-11-21T10:00:00.000Z";
const T2: &str = "2026-11-21T10:00:05.000Z";
const T3: &str = "2026-11-21T10:00:09.000Z";

fn subscription(search: serde_json::Value) -> Subscription {
    serde_json::from_value(json!({
        "id": "wh_1", "url": "https://example.com/h", "topics": ["sku.*"], "enabled": true,
        "secret": "whsec_x", "createdAt": T1, "updatedAt": T1, "ver": 1,
        "filter": {"search": search.to_string(), "types": {"product.color": "text", "sku.size": "text"}}
    }))
    .unwrap()
}

fn sku(su: &str, size: &str) -> serde_json::Value {
    item("sku", "L3/v1/s1", "s1", su, "size", size)
}

fn product(su: &str, color: &str) -> serde_json::Value {
    item("product", "L1", "chair", su, "color", color)
}

#[test]
fn an_ancestor_is_tested_as_it_stood_at_the_change() {
    let records = vec![
        record("MODIFY", "L3/v1/s1", sku(T1, "S"), sku(T2, "M")),
        record("MODIFY", "L1", product(T1, "red"), product(T2, "blue")),
        record("MODIFY", "L3/v1/s1", sku(T2, "M"), sku(T3, "L")),
        record("REMOVE", "L3/v1/s1", sku(T3, "L"), json!(null)),
    ];
    let changes = changes_of(&records);
    let subs = vec![subscription(
        json!({"product.color": [{"operator": "EQUALS", "value": "red"}]}),
    )];
    let (f, unread) = Filtering::plan(&records, &changes, |_| subs.as_slice());
    // the product is in the batch: nothing to read
    assert_eq!(unread, Vec::<Key>::new());
    let matched: Vec<Option<(bool, bool)>> = changes
        .iter()
        .filter(|(_, c)| c.entity_type == "sku")
        .map(|(i, c)| f.matched(*i, c, &subs[0]).unwrap())
        .collect();
    // before the product turned blue the SKU matched; after, it does not
    assert_eq!(
        matched,
        vec![
            Some((true, true)),
            Some((false, false)),
            Some((false, false))
        ]
    );
}

#[test]
fn own_values_decide_entered_stayed_and_left() {
    let records = vec![
        record("INSERT", "L3/v1/s1", json!(null), sku(T1, "S")),
        record("MODIFY", "L3/v1/s1", sku(T1, "S"), sku(T2, "M")),
        record("MODIFY", "L3/v1/s1", sku(T2, "M"), sku(T3, "S")),
        record("REMOVE", "L3/v1/s1", sku(T3, "S"), json!(null)),
    ];
    let changes = changes_of(&records);
    let subs = vec![subscription(
        json!({"sku.size": [{"operator": "EQUALS", "value": "S"}]}),
    )];
    let (f, unread) = Filtering::plan(&records, &changes, |_| subs.as_slice());
    assert_eq!(unread, Vec::<Key>::new());
    let matched: Vec<(bool, bool)> = changes
        .iter()
        .filter_map(|(i, c)| f.matched(*i, c, &subs[0]).unwrap())
        .collect();
    assert_eq!(
        matched,
        vec![(false, true), (true, false), (false, true), (true, false)]
    );
}

#[test]
fn ancestors_outside_the_batch_are_read_once() {
    let records = vec![
        record("MODIFY", "L3/v1/s1", sku(T1, "S"), sku(T2, "M")),
        record("MODIFY", "L3/v1/s1", sku(T2, "M"), sku(T2, "L")),
    ];
    let changes = changes_of(&records);
    let subs = vec![subscription(
        json!({"product.color": [{"operator": "EQUALS", "value": "red"}]}),
    )];
    let (mut f, unread) = Filtering::plan(&records, &changes, |_| subs.as_slice());
    assert_eq!(
        unread,
        vec![("O#abc123#P#chair".to_string(), "L1".to_string())]
    );
    assert_eq!(
        f.matched(0, &changes[0].1, &subs[0]).ok(),
        Some(Some((false, false)))
    );
    let red = serde_json::from_value(product(T1, "red")).unwrap();
    f.read.insert(unread[0].clone(), Facts::of(&red).unwrap());
    assert_eq!(
        f.matched(0, &changes[0].1, &subs[0]).ok(),
        Some(Some((true, true)))
    );
}

#[test]
fn an_unreadable_ancestor_holds_only_the_changes_that_need_it() {
    let records = vec![record("MODIFY", "L3/v1/s1", sku(T1, "S"), sku(T2, "M"))];
    let changes = changes_of(&records);
    let filtered = subscription(json!({"product.color": [{"operator": "EQUALS", "value": "red"}]}));
    let own = subscription(json!({"sku.size": [{"operator": "EQUALS", "value": "S"}]}));
    let subs = vec![filtered, own];
    let (mut f, _) = Filtering::plan(&records, &changes, |_| subs.as_slice());
    f.unreadable = Some(StoreError::Unavailable("throttled".into()));
    assert!(f.matched(0, &changes[0].1, &subs[0]).is_err());
    // a filter on the SKU's own values needs no read
    let mut own = subs[1].clone();
    own.id = "wh_2".into();
    let subs = vec![own];
    let (mut f, unread) = Filtering::plan(&records, &changes, |_| subs.as_slice());
    assert!(unread.is_empty());
    f.unreadable = Some(StoreError::Unavailable("throttled".into()));
    assert_eq!(
        f.matched(0, &changes[0].1, &subs[0]).ok(),
        Some(Some((true, false)))
    );
}

/// A filter whose judgement would compare more than a record's budget is not judged on
/// it: the record's other subscriptions lose nothing of theirs, and its next record gets
/// a budget of its own. Before, every condition ran whatever it cost.
#[test]
fn a_filter_over_the_records_budget_is_not_judged() {
    // 2 MiB of text, tested by 10 conditions before and after: 40 MiB of comparisons
    let big = "a".repeat(2 << 20);
    let records = vec![
        record("MODIFY", "L3/v1/s1", sku(T1, &big), sku(T2, &big)),
        record("MODIFY", "L3/v1/s1", sku(T2, "S"), sku(T3, "M")),
    ];
    let changes = changes_of(&records);
    // each holds, so each is evaluated in turn
    let needle = "a".repeat(1_000);
    let costly: Vec<serde_json::Value> = (0..10)
        .map(|_| json!({"operator": "CONTAINS", "value": needle}))
        .collect();
    let subs = vec![subscription(json!({ "sku.size": costly }))];
    let (f, _) = Filtering::plan(&records, &changes, |_| subs.as_slice());
    let (i, c) = &changes[0];
    assert!(matches!(
        f.matched(*i, c, &subs[0]),
        Err(Unjudged::OverBudget)
    ));
    // small values cost little: judged as usual
    let (i, c) = &changes[1];
    assert_eq!(f.matched(*i, c, &subs[0]).unwrap(), Some((false, false)));
}
