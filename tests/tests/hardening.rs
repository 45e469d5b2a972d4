//! Bad input, concurrency and storage faults end to end, through the real binaries: limits
//! answer 4xx with a clear error, concurrent writers lose nothing, and an unreachable
//! DynamoDB is a 503 with `Retry-After`, never a 500.

use catalog_e2e::{send_to, Org, Request};
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
            json!({"result": [], "pagination": {"limit": 200, "page": 4294967295u64, "totalPages": 1, "totalResults": 3}})
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
    let results = futures_util::future::join_all(sends).await;
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
        assert_eq!(
            (r.status, r.body.clone(), r.header("retry-after")),
            (
                503,
                json!({"error": "service temporarily unavailable, retry later"}),
                Some("1")
            )
        );
    }
    assert_eq!(
        org.get("/v1/products/p").await.status,
        404,
        "nothing written"
    );
}
