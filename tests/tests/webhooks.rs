//! Webhooks end to end: the real `webhooks`, `change-feed` and `webhook-delivery` binaries,
//! DynamoDB Local's stream and moto's SQS, read by the local event source mappings, and
//! real HTTP receivers on loopback. Every test calls `webhooks().await` first.

use catalog::domain::time::Timestamp;
use catalog::webhooks::queue::new_delivery;
use catalog::webhooks::queue::QueueMessage;
use catalog::webhooks::signature::{self, VerifyError};
use catalog::webhooks::topics::Action;
use catalog_e2e::webhooks::{
    eventually, sqs_client, standard_verify, stream_insert, webhooks, Receiver, ATTEMPTS,
    COALESCE_SECONDS, DISABLE_AFTER_SECONDS, RECEIVER_TIMEOUT_SECONDS,
};
use catalog_e2e::{Org, Request};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

/// Long enough for a window (5 s), the stream and queue polls, and slow CI.
const DELIVERY: Duration = Duration::from_secs(60);

async fn subscribe(org: &Org, url: &str, topics: &[&str]) -> (String, String) {
    let r = org
        .post("/v1/webhooks", json!({"url": url, "topics": topics}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    (
        r.body["result"]["id"].as_str().unwrap().to_string(),
        r.body["result"]["secret"].as_str().unwrap().to_string(),
    )
}

async fn deliveries(org: &Org, webhook: &str) -> Vec<Value> {
    let r = org
        .get(&format!("/v1/webhooks/{webhook}/deliveries?limit=100"))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body["result"].as_array().unwrap().clone()
}

/// (event, entity_type, identifier) of each received delivery.
fn events_of(got: &[catalog_e2e::webhooks::Received]) -> BTreeSet<(String, String, String)> {
    got.iter()
        .map(|r| {
            let s = |f: &str| r.json[f].as_str().unwrap().to_string();
            (s("event"), s("entity_type"), s("identifier"))
        })
        .collect()
}

/// The body of the first message on `queue_url` that contains `needle`.
async fn queued(sqs: &aws_sdk_sqs::Client, queue_url: &str, needle: &str, what: &str) -> String {
    catalog_e2e::webhooks::queued(sqs, queue_url, needle, what, DELIVERY).await
}

/// A DynamoDB stream INSERT record of `image`, as the event source hands it to the feed.
async fn put_product(org: &Org, id: &str, body: Value) {
    let r = org.patch(&format!("/v1/products/{id}"), body).await;
    assert!(r.status == 200 || r.status == 201, "{:?}", r.body);
}

#[tokio::test]
async fn subscriptions_are_managed_with_the_settings_scope() {
    webhooks().await;
    let org = Org::new().await;
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:9/hook", "topics": ["product.*", "sku.deleted", "product.*"],
                   "description": "ERP sync"}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let created = r.body["result"].clone();
    let id = created["id"].as_str().unwrap().to_string();
    let secret = created["secret"].as_str().unwrap().to_string();
    assert!(id.starts_with("wh_") && secret.starts_with("whsec_") && secret.len() == 46);
    assert_eq!(created["topics"], json!(["product.*", "sku.deleted"]));
    assert_eq!(created["enabled"], json!(true));
    assert_eq!(created["url"], json!("http://127.0.0.1:9/hook"));

    // the secret is shown once
    let got = org.get(&format!("/v1/webhooks/{id}")).await;
    assert_eq!(got.status, 200);
    assert!(got.body["result"].get("secret").is_none());
    assert_eq!(got.body["result"]["description"], json!("ERP sync"));
    let list = org.get("/v1/webhooks").await;
    assert_eq!(list.status, 200);
    assert_eq!(list.body["result"].as_array().unwrap().len(), 1);
    assert_eq!(list.body["pagination"]["totalResults"], json!(1));
    assert!(list.body["result"][0].get("secret").is_none());

    // PATCH changes only what it names; null clears the description
    let r = org
        .patch(
            &format!("/v1/webhooks/{id}"),
            json!({"topics": ["*"], "description": null}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["result"]["topics"], json!(["*"]));
    assert_eq!(r.body["result"]["description"], Value::Null);
    assert_eq!(r.body["result"]["url"], json!("http://127.0.0.1:9/hook"));
    assert_eq!(r.body["result"]["enabled"], json!(true));

    let rotated = org
        .post(&format!("/v1/webhooks/{id}/rotate-secret"), json!({}))
        .await;
    assert_eq!(rotated.status, 200);
    let new_secret = rotated.body["result"]["secret"].as_str().unwrap();
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);

    // bad input names the problem
    for (body, error) in [
        (json!({"topics": ["*"]}), "field 'url' (or 'destination') is required"),
        (json!({"url": "http://127.0.0.1:9/"}), "field 'topics' is required"),
        (json!({"url": "http://127.0.0.1:9/", "topics": []}), "field 'topics' must list 1 to 50 topics"),
        (
            json!({"url": "http://127.0.0.1:9/", "topics": ["product.renamed"]}),
            "topic 'product.renamed' names unknown action 'renamed'; actions are created, updated, deleted or *",
        ),
        (json!({"url": "http://127.0.0.1:9/", "topics": [1]}), "field 'topics' must be an array of strings"),
        (json!({"url": "not a url", "topics": ["*"]}), "url is not a valid absolute URL (relative URL without a base)"),
        (json!({"url": "http://127.0.0.1:9/", "topics": ["*"], "secret": "x"}),
         "unknown field 'secret' (allowed: url, destination, topics, changedFields, payload, filter, description, enabled)"),
    ] {
        let r = org.post("/v1/webhooks", body.clone()).await;
        assert_eq!((r.status, r.body.clone()), (400, json!({"error": error})), "{body}");
    }

    // settings:manage only
    let reader = org
        .key_with(&[
            catalog::auth::Scope::CatalogRead,
            catalog::auth::Scope::CatalogWrite,
        ])
        .await;
    let r = Request::new("GET", "/v1/webhooks")
        .bearer(&reader)
        .send()
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.body,
        json!({"error": "this API key lacks the 'settings:manage' scope"})
    );

    // another organization cannot see it
    let other = Org::new().await;
    let r = other.get(&format!("/v1/webhooks/{id}")).await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": format!("webhook '{id}' not found")}))
    );

    let r = org.delete(&format!("/v1/webhooks/{id}")).await;
    assert_eq!(
        (r.status, r.body),
        (200, json!({"result": {"identifier": id, "deleted": true}}))
    );
    assert_eq!(org.get(&format!("/v1/webhooks/{id}")).await.status, 404);
    assert_eq!(org.delete(&format!("/v1/webhooks/{id}")).await.status, 404);
}

#[tokio::test]
async fn private_addresses_are_refused_outside_local_mode() {
    webhooks().await;
    let org = Org::new().await;
    let key = org.strict_key().await;
    let strict = |body: Value| {
        let req = Request::new("POST", "/v1/webhooks").bearer(&key).json(body);
        async move { catalog_e2e::send_to("webhooks@strict", req).await }
    };
    for (url, error) in [
        ("http://169.254.169.254/", "url must use https"),
        ("http://[::ffff:127.0.0.1]/", "url must use https"),
        ("https://169.254.169.254/latest/meta-data", "url must point to a public address; 169.254.169.254 is private, loopback, link-local or reserved"),
        ("https://[::ffff:127.0.0.1]/", "url must point to a public address; ::ffff:127.0.0.1 is private, loopback, link-local or reserved"),
        ("https://[::ffff:a9fe:a9fe]/", "url must point to a public address; ::ffff:169.254.169.254 is private, loopback, link-local or reserved"),
        ("https://100.64.0.1/", "url must point to a public address; 100.64.0.1 is private, loopback, link-local or reserved"),
        // a name: one fixed text, whether it resolves to a private address or not at all (the
        // API must not be a DNS oracle for the network it runs in)
        ("https://localhost/hook", "url host must resolve, in time, to public addresses only (private, loopback, link-local and reserved addresses are refused)"),
        ("https://name.invalid/hook", "url host must resolve, in time, to public addresses only (private, loopback, link-local and reserved addresses are refused)"),
    ] {
        let r = strict(json!({"url": url, "topics": ["*"]})).await;
        assert_eq!((r.status, r.body.clone()), (400, json!({"error": error})), "{url}");
    }
    // a public literal address passes outside local mode
    let r = strict(json!({"url": "https://93.184.215.14/hook", "topics": ["*"]})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    // local mode relaxes loopback over http only
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://169.254.169.254/", "topics": ["*"]}),
        )
        .await;
    assert_eq!(r.status, 400);
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://[::ffff:127.0.0.1]:9/", "topics": ["*"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
}

