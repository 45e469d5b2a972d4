//! Paging and incremental sync end to end: following `nextCursor` visits every entity that
//! is present throughout exactly once, in identifier order, while others come and go; a
//! cursor opens only for its own list, filters and organization; `GET /deletions` shows each
//! deleted product, variant and SKU once with its time.

use catalog_e2e::{ids, Org, Response};
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn next(r: &Response) -> Option<String> {
    r.body["pagination"]["nextCursor"]
        .as_str()
        .map(str::to_string)
}

/// Creates products `ids` through the bulk route, each answered 201.
async fn create(org: &Org, ids: &[String]) {
    for chunk in ids.chunks(1000) {
        let body: Vec<Value> = chunk.iter().map(|id| json!({"identifier": id})).collect();
        let r = org.patch("/v1/products", Value::Array(body)).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        for line in r.body["result"].as_array().unwrap() {
            assert_eq!(line["status"], 201, "{line}");
        }
    }
}

#[tokio::test]
async fn following_next_cursor_sees_every_steady_product_once_while_others_change() {
    let org = Org::new().await;
    let steady: Vec<String> = (0..1000).map(|i| format!("p{:04}", i * 2)).collect();
    let doomed: Vec<String> = (0..200).map(|i| format!("p{:04}", i * 10 + 1)).collect();
    create(&org, &steady).await;
    create(&org, &doomed).await;

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut round = 0;
    loop {
        let path = match &cursor {
            None => "/v1/products?limit=97".to_string(),
            Some(c) => format!("/v1/products?limit=97&cursor={c}"),
        };
        let r = org.get(&path).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        if cursor.is_some() {
            assert_eq!(r.body["pagination"]["page"], Value::Null);
        }
        seen.extend(ids(&r));
        // between pages: products appear everywhere, and some of the doomed disappear
        let fresh: Vec<String> = (0..20).map(|i| format!("p{:04}x{round}", i * 97)).collect();
        create(&org, &fresh).await;
        for id in doomed.iter().skip(round * 10).take(10) {
            assert_eq!(org.delete(&format!("/v1/products/{id}")).await.status, 200);
        }
        round += 1;
        match next(&r) {
            Some(c) => cursor = Some(c),
            None => break,
        }
        assert!(round < 100, "no end");
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(seen, sorted, "identifier order, nothing twice");
    let seen: BTreeSet<&String> = seen.iter().collect();
    for id in &steady {
        assert!(seen.contains(id), "{id} missed");
    }
}

#[tokio::test]
async fn a_cursor_opens_only_for_its_list_filters_and_organization() {
    let org = Org::new().await;
    let other = Org::new().await;
    create(&org, &(0..5).map(|i| format!("p{i}")).collect::<Vec<_>>()).await;
    let r = org.get("/v1/products?limit=2").await;
    assert_eq!(
        r.body["pagination"]["page"], 1,
        "a page-numbered page hands out a cursor too"
    );
    let c = next(&r).expect("a next cursor");
    let r = org.get(&format!("/v1/products?limit=2&cursor={c}")).await;
    assert_eq!(ids(&r), ["p2", "p3"]);
    let last = org
        .get(&format!(
            "/v1/products?limit=2&cursor={}",
            next(&r).unwrap()
        ))
        .await;
    assert_eq!((ids(&last), next(&last)), (vec!["p4".to_string()], None));

    let refused = json!({"error": "query parameter 'cursor': not a cursor of this list (edited, or made for other filters)"});
    let mut edited = c.clone().into_bytes();
    edited[3] = if edited[3] == b'a' { b'b' } else { b'a' };
    let edited = String::from_utf8(edited).unwrap();
    for (who, path) in [
        (&org, format!("/v1/products?cursor={edited}")),
        (
            &org,
            format!("/v1/products?cursor={c}&updated_after=2020-01-01T00:00:00Z"),
        ),
        (&org, format!("/v1/skus?cursor={c}")),
        (&org, format!("/v1/assets?cursor={c}")),
        (&other, format!("/v1/products?cursor={c}")),
    ] {
        let r = who.get(&path).await;
        assert_eq!((r.status, &r.body), (400, &refused), "{path}");
    }
    let r = org.get(&format!("/v1/products?cursor={c}&page=2")).await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "query parameters 'cursor' and 'page' cannot be used together"})
        )
    );
}

