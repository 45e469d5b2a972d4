//! `Idempotency-Key` end to end: a repeat gets the first answer again with
//! `Idempotent-Replayed: true` and writes nothing (a re-run would answer differently: 409 for
//! an existing asset, 200 for an existing product); the key with another request is 422; a
//! key still held by a running request is 409; the created asset is delivered once.

use catalog::domain::time::Timestamp;
use catalog::domain::values::StoredValues;
use catalog::http::idempotency::fingerprint;
use catalog::http::ApiRequest;
use catalog::store::idempotency::{Claimed, Guard};
use catalog::store::items::{EntityItem, EntityKind};
use catalog::store::writes::{Expect, Origin, TreeWrite};
use catalog_e2e::webhooks::{webhooks, Receiver};
use catalog_e2e::{stack, Org, Request, Response};
use serde_json::{json, Value};
use std::time::Duration;

fn keyed(org: &Org, method: &str, path: &str, key: &str, body: Value) -> Request {
    Request::new(method, path)
        .bearer(&org.key)
        .header("idempotency-key", key)
        .json(body)
}

/// The id of an API key `cat_<id>_<secret>`.
fn key_id(key: &str) -> &str {
    key.split('_').nth(1).expect("cat_<id>_<secret>")
}

fn same_answer(first: &Response, again: &Response) {
    assert_eq!((again.status, &again.body), (first.status, &first.body));
    assert_eq!(first.header("idempotent-replayed"), None);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
}

#[tokio::test]
async fn a_repeated_request_gets_the_first_answer_and_writes_nothing() {
    webhooks().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": receiver.url(), "topics": ["asset.created"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);

    let asset = json!({"identifier": "logo", "url": "https://img.example.com/logo.png"});
    let first = keyed(&org, "POST", "/v1/assets", "k-asset", asset.clone())
        .send()
        .await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    receiver.wait_for(1, Duration::from_secs(60)).await;
    let again = keyed(&org, "POST", "/v1/assets", "k-asset", asset.clone())
        .send()
        .await;
    same_answer(&first, &again);
    assert_eq!(again.header("etag"), first.header("etag"));
    let got = receiver.wait_for_exactly(1, Duration::from_secs(60)).await;
    assert_eq!(got[0].json["event"], "asset.created");
    // without the key, the same request is a conflict: the replay did not run it
    assert_eq!(org.post("/v1/assets", asset.clone()).await.status, 409);

    let tree = json!({"name": "Chair", "variants": [{"identifier": "v1"}]});
    let first = keyed(&org, "PATCH", "/v1/products/p1", "k-patch", tree.clone())
        .send()
        .await;
    assert_eq!(first.status, 201);
    let again = keyed(&org, "PATCH", "/v1/products/p1", "k-patch", tree.clone())
        .send()
        .await;
    same_answer(&first, &again);

    let bulk = json!([{"identifier": "p2"}, {"identifier": "p3", "name": "Stool"}]);
    let first = keyed(&org, "PATCH", "/v1/products", "k-bulk", bulk.clone())
        .send()
        .await;
    assert_eq!(first.status, 200);
    assert_eq!(first.body["result"][1]["status"], 201);
    let again = keyed(&org, "PATCH", "/v1/products", "k-bulk", bulk.clone())
        .send()
        .await;
    same_answer(&first, &again);

    // the same key with another body, path or method
    let reused = json!({"error": "Idempotency-Key: already used with another method, path, body or API key"});
    for r in [
        keyed(
            &org,
            "PATCH",
            "/v1/products/p1",
            "k-patch",
            json!({"name": "Sofa"}),
        ),
        keyed(&org, "PATCH", "/v1/products/p9", "k-patch", tree.clone()),
        keyed(&org, "POST", "/v1/assets", "k-patch", tree.clone()),
    ] {
        let r = r.send().await;
        assert_eq!((r.status, &r.body), (422, &reused));
    }
    assert_eq!(
        org.get("/v1/products/p1").await.body["result"]["name"],
        "Chair"
    );
    // keys are per organization
    let other = Org::new().await;
    let r = keyed(&other, "PATCH", "/v1/products/p1", "k-patch", tree)
        .send()
        .await;
    assert_eq!(r.status, 201);

    let r = keyed(
        &org,
        "PATCH",
        "/v1/products/p1",
        &"k".repeat(256),
        json!({}),
    )
    .send()
    .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "header 'Idempotency-Key' must be 1 to 255 printable ASCII characters"})
        )
    );
}

