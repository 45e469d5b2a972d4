//! Bad input, concurrency and storage faults end to end, through the real binaries: limits
//! answer 4xx with a clear error, concurrent writers lose nothing, and an unreachable or
//! throttled DynamoDB is a 503 with `Retry-After`, never a 500 or half a transaction.

use catalog_e2e::{faults, send_to, Org, Request, Response};
use serde_json::json;

#[tokio::test]
async fn oversized_mistyped_and_deeply_nested_bodies_are_refused() {
    let org = Org::new().await;
    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(1024 * 1024));
    let r = Request::new("PATCH", "/v1/products/p")
        .bearer(&org.key)
        .raw_body("application/json", &big)
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            413,
            json!({"error": "request body is larger than 1048576 bytes"})
        )
    );
    let r = Request::new("POST", "/v1/assets")
        .bearer(&org.key)
        .raw_body("text/plain", "{\"identifier\": \"a\"}")
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            415,
            json!({"error": "request body must be sent with Content-Type: application/json"})
        )
    );
    let nested = format!(
        "{{\"values\": {}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let r = Request::new("PATCH", "/v1/products/p")
        .bearer(&org.key)
        .raw_body("application/json", &nested)
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "request body nests deeper than 32 levels"})
        )
    );
    let r = Request::new("PATCH", "/v1/products/p")
        .bearer(&org.key)
        .raw_body("application/json", "{\"name\": ")
        .send()
        .await;
    assert_eq!(r.status, 400);
    assert!(r.body["error"]
        .as_str()
        .unwrap()
        .starts_with("request body is not valid JSON"));
    assert_eq!(
        org.get("/v1/products/p").await.status,
        404,
        "nothing written"
    );
}

#[tokio::test]
async fn bad_identifiers_are_400_and_far_pages_answer_correctly() {
    let org = Org::new().await;
    let long = "x".repeat(256);
    for (path, error) in [
        (
            "/v1/products/a%01b".to_string(),
            "product identifier must not contain control characters",
        ),
        (
            "/v1/products/a%2Fb".to_string(),
            "product identifier must not contain '/'",
        ),
        (
            format!("/v1/products/{long}"),
            "product identifier must be at most 255 characters",
        ),
        (
            "/v1/assets/%20a".to_string(),
            "asset identifier must not start or end with a space",
        ),
    ] {
        let r = org.patch(&path, json!({"name": "x"})).await;
        assert_eq!(
            (r.status, r.body),
            (400, json!({ "error": error })),
            "{path}"
        );
    }
    for p in ["a", "b", "c"] {
        assert_eq!(
            org.patch(&format!("/v1/products/{p}"), json!({}))
                .await
                .status,
            201
        );
    }
    let r = org.get("/v1/products?limit=200&page=4294967295").await;
    assert_eq!(
        (r.status, r.body),
        (
            200,
            json!({"result": [], "pagination": {"limit": 200, "page": 4294967295u64, "totalPages": 1, "totalResults": 3, "nextCursor": null}})
        )
    );
    let r = org.get("/v1/products?page=4294967296").await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "query parameter 'page' must be an integer from 1 to 4294967295"})
        )
    );
}

#[tokio::test]
async fn fifty_concurrent_patches_of_different_attributes_all_land() {
    let org = Org::new().await;
    for i in 0..50 {
        org.define(
            json!({"displayName": format!("a{i}"), "key": format!("a{i}"),
            "targetEntity": "product", "type": "number"}),
        )
        .await;
    }
    assert_eq!(org.patch("/v1/products/hot", json!({})).await.status, 201);
    // Ten processes of the products function, as ten warm Lambda instances would be: each
    // takes one request at a time, so the writers really race on the product item.
    let sends = (0..50).map(|i| {
        let req = Request::new("PATCH", "/v1/products/hot")
            .bearer(&org.key)
            .json(json!({"values": {format!("a{i}"): i}}));
        async move { send_to(&format!("products@instance{}", i % 10), req).await }
    });
    let started = std::time::Instant::now();
    let results = futures_util::future::join_all(sends).await;
    // The slowest PATCH took at most this; the retry budget is 5 s (shown with --nocapture).
    println!("50 racing PATCHes done in {:?}", started.elapsed());
    let statuses: Vec<u16> = results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        vec![200; 50],
        "{:?}",
        results.iter().find(|r| r.status != 200).map(|r| &r.body)
    );
    let attrs = org.get("/v1/products/hot").await.body["result"]["attributes"].clone();
    for i in 0..50 {
        assert_eq!(attrs[format!("product.a{i}")][0]["data"], json!(i), "a{i}");
    }
    assert_eq!(attrs.as_object().unwrap().len(), 50);
}

