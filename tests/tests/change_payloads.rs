//! `payload: "changes"` end to end (issue 41, item 5): deliveries carry the old and new values
//! of what changed between the entity's state before the first change they coalesce and
//! after the last, read from the table stream's images by the real `change-feed` and kept
//! by `webhook-delivery` in the log, so a replay carries them too. Applying each delivery's
//! `changes` in order to nothing gives the entity's last state.

use catalog::domain::changes::apply;
use catalog_e2e::webhooks::{webhooks, Receiver};
use catalog_e2e::Org;
use serde_json::{json, Map, Value};
use std::time::Duration;

const DELIVERY: Duration = Duration::from_secs(60);

fn entry(v: &str) -> Value {
    json!([{"value": v, "data": v, "type": "text", "locale": null}])
}

async fn write(org: &Org, body: Value) {
    let r = org.patch("/v1/products/lamp", body).await;
    assert!(r.status == 200 || r.status == 201, "{:?}", r.body);
}

#[tokio::test]
async fn deliveries_carry_what_changed_and_rebuild_the_entity() {
    webhooks().await;
    let org = Org::new().await;
    org.define(
        json!({"key": "color", "displayName": "Color", "targetEntity": "product", "type": "text"}),
    )
    .await;
    let receiver = Receiver::start(0).await;
    let thin = Receiver::start(0).await;
    let bad = org
        .post(
            "/v1/webhooks",
            json!({"url": receiver.url(), "topics": ["product.*"], "payload": "full"}),
        )
        .await;
    assert_eq!(
        (bad.status, bad.body),
        (
            400,
            json!({"error": "field 'payload' must be \"thin\" (the notice alone) or \"changes\" (with the old and new values); got \"full\""})
        )
    );
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": receiver.url(), "topics": ["product.*"], "payload": "changes"}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.body["result"]["payload"], json!("changes"));
    let id = r.body["result"]["id"].as_str().unwrap().to_string();
    let t = org
        .post(
            "/v1/webhooks",
            json!({"url": thin.url(), "topics": ["product.created"]}),
        )
        .await;
    assert_eq!(t.body["result"]["payload"], json!("thin"));

    write(&org, json!({"name": "Lamp", "values": {"color": "red"}})).await;
    let created = receiver.wait_for(1, DELIVERY).await;
    assert_eq!(created[0].json["event"], json!("product.created"));
    assert_eq!(
        created[0].json["changes"],
        json!({"name": {"old": null, "new": "Lamp"},
               "attributes": {"product.color": {"old": null, "new": entry("red")}}})
    );
    // the default payload is the seed's notice alone
    let notice = thin.wait_for(1, DELIVERY).await;
    assert_eq!(notice[0].json.get("changes"), None);

    // three writes, coalesced into one delivery or more: each carries only what differs
    write(&org, json!({"values": {"color": "blue"}})).await;
    write(&org, json!({"name": "Desk lamp"})).await;
    write(&org, json!({"values": {"color": "green"}})).await;
    let mut held = Map::new();
    apply(&mut held, &created[0].json["changes"]);
    let want: Map<String, Value> =
        serde_json::from_value(json!({"name": "Desk lamp", "product.color": entry("green")}))
            .unwrap();
    let mut seen = 1;
    let updates = loop {
        let got = receiver.wait_for(seen + 1, DELIVERY).await;
        apply(&mut held, &got[seen].json["changes"]);
        seen += 1;
        if held == want {
            break got[1..].to_vec();
        }
        assert!(
            seen < 5,
            "the updates did not reach the last state: {held:?}"
        );
    };
    for u in &updates {
        assert_eq!(u.json["event"], json!("product.updated"));
    }
    // coalesced into one, the red -> green of the whole window (blue came and went)
    if updates.len() == 1 {
        assert_eq!(
            updates[0].json["changes"],
            json!({"name": {"old": "Lamp", "new": "Desk lamp"},
                   "attributes": {"product.color": {"old": entry("red"), "new": entry("green")}}})
        );
    }

    // a replay is the same body under a new id
    let last = updates.last().unwrap();
    let replayed = org
        .post(
            &format!(
                "/v1/webhooks/{id}/deliveries/{}/replay",
                last.json["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    assert_eq!(replayed.status, 202, "{:?}", replayed.body);
    let got = receiver.wait_for(seen + 1, DELIVERY).await;
    assert_eq!(got[seen].json["changes"], last.json["changes"]);
    assert_ne!(got[seen].json["id"], last.json["id"]);
    seen += 1;

    let gone = org.delete("/v1/products/lamp").await;
    assert_eq!(gone.status, 200, "{:?}", gone.body);
    let got = receiver.wait_for(seen + 1, DELIVERY).await;
    assert_eq!(got[seen].json["event"], json!("product.deleted"));
    assert_eq!(
        got[seen].json["changes"],
        json!({"name": {"old": "Desk lamp", "new": null},
               "attributes": {"product.color": {"old": entry("green"), "new": null}}})
    );
    apply(&mut held, &got[seen].json["changes"]);
    assert_eq!(Value::Object(held), json!({"name": null}));
}
