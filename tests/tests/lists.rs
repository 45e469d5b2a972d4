//! GET /products, /variants and /skus end to end: identifier order, pagination with true
//! totals, `updated_after` per the spec's table, and the round trips a page costs.

use catalog::domain::time::Timestamp;
use catalog::domain::values::StoredValues;
use catalog::store::items::{EntityItem, EntityKind};
use catalog_e2e::{encode, faults, ids, send_to, shards, stack, Org, Request, Response};
use serde_json::{json, Value};
use std::time::Duration;

/// Waits until the clock is past `t`, so that the next write is strictly later (a poll of
/// the clock with a deadline, not a guess).
async fn clock_past(t: &str) -> String {
    let t = Timestamp::parse(t).expect("a timestamp");
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while Timestamp::now() <= t {
        assert!(std::time::Instant::now() < deadline, "clock stuck");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    t.to_string()
}

async fn warm(org: &Org) {
    for path in ["/v1/products/warm", "/v1/variants/warm", "/v1/skus/warm"] {
        assert_eq!(org.get(path).await.status, 404);
    }
}

#[tokio::test]
async fn pages_in_identifier_order_with_true_totals() {
    let org = Org::new().await;
    let other = Org::new().await;
    for id in ["p3", "p1", "P9", "p2", "p5"] {
        assert_eq!(
            org.patch(&format!("/v1/products/{id}"), json!({}))
                .await
                .status,
            201
        );
    }
    assert_eq!(
        other.patch("/v1/products/theirs", json!({})).await.status,
        201
    );
    warm(&org).await;

    let r = org.get("/v1/products?limit=2").await;
    assert_eq!(r.status, 200);
    assert_eq!(ids(&r), ["P9", "p1"], "byte order");
    let mut pagination = r.body["pagination"].clone();
    assert!(pagination["nextCursor"].take().is_string());
    assert_eq!(
        pagination,
        json!({"limit": 2, "page": 1, "totalPages": 3, "totalResults": 5, "nextCursor": null})
    );
    assert_eq!(
        r.ddb_requests(),
        shards() + 1,
        "snapshot delta Query per shard + BatchGetItem"
    );
    assert_eq!(r.ddb_round_trips(), 2);
    let r = org.get("/v1/products?limit=2&page=3").await;
    assert_eq!(ids(&r), ["p5"]);
    let r = org.get("/v1/products?limit=2&page=4").await;
    assert_eq!(
        r.body,
        json!({"result": [], "pagination": {"limit": 2, "page": 4, "totalPages": 3, "totalResults": 5, "nextCursor": null}})
    );
    let r = org.get("/v1/products").await;
    assert_eq!(r.body["pagination"]["limit"], 100);
    assert_eq!(ids(&r).len(), 5);
    let p = &r.body["result"][0];
    assert_eq!(p["familyId"], Value::Null);
    assert!(p.get("variants").is_none());

    let empty = Org::new().await;
    let r = empty.get("/v1/variants").await;
    assert_eq!(
        r.body,
        json!({"result": [], "pagination": {"limit": 100, "page": 1, "totalPages": 0, "totalResults": 0, "nextCursor": null}})
    );

    for (query, error) in [
        ("limit=0", "query parameter 'limit' must be an integer from 1 to 200"),
        ("limit=201", "query parameter 'limit' must be an integer from 1 to 200"),
        ("limit=ten", "query parameter 'limit' must be an integer from 1 to 200"),
        ("page=0", "query parameter 'page' must be an integer from 1 to 4294967295"),
        ("include=skus", "include: 'skus' requires 'variants'"),
        (
            "updated_after=yesterday",
            "query parameter 'updated_after': 'yesterday' is not an RFC 3339 time",
        ),
        ("search_mode=some", "query parameter 'search_mode': 'some' is not one of all, any"),
        ("attributes=*.x", "attributes: invalid selector '*.x': the entity must be product, variant, sku or bundle"),
    ] {
        let r = org.get(&format!("/v1/products?{query}")).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })), "{query}");
    }
    let r = org.get("/v1/skus?include=variants").await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "include: unknown value 'variants' (allowed: metaobjects)"})
        )
    );
}

