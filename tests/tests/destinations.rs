//! AWS destinations end to end: subscriptions that deliver to moto's SQS queues and
//! EventBridge buses (a rule forwarding to a queue, read back here), through the real
//! `webhooks`, `change-feed` and `webhook-delivery` binaries. An AWS destination gets its
//! verification message and nothing else until its token is confirmed; the stack's own
//! queues and anything outside the allow-list are refused at creation. What a pending
//! destination's tenant is told, and a refusal once verified: `pending_destinations.rs`.

use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use catalog_e2e::webhooks::{events_client, eventually, sqs_client, webhooks};
use catalog_e2e::Org;
use serde_json::{json, Value};
use std::time::Duration;

/// Long enough for a window (5 s), the stream and queue polls, and slow CI.
const DELIVERY: Duration = Duration::from_secs(60);

/// A new queue of the emulator's account: its URL.
async fn queue(sqs: &aws_sdk_sqs::Client, name: &str) -> String {
    let mut req = sqs.create_queue().queue_name(name);
    if name.ends_with(".fifo") {
        req = req.attributes(QueueAttributeName::FifoQueue, "true");
    }
    req.send().await.unwrap().queue_url.unwrap()
}

/// One message of the queue as the test reads it: its body (JSON), message attributes and
/// system attributes. Messages are deleted once read.
#[derive(Debug, Clone)]
struct Message {
    body: Value,
    attributes: std::collections::HashMap<String, String>,
    system: std::collections::HashMap<String, String>,
}

/// The messages of the first receive from `queue_url` that returns any (polled with a
/// deadline); they are deleted once read.
async fn arrived(sqs: &aws_sdk_sqs::Client, queue_url: &str, what: &str) -> Vec<Message> {
    let cell = std::cell::RefCell::new(Vec::<Message>::new());
    let got = &cell;
    eventually(what, DELIVERY, || async move {
        let out = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .unwrap();
        for m in out.messages.unwrap_or_default() {
            sqs.delete_message()
                .queue_url(queue_url)
                .receipt_handle(m.receipt_handle.clone().unwrap())
                .send()
                .await
                .unwrap();
            got.borrow_mut().push(Message {
                body: serde_json::from_str(m.body.as_deref().unwrap()).unwrap(),
                attributes: m
                    .message_attributes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.string_value.unwrap_or_default()))
                    .collect(),
                system: m
                    .attributes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k.as_str().to_string(), v))
                    .collect(),
            });
        }
        (!got.borrow().is_empty()).then_some(())
    })
    .await;
    cell.into_inner()
}