#[tokio::test]
async fn a_key_held_by_a_running_request_is_409() {
    webhooks().await;
    let org = Org::new().await;
    let body = json!({"name": "Lamp"});
    // A request holding the key, as a running function would.
    let request = ApiRequest {
        method: "PATCH".into(),
        path: "/v1/products/lamp".into(),
        content_type: Some("application/json".into()),
        idempotency_key: Some("k-held".into()),
        body: serde_json::to_vec(&body).unwrap(),
        ..Default::default()
    };
    let guard = Guard::new(&org.id, "k-held", "ik_test");
    let store = stack().await.store();
    assert_eq!(
        store
            .claim_idempotency_key(&guard, &fingerprint(key_id(&org.key), &request))
            .await
            .unwrap(),
        Claimed::Mine
    );
    let r = keyed(&org, "PATCH", "/v1/products/lamp", "k-held", body)
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "Idempotency-Key: a request with this key is still in flight; retry later"})
        )
    );
    assert_eq!(
        org.get("/v1/products/lamp").await.status,
        404,
        "nothing written"
    );

    // The holder writes and crashes before saving its answer: its write moved the record
    // to `written` in the same transaction, so a repeat neither runs again nor waits.
    let item = EntityItem::new(
        &org.id,
        EntityKind::Product,
        "lamp",
        (None, None),
        "Lamp",
        StoredValues::new(),
        Timestamp::now(),
    );
    let mut write = TreeWrite::new();
    write.put(&org.id, &item, Expect::Absent).unwrap();
    let origin = Origin {
        actor: None,
        guard: Some(&guard),
    };
    store.commit(&write, &origin).await.unwrap();
    let r = keyed(
        &org,
        "PATCH",
        "/v1/products/lamp",
        "k-held",
        json!({"name": "Lamp"}),
    )
    .send()
    .await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "Idempotency-Key: the request with this key was applied but its answer was lost; read the resource for the result"})
        )
    );
    assert_eq!(org.get("/v1/products/lamp").await.status, 200);
}

/// A stored answer is replayed only to the key that made the request, and a secret it
/// carried is not kept: before, a `settings:manage` key repeating an administrator's
/// `POST /api-keys` got the new full-scope key in plaintext.
#[tokio::test]
async fn a_replay_is_bound_to_its_api_key_and_keeps_no_secret() {
    use catalog::auth::Scope;
    let org = Org::new().await;
    let settings_only = org.key_with(&[Scope::SettingsManage]).await;
    let body =
        json!({"name": "ci", "scopes": ["catalog:read", "catalog:write", "settings:manage"]});
    let first = keyed(&org, "POST", "/v1/api-keys", "k-key", body.clone())
        .send()
        .await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    let secret = first.body["result"]["key"].as_str().unwrap().to_string();
    assert!(secret.starts_with("cat_"));
    let other = Request::new("POST", "/v1/api-keys")
        .bearer(&settings_only)
        .header("idempotency-key", "k-key")
        .json(body.clone())
        .send()
        .await;
    assert_eq!(
        (
            other.status,
            &other.body,
            other.header("idempotent-replayed")
        ),
        (
            422,
            &json!({"error": "Idempotency-Key: already used with another method, path, body or API key"}),
            None
        )
    );
    let again = keyed(&org, "POST", "/v1/api-keys", "k-key", body)
        .send()
        .await;
    let mut expected = first.body.clone();
    expected["result"]["key"] = Value::Null;
    assert_eq!((again.status, &again.body), (201, &expected));
    assert_eq!(again.header("idempotent-replayed"), Some("true"));

    let hook = json!({"url": "http://127.0.0.1:9/h", "topics": ["product.created"]});
    let first = keyed(&org, "POST", "/v1/webhooks", "k-hook", hook.clone())
        .send()
        .await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    let hook_secret = first.body["result"]["secret"].as_str().unwrap().to_string();
    let again = keyed(&org, "POST", "/v1/webhooks", "k-hook", hook)
        .send()
        .await;
    assert_eq!(again.body["result"]["secret"], Value::Null);
    assert_eq!(again.body["result"]["id"], first.body["result"]["id"]);

    // a console sign-in link is a credential too: before, its token was kept and replayed
    let first = keyed(&org, "POST", "/v1/console-sessions", "k-link", json!({}))
        .send()
        .await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    let link = first.body["result"]["url"].as_str().unwrap().to_string();
    assert!(link.contains("#token=csl_"), "{link}");
    let again = keyed(&org, "POST", "/v1/console-sessions", "k-link", json!({}))
        .send()
        .await;
    let mut expected = first.body.clone();
    expected["result"]["url"] = Value::Null;
    assert_eq!((again.status, &again.body), (201, &expected));
    assert_eq!(again.header("idempotent-replayed"), Some("true"));

    // nothing at rest holds either secret
    let items = stack().await.partition(&format!("O#{}#IK", org.id)).await;
    assert_eq!(items.len(), 3);
    let stored = format!("{items:?}");
    assert!(!stored.contains(&secret[secret.len() - 20..]));
    assert!(!stored.contains(&hook_secret[hook_secret.len() - 20..]));
    assert!(!stored.contains(&link[link.len() - 20..]));
}