#[tokio::test]
async fn updated_after_follows_the_hierarchy_table() {
    let org = Org::new().await;
    let setup = org
        .patch(
            "/v1/products/a",
            json!({"variants": [{"identifier": "a1", "skus": [{"identifier": "a1x"}, {"identifier": "a1y"}]},
                                 {"identifier": "a2", "skus": [{"identifier": "a2x"}]}]}),
        )
        .await;
    assert_eq!(setup.status, 201);
    let b = org
        .patch(
            "/v1/products/b",
            json!({"variants": [{"identifier": "b1", "skus": [{"identifier": "b1x"}]}]}),
        )
        .await;
    let t0 = clock_past(b.body["result"]["updatedAt"].as_str().unwrap()).await;
    let since = |t: &str, list: &str| format!("/v1/{list}?updated_after={t}");
    for list in ["products", "variants", "skus"] {
        let r = org.get(&since(&t0, list)).await;
        assert_eq!(ids(&r), Vec::<String>::new(), "{list}: nothing changed yet");
    }
    let all = org.get("/v1/skus?updated_after=2000-01-01T00:00:00Z").await;
    assert_eq!(ids(&all), ["a1x", "a1y", "a2x", "b1x"]);

    // a SKU change: its product, its variant and itself
    let r = org.patch("/v1/skus/a1x", json!({"name": "X"})).await;
    assert_eq!(r.status, 200);
    assert_eq!(ids(&org.get(&since(&t0, "products")).await), ["a"]);
    assert_eq!(ids(&org.get(&since(&t0, "variants")).await), ["a1"]);
    let skus = org.get(&since(&t0, "skus")).await;
    assert_eq!(ids(&skus), ["a1x"]);
    assert_eq!(skus.body["pagination"]["totalResults"], 1);
    let t1 = clock_past(r.body["result"]["updatedAt"].as_str().unwrap()).await;

    // a product's own change: every variant and SKU below it
    let r = org.patch("/v1/products/b", json!({"name": "B"})).await;
    assert_eq!(ids(&org.get(&since(&t1, "products")).await), ["b"]);
    let variants = org.get(&since(&t1, "variants")).await;
    assert_eq!(ids(&variants), ["b1"]);
    assert_eq!(
        (variants.ddb_requests(), variants.ddb_round_trips()),
        (2 * shards() + 1, 2),
        "snapshot deltas of variants and products in parallel, then the page"
    );
    assert_eq!(ids(&org.get(&since(&t1, "skus")).await), ["b1x"]);
    let t2 = clock_past(r.body["result"]["updatedAt"].as_str().unwrap()).await;

    // a variant's own change: its product, itself and its SKUs, not its siblings
    let r = org
        .patch(
            "/v1/products/a",
            json!({"variants": [{"identifier": "a1", "name": "A1"}]}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(ids(&org.get(&since(&t2, "products")).await), ["a"]);
    assert_eq!(ids(&org.get(&since(&t2, "variants")).await), ["a1"]);
    assert_eq!(ids(&org.get(&since(&t2, "skus")).await), ["a1x", "a1y"]);
    let t3 = clock_past(r.body["result"]["updatedAt"].as_str().unwrap()).await;

    // a deletion below: the product and the variant, not the sibling SKU
    let r = org.delete("/v1/skus/a1y").await;
    assert_eq!(r.status, 200);
    assert_eq!(ids(&org.get(&since(&t3, "products")).await), ["a"]);
    assert_eq!(ids(&org.get(&since(&t3, "variants")).await), ["a1"]);
    assert_eq!(
        ids(&org.get(&since(&t3, "skus")).await),
        Vec::<String>::new()
    );
    let p = org.get("/v1/products/a").await.body["result"].clone();
    assert!(p["updatedAt"].as_str() > Some(t3.as_str()));

    // offsets are accepted and compared as instants
    let r = org
        .get("/v1/products?updated_after=2000-01-01T01:00:00%2B01:00")
        .await;
    assert_eq!(ids(&r), ["a", "b"]);
}

/// 100 products with one variant of two SKUs each, written straight through the library.
/// Paging through a filtered list reuses its selection while the snapshots stay the same;
/// every write (creation, deletion, update) is still in the next page.
#[tokio::test]
async fn a_filtered_selection_is_kept_across_pages_and_follows_every_write() {
    let org = Org::new().await;
    for id in ["a1", "b1", "a2", "a3"] {
        let r = org.patch(&format!("/v1/products/{id}"), json!({})).await;
        assert_eq!(r.status, 201);
    }
    warm(&org).await;
    let search =
        encode(&json!({"_identifier": [{"operator": "CONTAINS", "value": "a"}]}).to_string());
    let page =
        |n: u32, extra: &str| format!("/v1/products?limit=2&page={n}&search={search}{extra}");
    let r = org.get(&page(1, "")).await;
    assert_eq!(r.status, 200);
    assert_eq!(ids(&r), ["a1", "a2"]);
    assert_eq!(r.body["pagination"]["totalResults"], 3);
    let r = org.get(&page(2, "")).await;
    assert_eq!(ids(&r), ["a3"]);
    assert_eq!(r.body["pagination"]["totalResults"], 3);
    assert_eq!(
        r.ddb_requests(),
        shards() + 2,
        "delta Queries + the definitions + BatchGetItem"
    );

    assert_eq!(org.patch("/v1/products/a0", json!({})).await.status, 201);
    let r = org.get(&page(1, "")).await;
    assert_eq!(ids(&r), ["a0", "a1"]);
    assert_eq!(r.body["pagination"]["totalResults"], 4);
    assert_eq!(org.delete("/v1/products/a1").await.status, 200);
    let r = org.get(&page(1, "")).await;
    assert_eq!(ids(&r), ["a0", "a2"]);
    assert_eq!(r.body["pagination"]["totalResults"], 3);

    let r = org.patch("/v1/products/b1", json!({"name": "B"})).await;
    assert_eq!(r.status, 200);
    let after = clock_past(r.body["result"]["updatedAt"].as_str().unwrap()).await;
    let since = format!("&updated_after={}", encode(&after));
    let r = org.get(&page(1, &since)).await;
    assert_eq!(r.status, 200);
    assert_eq!(ids(&r), Vec::<String>::new());
    assert_eq!(
        org.patch("/v1/products/a3", json!({"name": "A"}))
            .await
            .status,
        200
    );
    assert_eq!(
        org.patch("/v1/products/b1", json!({"name": "C"}))
            .await
            .status,
        200
    );
    let r = org.get(&page(1, &since)).await;
    assert_eq!(ids(&r), ["a3"]);
    assert_eq!(r.body["pagination"]["totalResults"], 1);
}

async fn seed(org: &Org, n: usize) {
    let store = stack().await.store();
    let at = Timestamp::now();
    let mut items = Vec::new();
    for i in 0..n {
        let p = format!("p{i:03}");
        let v = format!("{p}-v");
        let item = |kind, id: &str, parents| {
            EntityItem::new(&org.id, kind, id, parents, id, StoredValues::new(), at)
        };
        items.push(item(EntityKind::Product, &p, (None, None)));
        items.push(item(EntityKind::Variant, &v, (Some(&p), None)));
        for s in ["a", "b"] {
            items.push(item(
                EntityKind::Sku,
                &format!("{v}-{s}"),
                (Some(&p), Some(&v)),
            ));
        }
    }
    for chunk in items.chunks(40) {
        store.create_entities(&org.id, chunk).await.expect("seed");
    }
}

#[tokio::test]
async fn a_full_page_costs_at_most_three_round_trips() {
    let org = Org::new().await;
    seed(&org, 120).await;
    warm(&org).await;

    let r = org.get("/v1/products?include=variants,skus&page=2").await;
    assert_eq!(r.status, 200);
    assert_eq!(ids(&r).len(), 20);
    assert_eq!(r.body["result"][0]["identifier"], "p100");
    assert_eq!(
        r.body["result"][0]["variants"][0]["skus"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        r.ddb_requests(),
        shards() + 20,
        "snapshot delta + one Query per product tree"
    );

    let r = org.get("/v1/products?include=variants,skus").await;
    assert_eq!(ids(&r).len(), 100);
    assert_eq!(r.ddb_requests(), shards() + 100);
    assert_eq!(
        r.ddb_round_trips(),
        2,
        "snapshot delta, then all trees in parallel"
    );
    assert_eq!(r.body["pagination"]["totalResults"], 120);

    let r = org.get("/v1/variants?include=skus").await;
    assert_eq!(ids(&r).len(), 100);
    assert_eq!(r.body["result"][5]["product"]["identifier"], "p005");
    assert_eq!(r.body["result"][5]["skus"].as_array().unwrap().len(), 2);
    assert_eq!(
        r.ddb_requests(),
        shards() + 2 + 100,
        "snapshot delta + BatchGetItem x2 + SKU Queries"
    );
    assert_eq!(r.ddb_round_trips(), 2);

    let r = org.get("/v1/skus?limit=200").await;
    assert_eq!(ids(&r).len(), 200);
    assert_eq!(r.body["result"][0]["variant"]["identifier"], "p000-v");
    assert_eq!(r.body["pagination"]["totalPages"], 2);
    assert_eq!(
        r.ddb_round_trips(),
        2,
        "snapshot delta, then BatchGetItems in one round trip"
    );

    let t = Timestamp::now().to_string();
    let r = org.get(&format!("/v1/skus?updated_after={t}")).await;
    assert_eq!(
        r.ddb_round_trips(),
        1,
        "three snapshot deltas in parallel, then nothing"
    );
    assert_eq!(r.ddb_requests(), 3 * shards());
}

/// A cold read that cannot finish within the call's budget answers 503 with `Retry-After`
/// and keeps what it read: each following call goes on from where the last stopped (the
/// count of entries read grows by a page per unfinished shard) until the list answers.
#[tokio::test]
async fn a_cold_read_past_its_budget_answers_503_and_the_next_call_continues() {
    let org = Org::new().await;
    let items: Vec<_> = (0..60)
        .map(|i| json!({"identifier": format!("c{i:03}")}))
        .collect();
    let r = org.patch("/v1/products", json!(items)).await;
    assert_eq!(r.status, 200);
    // `products@slowload` reads one page of 5 entries per shard and call.
    let mut per_shard = vec![0usize; shards() as usize];
    for i in 0..60 {
        let id = format!("c{i:03}");
        per_shard[catalog::store::raw::shard_of(&id, shards()) as usize] += 1;
    }
    // A shard of c entries takes c / 5 + 1 pages (a full page always has a successor).
    let calls = per_shard.iter().map(|c| c / 5 + 1).max().unwrap();
    assert!(
        calls >= 2,
        "the data must need more than one call: {per_shard:?}"
    );
    let list = || {
        catalog_e2e::send_to(
            "products@slowload",
            catalog_e2e::Request::new("GET", "/v1/products?limit=100").bearer(&org.key),
        )
    };
    for call in 1..calls {
        let r = list().await;
        let read: usize = per_shard.iter().map(|c| (*c).min(5 * call)).sum();
        assert_eq!(r.status, 503, "call {call}: {:?}", r.body);
        assert_eq!(r.header("retry-after"), Some("1"));
        assert_eq!(
            r.body,
            json!({"error": format!(
                "the list index of this organization is still loading ({read} entries read so far); retry in a moment"
            )}),
            "call {call}"
        );
    }
    let r = list().await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["pagination"]["totalResults"], 60);
    assert_eq!(ids(&r).len(), 60);
    // Then warm: one delta Query per shard and the page read.
    let warm = list().await;
    assert_eq!(warm.status, 200);
    assert_eq!(warm.ddb_requests(), shards() + 1);
}

/// The round trips the functions count as parallel are parallel for real: measured at a
/// DynamoDB proxy that holds every request 500 ms (far longer than the spread of requests sent together, even on a busy machine), requests sent together overlap and
/// requests sent one after the other do not, so a change that made them sequential fails
/// here even if it kept the count the function reports.
#[tokio::test]
async fn parallel_requests_overlap_at_the_storage_proxy() {
    let db = faults::faulty_db().await;
    let _exclusive = db.exclusive.lock().await;
    db.reset();
    let org = Org::new().await;
    seed(&org, 120).await;
    let get = |path: &str| Request::new("GET", path).bearer(&org.key);
    // A key's first use records `lastUsedAt` off the request's path; let that write land
    // first, so that no process behind the proxy makes it while a call is measured.
    assert_eq!(org.get("/v1/products/none").await.status, 404);
    let key_id = catalog::auth::apikey::parse(&org.key).unwrap().key_id;
    let store = stack().await.store();
    catalog_e2e::webhooks::eventually("lastUsedAt", Duration::from_secs(10), || async {
        let keys = store.list_keys(&org.id).await.expect("keys");
        keys.iter()
            .any(|k| k.key_id == key_id && k.last_used_at.is_some())
            .then_some(())
    })
    .await;
    for (function, path) in [
        ("products@faultydb", "/v1/products"),
        ("variants@faultydb", "/v1/variants"),
        ("skus@faultydb", "/v1/skus"),
    ] {
        assert_eq!(
            send_to(function, get(path)).await.status,
            200,
            "warm {path}"
        );
    }
    let t = clock_past(&Timestamp::now().to_string()).await;
    let cases = [
        (
            "products@faultydb",
            "/v1/products/p001?include=variants,skus".to_string(),
            1,
        ),
        (
            "products@faultydb",
            "/v1/products?include=variants,skus".into(),
            2,
        ),
        ("variants@faultydb", "/v1/variants?include=skus".into(), 2),
        ("skus@faultydb", "/v1/skus?limit=200".into(), 2),
        ("skus@faultydb", format!("/v1/skus?updated_after={t}"), 1),
    ];
    for (function, path, trips) in cases {
        db.measure(Duration::from_millis(500));
        let r = send_to(function, get(&path)).await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
        let (requests, measured) = db.measured();
        assert_eq!(
            (requests, measured),
            (r.ddb_requests() as usize, trips),
            "{path}: (requests, round trips) seen at the proxy"
        );
        assert_eq!(r.ddb_round_trips() as usize, trips, "{path}: as counted");
        assert!(
            requests > trips || trips == 1,
            "{path}: some requests shared a trip"
        );
    }
    db.reset();
}

/// The periodic full reload (every 2 s in this process, 900 s as deployed) catches what the
/// deltas cannot see: a product removed from the table without a trace (no tombstone, as
/// when one expires) stays in the warm snapshot's lists until the next reload drops it.
#[tokio::test]
async fn the_periodic_reload_drops_what_no_delta_can_see() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use catalog::store::raw::{product_pk, PRODUCT_SK};
    let org = Org::new().await;
    for id in ["p1", "p2"] {
        assert_eq!(
            org.patch(&format!("/v1/products/{id}"), json!({}))
                .await
                .status,
            201
        );
    }
    let list = || Request::new("GET", "/v1/products").bearer(&org.key);
    let r = send_to("products@reload", list()).await;
    assert_eq!(ids(&r), ["p1", "p2"]);
    let loaded = std::time::Instant::now();

    let store = stack().await.store();
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .key("PK", AttributeValue::S(product_pk(&org.id, "p2")))
        .key("SK", AttributeValue::S(PRODUCT_SK.into()))
        .send()
        .await
        .expect("delete without a tombstone");
    assert_eq!(org.get("/v1/products/p2").await.status, 404);
    // The page read skips an item that is gone; the total counts the snapshot's entries.
    let total = |r: &Response| r.body["pagination"]["totalResults"].clone();
    loop {
        let sent = std::time::Instant::now();
        let r = send_to("products@reload", list()).await;
        assert_eq!(ids(&r), ["p1"]);
        if total(&r) == 1 {
            assert!(
                sent.duration_since(loaded) >= Duration::from_secs(1),
                "gone before any reload could have run: a delta saw it"
            );
            break;
        }
        assert_eq!(total(&r), 2, "counted from the snapshot until the reload");
        assert!(
            loaded.elapsed() < Duration::from_secs(15),
            "no reload within 15 s of a 2 s period"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
