//! One tenant cannot stall the shared event pipeline (issue 60, item 1): a filter is judged
//! in work linear in what it compares and within a budget per stream record, so a tenant
//! whose filters would compare more than that on its own huge values gets that change set
//! aside (the feed's failure queue, alarmed), while the batch, the tenant's other
//! subscriptions and every other tenant's deliveries go on.

use catalog_e2e::webhooks::{queued, sqs_client, webhooks, Receiver};
use catalog_e2e::Org;
use serde_json::{json, Value};
use std::time::Duration;

/// Long enough for a window (5 s), the stream and queue polls, and slow CI.
const DELIVERY: Duration = Duration::from_secs(90);

/// Attributes of org A, each holding a value of [`VALUE_BYTES`] (a value's most is 100,000).
const KEYS: [&str; 4] = ["n1", "n2", "n3", "n4"];
const VALUE_BYTES: usize = 99_000;

/// Org A's filter: ten conditions on each attribute that each hold on its huge value, so
/// each compares the whole value, before and after the change (within the 8 KiB a filter
/// may keep).
fn costly_filter() -> Value {
    let needle = "a".repeat(100);
    let conditions: Vec<Value> = (0..10)
        .map(|_| json!({"operator": "CONTAINS", "value": needle}))
        .collect();
    let search: serde_json::Map<String, Value> = KEYS
        .iter()
        .map(|k| (format!("product.{k}"), json!(conditions)))
        .collect();
    json!({ "search": search })
}

#[tokio::test]
async fn a_filter_over_its_budget_is_set_aside_beside_a_healthy_tenant() {
    let hooks = webhooks().await;
    let poisoned = Org::new().await;
    let healthy = Org::new().await;
    for key in KEYS {
        poisoned
            .define(
                json!({"displayName": key, "key": key, "targetEntity": "product", "type": "text"}),
            )
            .await;
    }
    // three subscriptions of the same filter: on an update, 3 x 2 sides x 40 conditions x
    // 99 KB is over one record's 16 MiB, two of them are not
    let receivers = [
        Receiver::start(0).await,
        Receiver::start(0).await,
        Receiver::start(0).await,
    ];
    let mut ids = Vec::new();
    for r in &receivers {
        let body = json!({"url": r.url(), "topics": ["product.*"], "filter": costly_filter()});
        let created = poisoned.post("/v1/webhooks", body).await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        ids.push(created.body["result"]["id"].as_str().unwrap().to_string());
    }
    let other = Receiver::start(0).await;
    let created = healthy
        .post(
            "/v1/webhooks",
            json!({"url": other.url(), "topics": ["product.*"]}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);

    let values: serde_json::Map<String, Value> = KEYS
        .iter()
        .map(|k| (k.to_string(), json!("a".repeat(VALUE_BYTES))))
        .collect();
    let r = poisoned
        .patch(
            "/v1/products/huge",
            json!({"name": "Huge", "values": values}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    // a creation is judged on its one side, after it: every subscription gets it
    for r in &receivers {
        let got = r.wait_for(1, DELIVERY).await;
        assert_eq!(got[0].json["event"], json!("product.created"));
    }
    // an update is judged before and after: over the record's budget at the third
    let r = poisoned
        .patch("/v1/products/huge", json!({"name": "Huge again"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = healthy
        .patch("/v1/products/small", json!({"name": "Small"}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);

    // the healthy tenant's delivery arrives
    let got = other.wait_for(1, DELIVERY).await;
    assert_eq!(
        (&got[0].json["event"], &got[0].json["identifier"]),
        (&json!("product.created"), &json!("small"))
    );
    // the change is set aside for the one subscription past the budget, named with why
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let body = queued(
        &sqs,
        &hooks.feed_failures_url,
        &poisoned.id,
        "the poisoned change in the failure queue",
        DELIVERY,
    )
    .await;
    let message: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (
            &message["source"],
            &message["org"],
            &message["identifier"],
            &message["reason"]
        ),
        (
            &json!("change-feed"),
            &json!(poisoned.id),
            &json!("huge"),
            &json!(
                "filter over its budget: judging this change would compare more than 16777216 bytes"
            )
        )
    );
    let set_aside = message["webhookId"].as_str().unwrap();
    assert!(ids.iter().any(|id| id == set_aside), "{message}");
    assert_eq!(message["action"], json!("updated"));
    // the two subscriptions judged within the budget get the update
    for (r, id) in receivers.iter().zip(&ids) {
        if id == set_aside {
            continue;
        }
        let got = r.wait_for(2, DELIVERY).await;
        assert_eq!(got[1].json["event"], json!("product.updated"));
    }
}

/// A `search` operand is bounded in the parser, alike for lists, filters and exports.
#[tokio::test]
async fn a_search_operand_over_its_length_is_refused_everywhere() {
    webhooks().await;
    let org = Org::new().await;
    let long = format!("{}b", "a".repeat(1_000));
    let search = json!({"_identifier": [{"operator": "CONTAINS", "value": long}]});
    let error = json!({"error": "filter '_identifier': operator 'CONTAINS': a value is at most 1000 characters; this one has 1001"});
    let r = org
        .get(&format!(
            "/v1/products?search={}",
            catalog_e2e::encode(&search.to_string())
        ))
        .await;
    assert_eq!((r.status, &r.body), (400, &error));
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:9/h", "topics": ["product.*"], "filter": {"search": search}}),
        )
        .await;
    assert_eq!((r.status, &r.body), (400, &error));
    let r = org
        .post(
            "/v1/exports",
            json!({"entity": "products", "search": search}),
        )
        .await;
    assert_eq!((r.status, &r.body), (400, &error));
    assert_eq!(
        org.get("/v1/webhooks").await.body["pagination"]["totalResults"],
        json!(0)
    );
    assert_eq!(
        org.get("/v1/exports").await.body["pagination"]["totalResults"],
        json!(0)
    );
}
