//! What a tenant learns from an AWS destination it has not verified (issue 60, 9): nothing
//! about the queue or bus beyond what a reader of it learns. Its verification deliveries,
//! the subscription and the usage counts answer byte for byte the same whether the queue
//! exists and took the message or AWS refused it, so the API is no oracle of which queues
//! and buses exist; once verified, a refusal is logged with its AWS error code as for any
//! delivery. Real binaries against moto's SQS and EventBridge, as `destinations.rs`.

use catalog_e2e::webhooks::{events_client, eventually, queued, sqs_client, webhooks};
use catalog_e2e::Org;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// Long enough for the stream and queue polls, and slow CI.
const DELIVERY: Duration = Duration::from_secs(60);

/// Fields that hold a time: they differ between any two answers.
const TIMES: &[&str] = &[
    "createdAt",
    "updatedAt",
    "occurredAt",
    "at",
    "nextAttemptAt",
];

/// `v` with its times, ids and the tenant's own address (`own`) replaced by placeholders:
/// what must then be equal between two tenants' answers is everything else.
fn neutral(v: &Value, own: &[&str]) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| {
                    let x = match (k.as_str(), x) {
                        (k, Value::String(_)) if TIMES.contains(&k) => json!("<time>"),
                        ("id" | "deliveryId", Value::String(_)) => json!("<id>"),
                        _ => neutral(x, own),
                    };
                    (k.clone(), x)
                })
                .collect::<Map<_, _>>(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| neutral(x, own)).collect()),
        Value::String(s) if own.contains(&s.as_str()) => json!("<own>"),
        other => other.clone(),
    }
}

/// Everything the API tells `org` about its subscription `id` (to `address`): the
/// subscription with its health, the delivery log (whole, and its failed and succeeded
/// entries), and the organization's delivery counts.
async fn observed(org: &Org, id: &str, address: &str) -> Value {
    let mut seen = Vec::new();
    for path in [
        format!("/v1/webhooks/{id}"),
        "/v1/webhooks".to_string(),
        format!("/v1/webhooks/{id}/deliveries"),
        format!("/v1/webhooks/{id}/deliveries?status=failed"),
        format!("/v1/webhooks/{id}/deliveries?status=retrying"),
        format!("/v1/webhooks/{id}/deliveries?status=succeeded"),
    ] {
        let r = org.get(&path).await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
        seen.push(json!({"path": path.replace(id, "<own>"), "body": r.body}));
    }
    let today = &org.get("/v1/usage").await.body["result"]["today"];
    seen.push(json!({"deliveryAttempts": today["deliveryAttempts"],
                     "failedAttempts": today["failedAttempts"]}));
    neutral(&Value::Array(seen), &[id, address])
}

/// Waits until every verification delivery of `id` (`count` of them) has had its attempt,
/// logged and counted in the organization's usage.
async fn attempted(org: &Org, id: &str, count: usize) {
    eventually("the verification attempts logged", DELIVERY, || async {
        let log = org.get(&format!("/v1/webhooks/{id}/deliveries")).await;
        let entries = log.body["result"].as_array().cloned().unwrap_or_default();
        let logged = entries.len() == count
            && entries
                .iter()
                .all(|d| d["attempts"].as_u64() >= Some(1) && d["status"] != "pending");
        let usage = org.get("/v1/usage").await;
        let counted = usage.body["result"]["today"]["deliveryAttempts"].as_u64();
        (logged && counted >= Some(count as u64)).then_some(())
    })
    .await;
}

