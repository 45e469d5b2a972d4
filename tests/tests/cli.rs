//! The operator CLI against DynamoDB Local: what it creates works through the real function.

use catalog_e2e::{binary, stack, Request};
use serde_json::json;
use std::process::Command;

async fn admin(args: &[&str]) -> (bool, String) {
    let env = stack().await.aws_env();
    let out = Command::new(binary("catalog-admin"))
        .args(args)
        .envs(env)
        .output()
        .expect("catalog-admin runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// `create-key` prints `key id <id> scopes <list>` then the key itself.
fn key_from(output: &str) -> String {
    output.lines().nth(1).expect("key line").trim().to_string()
}

#[tokio::test]
async fn cli_creates_organizations_and_keys_that_authenticate() {
    let (ok, out) = admin(&["create-table"]).await;
    assert!(ok && out.contains("already exists"), "{out}");
    let (ok, out) = admin(&["create-org", "--name", "Acme"]).await;
    assert!(ok, "{out}");
    let org = out.split_whitespace().nth(1).expect("org id").to_string();
    assert_eq!(org.len(), 6);

    let (ok, out) = admin(&[
        "create-key",
        "--org",
        &org,
        "--scopes",
        "catalog:read",
        "--name",
        "reader",
    ])
    .await;
    assert!(ok && out.starts_with("key id "), "{out}");
    let reader = key_from(&out);
    let r = Request::new("GET", "/v1/products/none")
        .bearer(&reader)
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": "product 'none' not found"}))
    );
    let r = Request::new("PATCH", "/v1/products/none")
        .bearer(&reader)
        .json(json!({}))
        .send()
        .await;
    assert_eq!(r.status, 403);

    let (ok, out) = admin(&["list-keys", "--org", &org]).await;
    let key_id = &reader[4..16];
    assert!(
        ok && out.contains(key_id) && out.contains("catalog:read") && out.contains("active"),
        "{out}"
    );

    let (_, out) = admin(&["create-key", "--org", &org]).await;
    let revoked = key_from(&out);
    let (ok, _) = admin(&["revoke-key", "--org", &org, "--key", &revoked[4..16]]).await;
    assert!(ok);
    assert_eq!(
        Request::new("GET", "/v1/products/x")
            .bearer(&revoked)
            .send()
            .await
            .status,
        401
    );

    let (ok, _) = admin(&["disable-api", "--org", &org]).await;
    assert!(ok);
    let (_, out) = admin(&["create-key", "--org", &org]).await;
    let r = Request::new("GET", "/v1/products/x")
        .bearer(&key_from(&out))
        .send()
        .await;
    assert_eq!(r.status, 403);

    let (ok, out) = admin(&["create-key", "--org", "nope00"]).await;
    assert!(
        !ok && out.contains("organization 'nope00' does not exist"),
        "{out}"
    );
    let (ok, out) = admin(&["frobnicate"]).await;
    assert!(!ok && out.contains("unknown command"), "{out}");
}

/// The admin function (the deployed stack's `aws lambda invoke` path) against the same
/// table: a bootstrapped organization's key authenticates, a revoked key no longer does
/// (a fresh process of the API reads it), and refusals are JSON errors.
#[tokio::test]
async fn the_admin_function_bootstraps_organizations_and_manages_keys() {
    let invoke = |event| catalog_e2e::invoke("admin", event);
    let first = invoke(json!({"op": "bootstrap", "name": "Acme", "keyName": "first"})).await;
    let (org, key) = (
        first["org"].as_str().expect("org id").to_string(),
        first["key"].as_str().expect("key").to_string(),
    );
    assert_eq!(
        (&first["name"], &first["scopes"]),
        (
            &json!("Acme"),
            &json!(["catalog:read", "catalog:write", "settings:manage"])
        )
    );
    assert!(key.starts_with(&format!("cat_{}", first["keyId"].as_str().unwrap())));
    let r = Request::new("GET", "/v1/products/none")
        .bearer(&key)
        .send()
        .await;
    assert_eq!(r.status, 404);

    let reader =
        invoke(json!({"op": "create-key", "org": org, "name": "reader", "scopes": "catalog:read"}))
            .await;
    assert_eq!(reader["scopes"], json!(["catalog:read"]));
    let listed = invoke(json!({"op": "list-keys", "org": org})).await;
    let names: Vec<&str> = listed["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"first") && names.contains(&"reader"));

    let revoked = invoke(json!({"op": "revoke-key", "org": org, "key": reader["keyId"]})).await;
    assert_eq!(revoked, json!({"keyId": reader["keyId"], "revoked": true}));
    let r = catalog_e2e::send_to(
        "products@adminfresh",
        Request::new("GET", "/v1/products/none").bearer(reader["key"].as_str().unwrap()),
    )
    .await;
    assert_eq!(r.status, 401);

    assert_eq!(
        invoke(json!({"op": "disable-api", "org": org})).await,
        json!({"org": org, "apiEnabled": false})
    );
    let r = catalog_e2e::send_to(
        "products@adminfresh2",
        Request::new("GET", "/v1/products/none").bearer(&key),
    )
    .await;
    assert_eq!(r.status, 403);

    assert_eq!(
        invoke(json!({"op": "create-key", "org": "nosuch"})).await,
        json!({"error": "storage error: organization 'nosuch' does not exist"})
    );
    assert_eq!(
        invoke(json!({"op": "revoke-key", "org": org, "key": "nosuchkey"})).await,
        json!({"error": "not found, or already exists"})
    );
    assert_eq!(
        invoke(json!({"op": "bootstrap", "name": "x", "scopes": "admin"})).await,
        json!({"error": "unknown scope 'admin' (catalog:read, catalog:write, settings:manage, all)"})
    );
    let bad = invoke(json!({"op": "drop-table"})).await;
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .starts_with("invalid event: unknown variant `drop-table`"),
        "{bad}"
    );
}