#[tokio::test]
async fn rapid_updates_coalesce_into_one_signed_delivery() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let (hook, secret) = subscribe(&org, &receiver.url(), &["product.updated"]).await;
    put_product(&org, "lamp", json!({"name": "Lamp"})).await;
    for i in 0..20 {
        put_product(&org, "lamp", json!({"name": format!("Lamp {i}")})).await;
    }
    let got = receiver.wait_for(1, DELIVERY).await;
    // a write that changes nothing is no event
    put_product(&org, "lamp", json!({"name": "Lamp 19"})).await;
    // nothing else arrives for two more windows
    let quiet = std::time::Instant::now() + Duration::from_secs(2 * COALESCE_SECONDS + 1);
    while std::time::Instant::now() < quiet {
        assert_eq!(receiver.received().len(), 1, "a second delivery arrived");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let d = &got[0];
    let product = org.get("/v1/products/lamp").await.body["result"].clone();
    assert_eq!(product["name"], json!("Lamp 19"));
    let id = d.json["id"].as_str().unwrap();
    // the log counts the 20 changes the one delivery stands for
    let log = org.get(&format!("/v1/webhooks/{hook}/deliveries")).await;
    assert_eq!(log.body["result"][0]["id"], json!(id));
    assert_eq!(log.body["result"][0]["changes"], json!(20));
    assert_eq!(
        d.json,
        json!({"id": id, "event": "product.updated", "identifier": "lamp",
               "entity_type": "product", "occurred_at": product["selfUpdatedAt"]})
    );
    assert_eq!(d.headers["content-type"], "application/json");
    assert_eq!(d.headers["user-agent"], "Catalog-Webhooks/1.0");
    assert_eq!(d.headers["x-catalog-webhook-id"], id);

    // the signature verifies with the helper; tampering and old timestamps do not
    let header = &d.headers["x-catalog-signature"];
    let now = chrono::Utc::now().timestamp();
    assert_eq!(
        signature::verify(&secret, header, &d.body, now, 300),
        Ok(())
    );
    let mut tampered = d.body.clone();
    tampered[2] ^= 1;
    assert_eq!(
        signature::verify(&secret, header, &tampered, now, 300),
        Err(VerifyError::Mismatch)
    );
    assert_eq!(
        signature::verify(&secret, header, &d.body, now + 301, 300),
        Err(VerifyError::Expired)
    );
    assert_eq!(
        signature::verify("whsec_wrong", header, &d.body, now, 300),
        Err(VerifyError::Mismatch)
    );
    for bad in [
        "",
        &header[..header.len() - 2],
        &header[..header.find(',').unwrap()],
    ] {
        assert_eq!(
            signature::verify(&secret, bad, &d.body, now, 300),
            Err(VerifyError::Malformed),
            "{bad:?}"
        );
    }

    // the log shows one successful delivery of one attempt
    let log = deliveries(&org, &hook).await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["id"], json!(id));
    assert_eq!(log[0]["status"], json!("succeeded"));
    assert_eq!(log[0]["attempts"], json!(1));
    assert_eq!(log[0]["lastStatusCode"], json!(204));
}

#[tokio::test]
async fn a_failing_receiver_gets_retries_with_the_same_id() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(3).await;
    let (hook, _) = subscribe(&org, &receiver.url(), &["product.created"]).await;
    put_product(&org, "desk", json!({"name": "Desk"})).await;
    let got = receiver.wait_for_exactly(4, DELIVERY).await;
    let ids: BTreeSet<&str> = got.iter().map(|r| r.json["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 1, "every retry carries the same id");
    let id = *ids.iter().next().unwrap();
    let log = eventually("the 4th attempt logged", DELIVERY, || async {
        let log = deliveries(&org, &hook).await;
        (log.len() == 1 && log[0]["status"] == json!("succeeded")).then_some(log)
    })
    .await;
    assert_eq!(log[0]["id"], json!(id));
    assert_eq!(log[0]["attempts"], json!(4));
    let codes: Vec<&Value> = log[0]["attemptLog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["statusCode"])
        .collect();
    assert_eq!(codes, [&json!(500), &json!(500), &json!(500), &json!(204)]);
    assert_eq!(
        log[0]["attemptLog"][0]["error"],
        json!("receiver answered 500")
    );
    assert_eq!(receiver.received().len(), 4);
    // the organization's usage counts every attempt and every failed one
    let today = eventually("the attempts counted", DELIVERY, || async {
        let today = org.get("/v1/usage").await.body["result"]["today"].clone();
        (today["deliveryAttempts"] == json!(4)).then_some(today)
    })
    .await;
    assert_eq!(today["failedAttempts"], json!(3));
    // answered again: healthy
    let sub = org.get(&format!("/v1/webhooks/{hook}")).await;
    assert_eq!(
        sub.body["result"]["health"],
        json!({"status": "healthy", "failingSince": null, "consecutiveFailures": 0})
    );
    assert_eq!(sub.ddb_requests(), 1);
}

#[tokio::test]
async fn no_delivery_is_lost_while_the_receiver_is_down() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::reserve(0);
    let (hook, _) = subscribe(&org, &receiver.url(), &["product.*"]).await;
    put_product(&org, "sofa", json!({"name": "Sofa"})).await;
    // several attempts fail to connect
    let log = eventually("three failed attempts", DELIVERY, || async {
        let log = deliveries(&org, &hook).await;
        (log.len() == 1 && log[0]["attempts"].as_u64() >= Some(3)).then_some(log)
    })
    .await;
    assert_eq!(log[0]["status"], json!("retrying"));
    assert_eq!(log[0]["lastStatusCode"], Value::Null);
    // no OS error text (before: "Connection refused (os error 111)", which tells a
    // subscriber a closed port from an open one)
    assert_eq!(
        log[0]["lastError"],
        json!("could not connect to the receiver")
    );
    receiver.listen().await;
    let got = receiver.wait_for(1, DELIVERY).await;
    assert_eq!(got[0].json["id"], log[0]["id"]);
    assert_eq!(got[0].json["event"], json!("product.created"));
}

#[tokio::test]
async fn deleting_a_product_announces_every_removed_entity() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    subscribe(
        &org,
        &receiver.url(),
        &["product.deleted", "variant.deleted", "sku.deleted"],
    )
    .await;
    put_product(
        &org,
        "bed",
        json!({"name": "Bed", "variants": [
            {"identifier": "bed-oak", "skus": [{"identifier": "bed-oak-s"}, {"identifier": "bed-oak-l"}]},
            {"identifier": "bed-ash", "skus": [{"identifier": "bed-ash-s"}, {"identifier": "bed-ash-l"}]}
        ]}),
    )
    .await;
    assert_eq!(org.delete("/v1/products/bed").await.status, 200);
    let got = receiver.wait_for_exactly(7, DELIVERY).await;
    let events = events_of(&got);
    let expected: BTreeSet<(String, String, String)> = [
        ("product", "bed"),
        ("variant", "bed-oak"),
        ("variant", "bed-ash"),
        ("sku", "bed-oak-s"),
        ("sku", "bed-oak-l"),
        ("sku", "bed-ash-s"),
        ("sku", "bed-ash-l"),
    ]
    .into_iter()
    .map(|(t, i)| (format!("{t}.deleted"), t.to_string(), i.to_string()))
    .collect();
    assert_eq!(events, expected);
    assert_eq!(got.len(), 7);
    for (_, entity, id) in &events {
        let r = org.get(&format!("/v1/{entity}s/{id}")).await;
        assert_eq!(r.status, 404, "{entity} {id}");
    }
}