async fn subscribe(org: &Org, destination: Value, topics: &[&str]) -> Value {
    let r = org
        .post(
            "/v1/webhooks",
            json!({"destination": destination, "topics": topics}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.body["result"].clone()
}

async fn verify(org: &Org, id: &str, token: &str) -> catalog_e2e::Response {
    org.post(
        &format!("/v1/webhooks/{id}/verify"),
        json!({ "token": token }),
    )
    .await
}

async fn put_product(org: &Org, id: &str, name: &str) {
    let r = org
        .patch(&format!("/v1/products/{id}"), json!({"name": name}))
        .await;
    assert!(r.status == 200 || r.status == 201, "{:?}", r.body);
}

#[tokio::test]
async fn an_sqs_queue_gets_events_only_once_verified() {
    let hooks = webhooks().await;
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let org = Org::new().await;
    let url = queue(&sqs, &format!("catalog-events-{}", org.id)).await;
    // the key is known to the function (its first call reads it), so the count is the call's
    assert_eq!(org.get("/v1/webhooks").await.status, 200);
    let r = org
        .post(
            "/v1/webhooks",
            json!({"destination": {"type": "sqs", "queueUrl": url}, "topics": ["product.*"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    // the HTTPS create's 3 (below), the hour's counter of deliveries sent by hand, and the
    // verification message's log entry
    assert_eq!(r.ddb_requests(), 5);
    let created = r.body["result"].clone();
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["status"], json!("pending_verification"));
    assert_eq!(
        created["destination"],
        json!({"type": "sqs", "queueUrl": url})
    );
    // no signing secret (IAM authenticates the queue), no `url`
    assert_eq!(created.get("secret"), None);
    assert_eq!(created.get("url"), None);

    // a change while pending is not delivered, and a test event is refused
    put_product(&org, "before", "Before").await;
    let test = org
        .post(&format!("/v1/webhooks/{id}/test"), json!({}))
        .await;
    assert_eq!(test.status, 409, "{:?}", test.body);
    assert_eq!(
        test.body,
        json!({"error": format!("webhook '{id}' awaits verification of its destination; POST /webhooks/{id}/verify with the token of its verification message before sending a test event")})
    );

    let verification = arrived(&sqs, &url, "the verification message").await;
    assert_eq!(verification.len(), 1, "{verification:?}");
    let v = &verification[0];
    assert_eq!(v.body["event"], json!("webhook.verification"));
    assert_eq!(v.body["entity_type"], json!("webhook"));
    assert_eq!(v.body["identifier"], json!(id));
    assert_eq!(v.attributes["catalog-event"], "webhook.verification");
    assert_eq!(
        v.attributes["catalog-delivery-id"],
        v.body["id"].as_str().unwrap()
    );
    let token = v.body["token"].as_str().unwrap().to_string();
    assert_eq!(token.len(), 32);

    let resent = org
        .post(&format!("/v1/webhooks/{id}/verification"), json!({}))
        .await;
    assert_eq!(resent.status, 202, "{:?}", resent.body);
    assert_eq!(resent.ddb_requests(), 5);
    let second = arrived(&sqs, &url, "the second verification message").await;
    assert_eq!(second[0].body["id"], resent.body["result"]["deliveryId"]);
    // the first token no longer works
    let stale = verify(&org, &id, &token).await;
    assert_eq!(stale.status, 400, "{:?}", stale.body);
    let token = second[0].body["token"].as_str().unwrap().to_string();

    // a wrong token changes nothing
    let before = org.get(&format!("/v1/webhooks/{id}")).await;
    let wrong = verify(&org, &id, &"x".repeat(32)).await;
    assert_eq!(wrong.status, 400);
    assert_eq!(
        wrong.body,
        json!({"error": "field 'token' does not match the latest verification message of this subscription"})
    );
    let after = org.get(&format!("/v1/webhooks/{id}")).await;
    assert_eq!(after.header("etag"), before.header("etag"));
    assert_eq!(
        after.body["result"]["status"],
        json!("pending_verification")
    );

    let ok = verify(&org, &id, &token).await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    assert_eq!(ok.body["result"]["status"], json!("enabled"));
    // GetItem + PutItem conditioned on the version read (docs/architecture.md)
    assert_eq!(ok.ddb_requests(), 2);
    let again = verify(&org, &id, &token).await;
    assert_eq!(again.status, 409);
    assert_eq!(
        again.body,
        json!({"error": format!("webhook '{id}' is not awaiting verification (only a new AWS destination is)")})
    );

    put_product(&org, "chair", "Chair").await;
    let got = arrived(&sqs, &url, "the product.created message").await;
    assert_eq!(got.len(), 1, "{got:?}");
    let m = &got[0];
    assert_eq!(m.body["event"], json!("product.created"));
    assert_eq!(m.body["identifier"], json!("chair"));
    assert_eq!(m.attributes["catalog-event"], "product.created");
    assert_eq!(
        m.attributes["catalog-delivery-id"],
        m.body["id"].as_str().unwrap()
    );

    // the log has it, accepted by AWS (no HTTP status), and no delivery of "before"
    let log = org.get(&format!("/v1/webhooks/{id}/deliveries")).await;
    assert_eq!(log.status, 200);
    let entries = log.body["result"].as_array().unwrap();
    let events: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|d| {
            (
                d["event"].as_str().unwrap(),
                d["identifier"].as_str().unwrap(),
                d["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        events,
        vec![
            ("product.created", "chair", "succeeded"),
            ("webhook.verification", id.as_str(), "succeeded"),
            ("webhook.verification", id.as_str(), "succeeded"),
        ]
    );
    assert_eq!(entries[0]["lastStatusCode"], Value::Null);
    // and a test event now goes
    let test = org
        .post(&format!("/v1/webhooks/{id}/test"), json!({}))
        .await;
    assert_eq!(test.status, 202, "{:?}", test.body);
}

#[tokio::test]
async fn a_fifo_queue_gets_a_group_per_entity_and_the_delivery_id_for_deduplication() {
    let hooks = webhooks().await;
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let org = Org::new().await;
    let url = queue(&sqs, &format!("catalog-{}.fifo", org.id)).await;
    let created = subscribe(
        &org,
        json!({"type": "sqs", "queueUrl": url}),
        &["product.created"],
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    let v = arrived(&sqs, &url, "the verification message").await;
    let token = v[0].body["token"].as_str().unwrap();
    assert_eq!(v[0].system["MessageGroupId"], format!("webhook:{id}"));
    let ok = verify(&org, &id, token).await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    put_product(&org, "lamp", "Lamp").await;
    let got = arrived(&sqs, &url, "the product.created message").await;
    assert_eq!(got[0].body["event"], json!("product.created"));
    assert_eq!(got[0].system["MessageGroupId"], "product:lamp");
    assert_eq!(
        got[0].system["MessageDeduplicationId"],
        got[0].body["id"].as_str().unwrap()
    );
}

#[tokio::test]
async fn an_event_bus_rule_forwards_matching_events_to_a_queue() {
    let hooks = webhooks().await;
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let events = events_client(&hooks.sqs_endpoint);
    let org = Org::new().await;
    let bus = format!("pim-{}", org.id);
    let bus_arn = events
        .create_event_bus()
        .name(&bus)
        .send()
        .await
        .unwrap()
        .event_bus_arn
        .unwrap();
    let url = queue(&sqs, &format!("from-bus-{}", org.id)).await;
    let queue_arn = format!("arn:aws:sqs:us-east-1:123456789012:from-bus-{}", org.id);
    // the consumer's rule: the catalog's events of this organization, by detail-type
    let pattern = json!({
        "source": [format!("catalog.{}", org.id)],
        "detail-type": ["webhook.verification", "product.updated"]
    });
    events
        .put_rule()
        .name("catalog-products")
        .event_bus_name(&bus)
        .event_pattern(pattern.to_string())
        .send()
        .await
        .unwrap();
    events
        .put_targets()
        .rule("catalog-products")
        .event_bus_name(&bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("queue")
                .arn(&queue_arn)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();

    put_product(&org, "desk", "Desk").await;
    let created = subscribe(
        &org,
        json!({"type": "eventbridge", "eventBusArn": bus_arn}),
        &["product.*"],
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    let v = arrived(&sqs, &url, "the verification event").await;
    assert_eq!(v[0].body["detail-type"], json!("webhook.verification"));
    assert_eq!(v[0].body["source"], json!(format!("catalog.{}", org.id)));
    let token = v[0].body["detail"]["token"].as_str().unwrap();
    let ok = verify(&org, &id, token).await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);

    // created (not in the rule's pattern) then updated: only the update reaches the queue
    put_product(&org, "shelf", "Shelf").await;
    put_product(&org, "desk", "Desk 2").await;
    let got = arrived(&sqs, &url, "the product.updated event").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].body["detail-type"], json!("product.updated"));
    assert_eq!(got[0].body["detail"]["identifier"], json!("desk"));
    assert_eq!(got[0].body["detail"]["event"], json!("product.updated"));
    // the created event went to the bus too (the log says AWS accepted it)
    let log = eventually("both deliveries logged as accepted", DELIVERY, || async {
        let log = org.get(&format!("/v1/webhooks/{id}/deliveries")).await;
        let entries = log.body["result"].as_array().unwrap().clone();
        let done = entries.len() == 3 && entries.iter().all(|d| d["status"] == "succeeded");
        done.then_some(entries)
    })
    .await;
    let mut names: Vec<&str> = log.iter().map(|d| d["event"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        vec!["product.created", "product.updated", "webhook.verification"]
    );
}

#[tokio::test]
async fn destinations_outside_the_allow_list_or_of_the_stack_are_refused() {
    let hooks = webhooks().await;
    let org = Org::new().await;
    let cases = [
        (
            json!({"type": "sqs", "queueUrl": hooks.queue_url}),
            "field 'destination.queueUrl' names one of this deployment's own resources (arn:aws:sqs:us-east-1:123456789012:deliveries); deliver to a queue or bus of yours".to_string(),
        ),
        (
            json!({"type": "sqs", "queueUrl": "https://sqs.us-east-1.amazonaws.com/999999999999/theirs"}),
            "field 'destination.queueUrl': arn:aws:sqs:us-east-1:999999999999:theirs is outside what this deployment may deliver to; ask its operator which queues and buses it allows".to_string(),
        ),
        (
            json!({"type": "eventbridge", "eventBusArn": "arn:aws:events:eu-west-1:123456789012:event-bus/x"}),
            "field 'destination.eventBusArn': arn:aws:events:eu-west-1:123456789012:event-bus/x is outside what this deployment may deliver to; ask its operator which queues and buses it allows".to_string(),
        ),
        (
            json!({"type": "sns", "topicArn": "x"}),
            "field 'destination.type': 'sns' is not a destination type; types are https, eventbridge, sqs".to_string(),
        ),
    ];
    for (destination, error) in cases {
        let r = org
            .post(
                "/v1/webhooks",
                json!({"destination": destination, "topics": ["*"]}),
            )
            .await;
        assert_eq!((r.status, r.body.clone()), (400, json!({ "error": error })));
    }
    let both = org
        .post(
            "/v1/webhooks",
            json!({"url": "https://example.com/h", "destination": {"type": "https", "url": "https://example.com/h"}, "topics": ["*"]}),
        )
        .await;
    assert_eq!(
        (both.status, both.body),
        (
            400,
            json!({"error": "give 'url' or 'destination', not both"})
        )
    );
    let list = org.get("/v1/webhooks").await;
    assert_eq!(list.body["result"], json!([]));
    let https = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:9/h", "topics": ["*"]}),
        )
        .await;
    assert_eq!(https.status, 201);
    // quota version GetItem, the subscriptions' Query, the counted create's transaction
    assert_eq!(https.ddb_requests(), 3);
}

#[tokio::test]
async fn a_patch_to_another_queue_asks_that_queue_for_its_token() {
    let hooks = webhooks().await;
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let org = Org::new().await;
    let first = queue(&sqs, &format!("first-{}", org.id)).await;
    let second = queue(&sqs, &format!("second-{}", org.id)).await;
    let created = subscribe(&org, json!({"type": "sqs", "queueUrl": first}), &["*"]).await;
    let id = created["id"].as_str().unwrap().to_string();
    let v = arrived(&sqs, &first, "the first queue's verification").await;
    let token = v[0].body["token"].as_str().unwrap();
    assert_eq!(verify(&org, &id, token).await.status, 200);

    let moved = org
        .patch(
            &format!("/v1/webhooks/{id}"),
            json!({"destination": {"type": "sqs", "queueUrl": second}}),
        )
        .await;
    assert_eq!(moved.status, 200, "{:?}", moved.body);
    assert_eq!(
        moved.body["result"]["status"],
        json!("pending_verification")
    );
    let v = arrived(&sqs, &second, "the second queue's verification").await;
    assert_eq!(v[0].body["event"], json!("webhook.verification"));
    assert_ne!(v[0].body["token"].as_str().unwrap(), token);
    // another type is another subscription
    let other = org
        .patch(
            &format!("/v1/webhooks/{id}"),
            json!({"destination": {"type": "eventbridge", "eventBusArn": "arn:aws:events:us-east-1:123456789012:event-bus/b"}}),
        )
        .await;
    assert_eq!(
        (other.status, other.body),
        (
            400,
            json!({"error": "field 'destination.type': a subscription keeps its destination type (sqs); create another subscription to deliver to eventbridge"})
        )
    );
}

/// A body holding U+FFFE or U+FFFF (an identifier may) reaches the queue with them written
/// as JSON escapes: SQS refuses them raw, which held the organization's queue deliveries
/// for the retry schedule. Before, they went raw. The same JSON value arrives.
#[tokio::test]
async fn characters_sqs_refuses_arrive_escaped() {
    let hooks = webhooks().await;
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let org = Org::new().await;
    let url = queue(&sqs, &format!("catalog-odd-{}", org.id)).await;
    let created = subscribe(
        &org,
        json!({"type": "sqs", "queueUrl": url}),
        &["product.created"],
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    let v = arrived(&sqs, &url, "the verification message").await;
    let token = v[0].body["token"].as_str().unwrap();
    assert_eq!(verify(&org, &id, token).await.status, 200);
    let odd = "odd\u{FFFE}\u{FFFF}";
    put_product(&org, &catalog_e2e::encode(odd), "Odd").await;
    let body = catalog_e2e::webhooks::queued(
        &sqs,
        &url,
        "product.created",
        "the product.created message",
        DELIVERY,
    )
    .await;
    assert!(body.contains(r#""odd\ufffe\uffff""#), "{body}");
    assert!(!body.contains(['\u{FFFE}', '\u{FFFF}']), "{body}");
    let delivered: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(delivered["identifier"], json!(odd));
}
