//! A page of a flat list costs its page: the same exact DynamoDB requests for a first page
//! and a far one, and for a list of 5 and of 260 (assets: past 1 MB), on the real binaries.
//! Lists: assets (with `search` and `cursor`), categories, bundles, metaobjects of a
//! definition, deletions, a webhook's delivery log. A page never outgrows an answer: it is cut
//! by its bytes (products of about 300 KB).

use catalog::store::webhooks::Delivery;
use catalog::webhooks::queue::new_delivery;
use catalog::webhooks::queue::QueueMessage;
use catalog::webhooks::topics::Action;
use catalog_e2e::{ids, shards, stack, Org, Response};
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::future::Future;
use std::time::Duration;

/// Runs `make(i)` for every `i` in `range`, eight at a time.
async fn each<F: Future<Output = ()>>(range: std::ops::Range<usize>, make: impl Fn(usize) -> F) {
    futures_util::stream::iter(range.map(make))
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
}

fn names(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i:03}")).collect()
}

/// The cursor to the page after `r`.
fn next(r: &Response) -> Option<String> {
    r.body["pagination"]["nextCursor"]
        .as_str()
        .map(str::to_string)
}

/// Asserts a list answer: status 200, these identifiers, this pagination, this cost.
fn check(r: &Response, identifiers: &[String], pagination: Value, cost: (u32, u32)) {
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(ids(r), identifiers);
    assert_eq!(r.body["pagination"], pagination);
    assert_eq!(
        (r.ddb_requests(), r.ddb_round_trips()),
        cost,
        "(requests, round trips)"
    );
}

/// The `pagination` of a list without cursors.
fn paged(limit: u32, page: u32, total: u32) -> Value {
    json!({"limit": limit, "page": page, "totalPages": total.div_ceil(limit), "totalResults": total})
}

/// The `pagination` of a list with cursors, on its last page (or beyond).
fn last(limit: u32, page: u32, total: u32) -> Value {
    let mut p = paged(limit, page, total);
    p["nextCursor"] = Value::Null;
    p
}