#[tokio::test]
async fn assets_categories_bundles_and_metaobjects_announce_their_changes() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    subscribe(
        &org,
        &receiver.url(),
        &[
            "asset.*",
            "category.created",
            "bundle.created",
            "metaobject.*",
        ],
    )
    .await;
    put_product(
        &org,
        "lamp",
        json!({"variants": [{"identifier": "lamp-v", "skus": [{"identifier": "lamp-s"}]}]}),
    )
    .await;
    let r = org
        .post(
            "/v1/assets",
            json!({"identifier": "lamp-photo", "url": "https://cdn.example.com/lamp.png"}),
        )
        .await;
    assert_eq!(r.status, 201);
    // linking the asset changes the product, not the asset: no asset.updated
    let r = org
        .put(
            "/v1/products/lamp/assets",
            json!({"assets": ["lamp-photo"]}),
        )
        .await;
    assert_eq!(r.status, 200);
    let r = org
        .put("/v1/categories/lighting", json!({"name": "Lighting"}))
        .await;
    assert_eq!(r.status, 201);
    let r = org
        .put(
            "/v1/bundles/lamp-pair",
            json!({"name": "Pair", "items": [{"sku": "lamp-s", "quantity": 2}]}),
        )
        .await;
    assert_eq!(r.status, 201);
    org.metaobjects("shade", json!([]), &["linen"]).await;
    assert_eq!(org.delete("/v1/assets/lamp-photo").await.status, 200);
    let got = receiver.wait_for_exactly(5, DELIVERY).await;
    let events = events_of(&got);
    let expected: BTreeSet<(String, String, String)> = [
        ("asset.created", "asset", "lamp-photo"),
        ("asset.deleted", "asset", "lamp-photo"),
        ("category.created", "category", "lighting"),
        ("bundle.created", "bundle", "lamp-pair"),
        // a metaobject's REST identifier is <definition>/<identifier>
        ("metaobject.created", "metaobject", "shade/linen"),
    ]
    .into_iter()
    .map(|(e, t, i)| (e.to_string(), t.to_string(), i.to_string()))
    .collect();
    assert_eq!(events, expected);
    assert_eq!(got.len(), 5);
    assert_eq!(org.get("/v1/metaobjects/shade/linen").await.status, 200);
}