#[tokio::test]
async fn unreachable_storage_is_503_with_retry_after_never_500() {
    let org = Org::new().await;
    for req in [
        Request::new("GET", "/v1/products"),
        Request::new("GET", "/v1/products/p"),
        Request::new("PATCH", "/v1/products/p").json(json!({"name": "P"})),
    ] {
        let r = send_to("products@nodb", req.bearer(&org.key)).await;
        assert_unavailable(&r);
    }
    assert_eq!(
        org.get("/v1/products/p").await.status,
        404,
        "nothing written"
    );
}

/// DynamoDB throttling, injected by a proxy in front of DynamoDB Local: the SDK retries a
/// throttled request twice; a write whose transaction stays throttled answers 503 with
/// `Retry-After` and writes nothing; a write of several transactions cut after the first
/// leaves a whole tree (every written SKU under its written variant), and repeating the
/// request completes it.
#[tokio::test]
async fn throttled_storage_is_503_with_retry_after_and_never_half_a_transaction() {
    const TRANSACT: &str = "TransactWriteItems";
    let db = faults::faulty_db().await;
    let _exclusive = db.exclusive.lock().await;
    let org = Org::new().await;
    org.define(
        json!({"displayName": "n", "key": "n", "targetEntity": "product", "type": "number"}),
    )
    .await;
    assert_eq!(
        org.patch("/v1/products/t", json!({"values": {"n": 1}}))
            .await
            .status,
        201
    );
    let before = org.get("/v1/products/t").await.body;
    let patch = |n: u32| {
        Request::new("PATCH", "/v1/products/t")
            .bearer(&org.key)
            .json(json!({"values": {"n": n}}))
    };

    db.throttle(TRANSACT, 0, faults::ALWAYS);
    let r = send_to("products@faultydb", patch(2)).await;
    assert_unavailable(&r);
    assert_eq!(
        db.seen(TRANSACT),
        3,
        "one request and the SDK's two retries"
    );
    assert_eq!(
        org.get("/v1/products/t").await.body,
        before,
        "nothing written"
    );

    db.throttle(TRANSACT, 0, 2);
    let r = send_to("products@faultydb", patch(3)).await;
    assert_eq!((r.status, db.seen(TRANSACT)), (200, 3), "{:?}", r.body);
    let after = org.get("/v1/products/t").await.body;
    assert_eq!(
        after["result"]["attributes"]["product.n"][0]["data"],
        json!(3)
    );

    // 150 SKUs: 1 product + 1 variant + 150 SKUs with their identity items, three transactions.
    let skus: Vec<_> = (0..150)
        .map(|i| json!({"identifier": format!("big-s{i}")}))
        .collect();
    let body = json!({"variants": [{"identifier": "big-v", "skus": skus}]});
    db.throttle(TRANSACT, 1, faults::ALWAYS);
    let r = send_to(
        "products@faultydb",
        Request::new("PATCH", "/v1/products/big")
            .bearer(&org.key)
            .json(body.clone()),
    )
    .await;
    // part of it is stored: the answer says so (tests/tests/integrity.rs has the details)
    assert_eq!(
        (
            r.status,
            r.header("retry-after"),
            r.header("catalog-partially-applied")
        ),
        (503, Some("1"), Some("true")),
        "{:?}",
        r.body
    );
    db.reset();
    let tree = org.get("/v1/products/big?include=variants,skus").await;
    assert_eq!(
        tree.status, 200,
        "the first transaction, product first, landed"
    );
    let written = tree.body["result"]["variants"][0]["skus"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(tree.body["result"]["variants"][0]["identifier"], "big-v");
    assert!(
        (1..150).contains(&written),
        "{written} SKUs in the first transaction"
    );
    for i in 0..written {
        let sku = org.get(&format!("/v1/skus/big-s{i}")).await;
        assert_eq!(
            (sku.status, &sku.body["result"]["variant"]["identifier"]),
            (200, &json!("big-v"))
        );
    }
    let r = org.patch("/v1/products/big", body).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let tree = org.get("/v1/products/big?include=variants,skus").await;
    assert_eq!(
        tree.body["result"]["variants"][0]["skus"]
            .as_array()
            .map(Vec::len),
        Some(150)
    );
}

/// The storage-unavailable answer: 503, the decided body, `Retry-After: 1`.
fn assert_unavailable(r: &Response) {
    assert_eq!(
        (r.status, &r.body, r.header("retry-after")),
        (
            503,
            &json!({"error": "service temporarily unavailable, retry later"}),
            Some("1")
        )
    );
}

/// Client input that would become part of a DynamoDB key is checked before any read: a
/// `search` key, a `completeness_profile`, a `values` key and a cursor's position too long
/// for a key are 400 naming the parameter (or field) and the limit, never a 500.
#[tokio::test]
async fn values_too_long_for_a_storage_key_are_400_naming_the_parameter_and_limit() {
    let org = Org::new().await;
    let long = "x".repeat(1100);
    let shown = format!("{}…", "x".repeat(32));
    let filters = json!({ format!("product.{long}"): [{"operator": "EQUALS", "value": "x"}] });
    let search = format!(
        "/v1/products?search={}",
        catalog_e2e::encode(&filters.to_string())
    );
    let cursor = catalog::http::cursor::CursorKey::new(None, catalog_e2e::TABLE).seal(
        &org.id,
        "deletions?entity_type=product&updated_after=",
        &format!("2026-01-01T00:00:00.000Z#{long}"),
    );
    let rule = "at most 64 characters matching [a-z][a-z0-9_]{0,63}";
    let cases = [
        (
            org.get(&search).await,
            format!("query parameter 'search': filter 'product.{}…': an attribute key is {rule}", "x".repeat(24)),
        ),
        (
            org.get(&format!("/v1/products?completeness_profile={long}")).await,
            "query parameter 'completeness_profile': completeness profile identifier must be at most 255 characters".to_string(),
        ),
        (
            org.put(
                "/v1/bundles/b1",
                json!({"name": "B", "items": [{"sku": "s1", "quantity": 1}], "values": {&long: "x"}}),
            )
            .await,
            format!("values: '{shown}' is not an attribute key: keys are {rule}"),
        ),
        (
            org.patch("/v1/products/p1", json!({"values": {&long: "x"}}))
                .await,
            format!("values: '{shown}' is not an attribute key: keys are {rule}"),
        ),
        (
            org.get(&format!("/v1/deletions?entity_type=product&cursor={cursor}"))
                .await,
            "query parameter 'cursor': a cursor's position is at most 400 bytes; this is not a cursor of this list".to_string(),
        ),
    ];
    for (r, error) in cases {
        assert_eq!((r.status, r.body), (400, json!({ "error": error })));
    }
    assert_eq!(
        org.get("/v1/bundles/b1").await.status,
        404,
        "nothing written"
    );
    assert_eq!(
        org.get("/v1/products/p1").await.status,
        404,
        "nothing written"
    );
}

/// A bulk call never outlives its function: before, a bulk PATCH slowed by storage ran past
/// the function's timeout, and the client got API Gateway's bare 503 with no line statuses,
/// not knowing which lines were written. Now no write starts after the call's write budget
/// (`@deadline`: 3 s, one transaction at a time): the transaction the proxy holds past it
/// commits, and every line not written by then answers 503 in its own status, with
/// `Retry-After`, so the answer says exactly what was written.
#[tokio::test]
async fn a_bulk_write_out_of_time_answers_exactly_what_it_wrote() {
    const TRANSACT: &str = "TransactWriteItems";
    let db = faults::faulty_db().await;
    let _exclusive = db.exclusive.lock().await;
    let org = Org::new().await;
    let lines: Vec<_> = (0..300)
        .map(|i| json!({"identifier": format!("late-{i:03}")}))
        .collect();
    db.close_gate(TRANSACT);
    let started = std::time::Instant::now();
    let call = tokio::spawn(send_to(
        "products@deadline",
        Request::new("PATCH", "/v1/products")
            .bearer(&org.key)
            .json(json!(lines)),
    ));
    // The first transaction waits at the proxy (unless the call's budget ran out before it
    // was sent, on a very busy machine: then it answers with nothing written).
    let held = tokio::select! {
        _ = db.holding(1) => true,
        _ = async { while !call.is_finished() { tokio::time::sleep(std::time::Duration::from_millis(20)).await } } => false,
    };
    // past the budget (counted from when the function received the call)
    tokio::time::sleep_until((started + std::time::Duration::from_secs(4)).into()).await;
    db.release();
    let r = call.await.expect("the call");
    db.reset();
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.header("retry-after"), Some("1"));
    let result = r.body["result"].as_array().expect("line statuses");
    assert_eq!(result.len(), 300);
    let mut written = std::collections::BTreeSet::new();
    let mut late = 0;
    for (i, line) in result.iter().enumerate() {
        assert_eq!(line["line"], json!(i + 1));
        match line["status"].as_u64() {
            Some(201) => {
                written.insert(line["identifier"].as_str().unwrap().to_string());
            }
            Some(503) => {
                late += 1;
                assert_eq!(
                    line["error"],
                    json!("not written: the request ran out of time before this line's write started; send it again"),
                    "{line}"
                );
            }
            _ => panic!("line {line}"),
        }
    }
    assert!(late > 0, "the budget ran out before the last transaction");
    if held {
        assert!(!written.is_empty(), "the held transaction committed");
    }
    // exactly the lines answered 201 are stored
    let mut stored = std::collections::BTreeSet::new();
    for page in 1..=2 {
        let r = org
            .get(&format!("/v1/products?limit=200&page={page}"))
            .await;
        assert_eq!(r.status, 200);
        for p in r.body["result"].as_array().unwrap() {
            stored.insert(p["identifier"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(stored, written);
}

/// Every route checks its query string against the parameters its OpenAPI operation lists,
/// before its handler runs: an unknown parameter on a write is refused with nothing written
/// (routes whose handlers read no parameter used to take it and write), and before an
/// `Idempotency-Key` is claimed, so the corrected request under the same key runs.
#[tokio::test]
async fn unknown_query_parameters_are_refused_before_anything_is_written() {
    let org = Org::new().await;
    let unknown = json!({"error": "unknown query parameter 'dryRun'"});
    let attribute =
        json!({"key": "size", "displayName": "Size", "targetEntity": "product", "type": "text"});
    let writes = [
        ("POST", "/v1/attributes?dryRun=true", attribute.clone()),
        (
            "PATCH",
            "/v1/products/q1?dryRun=true",
            json!({"name": "Q1"}),
        ),
        (
            "POST",
            "/v1/assets?dryRun=true",
            json!({"identifier": "a1", "name": "A1", "url": "https://example.com/a1.png"}),
        ),
        (
            "PUT",
            "/v1/categories/c1?dryRun=true",
            json!({"name": "C1"}),
        ),
    ];
    for (method, path, body) in writes {
        let r = Request::new(method, path)
            .bearer(&org.key)
            .json(body)
            .send()
            .await;
        assert_eq!((r.status, &r.body), (400, &unknown), "{method} {path}");
    }
    for path in [
        "/v1/attributes/product.size",
        "/v1/products/q1",
        "/v1/assets/a1",
        "/v1/categories/c1",
    ] {
        assert_eq!(org.get(path).await.status, 404, "{path} was written");
    }
    // a repeated one is named too
    let r = org.get("/v1/attributes?limit=1&limit=2").await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "query parameter 'limit' is given more than once"})
        )
    );

    // refused before the key is claimed: the same key then carries the corrected request
    let send = |path: &str| {
        Request::new("POST", path)
            .bearer(&org.key)
            .header("Idempotency-Key", "k-attribute-1")
            .json(attribute.clone())
            .send()
    };
    let r = send("/v1/attributes?dryRun=true").await;
    assert_eq!((r.status, &r.body), (400, &unknown));
    let r = send("/v1/attributes").await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.body["result"]["key"], "product.size");
}