async fn subscribe(org: &Org, destination: Value) -> String {
    let r = org
        .post(
            "/v1/webhooks",
            json!({"destination": destination, "topics": ["product.*"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.body["result"]["status"], "pending_verification");
    r.body["result"]["id"].as_str().unwrap().to_string()
}

/// Two organizations each subscribe a pending destination of one type: `present` exists,
/// `absent` does not (AWS refuses every message to it). What each is told must be the same.
async fn the_same_either_way(kind: &str, field: &str, present: &str, absent: &str) {
    let (a, b) = (Org::new().await, Org::new().await);
    let sides = [(&a, present), (&b, absent)];
    let mut ids = Vec::new();
    for (org, address) in sides {
        ids.push(subscribe(org, json!({"type": kind, field: address})).await);
    }
    for ((org, _), id) in sides.iter().zip(&ids) {
        attempted(org, id, 1).await;
    }
    let first = observed(&a, &ids[0], present).await;
    assert_eq!(first, observed(&b, &ids[1], absent).await);
    // a verification delivery reads as sent: no AWS error, no timing, no retry, no health
    let entry = &first[2]["body"]["result"][0];
    assert_eq!(
        (&entry["status"], &entry["attempts"], &entry["lastError"]),
        (&json!("succeeded"), &json!(1), &Value::Null)
    );
    assert_eq!(
        entry["attemptLog"],
        json!([{"at": "<time>", "durationMs": 0}])
    );
    assert_eq!(
        first[0]["body"]["result"]["health"],
        json!({"status": "healthy", "failingSince": null, "consecutiveFailures": 0})
    );
    // and again after a second message to each (a refusal counts against nothing)
    for ((org, _), id) in sides.iter().zip(&ids) {
        let r = org
            .post(&format!("/v1/webhooks/{id}/verification"), json!({}))
            .await;
        assert_eq!(r.status, 202, "{:?}", r.body);
        attempted(org, id, 2).await;
    }
    assert_eq!(
        observed(&a, &ids[0], present).await,
        observed(&b, &ids[1], absent).await
    );
}

#[tokio::test]
async fn a_pending_queue_answers_the_same_whether_it_exists_or_not() {
    let hooks = webhooks().await;
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let name = format!("exists-{}", Org::new().await.id);
    let present = sqs
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let absent = format!("{}/123456789012/absent-{name}", hooks.sqs_endpoint);
    the_same_either_way("sqs", "queueUrl", &present, &absent).await;
    // the existing queue did get the messages (the other one could not)
    let body = queued(
        &sqs,
        &present,
        "webhook.verification",
        "a verification message",
        DELIVERY,
    )
    .await;
    assert!(body.contains("\"token\""), "{body}");
}

#[tokio::test]
async fn a_pending_bus_answers_the_same_whether_it_exists_or_not() {
    let hooks = webhooks().await;
    let events = events_client(&hooks.sqs_endpoint);
    let name = format!("exists-{}", Org::new().await.id);
    let present = events
        .create_event_bus()
        .name(&name)
        .send()
        .await
        .unwrap()
        .event_bus_arn
        .unwrap();
    let absent = format!("arn:aws:events:us-east-1:123456789012:event-bus/absent-{name}");
    the_same_either_way("eventbridge", "eventBusArn", &present, &absent).await;
}

#[tokio::test]
async fn a_verified_destination_that_refuses_is_logged_with_the_aws_error_code() {
    let hooks = webhooks().await;
    let sqs = sqs_client(&hooks.sqs_endpoint);
    let org = Org::new().await;
    let name = format!("gone-{}", org.id);
    let url = sqs
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let id = subscribe(&org, json!({"type": "sqs", "queueUrl": url})).await;
    let body = queued(&sqs, &url, &id, "the verification message", DELIVERY).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    let ok = org
        .post(
            &format!("/v1/webhooks/{id}/verify"),
            json!({"token": body["token"]}),
        )
        .await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    // verified (its reader proved it), then deleted: AWS refuses, and the log says why
    sqs.delete_queue().queue_url(&url).send().await.unwrap();
    let test = org
        .post(&format!("/v1/webhooks/{id}/test"), json!({}))
        .await;
    assert_eq!(test.status, 202, "{:?}", test.body);
    let entry = eventually("the failed test attempt", DELIVERY, || async {
        let log = org.get(&format!("/v1/webhooks/{id}/deliveries")).await;
        log.body["result"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["event"] == "webhook.test" && d["attempts"].as_u64() >= Some(1))
            .cloned()
    })
    .await;
    assert_eq!(
        entry["lastError"],
        json!("SendMessage refused: AWS.SimpleQueueService.NonExistentQueue")
    );
    let sub = org.get(&format!("/v1/webhooks/{id}")).await;
    assert_eq!(sub.body["result"]["health"]["status"], "failing");
    // a rotation has no secret to rotate, a PATCH keeps the type
    let rotate = org
        .post(&format!("/v1/webhooks/{id}/rotate-secret"), json!({}))
        .await;
    assert_eq!(
        (rotate.status, rotate.body),
        (
            409,
            json!({"error": format!("webhook '{id}' delivers to sqs: IAM authenticates it, and it has no signing secret to rotate")})
        )
    );
    let patch = org
        .patch(
            &format!("/v1/webhooks/{id}"),
            json!({"url": "http://127.0.0.1:9/h"}),
        )
        .await;
    assert_eq!(
        (patch.status, patch.body),
        (
            400,
            json!({"error": "field 'url' is for HTTPS destinations; this subscription delivers to sqs: send 'destination'"})
        )
    );
}
