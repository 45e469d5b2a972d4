//! `ETag` and `If-Match` end to end: every single-entity read and write carries the entity's
//! tag; it moves when the entity itself changes and not when a descendant does; a write with
//! a stale `If-Match` is 412 and writes nothing, so of two clients holding the same tag one
//! wins and the other learns it lost.

use catalog_e2e::{Org, Request, Response};
use serde_json::json;

fn tag(r: &Response) -> String {
    r.header("etag")
        .unwrap_or_else(|| panic!("no ETag: {} {:?}", r.status, r.body))
        .to_string()
}

fn with_if_match(org: &Org, method: &str, path: &str, tag: &str) -> Request {
    Request::new(method, path)
        .bearer(&org.key)
        .header("if-match", tag)
}

#[tokio::test]
async fn two_clients_with_one_etag_one_wins_the_other_gets_412() {
    let org = Org::new().await;
    let body = json!({"name": "Chair", "variants": [{"identifier": "v1", "skus": [{"identifier": "s1"}]}]});
    let created = org.patch("/v1/products/p1", body).await;
    assert_eq!(created.status, 201);
    let read = org.get("/v1/products/p1").await;
    assert_eq!(tag(&read), tag(&created), "the write's tag is the read's");
    let t = tag(&read);

    // a descendant's change leaves the product's tag alone, but moves its own
    let sku = org.get("/v1/skus/s1").await;
    let r = org.patch("/v1/skus/s1", json!({"name": "Seat"})).await;
    assert_eq!(r.status, 200);
    assert_ne!(tag(&r), tag(&sku));
    assert_eq!(tag(&org.get("/v1/products/p1").await), t);
    assert_eq!(
        tag(&org.get("/v1/products/p1?include=variants,skus").await),
        t
    );

    let first = with_if_match(&org, "PATCH", "/v1/products/p1", &t)
        .json(json!({"name": "Armchair"}))
        .send()
        .await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    let second = with_if_match(&org, "PATCH", "/v1/products/p1", &t)
        .json(json!({"name": "Stool"}))
        .send()
        .await;
    assert_eq!(
        (second.status, second.body),
        (
            412,
            json!({"error": format!("If-Match: the product has changed; its ETag is now {}", tag(&first))})
        )
    );
    let now = org.get("/v1/products/p1").await;
    assert_eq!(now.body["result"]["name"], "Armchair");
    assert_eq!(tag(&now), tag(&first));

    // a stale delete deletes nothing; a current one deletes
    let r = with_if_match(&org, "DELETE", "/v1/products/p1", &t)
        .send()
        .await;
    assert_eq!(r.status, 412);
    assert_eq!(org.get("/v1/products/p1").await.status, 200);
    let r = with_if_match(&org, "DELETE", "/v1/products/p1", &tag(&now))
        .send()
        .await;
    assert_eq!(r.status, 200);
    // If-Match on what does not exist: 412, and nothing is created
    let r = with_if_match(&org, "PATCH", "/v1/products/p1", &t)
        .json(json!({}))
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            412,
            json!({"error": "If-Match: the product does not exist"})
        )
    );
    assert_eq!(org.get("/v1/products/p1").await.status, 404);
}

#[tokio::test]
async fn every_single_entity_read_and_write_carries_its_tag() {
    let org = Org::new().await;
    let body = json!({"variants": [{"identifier": "v1", "skus": [{"identifier": "s1"}]}]});
    assert_eq!(org.patch("/v1/products/p1", body).await.status, 201);
    let created = org
        .post(
            "/v1/assets",
            json!({"identifier": "a1", "url": "https://img.example.com/a.png"}),
        )
        .await;
    assert_eq!(created.status, 201);
    let put = |path: &'static str, body| {
        let org = &org;
        async move { org.put(path, body).await }
    };
    let category = put("/v1/categories/c1", json!({"name": "Chairs"})).await;
    let bundle = put(
        "/v1/bundles/b1",
        json!({"name": "Set", "items": [{"sku": "s1", "quantity": 2}]}),
    )
    .await;
    let r = org
        .post(
            "/v1/metaobject-definitions",
            json!({"name": "care", "fields": [{"key": "text", "type": "text"}]}),
        )
        .await;
    assert_eq!(r.status, 201);
    let metaobject = put("/v1/metaobjects/care/wash", json!({"name": "Wash"})).await;
    let hook = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:9/h", "topics": ["*"]}),
        )
        .await;
    assert_eq!(hook.status, 201, "{:?}", hook.body);
    let hook_path = format!(
        "/v1/webhooks/{}",
        hook.body["result"]["id"].as_str().unwrap()
    );

    for (path, written) in [
        ("/v1/assets/a1", &created),
        ("/v1/categories/c1", &category),
        ("/v1/bundles/b1", &bundle),
        ("/v1/metaobjects/care/wash", &metaobject),
        (hook_path.as_str(), &hook),
    ] {
        let read = org.get(path).await;
        assert_eq!((read.status, tag(&read)), (200, tag(written)), "{path}");
        // a stale tag refuses the delete and keeps the entity
        let r = with_if_match(&org, "DELETE", path, "\"stale\"")
            .send()
            .await;
        assert_eq!(r.status, 412, "{path}: {:?}", r.body);
        assert_eq!(org.get(path).await.status, 200, "{path}");
    }
    for path in ["/v1/variants/v1", "/v1/skus/s1"] {
        let r = org.get(path).await;
        assert_eq!(r.status, 200);
        assert!(tag(&r).starts_with('"'));
    }
    // a link to the asset does not move its tag; a change of its own does
    let r = org
        .put("/v1/products/p1/assets", json!({"assets": ["a1"]}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(tag(&org.get("/v1/assets/a1").await), tag(&created));
    let r = with_if_match(&org, "PATCH", "/v1/assets/a1", &tag(&created))
        .json(json!({"name": "Front"}))
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_ne!(tag(&r), tag(&created));
    let r = with_if_match(&org, "PUT", "/v1/categories/c1", &tag(&created))
        .json(json!({"name": "Seats"}))
        .send()
        .await;
    assert_eq!(r.status, 412, "another entity's tag");
    let r = with_if_match(&org, "PUT", "/v1/categories/c1", &tag(&category))
        .json(json!({"name": "Seats"}))
        .send()
        .await;
    assert_eq!(r.status, 200);
}
