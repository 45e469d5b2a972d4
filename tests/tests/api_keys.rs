//! `/api-keys` end to end: a key made through the API works with exactly its scopes, is
//! listed without its secret, records its last use, and once revoked is refused at once by
//! the function that revoked it; a key cannot grant scopes it lacks or revoke itself.

use catalog::auth::Scope;
use catalog_e2e::webhooks::eventually;
use catalog_e2e::{Org, Request};
use serde_json::json;
use std::time::Duration;

const UNAUTHORIZED: &str = "Unauthorized - missing or invalid authentication";

fn with(key: &str, method: &str, path: &str) -> Request {
    Request::new(method, path).bearer(key)
}

#[tokio::test]
async fn a_key_made_through_the_api_works_with_exactly_its_scopes_until_revoked() {
    let org = Org::new().await;
    let r = org
        .post(
            "/v1/api-keys",
            json!({"name": "ERP reader", "scopes": ["catalog:read", "catalog:read"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let made = r.body["result"].clone();
    let key = made["key"].as_str().unwrap().to_string();
    let id = made["id"].as_str().unwrap().to_string();
    let parsed = catalog::auth::apikey::parse(&key).expect("a well-formed key");
    assert_eq!(
        (parsed.org.as_str(), parsed.key_id.as_str()),
        (org.id.as_str(), id.as_str())
    );
    assert_eq!(
        (&made["name"], &made["scopes"], &made["lastUsedAt"]),
        (&json!("ERP reader"), &json!(["catalog:read"]), &json!(null))
    );

    // exactly its scopes
    assert_eq!(
        with(&key, "GET", "/v1/products/p1").send().await.status,
        404
    );
    let r = with(&key, "PATCH", "/v1/products/p1")
        .json(json!({}))
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            403,
            json!({"error": "this API key lacks the 'catalog:write' scope"})
        )
    );
    // the settings function resolves (and caches) it too: 403, not 401
    let r = with(&key, "GET", "/v1/api-keys").send().await;
    assert_eq!(r.status, 403);

    // listed without its secret, its last use recorded
    let listed = eventually("lastUsedAt recorded", Duration::from_secs(10), || async {
        let r = org.get("/v1/api-keys").await;
        let all = r.body["result"].as_array().unwrap().clone();
        let mine = all.iter().find(|k| k["id"] == id.as_str()).cloned()?;
        (!mine["lastUsedAt"].is_null()).then_some((all, mine))
    })
    .await;
    let (all, mine) = listed;
    assert_eq!(all.len(), 2, "the organization's own key and the new one");
    assert_eq!(mine["createdAt"], made["createdAt"]);
    assert!(mine.get("key").is_none() && !mine.to_string().contains(&parsed.secret));

    // revoked: refused at once by the function that revoked it, though it had it cached
    let r = org.delete(&format!("/v1/api-keys/{id}")).await;
    assert_eq!(
        (r.status, r.body),
        (200, json!({"result": {"identifier": id, "deleted": true}}))
    );
    let r = with(&key, "GET", "/v1/api-keys").send().await;
    assert_eq!((r.status, r.body), (401, json!({"error": UNAUTHORIZED})));
    let r = org.get("/v1/api-keys").await;
    assert_eq!(r.body["pagination"]["totalResults"], 1);
    assert_eq!(org.delete(&format!("/v1/api-keys/{id}")).await.status, 404);
}

#[tokio::test]
async fn a_key_grants_only_what_it_holds_and_cannot_revoke_itself() {
    let org = Org::new().await;
    let other = Org::new().await;
    let manager = org
        .key_with(&[Scope::CatalogRead, Scope::SettingsManage])
        .await;
    let post = |body| with(&manager, "POST", "/v1/api-keys").json(body).send();
    let r = post(json!({"name": "w", "scopes": ["catalog:write"]})).await;
    assert_eq!(
        (r.status, r.body),
        (
            403,
            json!({"error": "this API key cannot grant the 'catalog:write' scope: it does not hold it"})
        )
    );
    for (body, error) in [
        (
            json!({"name": "x", "scopes": []}),
            "field 'scopes' must name at least one scope",
        ),
        (
            json!({"name": "x", "scopes": ["admin"]}),
            "field 'scopes': \"admin\" is not one of catalog:read, catalog:write, settings:manage",
        ),
        (
            json!({"scopes": ["catalog:read"]}),
            "field 'name' is required",
        ),
        (json!({"name": "x"}), "field 'scopes' is required"),
    ] {
        let r = post(body.clone()).await;
        assert_eq!((r.status, r.body), (400, json!({"error": error})), "{body}");
    }
    let r = post(json!({"name": "reader", "scopes": ["catalog:read"]})).await;
    assert_eq!(r.status, 201);

    let own = catalog::auth::apikey::parse(&manager).unwrap().key_id;
    let r = with(&manager, "DELETE", &format!("/v1/api-keys/{own}"))
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "an API key cannot revoke itself; use another key with settings:manage"})
        )
    );
    let theirs = catalog::auth::apikey::parse(&other.key).unwrap().key_id;
    let r = with(&manager, "DELETE", &format!("/v1/api-keys/{theirs}"))
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            404,
            json!({"error": format!("API key '{theirs}' not found")})
        )
    );
    assert_eq!(other.get("/v1/api-keys").await.status, 200, "still live");
}
