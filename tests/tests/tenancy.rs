//! Tenants cannot reach or hurt each other (issue 27's findings), through the real binaries:
//! cursors cannot be forged outside local mode, a process without a cursor secret refuses
//! to start.

use catalog_e2e::{binary, encode, send_to, Org, Request, TABLE};
use serde_json::json;
use std::process::Command;

/// Before, the template set no `CATALOG_CURSOR_KEY` and cursors were sealed with a hash of
/// the table name: anyone who knew it could forge one.
#[tokio::test]
async fn cursors_sealed_with_the_table_name_are_refused_outside_local_mode() {
    let org = Org::new().await;
    for id in ["a", "b", "c"] {
        assert_eq!(
            org.patch(&format!("/v1/products/{id}"), json!({}))
                .await
                .status,
            201
        );
    }
    let first = send_to(
        "products@strict",
        Request::new("GET", "/v1/products?limit=1").bearer(&org.key),
    )
    .await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    let next = first.body["pagination"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    let page = send_to(
        "products@strict",
        Request::new(
            "GET",
            &format!("/v1/products?limit=1&cursor={}", encode(&next)),
        )
        .bearer(&org.key),
    )
    .await;
    assert_eq!(page.body["result"][0]["identifier"], json!("b"));
    // the same list's cursor sealed with the key local mode derives from the table name (as
    // every deployment did): a local-mode process hands it out
    let local = org.get("/v1/products?limit=1").await;
    let forged = local.body["pagination"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    let r = send_to(
        "products@strict",
        Request::new(
            "GET",
            &format!("/v1/products?limit=1&cursor={}", encode(&forged)),
        )
        .bearer(&org.key),
    )
    .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "query parameter 'cursor': not a cursor of this list (edited, or made for other filters)"})
        )
    );
}

#[test]
fn a_function_outside_local_mode_without_a_cursor_secret_refuses_to_start() {
    let out = Command::new(binary("products"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_REGION", "us-east-1")
        .env("CATALOG_TABLE", TABLE)
        .env("CATALOG_LOCAL_MODE", "0")
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:1")
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to start: CATALOG_CURSOR_KEY must be set to a secret of at least 32 bytes outside local mode"),
        "{stderr}"
    );
}