#[tokio::test]
async fn deletions_lists_each_deleted_product_variant_and_sku_once() {
    let org = Org::new().await;
    let tree = |p: &str| {
        json!({"variants": [
            {"identifier": format!("{p}-a"), "skus": [{"identifier": format!("{p}-a1")}, {"identifier": format!("{p}-a2")}]},
            {"identifier": format!("{p}-b"), "skus": [{"identifier": format!("{p}-b1")}]}
        ]})
    };
    for p in ["p1", "p2", "p3"] {
        assert_eq!(
            org.patch(&format!("/v1/products/{p}"), tree(p))
                .await
                .status,
            201
        );
    }
    let r = org.get("/v1/deletions?entity_type=sku").await;
    assert_eq!(
        r.body,
        json!({"result": [], "pagination": {"limit": 100, "page": 1, "totalPages": 0, "totalResults": 0, "nextCursor": null}})
    );
    let t0 = org.get("/v1/products/p1").await.body["result"]["updatedAt"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(org.delete("/v1/skus/p3-b1").await.status, 200);
    assert_eq!(org.delete("/v1/variants/p2-a").await.status, 200);
    assert_eq!(org.delete("/v1/products/p1").await.status, 200);

    assert_eq!(
        listed(&org, "product", &t0).await,
        (vec!["p1".to_string()], json!(1))
    );
    assert_eq!(
        listed(&org, "variant", &t0).await,
        (vec!["p1-a".into(), "p1-b".into(), "p2-a".into()], json!(3))
    );
    assert_eq!(
        listed(&org, "sku", &t0).await,
        (
            vec![
                "p1-a1".into(),
                "p1-a2".into(),
                "p1-b1".into(),
                "p2-a1".into(),
                "p2-a2".into(),
                "p3-b1".into()
            ],
            json!(6)
        )
    );

    // paged by cursor, and `updated_after` past some of them
    let r = org.get("/v1/deletions?entity_type=sku&limit=4").await;
    let c = next(&r).expect("more");
    let r2 = org
        .get(&format!("/v1/deletions?entity_type=sku&limit=4&cursor={c}"))
        .await;
    assert_eq!(
        (r2.body["result"].as_array().unwrap().len(), next(&r2)),
        (2, None)
    );
    let first = r.body["result"][0]["deletedAt"]
        .as_str()
        .unwrap()
        .to_string();
    let r = org
        .get(&format!(
            "/v1/deletions?entity_type=sku&updated_after={first}"
        ))
        .await;
    assert_eq!(
        r.body["pagination"]["totalResults"], 5,
        "strictly later than the first"
    );

    for (path, error) in [
        ("/v1/deletions", "query parameter 'entity_type' is required"),
        ("/v1/deletions?entity_type=widget", "query parameter 'entity_type': 'widget' is not one of product, variant, sku, asset, category, bundle, metaobject"),
        ("/v1/deletions?entity_type=sku&updated_after=2020-01-01T00:00:00Z", "query parameter 'updated_after': deletions are kept 30 days and this is older; resync in full"),
    ] {
        let r = org.get(path).await;
        assert_eq!((r.status, r.body), (400, json!({"error": error})), "{path}");
    }
    let other = Org::new().await;
    assert_eq!(
        other.get("/v1/deletions?entity_type=sku").await.body["pagination"]["totalResults"],
        0
    );
}

/// The deletions of `entity` listed: their sorted identifiers and the total; each row of
/// that type, later than `t0`, oldest first.
async fn listed(org: &Org, entity: &str, t0: &str) -> (Vec<String>, Value) {
    let r = org
        .get(&format!("/v1/deletions?entity_type={entity}"))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let rows = r.body["result"].as_array().unwrap().clone();
    let times: Vec<&str> = rows
        .iter()
        .map(|d| d["deletedAt"].as_str().unwrap())
        .collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "oldest first");
    for d in &rows {
        assert_eq!(d["entity_type"], entity);
        assert!(d["deletedAt"].as_str().unwrap() > t0);
    }
    let mut ids: Vec<String> = rows
        .iter()
        .map(|d| d["identifier"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    (ids, r.body["pagination"]["totalResults"].clone())
}