#[tokio::test]
async fn asset_pages_cost_the_same_at_any_depth_and_partition_size() {
    let org = Org::new().await;
    org.define(
        json!({"displayName": "Alt", "key": "alt", "targetEntity": "asset", "type": "text"}),
    )
    .await;
    // 4 KB of text each: 260 assets hold more than 1 MB, which a Query reads in two requests
    let alt = "x".repeat(4200);
    let create = |i: usize| {
        let (org, alt) = (&org, &alt);
        async move {
            let body = json!({
                "identifier": format!("a{i:03}"), "name": format!("Asset {i:03}"),
                "url": format!("https://cdn.example.com/a{i:03}.png"), "values": {"alt": alt},
            });
            let r = org.post("/v1/assets", body).await;
            assert_eq!(r.status, 201, "{:?}", r.body);
        }
    };
    each(0..5, create).await;
    let warm = (shards() + 1, 2);

    // the first list call of the process reads the partition once, strongly consistent
    let r = org.get("/v1/assets?limit=20").await;
    let first = last(20, 1, 5);
    check(&r, &names("a", 0..5), first.clone(), (2, 2));
    // then a delta Query per index shard, and the page's items
    let r = org.get("/v1/assets?limit=20").await;
    check(&r, &names("a", 0..5), first, warm);

    each(5..260, create).await;
    let r = org.get("/v1/assets?limit=20").await;
    assert_eq!(ids(&r), names("a", 0..20));
    assert_eq!(r.body["pagination"]["totalResults"], 260);
    assert_eq!(r.body["pagination"]["totalPages"], 13);
    assert_eq!(
        (r.ddb_requests(), r.ddb_round_trips()),
        warm,
        "page 1 of 260"
    );
    let far = org.get("/v1/assets?limit=20&page=13").await;
    check(&far, &names("a", 240..260), last(20, 13, 260), warm);
    let before = org.get("/v1/assets?limit=20&page=12").await;
    assert_eq!(ids(&before), names("a", 220..240));
    let cursor = next(&before).expect("a next page");
    let r = org
        .get(&format!("/v1/assets?limit=20&cursor={cursor}"))
        .await;
    check(
        &r,
        &names("a", 240..260),
        json!({"limit": 20, "page": null, "totalPages": 13, "totalResults": 260, "nextCursor": null}),
        warm,
    );
    // past the last page: nothing to read
    let r = org.get("/v1/assets?limit=20&page=14").await;
    check(&r, &[], last(20, 14, 260), (shards(), 1));

    // `search` on names, case-insensitive, paged, at the same cost
    let r = org.get("/v1/assets?search=ASSET%2025&limit=4&page=3").await;
    check(&r, &names("a", 258..260), last(4, 3, 10), warm);

    // a rename and a delete reach the next page through the delta
    let r = org
        .patch("/v1/assets/a004", json!({"name": "Renamed"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(org.delete("/v1/assets/a003").await.status, 200);
    let r = org.get("/v1/assets?limit=3").await;
    assert_eq!(
        (ids(&r), r.body["result"][2]["name"].clone()),
        (
            vec!["a000".to_string(), "a001".into(), "a002".into()],
            json!("Asset 002")
        )
    );
    assert_eq!(r.body["pagination"]["totalResults"], 259);
    let r = org.get("/v1/assets?search=renamed").await;
    assert_eq!(ids(&r), ["a004"]);
    let r = org.get("/v1/assets?search=asset%20003").await;
    assert_eq!(r.body["pagination"]["totalResults"], 0);
}

/// PUTs 260 resources (`put(i)` gives path and body; 201 or 200), then checks that page 1
/// and page 13 of `path` (20 each) list them at `cost`, as a list of 5 did.
async fn pages_of_260(
    org: &Org,
    path: &str,
    prefix: &str,
    cost: (u32, u32),
    put: impl Fn(usize) -> (String, Value),
) {
    let write = |i: usize| {
        let (at, body) = put(i);
        async move {
            let r = org.put(&at, body).await;
            assert!(r.status == 200 || r.status == 201, "{:?}", r.body);
        }
    };
    each(0..5, &write).await;
    let page = |n: u32| format!("{path}?limit=20&page={n}");
    let r = org.get(&page(1)).await;
    assert_eq!((r.status, ids(&r)), (200, names(prefix, 0..5)));
    let r = org.get(&page(1)).await;
    check(&r, &names(prefix, 0..5), paged(20, 1, 5), cost);
    each(5..260, &write).await;
    let r = org.get(&page(1)).await;
    check(&r, &names(prefix, 0..20), paged(20, 1, 260), cost);
    let r = org.get(&page(13)).await;
    check(&r, &names(prefix, 240..260), paged(20, 13, 260), cost);
}

#[tokio::test]
async fn category_and_bundle_pages_cost_the_same_at_any_depth_and_partition_size() {
    let org = Org::new().await;
    let category = |i: usize| {
        let path = format!("/v1/categories/c{i:03}");
        (path, json!({"name": format!("Category {i}")}))
    };
    pages_of_260(&org, "/v1/categories", "c", (shards() + 1, 2), category).await;
    assert_eq!(org.delete("/v1/categories/c001").await.status, 200);
    let r = org.get("/v1/categories?limit=2").await;
    assert_eq!(ids(&r), ["c000", "c002"]);
    assert_eq!(r.body["pagination"]["totalResults"], 259);

    let r = org
        .patch(
            "/v1/products/p1",
            json!({"variants": [{"identifier": "v1", "skus": [{"identifier": "s1"}]}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let bundle = |i: usize| {
        let path = format!("/v1/bundles/b{i:03}");
        let body = json!({"name": format!("Bundle {i}"), "items": [{"sku": "s1", "quantity": 1}]});
        (path, body)
    };
    pages_of_260(&org, "/v1/bundles", "b", (shards() + 1, 2), bundle).await;
}

#[tokio::test]
async fn metaobject_pages_cost_the_same_and_keep_to_their_definition() {
    let org = Org::new().await;
    org.metaobjects(
        "shade",
        json!([{"key": "hex", "type": "text"}]),
        &["m000", "m001"],
    )
    .await;
    let r = org
        .post(
            "/v1/metaobject-definitions",
            json!({"name": "color", "fields": [{"key": "hex", "type": "text"}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let color = |i: usize| (format!("/v1/metaobjects/color/m{i:03}"), json!({}));
    // the definition's GetItem beside the deltas, then the page's items
    pages_of_260(&org, "/v1/metaobjects/color", "m", (shards() + 2, 2), color).await;
    // deleting shade/m000 leaves color/m000 alone
    assert_eq!(org.delete("/v1/metaobjects/shade/m000").await.status, 200);
    let r = org.get("/v1/metaobjects/color?limit=1").await;
    assert_eq!(
        (ids(&r), r.body["pagination"]["totalResults"].clone()),
        (vec!["m000".to_string()], json!(260))
    );
    let r = org.get("/v1/metaobjects/shade").await;
    assert_eq!(
        (ids(&r), r.body["pagination"]["totalResults"].clone()),
        (vec!["m001".to_string()], json!(1))
    );
    let r = org.get("/v1/metaobjects/nope").await;
    assert_eq!(
        (r.status, r.body),
        (
            404,
            json!({"error": "metaobject definition 'nope' not found"})
        )
    );
}

#[tokio::test]
async fn deletion_pages_cost_one_query_at_any_depth() {
    let org = Org::new().await;
    let bodies: Vec<Value> = names("p", 0..260)
        .iter()
        .map(|id| json!({"identifier": id, "name": id}))
        .collect();
    let r = org.patch("/v1/products", json!(bodies)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let t0 = org.get("/v1/products/p000").await.body["result"]["updatedAt"]
        .as_str()
        .unwrap()
        .to_string();
    for id in names("p", 0..5) {
        assert_eq!(org.delete(&format!("/v1/products/{id}")).await.status, 200);
    }
    let list = |q: &str| format!("/v1/deletions?entity_type=product&limit=20{q}");
    // cold: the partition read once; warm: one Query of what was deleted since
    let r = org.get(&list("")).await;
    let small = last(20, 1, 5);
    check(&r, &names("p", 0..5), small.clone(), (1, 1));
    let r = org.get(&list("")).await;
    check(&r, &names("p", 0..5), small, (1, 1));
    assert_eq!(r.body["result"][0]["entity_type"], "product");

    // one after another, so that deletion order is identifier order
    for id in names("p", 5..260) {
        assert_eq!(org.delete(&format!("/v1/products/{id}")).await.status, 200);
    }
    let r = org.get(&list("")).await;
    assert_eq!(ids(&r), names("p", 0..20));
    assert_eq!(
        (
            r.body["pagination"]["totalResults"].clone(),
            r.ddb_requests(),
            r.ddb_round_trips()
        ),
        (json!(260), 1, 1)
    );
    let far = org.get(&list("&page=13")).await;
    check(&far, &names("p", 240..260), last(20, 13, 260), (1, 1));
    let before = org.get(&list("&page=12")).await;
    let cursor = next(&before).expect("a next page");
    let r = org.get(&list(&format!("&cursor={cursor}"))).await;
    check(
        &r,
        &names("p", 240..260),
        json!({"limit": 20, "page": null, "totalPages": 13, "totalResults": 260, "nextCursor": null}),
        (1, 1),
    );
    // strictly later than a deletion: the ones after it
    let at = far.body["result"][9]["deletedAt"].as_str().unwrap();
    let r = org.get(&list(&format!("&updated_after={at}"))).await;
    let later: Vec<String> = far.body["result"].as_array().unwrap()[10..]
        .iter()
        .filter(|d| d["deletedAt"].as_str().unwrap() > at)
        .map(|d| d["identifier"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids(&r), later);
    assert_eq!(
        (
            r.body["pagination"]["totalResults"].clone(),
            r.ddb_requests()
        ),
        (json!(later.len()), 1)
    );
    let r = org
        .get(&format!("/v1/deletions?entity_type=sku&updated_after={t0}"))
        .await;
    assert_eq!(
        (r.status, r.body["pagination"]["totalResults"].clone()),
        (200, json!(0))
    );
}

/// A log entry of `webhook`, as the delivery worker writes one, expiring in `expires_in` s.
fn entry(webhook: &str, i: usize, expires_in: i64) -> Delivery {
    let message = QueueMessage {
        org: String::new(),
        webhook_id: webhook.to_string(),
        delivery_id: format!("dlv_{i:04}"),
        entity_type: "asset".into(),
        action: Action::Created,
        identifier: format!("a{i}"),
    };
    let mut d = new_delivery(
        &message,
        catalog::domain::time::Timestamp::now(),
        Duration::from_secs(30 * 86_400),
    );
    d.expires = catalog::domain::time::Timestamp::now().millis() / 1000 + expires_in;
    d
}

#[tokio::test]
async fn delivery_log_pages_cost_the_same_at_any_depth_and_leave_expired_entries_out() {
    let org = Org::new().await;
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:9/hook", "topics": ["asset.created"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let hook = r.body["result"]["id"].as_str().unwrap().to_string();
    let store = stack().await.store();
    let seed = |i: usize, expires_in: i64| {
        let (store, org, hook) = (&store, &org, &hook);
        async move {
            store
                .create_delivery(&org.id, &entry(hook, i, expires_in), None)
                .await
                .expect("log entry");
        }
    };
    each(0..5, |i| seed(i, 86_400)).await;
    let log = |page: u32| format!("/v1/webhooks/{hook}/deliveries?limit=10&page={page}");
    let newest = |range: std::ops::Range<usize>| -> Vec<String> {
        range.rev().map(|i| format!("dlv_{i:04}")).collect()
    };
    let ids = |r: &Response| -> Vec<String> {
        r.body["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_string())
            .collect()
    };
    // the subscription's GetItem beside the log's read (cold) or delta (warm), then the page
    for _ in 0..2 {
        let r = org.get(&log(1)).await;
        assert_eq!((r.status, ids(&r)), (200, newest(0..5)));
        assert_eq!(r.body["pagination"], paged(10, 1, 5));
        assert_eq!((r.ddb_requests(), r.ddb_round_trips()), (3, 2));
    }
    // 255 more, and an entry whose TTL has passed (DynamoDB deletes it some time later)
    each(5..260, |i| seed(i, 86_400)).await;
    seed(9999, -1).await;
    let r = org.get(&log(1)).await;
    assert_eq!((r.status, ids(&r)), (200, newest(250..260)));
    assert_eq!(r.body["pagination"], paged(10, 1, 260));
    assert_eq!((r.ddb_requests(), r.ddb_round_trips()), (3, 2));
    let r = org.get(&log(26)).await;
    assert_eq!((r.status, ids(&r)), (200, newest(0..10)));
    assert_eq!(r.body["pagination"], paged(10, 26, 260));
    assert_eq!((r.ddb_requests(), r.ddb_round_trips()), (3, 2));

    let r = org.get("/v1/webhooks/wh_nope/deliveries").await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": "webhook 'wh_nope' not found"}))
    );
}

/// A page holds at most 5,000,000 bytes of entries, as the answer counts them (Lambda answers
/// at most 6 MB): of 22 products of about 300 KB each (6.5 MB in all), a numbered page of them all is refused
/// with the `limit` that fits, and by cursor the page is cut where its bytes end, its
/// `nextCursor` going on after its last product; every product comes once, in order.
#[tokio::test]
async fn a_page_is_cut_by_its_bytes_and_never_outgrows_an_answer() {
    let org = Org::new().await;
    // three texts of 99,000 bytes (a text value holds at most 100,000)
    let keys = ["text1", "text2", "text3"];
    for key in keys {
        org.define(
            json!({"key": key, "displayName": key, "targetEntity": "product", "type": "text"}),
        )
        .await;
    }
    let values: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| (k.to_string(), json!("x".repeat(99_000))))
        .collect();
    each(0..22, |i| {
        let (org, values) = (&org, &values);
        async move {
            let p = format!("heavy{i:03}");
            let body = json!({"name": p, "values": values});
            let r = org.patch(&format!("/v1/products/{p}"), body).await;
            assert_eq!(r.status, 201, "{:?}", r.body);
        }
    })
    .await;
    let all = names("heavy", 0..22);

    // each entry takes its JSON, one byte more per `"` and `\\`, and a comma (all the same
    // size here: names of one length)
    let one = org.get("/v1/products/heavy000").await.body["result"].to_string();
    let per = one.len() + one.bytes().filter(|b| matches!(b, b'"' | b'\\')).count() + 1;
    let fit = 5_000_000 / per;
    assert!((2..22).contains(&fit), "{per} bytes an entry");
    let r = org.get("/v1/products?limit=22").await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": format!("query parameter 'limit': page 1 would take {} bytes of the answer, more than the 5000000 a page holds; ask with 'limit' at most {fit}, or go on by 'cursor'", 22 * per)})
        )
    );
    let r = org.get(&format!("/v1/products?limit={fit}")).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(ids(&r), all[..fit]);

    let r = org.get("/v1/products?limit=1").await;
    assert_eq!(ids(&r), all[..1]);
    let mut cursor = next(&r).expect("a cursor");
    let mut pages = Vec::new();
    loop {
        let r = org
            .get(&format!("/v1/products?limit=100&cursor={cursor}"))
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert!(r.body.to_string().len() < 6_000_000);
        pages.push(ids(&r));
        match next(&r) {
            Some(c) => cursor = c,
            None => break,
        }
    }
    let expected: Vec<Vec<String>> = all[1..].chunks(fit).map(<[String]>::to_vec).collect();
    assert_eq!(pages, expected);
}