#[tokio::test]
async fn a_replay_sends_the_same_payload_under_a_new_id() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let (hook, secret) = subscribe(&org, &receiver.url(), &["product.created"]).await;
    put_product(&org, "stool", json!({"name": "Stool"})).await;
    let first = receiver.wait_for(1, DELIVERY).await[0].clone();
    let original = first.json["id"].as_str().unwrap();
    let r = org
        .post(
            &format!("/v1/webhooks/{hook}/deliveries/{original}/replay"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let replay_id = r.body["result"]["id"].as_str().unwrap().to_string();
    assert_ne!(replay_id, original);
    assert_eq!(r.body["result"]["replayOf"], json!(original));
    assert_eq!(r.body["result"]["status"], json!("pending"));
    let second = receiver.wait_for(2, DELIVERY).await[1].clone();
    let mut expected = first.json.clone();
    expected["id"] = json!(replay_id);
    assert_eq!(second.json, expected);
    assert_eq!(second.headers["x-catalog-webhook-id"], replay_id);
    let now = chrono::Utc::now().timestamp();
    assert_eq!(
        signature::verify(
            &secret,
            &second.headers["x-catalog-signature"],
            &second.body,
            now,
            300
        ),
        Ok(())
    );

    let r = org
        .post(
            &format!("/v1/webhooks/{hook}/deliveries/dlv_nope/replay"),
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": "delivery 'dlv_nope' not found"}))
    );
}

#[tokio::test]
async fn the_last_failed_attempt_goes_to_the_dead_letter_queue() {
    let hooks = webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(usize::MAX).await;
    let (hook, _) = subscribe(&org, &receiver.url(), &["product.created"]).await;
    put_product(&org, "shelf", json!({"name": "Shelf"})).await;
    receiver.wait_for(ATTEMPTS as usize, DELIVERY).await;
    let log = eventually("the delivery marked failed", DELIVERY, || async {
        let log = deliveries(&org, &hook).await;
        (log.len() == 1 && log[0]["status"] == json!("failed")).then_some(log)
    })
    .await;
    assert_eq!(log[0]["attempts"], json!(ATTEMPTS));
    assert_eq!(log[0]["nextAttemptAt"], Value::Null);
    let id = log[0]["id"].as_str().unwrap().to_string();
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let body = queued(
        &sqs,
        &hooks.dead_letter_url,
        &id,
        "the message in the dead-letter queue",
    )
    .await;
    let message: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(message["deliveryId"], json!(id));
    assert_eq!(message["identifier"], json!("shelf"));
    // no attempt after the last one
    assert_eq!(receiver.received().len(), ATTEMPTS as usize);
}

#[tokio::test]
async fn disabled_subscriptions_receive_nothing() {
    webhooks().await;
    let org = Org::new().await;
    let off = Receiver::start(0).await;
    let on = Receiver::start(0).await;
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": off.url(), "topics": ["*"], "enabled": false}),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["result"]["enabled"], json!(false));
    let off_id = r.body["result"]["id"].as_str().unwrap().to_string();
    subscribe(&org, &on.url(), &["*"]).await;
    put_product(&org, "rug", json!({"name": "Rug"})).await;
    on.wait_for(1, DELIVERY).await;
    let quiet = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < quiet {
        assert!(off.received().is_empty());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(deliveries(&org, &off_id).await.is_empty());
    let r = org
        .post(
            &format!("/v1/webhooks/{off_id}/deliveries/dlv_x/replay"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn the_change_feed_skips_bad_records_and_reports_the_first_failed_one() {
    webhooks().await;
    let org = Org::new().await;
    subscribe(&org, "http://127.0.0.1:9/hook", &["*"]).await;
    let entity = |id: &str| {
        json!({"PK": {"S": format!("O#{}#P#{id}", org.id)}, "SK": {"S": "L1"},
               "GSI1PK": {"S": format!("O#{}#T#product#0", org.id)},
               "kind": {"S": "product"}, "id": {"S": id}, "su": {"S": "2026-11-21T00:00:00.000Z"}})
    };
    let event = |a: &str, b: &str| {
        json!({"Records": [
            stream_insert("1", json!({"PK": {"S": "garbage"}})),
            stream_insert("2", entity(a)),
            stream_insert("3", json!({"kind": {"N": "5"}})),
            stream_insert("4", entity(b)),
        ]})
    };
    // with its queue, the batch succeeds whole: bad records are skipped, not failed
    let ok = catalog_e2e::invoke("change-feed", event("feed-a", "feed-b")).await;
    assert_eq!(ok, json!({"batchItemFailures": []}));
    // with an unreachable queue, the first record whose work failed is reported
    let failed = catalog_e2e::invoke("change-feed@noqueue", event("feed-c", "feed-d")).await;
    assert_eq!(
        failed,
        json!({"batchItemFailures": [{"itemIdentifier": "2"}]})
    );
}

/// A window costs the change feed one write: the record that opened it claims it, so no
/// second write notes the message queued. That record, retried after its send failed,
/// queues the delivery again; a later record in the open window queues nothing.
#[tokio::test]
async fn a_window_costs_the_feed_one_write_and_its_record_retried_queues_it() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let (hook, _) = subscribe(&org, &receiver.url(), &["product.created"]).await;
    let entity = |id: &str| {
        json!({"PK": {"S": format!("O#{}#P#{id}", org.id)}, "SK": {"S": "L1"},
               "GSI1PK": {"S": format!("O#{}#T#product#0", org.id)},
               "kind": {"S": "product"}, "id": {"S": id}, "su": {"S": "2026-11-21T00:00:00.000Z"}})
    };
    let db = catalog_e2e::faults::faulty_db().await;
    db.reset();
    let batch = json!({"Records": [
        stream_insert("9100", entity("claim-a")),
        stream_insert("9101", entity("claim-b")),
        stream_insert("9102", entity("claim-c")),
    ]});
    let out = catalog_e2e::invoke("change-feed@faultydb", batch).await;
    assert_eq!(out, json!({"batchItemFailures": []}));
    // three windows, three UpdateItems (their history is one BatchWriteItem)
    assert_eq!(db.seen("UpdateItem"), 3);
    // the send fails: the record that opened the window is reported...
    let first = json!({"Records": [stream_insert("9200", entity("claim-d"))]});
    let failed = catalog_e2e::invoke("change-feed@noqueue", first.clone()).await;
    assert_eq!(
        failed,
        json!({"batchItemFailures": [{"itemIdentifier": "9200"}]})
    );
    // ...a later record of the open window queues nothing (its claim stands)...
    let later = json!({"Records": [stream_insert("9201", entity("claim-d"))]});
    let out = catalog_e2e::invoke("change-feed", later).await;
    assert_eq!(out, json!({"batchItemFailures": []}));
    // ...and the record retried queues the delivery: one delivery of claim-d, two changes
    let out = catalog_e2e::invoke("change-feed", first).await;
    assert_eq!(out, json!({"batchItemFailures": []}));
    let log = eventually("the delivery of claim-d", DELIVERY, || async {
        let log = deliveries(&org, &hook).await;
        let d: Vec<Value> = log
            .into_iter()
            .filter(|d| d["identifier"] == json!("claim-d") && d["status"] == json!("succeeded"))
            .collect();
        (!d.is_empty()).then_some(d)
    })
    .await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["changes"], json!(3), "{log:?}");
    let got = receiver
        .received()
        .iter()
        .filter(|r| r.json["identifier"] == json!("claim-d"))
        .count();
    assert_eq!(got, 1);
}

#[tokio::test]
async fn redirects_and_slow_answers_are_failures() {
    webhooks().await;
    let org = Org::new().await;
    let redirect = Receiver::answering(302, Duration::ZERO).await;
    let slow = Receiver::answering(204, Duration::from_secs(RECEIVER_TIMEOUT_SECONDS + 2)).await;
    let (redirect_hook, _) = subscribe(&org, &redirect.url(), &["product.created"]).await;
    let (slow_hook, _) = subscribe(&org, &slow.url(), &["product.created"]).await;
    put_product(&org, "vase", json!({"name": "Vase"})).await;
    for (hook, code, error) in [
        (
            &redirect_hook,
            json!(302),
            "redirects are not followed; answer 2xx at the registered URL",
        ),
        (&slow_hook, Value::Null, "no response within 5 s"),
    ] {
        let log = eventually("a failed first attempt", DELIVERY, || async {
            let log = deliveries(&org, hook).await;
            (log.len() == 1 && log[0]["attempts"].as_u64() >= Some(1)).then_some(log)
        })
        .await;
        let first = &log[0]["attemptLog"][0];
        assert_eq!(first["statusCode"], code, "{log:?}");
        assert_eq!(first["error"], json!(error));
        assert!(first["durationMs"].as_u64().is_some());
        assert_ne!(log[0]["status"], json!("succeeded"));
        // no more attempts: a slow receiver holds the local delivery process
        let r = org
            .patch(&format!("/v1/webhooks/{hook}"), json!({"enabled": false}))
            .await;
        assert_eq!(r.status, 200);
    }
}

#[tokio::test]
async fn the_connect_time_check_refuses_what_only_local_mode_allowed() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    // local mode accepts a name on loopback; nothing fires this topic here
    let url = format!("https://localhost:{}/hook", receiver.port);
    let (hook, _) = subscribe(&org, &url, &["asset.created"]).await;
    // a delivery as the change feed queues it, handed to a delivery process outside local mode
    let message = QueueMessage {
        org: org.id.clone(),
        webhook_id: hook.clone(),
        delivery_id: "dlv_connect_check".into(),
        entity_type: "asset".into(),
        action: Action::Created,
        identifier: "photo".into(),
    };
    let delivery = new_delivery(&message, Timestamp::now(), Duration::from_secs(3600));
    let store = catalog_e2e::stack().await.store();
    store
        .create_delivery(&org.id, &delivery, None)
        .await
        .unwrap();
    let out = catalog_e2e::invoke("webhook-delivery@strict", sqs_event("m-1", &message, 1)).await;
    assert_eq!(
        out,
        json!({"batchItemFailures": [{"itemIdentifier": "m-1"}]})
    );
    let log = deliveries(&org, &hook).await;
    assert_eq!(log[0]["status"], json!("retrying"));
    assert_eq!(log[0]["attempts"], json!(1));
    let error = log[0]["lastError"].as_str().unwrap();
    assert_eq!(
        error,
        "could not connect: url host must resolve, in time, to public addresses only (private, loopback, link-local and reserved addresses are refused)"
    );
    assert!(receiver.received().is_empty());
}

#[tokio::test]
async fn an_early_copy_of_a_message_waits_for_the_next_step() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let (hook, _) = subscribe(&org, &receiver.url(), &["asset.updated"]).await;
    let message = QueueMessage {
        org: org.id.clone(),
        webhook_id: hook.clone(),
        delivery_id: "dlv_early_copy".into(),
        entity_type: "asset".into(),
        action: Action::Updated,
        identifier: "photo".into(),
    };
    // attempt 1 failed; attempt 2 is due in a minute
    let mut delivery = new_delivery(&message, Timestamp::now(), Duration::from_secs(3600));
    delivery.status = catalog::store::webhooks::DeliveryStatus::Retrying;
    delivery.attempts = 1;
    delivery.next_attempt_at = Some(Timestamp::from_millis(Timestamp::now().millis() + 60_000));
    let store = catalog_e2e::stack().await.store();
    store
        .create_delivery(&org.id, &delivery, None)
        .await
        .unwrap();
    let out = catalog_e2e::invoke("webhook-delivery", sqs_event("m-early", &message, 2)).await;
    assert_eq!(
        out,
        json!({"batchItemFailures": [{"itemIdentifier": "m-early"}]})
    );
    let log = deliveries(&org, &hook).await;
    assert_eq!(log[0]["attempts"], json!(1));
    assert_eq!(log[0]["status"], json!("retrying"));
    assert!(receiver.received().is_empty());
}

/// An SQS event of one record carrying `message`, received `receive_count` times.
fn sqs_event(message_id: &str, message: &QueueMessage, receive_count: u32) -> Value {
    json!({"Records": [{
        "messageId": message_id, "receiptHandle": "not-a-real-handle",
        "body": serde_json::to_string(message).unwrap(),
        "attributes": {"ApproximateReceiveCount": receive_count.to_string()}, "messageAttributes": {},
        "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:1:q", "awsRegion": "us-east-1"
    }]})
}

/// The Standard Webhooks headers of a delivery: its id, and the unix seconds of both
/// signature headers, which must agree.
fn standard_headers(d: &catalog_e2e::webhooks::Received) -> (String, i64) {
    let id = d.headers["webhook-id"].clone();
    assert_eq!(d.json["id"], json!(id));
    assert_eq!(d.headers["x-catalog-webhook-id"], id);
    let t: i64 = d.headers["webhook-timestamp"].parse().unwrap();
    assert!(
        d.headers["x-catalog-signature"].starts_with(&format!("t={t},")),
        "{:?}",
        d.headers
    );
    (id, t)
}

#[tokio::test]
async fn deliveries_verify_with_the_official_standard_webhooks_libraries() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let (_, secret) = subscribe(&org, &receiver.url(), &["product.created"]).await;
    put_product(&org, "stool", json!({"name": "Stool"})).await;
    let got = receiver.wait_for(1, DELIVERY).await;
    let d = &got[0];
    standard_headers(d);
    let signature = &d.headers["webhook-signature"];
    assert!(
        signature.starts_with("v1,") && !signature.contains(' '),
        "{signature}"
    );
    for language in ["python", "node"] {
        // the secret exactly as the API returned it
        assert_eq!(
            standard_verify(language, &secret, &d.headers, &d.body),
            Ok(()),
            "{language}"
        );
        let mut tampered = d.body.clone();
        tampered[2] ^= 1;
        let refused = standard_verify(language, &secret, &d.headers, &tampered);
        assert!(refused.is_err(), "{language} accepted a tampered body");
        let other = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let refused = standard_verify(language, other, &d.headers, &d.body);
        assert!(refused.is_err(), "{language} accepted another secret");
    }
    // X-Catalog-Signature is unchanged beside them
    let now = chrono::Utc::now().timestamp();
    let header = &d.headers["x-catalog-signature"];
    assert_eq!(
        signature::verify(&secret, header, &d.body, now, 300),
        Ok(())
    );
    assert_eq!(header.matches("v1=").count(), 1, "{header}");
}

