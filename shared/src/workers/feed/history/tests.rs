//! Unit tests of the parent module.

use super::super::tests::{product, record, T1, T2};
use super::*;
use serde_json::{json, Value};

fn with(su: &str, by: Option<&str>, color: &str) -> Value {
    let mut p = product(su, su);
    p["vals"] = json!({"M": {"color": {"M": {"t": {"S": "text"}, "e": {"L": [{"M": {"v": {"S": color}}}]}}}}});
    if let Some(by) = by {
        p["by"] = json!({"S": by});
    }
    p
}

#[test]
fn each_own_change_is_one_entry_with_its_actor_and_what_changed() {
    let records = [
        record(
            "INSERT",
            json!(null),
            with(T1, Some("k:abc123key001"), "red"),
        ),
        // a child's write moved only the tree time: not a change of the product
        record("MODIFY", with(T1, Some("k:abc123key001"), "red"), {
            let mut p = with(T1, Some("c:abc123key002"), "red");
            p["tu"] = json!({"S": T2});
            p
        }),
        record(
            "MODIFY",
            with(T1, Some("k:abc123key001"), "red"),
            with(T2, Some("i:imp_1"), "blue"),
        ),
        record("REMOVE", with(T2, Some("i:imp_1"), "blue"), json!(null)),
    ];
    let by_org = entries(&records);
    assert_eq!(by_org.keys().collect::<Vec<_>>(), vec!["abc123"]);
    let got: Vec<(usize, Event, Option<Actor>)> = by_org["abc123"]
        .iter()
        .map(|(i, e)| (*i, e.event, e.by.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                0,
                Event::Created,
                Some(Actor::ApiKey("abc123key001".into()))
            ),
            (2, Event::Updated, Some(Actor::Import("imp_1".into()))),
            // the deletion's actor comes from its tombstone
            (3, Event::Deleted, None),
        ]
    );
    let changes: Vec<Value> = by_org["abc123"]
        .iter()
        .map(|(_, e)| serde_json::from_str(e.changes.as_deref().unwrap()).unwrap())
        .collect();
    let color = |c: &Value, side: &str| c["attributes"]["product.color"][side].clone();
    let value = |c: &Value, side: &str| color(c, side)[0]["value"].clone();
    // created: no old state, the name and the color new
    assert_eq!(changes[0]["name"], json!({"old": null, "new": "Chair"}));
    assert_eq!(
        (color(&changes[0], "old"), value(&changes[0], "new")),
        (json!(null), json!("red"))
    );
    // updated: only the color, red to blue
    assert_eq!(changes[1].get("name"), None);
    assert_eq!(
        (value(&changes[1], "old"), value(&changes[1], "new")),
        (json!("red"), json!("blue"))
    );
    // deleted: everything to null
    assert_eq!(changes[2]["name"], json!({"old": "Chair", "new": null}));
    assert_eq!(
        (value(&changes[2], "old"), color(&changes[2], "new")),
        (json!("blue"), json!(null))
    );
    let t2 = Timestamp::parse(T2).unwrap();
    let (update, deletion) = (&by_org["abc123"][1].1, &by_org["abc123"][2].1);
    assert_eq!((update.at, update.state), (t2, t2));
    // a deletion is keyed by the state it ended (its time comes from its tombstone): the
    // same record always makes the same key, and it sorts right after that state's change
    assert_eq!(deletion.state, t2);
    assert!(deletion.position() > update.position());
}

#[test]
fn assets_have_a_history_and_bundles_none() {
    let of = |kind: &str| {
        json!({
            "PK": {"S": format!("O#abc123#R#{kind}")}, "SK": {"S": "x1"},
            "GSI1PK": {"S": format!("O#abc123#T#{kind}#3")},
            "kind": {"S": kind}, "id": {"S": "x1"}, "name": {"S": "X"},
            "su": {"S": T1}, "tu": {"S": T1}, "ver": {"N": "1"}
        })
    };
    let records = [
        record("INSERT", json!(null), of("asset")),
        record("INSERT", json!(null), of("bundle")),
    ];
    let by_org = entries(&records);
    let kinds: Vec<&str> = by_org["abc123"]
        .iter()
        .map(|(_, e)| e.entity_type.as_str())
        .collect();
    assert_eq!(kinds, vec!["asset"]);
}

#[test]
fn changes_past_the_bound_are_kept_as_omitted() {
    let huge = "x".repeat(MAX_CHANGES_BYTES);
    let records = [record("INSERT", json!(null), with(T1, None, &huge))];
    let by_org = entries(&records);
    let (_, e) = &by_org["abc123"][0];
    assert_eq!((e.changes.as_ref(), e.by.as_ref()), (None, None));
}
