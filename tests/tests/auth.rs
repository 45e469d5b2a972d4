//! Authentication and organization isolation end to end.

use catalog::auth::Scope;
use catalog_e2e::{send_to, stack, Org, Request};
use serde_json::json;
use std::time::{Duration, Instant};

const UNAUTHORIZED: &str = "Unauthorized - missing or invalid authentication";

#[tokio::test]
async fn missing_malformed_and_unknown_keys_get_the_decided_401() {
    let org = Org::new().await;
    // The key with its last character changed (to one it is not).
    let last = if org.key.ends_with('x') { "y" } else { "x" };
    let unknown = format!("{}{last}", &org.key[..org.key.len() - 1]);
    let cases = [
        Request::new("GET", "/v1/products/p1"),
        Request::new("GET", "/v1/products/p1")
            .header("authorization", &format!("Basic {}", org.key)),
        Request::new("GET", "/v1/products/p1").bearer("cat_nope"),
        Request::new("GET", "/v1/products/p1").bearer(&unknown),
        Request::new("GET", "/v1/products/p1")
            .bearer("cat_zzzzzzzzzzzz_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    ];
    for req in cases {
        let r = req.clone().send().await;
        assert_eq!(r.status, 401, "{req:?}");
        assert_eq!(r.body, json!({"error": UNAUTHORIZED}));
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    }
}

#[tokio::test]
async fn one_organization_never_reads_or_writes_anothers_data() {
    let a = Org::new().await;
    let b = Org::new().await;
    assert_eq!(
        a.patch("/v1/products/shared-id", json!({"name": "A's"}))
            .await
            .status,
        201
    );
    let r = b.get("/v1/products/shared-id").await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": "product 'shared-id' not found"}))
    );
    // B's PATCH of the same identifier creates B's own product and leaves A's alone.
    assert_eq!(
        b.patch("/v1/products/shared-id", json!({"name": "B's"}))
            .await
            .status,
        201
    );
    assert_eq!(
        a.get("/v1/products/shared-id").await.body["result"]["name"],
        "A's"
    );
    assert_eq!(
        b.get("/v1/products/shared-id").await.body["result"]["name"],
        "B's"
    );
}

#[tokio::test]
async fn scopes_revocation_and_disabled_api_access() {
    let org = Org::new().await;
    let reader = org.key_with(&[Scope::CatalogRead]).await;
    let r = Request::new("PATCH", "/v1/products/p1")
        .bearer(&reader)
        .json(json!({"name": "x"}))
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            403,
            json!({"error": "this API key lacks the 'catalog:write' scope"})
        )
    );
    assert_eq!(
        Request::new("GET", "/v1/products/p1")
            .bearer(&reader)
            .send()
            .await
            .status,
        404
    );

    let store = stack().await.store();
    let revoked = org.key_with(&[Scope::CatalogRead]).await;
    let key_id = catalog::auth::apikey::parse(&revoked).unwrap().key_id;
    store.revoke_key(&org.id, &key_id).await.unwrap();
    let r = Request::new("GET", "/v1/products/p1")
        .bearer(&revoked)
        .send()
        .await;
    assert_eq!((r.status, r.body), (401, json!({"error": UNAUTHORIZED})));

    let disabled = Org::new().await;
    store.set_api_enabled(&disabled.id, false).await.unwrap();
    let r = disabled.get("/v1/products/p1").await;
    assert_eq!(
        (r.status, r.body),
        (
            403,
            json!({"error": "API access is disabled for this organization"})
        )
    );
}

/// A key a process has cached keeps working after its revocation only while the cache entry
/// lives (3 s in this process, 60 s as deployed): every success after the revocation comes
/// before the entry expires, and the key is refused once it has.
#[tokio::test]
async fn a_cached_key_that_is_revoked_stops_working_when_its_cache_entry_expires() {
    const TTL: Duration = Duration::from_secs(3);
    let org = Org::new().await;
    let key = org.key_with(&[Scope::CatalogRead]).await;
    let get = || Request::new("GET", "/v1/products/p1").bearer(&key);
    assert_eq!(send_to("products@shortauth", get()).await.status, 404);
    // the entry was made before this instant, so it expires before this + TTL
    let cached_at = Instant::now();
    let key_id = catalog::auth::apikey::parse(&key).unwrap().key_id;
    stack()
        .await
        .store()
        .revoke_key(&org.id, &key_id)
        .await
        .unwrap();
    let mut served_after_revocation = 0;
    loop {
        let sent = Instant::now();
        let r = send_to("products@shortauth", get()).await;
        match r.status {
            404 => {
                assert!(
                    sent < cached_at + TTL,
                    "served {:?} after the key was cached",
                    sent - cached_at
                );
                served_after_revocation += 1;
            }
            401 => {
                assert_eq!(r.body, json!({"error": UNAUTHORIZED}));
                break;
            }
            other => panic!("unexpected {other}: {:?}", r.body),
        }
        assert!(
            cached_at.elapsed() < TTL + Duration::from_secs(10),
            "still served long after the entry expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Without the cache the first call after the revocation would have been refused.
    assert!(
        served_after_revocation > 0 || cached_at.elapsed() >= TTL,
        "the cache served nothing"
    );
}