#[tokio::test]
async fn a_rotation_with_overlap_signs_with_both_secrets_until_the_old_one_expires() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let (hook, old) = subscribe(&org, &receiver.url(), &["product.*"]).await;
    let rotate = format!("/v1/webhooks/{hook}/rotate-secret");
    for (body, error) in [
        (
            json!({"expireCurrentInSeconds": -1}),
            "field 'expireCurrentInSeconds' must be an integer from 0 to 86400",
        ),
        (
            json!({"expireCurrentInSeconds": 86401}),
            "field 'expireCurrentInSeconds' must be an integer from 0 to 86400",
        ),
        (
            json!({"expireCurrentInSeconds": "60"}),
            "field 'expireCurrentInSeconds' must be an integer from 0 to 86400",
        ),
        (
            json!({"expire": 60}),
            "unknown field 'expire' (allowed: expireCurrentInSeconds)",
        ),
    ] {
        let r = org.post(&rotate, body).await;
        assert_eq!((r.status, &r.body), (400, &json!({"error": error})));
    }
    // the window covers the first delivery (5 s) on a slow machine, then ends
    let overlap = 20;
    let r = org
        .post(&rotate, json!({"expireCurrentInSeconds": overlap}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let new = r.body["result"]["secret"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    let until = Timestamp::parse(
        r.body["result"]["previousSecretExpiresAt"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let rotated_at = Timestamp::parse(r.body["result"]["updatedAt"].as_str().unwrap()).unwrap();
    assert_eq!(until.millis() - rotated_at.millis(), overlap * 1000);

    put_product(&org, "bench", json!({"name": "Bench"})).await;
    let first = receiver.wait_for(1, DELIVERY).await[0].clone();
    let (_, t) = standard_headers(&first);
    assert!(t * 1000 < until.millis(), "delivered after the overlap");
    assert_eq!(first.headers["webhook-signature"].split(' ').count(), 2);
    let catalog = &first.headers["x-catalog-signature"];
    assert_eq!(catalog.matches(",v1=").count(), 2, "{catalog}");
    for secret in [&old, &new] {
        for language in ["python", "node"] {
            assert_eq!(
                standard_verify(language, secret, &first.headers, &first.body),
                Ok(()),
                "{language}"
            );
        }
        assert_eq!(
            signature::verify(secret, catalog, &first.body, t, 300),
            Ok(())
        );
    }

    // after the overlap only the new secret signs
    eventually("the overlap to end", DELIVERY, || async {
        (Timestamp::now().millis() > until.millis()).then_some(())
    })
    .await;
    let r = org.get(&format!("/v1/webhooks/{hook}")).await;
    assert_eq!(r.body["result"].get("previousSecretExpiresAt"), None);
    put_product(&org, "bench", json!({"name": "Garden bench"})).await;
    let second = receiver.wait_for(2, DELIVERY).await[1].clone();
    let (_, t) = standard_headers(&second);
    assert_eq!(second.headers["webhook-signature"].split(' ').count(), 1);
    let catalog = &second.headers["x-catalog-signature"];
    assert_eq!(catalog.matches(",v1=").count(), 1, "{catalog}");
    for language in ["python", "node"] {
        assert_eq!(
            standard_verify(language, &new, &second.headers, &second.body),
            Ok(())
        );
        assert!(standard_verify(language, &old, &second.headers, &second.body).is_err());
    }
    assert_eq!(
        signature::verify(&new, catalog, &second.body, t, 300),
        Ok(())
    );
    assert_eq!(
        signature::verify(&old, catalog, &second.body, t, 300),
        Err(VerifyError::Mismatch)
    );

    // a rotation without a body ends any overlap at once
    let r = org
        .post(&rotate, json!({"expireCurrentInSeconds": 600}))
        .await;
    assert!(r.body["result"]["previousSecretExpiresAt"].is_string());
    let r = Request::new("POST", &rotate).bearer(&org.key).send().await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["result"].get("previousSecretExpiresAt"), None);
}

#[tokio::test]
async fn a_hanging_and_a_refusing_endpoint_do_not_delay_a_healthy_one() {
    webhooks().await;
    let org = Org::new().await;
    let healthy = Receiver::start(0).await;
    // answers after the delivery timeout: every attempt times out
    let hanging = Receiver::answering(204, Duration::from_secs(RECEIVER_TIMEOUT_SECONDS + 3)).await;
    // never listens: every connection is refused
    let refusing = Receiver::reserve(0);
    let (_, _) = subscribe(&org, &healthy.url(), &["*"]).await;
    let (hanging_hook, _) = subscribe(&org, &hanging.url(), &["*"]).await;
    let (refusing_hook, _) = subscribe(&org, &refusing.url(), &["*"]).await;
    const WRITES: usize = 30;
    let mut written = Vec::new();
    for i in 0..WRITES {
        put_product(
            &org,
            &format!("iso-{i}"),
            json!({"name": format!("Item {i}")}),
        )
        .await;
        written.push((format!("iso-{i}"), std::time::Instant::now()));
        if i % 10 == 9 {
            // three bursts, a window apart
            tokio::time::sleep(Duration::from_secs(COALESCE_SECONDS)).await;
        }
    }
    let got = healthy.wait_for(WRITES, DELIVERY).await;
    // Each arrives within its window and four seconds more (the stream and queue polls):
    // with the other two endpoints holding the batches, deliveries would wait for their
    // timeouts (5 s each, one after another) instead. The first burst may also wait for one
    // timeout: the first probe of the hanging endpoint can hold the one queue batch it shares
    // with healthy deliveries (seen in CI: 12.7-13.0 s), never for two.
    let bound = |i: usize| {
        let first_probe = if i < 10 { RECEIVER_TIMEOUT_SECONDS } else { 0 };
        Duration::from_secs(COALESCE_SECONDS + first_probe + 4)
    };
    let mut late = Vec::new();
    for (i, (id, at)) in written.iter().enumerate() {
        let r = got
            .iter()
            .find(|r| r.json["identifier"] == json!(id))
            .unwrap_or_else(|| panic!("{id} not delivered"));
        let took = r.at.duration_since(*at);
        if took > bound(i) {
            late.push((id.clone(), took, bound(i)));
        }
    }
    assert!(late.is_empty(), "later than their bound: {late:?}");
    assert_eq!(got.len(), WRITES, "one delivery per product");
    // The bad endpoints got one attempt at a time, at most one a second (the retry step,
    // their backoff): not one per queued delivery, whose schedules would make 8 each.
    let elapsed = written[0].1.elapsed().as_secs();
    let attempts =
        |log: &[Value]| -> u64 { log.iter().map(|d| d["attempts"].as_u64().unwrap()).sum() };
    // every delivery to them is in their logs once its window has closed
    let all_logged = |hook: String| {
        let org = &org;
        eventually("every delivery logged", DELIVERY, move || {
            let hook = hook.clone();
            async move {
                let log = deliveries(org, &hook).await;
                (log.len() == WRITES).then_some(log)
            }
        })
    };
    let hanging_log = all_logged(hanging_hook.clone()).await;
    let refusing_log = all_logged(refusing_hook.clone()).await;
    let (h, r) = (attempts(&hanging_log), attempts(&refusing_log));
    // a hanging attempt takes the timeout, so the hanging endpoint got far fewer
    let max_hanging = elapsed / RECEIVER_TIMEOUT_SECONDS + 2;
    assert!(
        h <= max_hanging,
        "hanging endpoint: {h} attempts in {elapsed} s"
    );
    assert!(
        r <= elapsed + 2,
        "refusing endpoint: {r} attempts in {elapsed} s"
    );
    // the receiver saw only the attempts that reached it
    assert!(hanging.received().len() as u64 <= h);
    // none is lost: each waits for its endpoint's next probe, or used all its attempts
    for log in [&hanging_log, &refusing_log] {
        for d in log.iter() {
            let waiting = d["status"] == json!("pending") || d["status"] == json!("retrying");
            let spent = d["status"] == json!("failed") && d["attempts"] == json!(ATTEMPTS);
            assert!(waiting || spent, "{d}");
        }
    }
    // once the refusing endpoint listens, its next probe succeeds and every waiting
    // delivery follows; one still waiting above may have spent its last attempt before
    // the endpoint listened, so the outcome is read once every delivery has settled
    let with_status = |log: &[Value], status: &str| -> BTreeSet<String> {
        log.iter()
            .filter(|d| d["status"] == json!(status))
            .map(|d| d["identifier"].as_str().unwrap().to_string())
            .collect()
    };
    let spent = with_status(&refusing_log, "failed");
    refusing.listen().await;
    let settled = eventually("every delivery settled", DELIVERY, || async {
        let log = deliveries(&org, &refusing_hook).await;
        let done = log
            .iter()
            .all(|d| d["status"] == json!("succeeded") || d["status"] == json!("failed"));
        (log.len() == WRITES && done).then_some(log)
    })
    .await;
    let failed = with_status(&settled, "failed");
    assert!(spent.is_subset(&failed), "{spent:?} not in {failed:?}");
    for d in settled.iter().filter(|d| d["status"] == json!("failed")) {
        assert_eq!(d["attempts"], json!(ATTEMPTS), "{d}");
    }
    let expected = with_status(&settled, "succeeded");
    assert_eq!(expected.len() + failed.len(), WRITES);
    let got = refusing.wait_for(expected.len(), DELIVERY).await;
    let ids: BTreeSet<String> = got
        .iter()
        .map(|r| r.json["identifier"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn a_subscription_failing_for_the_configured_period_is_disabled_until_patched() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(usize::MAX).await;
    let (hook, _) = subscribe(&org, &receiver.url(), &["product.*"]).await;
    // a change a second keeps deliveries failing until the subscription is disabled
    let mut i = 0;
    let sub = eventually(
        "the subscription disabled",
        Duration::from_secs(120),
        || {
            i += 1;
            let org = &org;
            let hook = hook.clone();
            let n = i;
            async move {
                put_product(org, "failing", json!({"name": format!("Try {n}")})).await;
                tokio::time::sleep(Duration::from_secs(1)).await;
                let r = org.get(&format!("/v1/webhooks/{hook}")).await;
                (r.body["result"]["status"] == json!("disabled"))
                    .then_some(r.body["result"].clone())
            }
        },
    )
    .await;
    assert_eq!(sub["enabled"], json!(false));
    let reason = sub["disabledReason"].as_str().unwrap();
    let prefix = format!(
        "disabled automatically: every delivery failed for {DISABLE_AFTER_SECONDS} seconds (since "
    );
    assert!(reason.starts_with(&prefix), "{reason}");
    let since = Timestamp::parse(&reason[prefix.len()..prefix.len() + 24]).unwrap();
    // the console shows why: the endpoint's failure streak
    assert_eq!(sub["health"]["status"], json!("failing"));
    assert_eq!(sub["health"]["failingSince"], json!(since.to_string()));
    assert!(
        sub["health"]["consecutiveFailures"].as_u64().unwrap() >= 1,
        "{sub}"
    );
    let disabled_at = Timestamp::parse(sub["updatedAt"].as_str().unwrap()).unwrap();
    assert!(
        disabled_at.millis() - since.millis() >= DISABLE_AFTER_SECONDS as i64 * 1000,
        "disabled {} ms into the streak",
        disabled_at.millis() - since.millis()
    );
    // the streak began at the first failed attempt
    let log = deliveries(&org, &hook).await;
    let first_attempt = log
        .iter()
        .flat_map(|d| d["attemptLog"].as_array().unwrap().iter())
        .filter_map(|a| Timestamp::parse(a["at"].as_str()?))
        .min()
        .unwrap();
    assert!(
        since.millis() >= first_attempt.millis(),
        "{since} < {first_attempt}"
    );

    // nothing is delivered while disabled, even once the receiver answers
    receiver.recover();
    let before = receiver.received().len();
    put_product(&org, "failing", json!({"name": "While disabled"})).await;
    tokio::time::sleep(Duration::from_secs(2 * COALESCE_SECONDS + 2)).await;
    assert_eq!(
        receiver.received().len(),
        before,
        "delivered while disabled"
    );

    // a PATCH enables it again, and the next change is delivered
    let r = org
        .patch(&format!("/v1/webhooks/{hook}"), json!({"enabled": true}))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["result"]["status"], json!("enabled"));
    assert_eq!(r.body["result"].get("disabledReason"), None);
    put_product(&org, "failing", json!({"name": "Enabled again"})).await;
    let got = receiver.wait_for(before + 1, DELIVERY).await;
    assert_eq!(got[before].json["identifier"], json!("failing"));
    assert_eq!(
        receiver.delivered().last().unwrap().json["identifier"],
        json!("failing")
    );
}

/// A record the feed cannot process (a metaobject whose window key is over DynamoDB's key
/// limit, as an item written before identifiers were limited in bytes could be) is set
/// aside with its identity, and the rest of its batch goes on: before, the batch was
/// reported failed at that record and retried, holding the shard for every organization.
#[tokio::test]
async fn a_record_the_feed_cannot_process_is_set_aside_and_the_batch_goes_on() {
    let hooks = webhooks().await;
    let org = Org::new().await;
    let (hook, _) = subscribe(&org, "http://127.0.0.1:9/hook", &["*"]).await;
    let long = "é".repeat(600);
    let metaobject = json!({
        "PK": {"S": format!("O#{}#R#metaobject#color", org.id)}, "SK": {"S": long},
        "GSI1PK": {"S": format!("O#{}#T#metaobject#0", org.id)},
        "kind": {"S": "metaobject"}, "id": {"S": long}, "def": {"S": "color"},
        "su": {"S": "2026-11-21T00:00:00.000Z"}
    });
    let product = json!({
        "PK": {"S": format!("O#{}#P#after-bad", org.id)}, "SK": {"S": "L1"},
        "GSI1PK": {"S": format!("O#{}#T#product#0", org.id)},
        "kind": {"S": "product"}, "id": {"S": "after-bad"}, "su": {"S": "2026-11-21T00:00:00.000Z"}
    });
    let event =
        json!({"Records": [stream_insert("7001", metaobject), stream_insert("7002", product)]});
    let answer = catalog_e2e::invoke("change-feed", event).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let body = queued(
        &sqs,
        &hooks.feed_failures_url,
        &org.id,
        "the record in the failure queue",
    )
    .await;
    let message: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (
            &message["source"],
            &message["sequenceNumber"],
            &message["eventName"],
            &message["org"],
            &message["entityType"],
            &message["identifier"],
            &message["action"]
        ),
        (
            &json!("change-feed"),
            &json!("7001"),
            &json!("INSERT"),
            &json!(org.id),
            &json!("metaobject"),
            &json!(format!("color/{long}")),
            &json!("created")
        )
    );
    assert!(message["reason"]
        .as_str()
        .unwrap()
        .starts_with("window not opened"));
    // the record after it got its delivery
    eventually(
        "the next record's delivery in the log",
        DELIVERY,
        || async {
            deliveries(&org, &hook)
                .await
                .iter()
                .any(|d| d["identifier"] == json!("after-bad"))
                .then_some(())
        },
    )
    .await;
}

/// Subscribing to catalog events, and reading or replaying their deliveries, needs
/// `catalog:read`: before, a key without it got 403 on `GET /products` but could read every
/// identifier and change time through a subscription.
#[tokio::test]
async fn catalog_topics_need_the_catalog_read_scope() {
    use catalog::auth::Scope;
    webhooks().await;
    let org = Org::new().await;
    let settings_only = org.key_with(&[Scope::SettingsManage]).await;
    let as_settings = |method: &str, path: &str| Request::new(method, path).bearer(&settings_only);
    let r = as_settings("POST", "/v1/webhooks")
        .json(json!({"url": "http://127.0.0.1:9/h", "topics": ["*"]}))
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            403,
            json!({"error": "subscribing to catalog topics needs the 'catalog:read' scope as well; this API key lacks it"})
        )
    );
    assert!(org.get("/v1/webhooks").await.body["result"]
        .as_array()
        .unwrap()
        .is_empty());
    let (hook, _) = subscribe(&org, "http://127.0.0.1:9/h", &["product.created"]).await;
    let r = as_settings("GET", &format!("/v1/webhooks/{hook}/deliveries"))
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            403,
            json!({"error": "reading the delivery log of a subscription to catalog topics needs the 'catalog:read' scope as well; this API key lacks it"})
        )
    );
    // Every change to such a subscription needs the read scope: before, a settings-only key
    // could re-point it to its own URL, re-enable it or re-key it, and so receive the
    // catalog's events the scope is there to keep from it.
    for change in [
        json!({"topics": ["*"]}),
        json!({"url": "http://127.0.0.1:8/mine"}),
        json!({"enabled": true}),
        json!({"description": "ERP"}),
    ] {
        let r = as_settings("PATCH", &format!("/v1/webhooks/{hook}"))
            .json(change.clone())
            .send()
            .await;
        assert_eq!(
            (r.status, r.body),
            (
                403,
                json!({"error": "changing a subscription to catalog topics needs the 'catalog:read' scope as well; this API key lacks it"})
            ),
            "{change}"
        );
    }
    let r = as_settings("POST", &format!("/v1/webhooks/{hook}/rotate-secret"))
        .json(json!({}))
        .send()
        .await;
    assert_eq!(r.status, 403, "{:?}", r.body);
    let unchanged = org.get(&format!("/v1/webhooks/{hook}")).await;
    assert_eq!(
        unchanged.body["result"]["url"],
        json!("http://127.0.0.1:9/h")
    );
    assert_eq!(unchanged.body["result"]["description"], Value::Null);
    let r = as_settings(
        "POST",
        &format!("/v1/webhooks/{hook}/deliveries/dlv_x/replay"),
    )
    .json(json!({}))
    .send()
    .await;
    assert_eq!(r.status, 403);
    let reader = org
        .key_with(&[Scope::CatalogRead, Scope::SettingsManage])
        .await;
    let r = Request::new("GET", &format!("/v1/webhooks/{hook}/deliveries"))
        .bearer(&reader)
        .send()
        .await;
    assert_eq!(r.status, 200);
    // what hands over no catalog data still works with the settings scope alone
    let r = as_settings("DELETE", &format!("/v1/webhooks/{hook}"))
        .send()
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// decisions.md "Console, test events, event catalog": a test event goes to the
/// subscription whatever its topics, signed and logged like every delivery; a disabled
/// subscription or an unknown one gets none.
#[tokio::test]
async fn a_test_event_is_signed_and_logged_whatever_the_topics() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let (hook, secret) = subscribe(&org, &receiver.url(), &["sku.deleted"]).await;
    let r = org
        .post(&format!("/v1/webhooks/{hook}/test"), json!({}))
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let id = r.body["result"]["deliveryId"].as_str().unwrap().to_string();
    assert_eq!(r.body, json!({"result": {"deliveryId": id}}));
    assert!(id.starts_with("dlv_"), "{id}");
    let got = receiver.wait_for_exactly(1, DELIVERY).await;
    let d = &got[0];
    assert_eq!(
        d.json,
        json!({"id": id, "event": "webhook.test", "identifier": hook,
               "entity_type": "webhook", "occurred_at": d.json["occurred_at"]})
    );
    assert_eq!(d.headers["x-catalog-webhook-id"], id);
    let now = chrono::Utc::now().timestamp();
    assert_eq!(
        signature::verify(
            &secret,
            &d.headers["x-catalog-signature"],
            &d.body,
            now,
            300
        ),
        Ok(())
    );
    let log = eventually("the test event logged", DELIVERY, || async {
        let log = deliveries(&org, &hook).await;
        (log.len() == 1 && log[0]["status"] == json!("succeeded")).then_some(log)
    })
    .await;
    assert_eq!(
        (
            &log[0]["id"],
            &log[0]["event"],
            &log[0]["entityType"],
            &log[0]["identifier"]
        ),
        (
            &json!(id),
            &json!("webhook.test"),
            &json!("webhook"),
            &json!(hook)
        )
    );
    // no such subscription: 404; a disabled one: 409, nothing sent
    let r = org.post("/v1/webhooks/wh_nope/test", json!({})).await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    let off = org
        .patch(&format!("/v1/webhooks/{hook}"), json!({"enabled": false}))
        .await;
    assert_eq!(off.status, 200, "{:?}", off.body);
    let r = org
        .post(&format!("/v1/webhooks/{hook}/test"), json!({}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": format!("webhook '{hook}' is disabled; enable it before sending a test event")})
        )
    );
    assert_eq!(deliveries(&org, &hook).await.len(), 1);
}

