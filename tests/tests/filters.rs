//! Filtered subscriptions end to end (issue 41, item 3): a `filter` in the lists' `search`
//! grammar is checked as the lists check theirs, and the real `change-feed` and
//! `webhook-delivery` deliver exactly the changes of entities that match it before or after,
//! each saying whether the entity `entered`, `stayed` in or `left` the set. A seeded random
//! workload of writes against random filters is checked round by round against a model,
//! and the final sets against the lists' own answers to the same search.

use catalog::domain::changes::apply;
use catalog_e2e::filter_model::{define, expected, Expected, Filter, Rng, Sku};
use catalog_e2e::webhooks::{webhooks, Receiver, COALESCE_SECONDS};
use catalog_e2e::{encode, Org};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

const DELIVERY: Duration = Duration::from_secs(60);

fn red() -> Value {
    json!({"product.color": [{"operator": "EQUALS", "value": "red"}]})
}

#[tokio::test]
async fn filters_are_checked_as_list_searches_are() {
    webhooks().await;
    let org = Org::new().await;
    define(&org).await;
    let receiver = Receiver::start(0).await;
    let create = |topics: Value, filter: Value| {
        let body = json!({"url": receiver.url(), "topics": topics, "filter": filter});
        let org = &org;
        async move { org.post("/v1/webhooks", body).await }
    };
    for (topics, filter, error) in [
        (
            json!(["product.*"]),
            json!({"search": {"sku.stock": [{"operator": "GREATER_THAN", "value": 0}]}}),
            "filter 'sku.stock': a sku key cannot test product events (topic 'product.*'); a filter may name the event's own level and its ancestors, not its descendants",
        ),
        (
            json!(["asset.created"]),
            json!({"search": red()}),
            "field 'filter': a filter tests product, variant and sku events; topic 'asset.created' covers asset events",
        ),
        (
            json!(["sku.*"]),
            json!({"search": {"product.colour": [{"operator": "EQUALS", "value": "red"}]}}),
            "filter 'product.colour': unknown attribute",
        ),
        (
            json!(["sku.*"]),
            json!({"search": {"sku.stock": [{"operator": "CONTAINS", "value": "1"}]}}),
            "filter 'sku.stock': operator 'CONTAINS' is not valid for numeric fields",
        ),
        (
            json!(["sku.*"]),
            json!({"search": red(), "searchMode": "either"}),
            "field 'filter': 'searchMode' \"either\" is not one of all, any",
        ),
    ] {
        let r = create(topics, filter).await;
        assert_eq!((r.status, r.body), (400, json!({"error": error})));
    }
    let none = org.get("/v1/webhooks").await;
    assert_eq!(none.body["pagination"]["totalResults"], json!(0));

    // warm the key (its first use reads it), then count what a filtered create costs
    org.get("/v1/webhooks").await;
    let filter = json!({"search": {"product.color": [{"operator": "EQUALS", "value": "red"}],
                                   "sku.stock": [{"operator": "GREATER_THAN", "value": 0}]},
                        "searchMode": "any"});
    let r = create(json!(["sku.*", "product.updated"]), filter.clone()).await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    let r = create(json!(["sku.*", "variant.updated"]), filter.clone()).await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    let r = create(json!(["sku.*"]), filter.clone()).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    // the HTTPS create's 3 and one BatchGetItem of the definitions the filter names
    assert_eq!(r.ddb_requests(), 4);
    assert_eq!(r.body["result"]["filter"], filter);
    let id = r.body["result"]["id"].as_str().unwrap().to_string();
    let etag = r.header("etag").unwrap().to_string();

    // a PATCH to topics the filter cannot test is refused and changes nothing
    let path = format!("/v1/webhooks/{id}");
    let r = org.patch(&path, json!({"topics": ["product.*"]})).await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "filter 'sku.stock': a sku key cannot test product events (topic 'product.*'); a filter may name the event's own level and its ancestors, not its descendants"})
        )
    );
    let got = org.get(&path).await;
    assert_eq!(got.header("etag"), Some(etag.as_str()));
    assert_eq!(got.body["result"]["topics"], json!(["sku.*"]));
    // together with a filter it can, it is taken; null clears the filter
    let r = org
        .patch(
            &path,
            json!({"topics": ["product.*"], "filter": {"search": red()}}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.body["result"]["filter"],
        json!({"search": red(), "searchMode": "all"})
    );
    let r = org.patch(&path, json!({"filter": null})).await;
    assert_eq!(r.body["result"]["filter"], Value::Null);
}