/// decisions.md: a precondition header the server cannot read as printable ASCII is 400,
/// never ignored. UTF-8 text that is not ASCII, a control character (which no HTTP header
/// value may hold, so lambda_http cannot even build the request) and a byte that is not
/// UTF-8 (API Gateway writes it as a `\xNN` escape, which is not JSON) all answer our 400,
/// and nothing is written.
#[tokio::test]
async fn unreadable_precondition_headers_are_400_and_nothing_is_written() {
    let org = Org::new().await;
    let key_error =
        json!({"error": "header 'Idempotency-Key' must be 1 to 255 printable ASCII characters"});
    let match_error = json!({"error": "header 'If-Match' must be printable ASCII characters"});
    let patch = |header: &str, value: &str| {
        Request::new("PATCH", "/v1/products/u1")
            .bearer(&org.key)
            .header(header, value)
            .json(json!({"name": "U"}))
    };
    for (header, value, error) in [
        ("idempotency-key", "ключ-1", &key_error),
        ("if-match", "\"é\"", &match_error),
        ("idempotency-key", "k\u{1}", &key_error),
        ("if-match", "\"a\u{7f}\"", &match_error),
        ("idempotency-key", "k-NOT-UTF8", &key_error),
        ("if-match", "\"NOT-UTF8\"", &match_error),
    ] {
        let r = patch(header, value)
            .try_send_edited(|event| event.replace("NOT-UTF8", "\\xEEt"))
            .await
            .unwrap_or_else(|e| panic!("{header}: {value:?}: no answer of ours: {e}"));
        assert_eq!((r.status, &r.body), (400, error), "{header}: {value:?}");
    }
    assert_eq!(
        org.get("/v1/products/u1").await.status,
        404,
        "nothing written"
    );
    // on a DELETE too
    assert_eq!(org.patch("/v1/products/u2", json!({})).await.status, 201);
    let r = Request::new("DELETE", "/v1/products/u2")
        .bearer(&org.key)
        .header("if-match", "\"ü\"")
        .send()
        .await;
    assert_eq!((r.status, &r.body), (400, &match_error));
    assert_eq!(org.get("/v1/products/u2").await.status, 200, "not deleted");
}

/// A transient refusal is not the request's answer: before, a bulk write refused for the
/// organization's rate (429) was kept under its `Idempotency-Key` for 24 h, so the retry its
/// `Retry-After` asked for got the 429 again, replayed (and without `Retry-After`), forever.
#[tokio::test]
async fn a_rate_limit_refusal_is_not_kept_under_the_idempotency_key() {
    webhooks().await;
    let org = Org::new().await;
    let lines = |from: usize| -> Value {
        json!((from..from + 40)
            .map(|i| json!({"identifier": format!("rl{i}")}))
            .collect::<Vec<_>>())
    };
    let bulk = |key: &str, body: Value| {
        Request::new("PATCH", "/v1/products")
            .bearer(&org.key)
            .header("idempotency-key", key)
            .json(body)
    };
    // 40 lines cost 4 of the burst of 5 (`@limited`: 1 per second)
    let first = catalog_e2e::send_to("products@limited", bulk("k-rl-1", lines(0))).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    let refused = catalog_e2e::send_to("products@limited", bulk("k-rl-2", lines(40))).await;
    assert_eq!(refused.status, 429, "{:?}", refused.body);
    assert_eq!(refused.header("idempotent-replayed"), None);
    assert_eq!(org.get("/v1/products/rl40").await.status, 404);
    // The retry, as Retry-After says: run, never replayed (a busy bucket may refuse it
    // again, each time with a fresh Retry-After, until the deadline).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut wait = refused
        .header("retry-after")
        .expect("Retry-After")
        .to_string();
    let retried = loop {
        tokio::time::sleep(Duration::from_secs(wait.parse().expect("seconds"))).await;
        let r = catalog_e2e::send_to("products@limited", bulk("k-rl-2", lines(40))).await;
        assert_eq!(r.header("idempotent-replayed"), None, "{:?}", r.body);
        if r.status != 429 || std::time::Instant::now() > deadline {
            break r;
        }
        wait = r.header("retry-after").expect("Retry-After").to_string();
    };
    assert_eq!(retried.status, 200, "{:?}", retried.body);
    assert_eq!(org.get("/v1/products/rl79").await.status, 200);
    // and its answer, a final one, is the one kept
    let again = catalog_e2e::send_to("products@limited", bulk("k-rl-2", lines(40))).await;
    if again.status != 429 {
        same_answer(&retried, &again);
    }
}