/// The event catalog names every topic a subscription can name, each with an example
/// payload, and only those.
#[tokio::test]
async fn the_event_catalog_lists_every_topic_with_an_example() {
    webhooks().await;
    let org = Org::new().await;
    let r = org.get("/v1/event-types").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let types = r.body["result"].as_array().unwrap();
    assert_eq!(types.len(), 21);
    assert_eq!(r.body["pagination"]["totalResults"], json!(21));
    let names: Vec<&str> = types.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        &names[..3],
        ["product.created", "product.updated", "product.deleted"]
    );
    for t in types {
        assert_eq!(t["example"]["event"], t["name"]);
        assert!(!t["description"].as_str().unwrap().is_empty());
        // every name is a topic a subscription can take
        let topic_ok = org
            .post(
                "/v1/webhooks",
                json!({"url": "http://127.0.0.1:9/x", "topics": [t["name"]]}),
            )
            .await;
        assert_eq!(topic_ok.status, 201, "{}: {:?}", t["name"], topic_ok.body);
        let id = topic_ok.body["result"]["id"].as_str().unwrap();
        assert_eq!(org.delete(&format!("/v1/webhooks/{id}")).await.status, 200);
    }
    // a key without settings:manage gets no catalog
    let reader = org.key_with(&[catalog::auth::Scope::CatalogRead]).await;
    let r = catalog_e2e::Request::new("GET", "/v1/event-types")
        .bearer(&reader)
        .send()
        .await;
    assert_eq!(r.status, 403);
}

