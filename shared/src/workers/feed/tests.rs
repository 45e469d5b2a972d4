//! Unit tests of the parent module.

use super::*;
use serde_json::json;

pub(super) fn record(name: &str, old: serde_json::Value, new: serde_json::Value) -> EventRecord {
    serde_json::from_value(json!({
        "eventID": "1", "eventName": name, "eventVersion": "1.1",
        "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1_700_000_000.0,
            "Keys": {"PK": {"S": "x"}, "SK": {"S": "L1"}},
            "OldImage": old, "NewImage": new,
            "SequenceNumber": "100", "SizeBytes": 10,
            "StreamViewType": "NEW_AND_OLD_IMAGES"
        },
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:1:table/catalog/stream/x"
    }))
    .unwrap()
}

pub(super) fn product(su: &str, tu: &str) -> serde_json::Value {
    json!({
        "PK": {"S": "O#abc123#P#chair"}, "SK": {"S": "L1"},
        "GSI1PK": {"S": "O#abc123#T#product#0"}, "GSI2SK": {"S": format!("{tu}#chair")},
        "kind": {"S": "product"}, "id": {"S": "chair"}, "name": {"S": "Chair"},
        "su": {"S": su}, "tu": {"S": tu}, "ver": {"N": "2"}
    })
}

pub(super) const T1: &str = "2026-11-21T10:00:00.000Z";
pub(super) const T2: &str = "2026-11-21T10:00:05.000Z";

#[test]
fn an_update_names_what_it_changed() {
    let with = |su: &str, name: &str, vals: serde_json::Value| {
        let mut p = product(su, su);
        p["name"] = json!({"S": name});
        p["vals"] = vals;
        p
    };
    let color = |c: &str| json!({"M": {"color": {"M": {"v": {"S": c}}}, "size": {"S": "L"}}});
    let old = with(T1, "Chair", color("red"));
    let new = with(T2, "Chair", color("blue"));
    let change = change_of(&record("MODIFY", old.clone(), new)).unwrap();
    assert_eq!(change.changed, vec!["product.color"]);
    let renamed = with(
        T2,
        "Seat",
        json!({"M": {"color": {"M": {"v": {"S": "red"}}}}}),
    );
    let change = change_of(&record("MODIFY", old, renamed)).unwrap();
    assert_eq!(change.changed, vec!["name", "product.size"]);
}

#[test]
fn inserts_modifies_and_removes_become_events() {
    let created = change_of(&record("INSERT", json!(null), product(T1, T1))).unwrap();
    assert_eq!(
        created,
        Change {
            org: "abc123".into(),
            entity_type: "product".into(),
            identifier: "chair".into(),
            action: Action::Created,
            occurred_at: Timestamp::parse(T1).unwrap(),
            changed: vec![],
        }
    );
    let updated = change_of(&record("MODIFY", product(T1, T1), product(T2, T2))).unwrap();
    assert_eq!(updated.action, Action::Updated);
    assert_eq!(updated.occurred_at, Timestamp::parse(T2).unwrap());
    let deleted = change_of(&record("REMOVE", product(T1, T2), json!(null))).unwrap();
    assert_eq!(deleted.action, Action::Deleted);
    // the record's time is earlier than the image's tu: the later one wins
    assert_eq!(deleted.occurred_at, Timestamp::parse(T2).unwrap());
}

#[test]
fn a_child_change_is_not_an_update_of_the_parent() {
    assert_eq!(
        change_of(&record("MODIFY", product(T1, T1), product(T1, T2))),
        None
    );
}

#[test]
fn non_entity_items_are_ignored() {
    let tombstone = json!({
        "PK": {"S": "O#abc123#X#product#chair"}, "SK": {"S": "DEL"},
        "GSI1PK": {"S": "O#abc123#T#product#0"}, "kind": {"S": "product"},
        "id": {"S": "chair"}, "del": {"BOOL": true}
    });
    assert_eq!(change_of(&record("INSERT", json!(null), tombstone)), None);
    let pending = json!({
        "PK": {"S": "O#abc123#W#wh_1#Q"}, "SK": {"S": "product/updated/chair"},
        "deliveryId": {"S": "dlv_1"}, "occurredAt": {"S": T1}
    });
    assert_eq!(change_of(&record("INSERT", json!(null), pending)), None);
    let foreign = json!({
        "PK": {"S": "O#abc123#P#chair"}, "GSI1PK": {"S": "O#other1#T#product#0"},
        "kind": {"S": "product"}, "id": {"S": "chair"}
    });
    assert_eq!(change_of(&record("INSERT", json!(null), foreign)), None);
}