/// The deliveries of `receiver` from `from` on, as (identifier, event, match).
fn seen(receiver: &Receiver, from: usize, to: usize) -> Vec<(String, String, String)> {
    let mut got: Vec<(String, String, String)> = receiver.distinct()[from..to]
        .iter()
        .map(|r| {
            let j = &r.json;
            (
                j["identifier"].as_str().unwrap().to_string(),
                j["event"].as_str().unwrap().to_string(),
                j.get("match")
                    .and_then(Value::as_str)
                    .unwrap_or("none")
                    .to_string(),
            )
        })
        .collect();
    got.sort();
    got
}

#[tokio::test]
async fn a_filtered_subscription_follows_its_set() {
    webhooks().await;
    let org = Org::new().await;
    define(&org).await;
    let skus = Receiver::start(0).await;
    let products = Receiver::start(0).await;
    // SKUs in stock whose product is red; red products
    let filter = json!({"search": {"product.color": [{"operator": "EQUALS", "value": "red"}],
                                   "sku.stock": [{"operator": "GREATER_THAN", "value": 0}]}});
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": skus.url(), "topics": ["sku.*"], "filter": filter}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": products.url(), "topics": ["product.*"], "filter": {"search": red()}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);

    let tree = |id: &str, color: &str, stock: i64| {
        json!({"identifier": id, "name": id, "values": {"color": color},
               "variants": [{"identifier": format!("{id}-v"), "skus": [
                   {"identifier": format!("{id}-s"), "values": {"stock": stock}}]}]})
    };
    let r = org
        .patch(
            "/v1/products",
            json!([tree("chair", "red", 5), tree("desk", "blue", 5)]),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let step = |n: usize| {
        let skus = &skus;
        async move {
            skus.wait_for_distinct(n, DELIVERY).await;
        }
    };
    step(1).await;
    assert_eq!(
        seen(&skus, 0, 1),
        vec![("chair-s".into(), "sku.created".into(), "entered".into())]
    );
    products.wait_for_distinct(1, DELIVERY).await;
    assert_eq!(
        seen(&products, 0, 1),
        vec![("chair".into(), "product.created".into(), "entered".into())]
    );

    let write = |id: &'static str, body: Value| {
        let org = &org;
        async move {
            let r = org.patch(&format!("/v1/skus/{id}"), body).await;
            assert_eq!(r.status, 200, "{:?}", r.body);
        }
    };
    // out of stock: it leaves; a blue product's SKU never enters
    write("chair-s", json!({"values": {"stock": 0}})).await;
    write("desk-s", json!({"values": {"stock": 0}})).await;
    step(2).await;
    assert_eq!(
        seen(&skus, 1, 2),
        vec![("chair-s".into(), "sku.updated".into(), "left".into())]
    );
    write("chair-s", json!({"values": {"stock": 2}})).await;
    write("desk-s", json!({"values": {"stock": 2}})).await;
    step(3).await;
    assert_eq!(
        seen(&skus, 2, 3),
        vec![("chair-s".into(), "sku.updated".into(), "entered".into())]
    );
    write("chair-s", json!({"name": "Chair SKU"})).await;
    step(4).await;
    assert_eq!(
        seen(&skus, 3, 4),
        vec![("chair-s".into(), "sku.updated".into(), "stayed".into())]
    );
    // the product turns blue: a change of the product, not of its SKUs
    let r = org
        .patch("/v1/products/chair", json!({"values": {"color": "blue"}}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    products.wait_for_distinct(2, DELIVERY).await;
    assert_eq!(
        seen(&products, 1, 2),
        vec![("chair".into(), "product.updated".into(), "left".into())]
    );
    // and red again, then the SKU is deleted: it leaves
    let r = org
        .patch("/v1/products/chair", json!({"values": {"color": "red"}}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    products.wait_for_distinct(3, DELIVERY).await;
    assert_eq!(org.delete("/v1/skus/chair-s").await.status, 200);
    assert_eq!(org.delete("/v1/skus/desk-s").await.status, 200);
    skus.wait_for_distinct(5, DELIVERY).await;
    // nothing else arrives within another window (absence is the assertion)
    tokio::time::sleep(Duration::from_secs(COALESCE_SECONDS + 1)).await;
    let got = skus.distinct();
    assert_eq!(got.len(), 5);
    assert_eq!(
        seen(&skus, 4, 5),
        vec![("chair-s".into(), "sku.deleted".into(), "left".into())]
    );
    // the delivery log says it too
    assert_eq!(got[4].json["match"], json!("left"));
}

/// A product's deletion cascades to its SKUs in more stream records than one batch holds
/// (four a SKU: the SKU, its identity item, its tombstone and its deletion record; the local
/// poller reads 100 at a time, as Lambda does), so most SKUs' removals reach the feed in a
/// batch without the product's: each is judged by the state the product ended (kept on its
/// tombstone), and every SKU leaves the set.
#[tokio::test]
async fn a_product_deleted_across_stream_batches_takes_every_sku_out() {
    const SKUS: usize = 60;
    webhooks().await;
    let org = Org::new().await;
    define(&org).await;
    let skus = Receiver::start(0).await;
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": skus.url(), "topics": ["sku.*"], "filter": {"search": red()}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let ids: Vec<String> = (0..SKUS).map(|i| format!("big-s{i:02}")).collect();
    let tree = json!({"name": "Big", "values": {"color": "red"},
        "variants": [{"identifier": "big-v", "skus": ids.iter()
            .map(|id| json!({"identifier": id, "values": {"stock": 1}}))
            .collect::<Vec<_>>()}]});
    let r = org.patch("/v1/products/big", tree).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let every = |event: &str, side: &str| -> Vec<(String, String, String)> {
        ids.iter()
            .map(|id| (id.clone(), event.to_string(), side.to_string()))
            .collect()
    };
    skus.wait_for_distinct(SKUS, DELIVERY).await;
    assert_eq!(seen(&skus, 0, SKUS), every("sku.created", "entered"));

    assert_eq!(org.delete("/v1/products/big").await.status, 200);
    skus.wait_for_distinct(2 * SKUS, DELIVERY).await;
    assert_eq!(seen(&skus, SKUS, 2 * SKUS), every("sku.deleted", "left"));
}

#[tokio::test]
async fn random_writes_against_random_filters_deliver_exactly_the_set_changes() {
    webhooks().await;
    let seed: u64 = std::env::var("FILTER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| chrono::Utc::now().timestamp_micros() as u64 | 1);
    println!("FILTER_SEED={seed}");
    let mut rng = Rng(seed);
    let org = Org::new().await;
    define(&org).await;

    let filters: Vec<Filter> = (0..4).map(|_| Filter::random(&mut rng)).collect();
    let mut receivers = Vec::new();
    for f in &filters {
        let receiver = Receiver::start(0).await;
        let mut filter = json!({"search": f.search()});
        if f.any {
            filter["searchMode"] = json!("any");
        }
        let r = org
            .post(
                "/v1/webhooks",
                json!({"url": receiver.url(), "topics": ["sku.*"], "filter": filter}),
            )
            .await;
        assert_eq!(r.status, 201, "seed {seed}: {:?}", r.body);
        receivers.push(receiver);
    }
    // every change, with what changed: applied in order it rebuilds each SKU
    let all = Receiver::start(0).await;
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": all.url(), "topics": ["sku.*"], "payload": "changes"}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);

    // 3 products of random colors (fixed: an ancestor's change is not its SKUs' event),
    // 2 SKUs each with random values
    let sizes = ["S", "M", "L"];
    let mut model: BTreeMap<String, Sku> = BTreeMap::new();
    let mut trees = Vec::new();
    for p in 0..3 {
        let color = *rng.pick(&["red", "blue", "green"]);
        let mut skus = Vec::new();
        for s in 0..2 {
            let id = format!("p{p}-s{s}");
            let sku = Sku {
                color,
                size: (rng.below(3) > 0).then(|| *rng.pick(&sizes)),
                stock: Some(rng.below(4) as i64),
            };
            let mut values = json!({"stock": sku.stock});
            if let Some(z) = sku.size {
                values["size"] = json!(z);
            }
            skus.push(json!({"identifier": id, "values": values}));
            model.insert(id, sku);
        }
        trees.push(
            json!({"identifier": format!("p{p}"), "values": {"color": color},
                          "variants": [{"identifier": format!("p{p}-v"), "skus": skus}]}),
        );
    }
    let r = org.patch("/v1/products", Value::Array(trees)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let ids: Vec<String> = model.keys().cloned().collect();

    let mut counts = vec![0usize; filters.len()];
    let mut total = 0usize;
    let empty = BTreeMap::new();
    let round = plan(
        &filters,
        &mut counts,
        &mut total,
        "sku.created",
        &ids,
        &empty,
        &model,
    );
    verify(round, &receivers, &all, &filters, seed).await;

    for _round in 0..6 {
        let before = model.clone();
        let mut changed = Vec::new();
        for id in &ids {
            if rng.below(2) == 0 {
                continue;
            }
            let sku = model.get_mut(id).unwrap();
            // a new value for one of them, so that every write is an update
            let body = if rng.below(2) == 0 {
                let stock = (sku.stock.unwrap_or(0) + 1 + rng.below(3) as i64) % 4;
                sku.stock = Some(stock);
                json!({"values": {"stock": stock}})
            } else {
                let size = *rng.pick(
                    &sizes
                        .iter()
                        .filter(|z| Some(**z) != sku.size)
                        .copied()
                        .collect::<Vec<_>>(),
                );
                sku.size = Some(size);
                json!({"values": {"size": size}})
            };
            let r = org.patch(&format!("/v1/skus/{id}"), body).await;
            assert_eq!(r.status, 200, "{:?}", r.body);
            changed.push(id.clone());
        }
        let round = plan(
            &filters,
            &mut counts,
            &mut total,
            "sku.updated",
            &changed,
            &before,
            &model,
        );
        verify(round, &receivers, &all, &filters, seed).await;
    }

    // the final sets are the lists' answers to the same searches
    for (i, f) in filters.iter().enumerate() {
        let mode = if f.any { "any" } else { "all" };
        let r = org
            .get(&format!(
                "/v1/skus?limit=200&search_mode={mode}&search={}",
                encode(&f.search().to_string())
            ))
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let listed: Vec<&str> = r.body["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["identifier"].as_str().unwrap())
            .collect();
        let modelled: Vec<&str> = model
            .iter()
            .filter(|(id, s)| f.holds(id, Some(s)))
            .map(|(id, _)| id.as_str())
            .collect();
        assert_eq!(listed, modelled, "seed {seed}: filter {i} ({})", f.search());
    }

    // deletes: a member leaves
    let before = model.clone();
    let gone: Vec<String> = ids.iter().take(3).cloned().collect();
    for id in &gone {
        assert_eq!(org.delete(&format!("/v1/skus/{id}")).await.status, 200);
        model.remove(id);
    }
    let round = plan(
        &filters,
        &mut counts,
        &mut total,
        "sku.deleted",
        &gone,
        &before,
        &model,
    );
    verify(round, &receivers, &all, &filters, seed).await;
    // nothing else arrives within another window (absence is the assertion)
    tokio::time::sleep(Duration::from_secs(COALESCE_SECONDS + 1)).await;
    for (i, r) in receivers.iter().enumerate() {
        assert_eq!(r.distinct().len(), counts[i], "seed {seed}: filter {i}");
    }

    // applying every delivery's changes in order gives each SKU's last state
    let got = all.distinct();
    assert_eq!(got.len(), total, "seed {seed}");
    for id in &ids {
        let mut held = Map::new();
        for d in got.iter().filter(|d| d.json["identifier"] == json!(id)) {
            apply(&mut held, &d.json["changes"]);
        }
        let answer = org.get(&format!("/v1/skus/{id}")).await;
        if answer.status == 404 {
            assert!(
                held.values().all(Value::is_null),
                "seed {seed}: {id}: {held:?}"
            );
            continue;
        }
        let mut want = Map::new();
        want.insert("name".into(), answer.body["result"]["name"].clone());
        for (key, entries) in answer.body["result"]["attributes"].as_object().unwrap() {
            if key.starts_with("sku.") {
                want.insert(key.clone(), entries.clone());
            }
        }
        assert_eq!(held, want, "seed {seed}: {id}");
    }
}

/// One round's expectations: each filtered receiver's deliveries from its count on.
struct Round {
    waits: Vec<(usize, Expected)>,
    total: usize,
}

fn plan(
    filters: &[Filter],
    counts: &mut [usize],
    total: &mut usize,
    event: &str,
    changed: &[String],
    before: &BTreeMap<String, Sku>,
    after: &BTreeMap<String, Sku>,
) -> Round {
    let mut waits = Vec::new();
    for (i, f) in filters.iter().enumerate() {
        let want = expected(f, event, changed, before, after);
        waits.push((counts[i], want.clone()));
        counts[i] += want.len();
    }
    *total += changed.len();
    Round {
        waits,
        total: *total,
    }
}

/// Waits for a round's deliveries and checks each filtered receiver got exactly its own.
async fn verify(
    round: Round,
    receivers: &[Receiver],
    all: &Receiver,
    filters: &[Filter],
    seed: u64,
) {
    all.wait_for_distinct(round.total, DELIVERY).await;
    for (i, (from, want)) in round.waits.into_iter().enumerate() {
        receivers[i]
            .wait_for_distinct(from + want.len(), DELIVERY)
            .await;
        assert_eq!(
            seen(&receivers[i], from, from + want.len()),
            want,
            "seed {seed}: filter {i} ({})",
            filters[i].search()
        );
    }
}