/// The console's delivery log filters (issue 29): `status` and `event` narrow the log, with
/// exact totals; the counts of coalesced changes; bad filters are named.
#[tokio::test]
async fn the_delivery_log_filters_by_status_and_event() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let (hook, _) = subscribe(&org, &receiver.url(), &["product.*"]).await;
    put_product(&org, "desk", json!({"name": "Desk"})).await;
    receiver.wait_for(1, DELIVERY).await;
    put_product(&org, "desk", json!({"name": "Desk 2"})).await;
    receiver.wait_for(2, DELIVERY).await;
    let r = org
        .post(&format!("/v1/webhooks/{hook}/test"), json!({}))
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    receiver.wait_for(3, DELIVERY).await;
    let log = |query: &'static str| {
        let (org, hook) = (&org, &hook);
        async move {
            org.get(&format!("/v1/webhooks/{hook}/deliveries{query}"))
                .await
        }
    };
    eventually("three succeeded deliveries", DELIVERY, || async {
        let r = log("?status=succeeded").await;
        (r.body["pagination"]["totalResults"] == json!(3)).then_some(())
    })
    .await;
    let events = |r: &catalog_e2e::Response| -> Vec<(String, u64)> {
        r.body["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["event"].as_str().unwrap().to_string(),
                    d["changes"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let all = log("").await;
    assert_eq!(
        events(&all),
        [
            ("webhook.test".into(), 0),
            ("product.updated".into(), 1),
            ("product.created".into(), 1)
        ]
    );
    let created = log("?event=product.created").await;
    assert_eq!(created.status, 200, "{:?}", created.body);
    assert_eq!(events(&created), [("product.created".into(), 1)]);
    assert_eq!(created.body["pagination"]["totalResults"], json!(1));
    assert_eq!(
        events(&log("?event=webhook.test").await),
        [("webhook.test".into(), 0)]
    );
    let failed = log("?status=failed").await;
    assert_eq!(
        (
            failed.body["result"].clone(),
            failed.body["pagination"]["totalResults"].clone()
        ),
        (json!([]), json!(0))
    );
    let paged = log("?status=succeeded&limit=1&page=2").await;
    assert_eq!(events(&paged), [("product.updated".into(), 1)]);
    assert_eq!(paged.body["pagination"]["totalPages"], json!(3));
    let both = log("?status=succeeded&event=product.updated").await;
    assert_eq!(events(&both), [("product.updated".into(), 1)]);
    // a test event replays like any delivery: a new id, the same event, sent again
    let test_id = log("?event=webhook.test").await.body["result"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = org
        .post(
            &format!("/v1/webhooks/{hook}/deliveries/{test_id}/replay"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let replay_id = r.body["result"]["id"].as_str().unwrap().to_string();
    assert_ne!(replay_id, test_id);
    assert_eq!(r.body["result"]["replayOf"], json!(test_id));
    let got = receiver.wait_for(4, DELIVERY).await;
    assert_eq!(
        (got[3].json["id"].as_str(), got[3].json["event"].as_str()),
        (Some(replay_id.as_str()), Some("webhook.test"))
    );
    let bad = log("?status=done").await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.body["error"],
        json!("query parameter 'status': 'done' is not a delivery status; statuses are pending, retrying, succeeded, failed, cancelled")
    );
    let bad = log("?event=product.exploded").await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.body["error"],
        json!("query parameter 'event': 'product.exploded' is not an event; events are <entity>.created, <entity>.updated, <entity>.deleted, webhook.test or webhook.verification")
    );
}

/// Issue 41, item 4: a subscription's `changedFields` (`name` and attribute selectors) makes
/// an `*.updated` delivery only when one of them changed; creates are not affected, and
/// `changedFields: null` delivers every update again.
#[tokio::test]
async fn changed_fields_deliver_only_the_updates_that_touch_them() {
    webhooks().await;
    let org = Org::new().await;
    for key in ["color", "size"] {
        org.define(
            json!({"key": key, "displayName": key, "targetEntity": "product", "type": "text"}),
        )
        .await;
    }
    let filtered = Receiver::start(0).await;
    let every = Receiver::start(0).await;
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": filtered.url(), "topics": ["product.*"], "changedFields": ["product.color", "name", "product.color"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(
        r.body["result"]["changedFields"],
        json!(["product.color", "name"])
    );
    let id = r.body["result"]["id"].as_str().unwrap().to_string();
    subscribe(&org, &every.url(), &["product.*"]).await;
    for (body, error) in [
        (json!({"changedFields": []}), "field 'changedFields' must be null or an array of 1 to 50 fields: 'name' or attribute selectors like 'product.color' or 'sku.price_*'"),
        (json!({"changedFields": ["color"]}), "field 'changedFields': invalid selector 'color': expected <entity>.<key>, e.g. product.color or sku.price_*"),
    ] {
        let r = org.patch(&format!("/v1/webhooks/{id}"), body).await;
        assert_eq!((r.status, &r.body), (400, &json!({ "error": error })));
    }
    // a field is at most a selector long; a refused change leaves the subscription as it was
    let long = format!("product.{}*", "a".repeat(65));
    let r = org
        .patch(
            &format!("/v1/webhooks/{id}"),
            json!({"changedFields": [long]}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body),
        (
            400,
            &json!({"error": format!("field 'changedFields': invalid selector '{long}': a key holds at most 64 characters")})
        )
    );
    let r = org.get(&format!("/v1/webhooks/{id}")).await;
    assert_eq!(
        r.body["result"]["changedFields"],
        json!(["product.color", "name"])
    );

    // a create is delivered whatever the fields
    put_product(
        &org,
        "lamp",
        json!({"name": "Lamp", "values": {"color": "red"}}),
    )
    .await;
    filtered.wait_for(1, DELIVERY).await;
    every.wait_for(1, DELIVERY).await;
    // only the size: the unfiltered subscription hears of it, the filtered one does not
    put_product(&org, "lamp", json!({"values": {"size": "L"}})).await;
    every.wait_for(2, DELIVERY).await;
    filtered.wait_for_exactly(1, DELIVERY).await;
    // the color: both
    put_product(&org, "lamp", json!({"values": {"color": "blue"}})).await;
    let got = filtered.wait_for(2, DELIVERY).await;
    assert_eq!(
        (
            got[1].json["event"].as_str(),
            got[1].json["identifier"].as_str()
        ),
        (Some("product.updated"), Some("lamp"))
    );
    every.wait_for(3, DELIVERY).await;
    // null: every update again
    let r = org
        .patch(
            &format!("/v1/webhooks/{id}"),
            json!({"changedFields": null}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body["result"]["changedFields"]),
        (200, &json!(null))
    );
    put_product(&org, "lamp", json!({"values": {"size": "M"}})).await;
    filtered.wait_for(3, DELIVERY).await;
}
