//! Change history end to end (issue 42, item 1; decisions.md "Change history"): writes by an
//! API key, a console session, a bulk line and an import line, then a delete, are recorded
//! from the table's stream by the real `change-feed` and read newest first, by cursor,
//! through the real `products`, `variants`, `skus` and `assets` functions, also after the
//! entity is gone; a stream batch delivered twice records each change once.

use aws_sdk_dynamodb::types::AttributeValue;
use catalog::auth::{apikey, Scope};
use catalog::domain::limits::MAX_HISTORY_ENTRIES;
use catalog::domain::time::Timestamp;
use catalog::store::raw::{history_pk, HISTORY_HEAD_SK};
use catalog_e2e::console::sign_in;
use catalog_e2e::imports::{finished, imports, start_import};
use catalog_e2e::webhooks::{eventually, stream_insert, webhooks};
use catalog_e2e::{Org, Request};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ops::Range;
use std::time::Duration;

/// A table item as stored.
type Item = HashMap<String, AttributeValue>;

/// How long the stream, the change feed and the history write may take.
const RECORDED: Duration = Duration::from_secs(60);

/// The webhook stack (its stream poller runs the change feed) and the import stack: every
/// test of this file starts both before any request, so that whichever runs first sets the
/// functions' environment for all (the functions start with the first request).
async fn stacks() {
    webhooks().await;
    imports().await;
}

/// The history at `path` once it holds `n` entries (all pages of 200).
async fn history(org: &Org, path: &str, n: usize) -> Vec<Value> {
    eventually(&format!("{n} entries at {path}"), RECORDED, || async {
        let r = org.get(&format!("{path}?limit=200")).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let entries = r.body["result"].as_array().unwrap().clone();
        assert!(entries.len() <= n, "more entries than changes: {entries:?}");
        (entries.len() == n).then_some(entries)
    })
    .await
}

fn entry(v: &str) -> Value {
    json!([{"value": v, "data": v, "type": "text", "locale": null}])
}

/// The `(event, by)` of each entry, in order.
fn events(entries: &[Value]) -> Vec<(String, Value)> {
    entries
        .iter()
        .map(|e| (e["event"].as_str().unwrap().to_string(), e["by"].clone()))
        .collect()
}

#[tokio::test]
async fn history_says_who_changed_what_newest_first_and_outlives_the_entity() {
    stacks().await;
    let org = Org::new().await;
    org.define(
        json!({"key": "color", "displayName": "Color", "targetEntity": "product", "type": "text"}),
    )
    .await;
    let key_id = apikey::parse(&org.key).unwrap().key_id;
    let by_key = json!({"type": "apiKey", "id": key_id});

    // an API key creates, a console session (acting as that key) updates
    let r = org
        .patch(
            "/v1/products/lamp",
            json!({"name": "Lamp", "values": {"color": "red"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let session = sign_in(&org.key).await;
    let r = session
        .request("PATCH", "/v1/products/lamp")
        .header("x-csrf-token", &session.csrf)
        .json(json!({"values": {"color": "blue"}}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    // a bulk line, then an import line, then a delete
    let r = org
        .patch(
            "/v1/products",
            json!([{"identifier": "lamp", "name": "Desk lamp"}]),
        )
        .await;
    assert_eq!(r.body["result"][0]["status"], json!(200), "{:?}", r.body);
    let import = start_import(
        &org,
        "{\"identifier\": \"lamp\", \"values\": {\"color\": \"green\"}}\n",
    )
    .await;
    assert_eq!(finished(&org, &import).await["updated"], json!(1));
    assert_eq!(org.delete("/v1/products/lamp").await.status, 200);

    let all = history(&org, "/v1/products/lamp/history", 5).await;
    assert_eq!(
        events(&all),
        vec![
            ("product.deleted".to_string(), by_key.clone()),
            (
                "product.updated".to_string(),
                json!({"type": "import", "id": import})
            ),
            ("product.updated".to_string(), by_key.clone()),
            (
                "product.updated".to_string(),
                json!({"type": "console", "keyId": key_id})
            ),
            ("product.created".to_string(), by_key.clone()),
        ]
    );
    let changes: Vec<&Value> = all.iter().map(|e| &e["changes"]).collect();
    assert_eq!(
        changes,
        vec![
            &json!({"name": {"old": "Desk lamp", "new": null},
                    "attributes": {"product.color": {"old": entry("green"), "new": null}}}),
            &json!({"attributes": {"product.color": {"old": entry("blue"), "new": entry("green")}}}),
            &json!({"name": {"old": "Lamp", "new": "Desk lamp"}}),
            &json!({"attributes": {"product.color": {"old": entry("red"), "new": entry("blue")}}}),
            &json!({"name": {"old": null, "new": "Lamp"},
                    "attributes": {"product.color": {"old": null, "new": entry("red")}}}),
        ]
    );
    // newest first, each at its own time, with an id of its own
    let times: Vec<&str> = all.iter().map(|e| e["at"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] > w[1]), "{times:?}");
    let mut ids: Vec<&str> = all.iter().map(|e| e["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 5);
    // the entity is gone; its history is not
    assert_eq!(org.get("/v1/products/lamp").await.status, 404);

    // pages of 2 by cursor visit every entry once, in order, each with the totals; the
    // first page costs its Query (the history's head with it) and the oldest entry's
    // one-item Query, in one round trip; a later page its Query (its cursor carries the
    // total)
    let mut seen = Vec::new();
    let mut path = "/v1/products/lamp/history?limit=2".to_string();
    let mut sizes = Vec::new();
    loop {
        let r = org.get(&path).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let expected = if sizes.is_empty() { 2 } else { 1 };
        assert_eq!(
            (r.ddb_requests(), r.ddb_round_trips()),
            (expected, 1),
            "a page and its total"
        );
        let page = r.body["result"].as_array().unwrap();
        sizes.push(page.len());
        seen.extend(page.iter().cloned());
        let p = &r.body["pagination"];
        let first = sizes.len() == 1;
        assert_eq!(
            (
                &p["limit"],
                &p["page"],
                &p["totalResults"],
                &p["totalPages"]
            ),
            (
                &json!(2),
                &if first { json!(1) } else { json!(null) },
                &json!(5),
                &json!(3)
            )
        );
        match p["nextCursor"].as_str() {
            Some(c) => path = format!("/v1/products/lamp/history?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!((sizes, &seen), (vec![2, 2, 1], &all));
    // a cursor opens only the history it was made for
    let first = org.get("/v1/products/lamp/history?limit=2").await;
    let cursor = first.body["pagination"]["nextCursor"].as_str().unwrap();
    let r = org
        .get(&format!("/v1/products/other/history?cursor={cursor}"))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "query parameter 'cursor': not a cursor of this list (edited, or made for other filters)"})
        )
    );
    for (query, error) in [
        ("page=2", "unknown query parameter 'page'"),
        (
            "limit=0",
            "query parameter 'limit' must be an integer from 1 to 200",
        ),
    ] {
        let r = org.get(&format!("/v1/products/lamp/history?{query}")).await;
        assert_eq!(
            (r.status, r.body),
            (400, json!({ "error": error })),
            "{query}"
        );
    }
    // an entity that never existed is 404: the empty page and total, and one GetItem, tell
    let r = org.get("/v1/products/never/history").await;
    assert_eq!(
        (r.status, r.body.clone(), r.ddb_requests()),
        (404, json!({"error": "product 'never' not found"}), 3)
    );
}

#[tokio::test]
async fn variants_skus_and_assets_have_their_history() {
    stacks().await;
    let org = Org::new().await;
    let key_id = apikey::parse(&org.key).unwrap().key_id;
    let by_key = json!({"type": "apiKey", "id": key_id});
    let r = org
        .patch(
            "/v1/products/desk",
            json!({"name": "Desk", "variants": [{"identifier": "desk-oak", "name": "Oak",
                   "skus": [{"identifier": "desk-oak-1", "name": "Oak, 1 m"}]}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = org
        .patch("/v1/skus/desk-oak-1", json!({"name": "Oak, 1.2 m"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = org
        .post(
            "/v1/assets",
            json!({"identifier": "desk-photo", "url": "https://cdn.example.com/desk.png", "name": "Desk"}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);

    let sku = history(&org, "/v1/skus/desk-oak-1/history", 2).await;
    assert_eq!(
        (events(&sku), &sku[0]["changes"]),
        (
            vec![
                ("sku.updated".to_string(), by_key.clone()),
                ("sku.created".to_string(), by_key.clone())
            ],
            &json!({"name": {"old": "Oak, 1 m", "new": "Oak, 1.2 m"}})
        )
    );
    // the SKU's write moved only the variant's tree time: not a change of the variant
    let variant = history(&org, "/v1/variants/desk-oak/history", 1).await;
    assert_eq!(
        events(&variant),
        vec![("variant.created".to_string(), by_key.clone())]
    );
    let asset = history(&org, "/v1/assets/desk-photo/history", 1).await;
    assert_eq!(
        (events(&asset), &asset[0]["changes"]),
        (
            vec![("asset.created".to_string(), by_key.clone())],
            &json!({"name": {"old": null, "new": "Desk"}})
        )
    );
    let r = org.get("/v1/skus/desk-oak-1/history").await;
    assert_eq!(r.status, 200);
    for (path, error) in [
        ("/v1/variants/nope/history", "variant 'nope' not found"),
        ("/v1/skus/nope/history", "sku 'nope' not found"),
        ("/v1/assets/nope/history", "asset 'nope' not found"),
    ] {
        let r = org.get(path).await;
        assert_eq!(
            (r.status, r.body),
            (404, json!({ "error": error })),
            "{path}"
        );
    }
}

/// A stream batch Lambda hands out again (a retry, a redelivery) records each change once:
/// an entry's key is its change's time and event.
#[tokio::test]
async fn a_batch_delivered_twice_records_each_change_once() {
    stacks().await;
    let org = Org::new().await;
    let image = |id: &str, su: &str| {
        json!({"PK": {"S": format!("O#{}#P#{id}", org.id)}, "SK": {"S": "L1"},
               "GSI1PK": {"S": format!("O#{}#T#product#0", org.id)},
               "kind": {"S": "product"}, "id": {"S": id}, "name": {"S": id},
               "su": {"S": su}, "tu": {"S": su}, "by": {"S": "i:imp_redelivered"}})
    };
    let event = json!({"Records": [
        stream_insert("1", image("ghost-a", "2026-11-21T00:00:00.000Z")),
        stream_insert("2", image("ghost-b", "2026-11-21T00:00:01.000Z")),
    ]});
    for _ in 0..2 {
        let answer = catalog_e2e::invoke("change-feed", event.clone()).await;
        assert_eq!(answer, json!({"batchItemFailures": []}));
    }
    for id in ["ghost-a", "ghost-b"] {
        let r = org.get(&format!("/v1/products/{id}/history")).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let entries = r.body["result"].as_array().unwrap();
        assert_eq!(
            events(entries),
            vec![(
                "product.created".to_string(),
                json!({"type": "import", "id": "imp_redelivered"})
            )],
            "{id}"
        );
    }
}

/// A history page is cut by bytes as well as by count, so no answer nears Lambda's 6 MB
/// payload limit, and its cost does not grow with the history: its total comes from the
/// head's number and the oldest entry's. Before, 40 changes of about 160 KB each made one
/// page of about 6.4 MB (a 500 on AWS, as in the tests' Lambda emulator), and every page
/// also counted the whole history, one request per 1 MB.
#[tokio::test]
async fn a_page_stays_under_the_payload_limit_and_its_cost_does_not_grow() {
    stacks().await;
    let org = Org::new().await;
    org.define(
        json!({"key": "notes", "displayName": "Notes", "targetEntity": "product", "type": "text"}),
    )
    .await;
    // each update replaces 40 KB of text: its entry's changes hold the old and the new
    // entries, each with the value and its data: 160 KB
    let changes = 40;
    for i in 0..changes {
        let notes = format!("{i:02}").repeat(20_000);
        let r = org
            .patch(
                "/v1/products/big",
                json!({"name": "Big", "values": {"notes": notes}}),
            )
            .await;
        assert!(r.status == 200 || r.status == 201, "{:?}", r.body);
    }
    let path = "/v1/products/big/history";
    eventually("every change recorded", RECORDED, || async {
        let r = org.get(&format!("{path}?limit=1")).await;
        (r.body["pagination"]["totalResults"] == json!(changes)).then_some(())
    })
    .await;
    // a first page of one entry: its Query and the oldest entry's, whatever the history's
    // length (before: one more request per 1 MB of history); the next page: its Query
    let r = org.get(&format!("{path}?limit=1")).await;
    assert_eq!(
        (r.ddb_requests(), &r.body["pagination"]["totalResults"]),
        (2, &json!(changes))
    );
    let cursor = r.body["pagination"]["nextCursor"].as_str().unwrap();
    let r = org.get(&format!("{path}?limit=1&cursor={cursor}")).await;
    assert_eq!(
        (r.ddb_requests(), &r.body["pagination"]["totalResults"]),
        (1, &json!(changes))
    );
    let mut seen = 0;
    let mut pages = Vec::new();
    let mut next = format!("{path}?limit=200");
    loop {
        let r = org.get(&next).await;
        assert_eq!(r.status, 200);
        let bytes = r.body.to_string().len();
        assert!(bytes < 5 << 20, "a page of {bytes} bytes");
        assert_eq!(r.body["pagination"]["totalResults"], json!(changes));
        let n = r.body["result"].as_array().unwrap().len();
        pages.push(n);
        seen += n;
        match r.body["pagination"]["nextCursor"].as_str() {
            Some(c) => next = format!("{path}?limit=200&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, changes as usize);
    // 26 entries of 160 KB fill the 4 MiB of changes a page holds
    assert_eq!(pages, vec![26, 14]);
}

/// A product's item as the stream shows it, at state `su` (milliseconds), written by an
/// import: what the products function writes, without the request.
fn product_image(org: &Org, id: &str, su: i64) -> Value {
    let su = Timestamp::from_millis(su).to_string();
    json!({"PK": {"S": format!("O#{}#P#{id}", org.id)}, "SK": {"S": "L1"},
           "GSI1PK": {"S": format!("O#{}#T#product#0", org.id)},
           "kind": {"S": "product"}, "id": {"S": id}, "name": {"S": id},
           "su": {"S": su}, "tu": {"S": su}, "by": {"S": "i:imp_synthetic"}})
}

/// A stream batch of the creations of product `id` at the states `su(i)`, `i` in `changes`.
fn creations(org: &Org, id: &str, changes: Range<usize>, su: impl Fn(usize) -> i64) -> Value {
    let records: Vec<Value> = changes
        .map(|i| stream_insert(&i.to_string(), product_image(org, id, su(i))))
        .collect();
    json!({ "Records": records })
}

/// Hands `event` to the real change feed, which must process every record.
async fn feed(event: &Value) {
    let answer = catalog_e2e::invoke("change-feed", event.clone()).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
}

/// The entry id history shows for a creation at state `su`.
fn created_id(su: i64) -> String {
    format!("h{su}2")
}

/// Every entry id of the history at `path`, newest first, by cursor pages of 200: each
/// page's total, and the first page's cost (its Query and the oldest entry's) and a later
/// page's (its Query), whatever the history's length.
async fn all_ids(org: &Org, path: &str, total: usize) -> Vec<String> {
    // the function's first call of the organization reads its key too
    assert_eq!(org.get(&format!("{path}?limit=1")).await.status, 200);
    let mut ids = Vec::new();
    let mut next = format!("{path}?limit=200");
    loop {
        let r = org.get(&next).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let cost = if ids.is_empty() { 2 } else { 1 };
        assert_eq!(
            (r.ddb_requests(), &r.body["pagination"]["totalResults"]),
            (cost, &json!(total))
        );
        for e in r.body["result"].as_array().unwrap() {
            ids.push(e["id"].as_str().unwrap().to_string());
        }
        match r.body["pagination"]["nextCursor"].as_str() {
            Some(c) => next = format!("{path}?limit=200&cursor={c}"),
            None => return ids,
        }
    }
}

/// The items of a history partition, as stored: its entries and its head (`None` when it
/// has none).
async fn stored(org: &Org, kind: &str, id: &str) -> (Vec<Item>, Option<Item>) {
    let pk = history_pk(&org.id, kind, id);
    let mut items = catalog_e2e::stack().await.partition(&pk).await;
    let head = items
        .iter()
        .position(|i| i["SK"] == AttributeValue::S(HISTORY_HEAD_SK.into()))
        .map(|at| items.remove(at));
    (items, head)
}

fn number(item: &Item, name: &str) -> i64 {
    item[name].as_n().unwrap().parse().unwrap()
}

/// Issue 60, item 6: a history keeps its newest `MAX_HISTORY_ENTRIES` entries. The feed
/// deletes the oldest beyond the bound in the write that passes it (the oldest entries'
/// keys from one ascending Query, the deletes in the entries' BatchWriteItem requests), so
/// the entity's storage is bounded and the first page's total stays exact. Before, every
/// change was kept for 90 days: 1,105 changes kept 1,105 entries.
#[tokio::test]
async fn a_history_keeps_its_newest_entries_up_to_the_bound() {
    stacks().await;
    let org = Org::new().await;
    let bound = MAX_HISTORY_ENTRIES as usize;
    assert_eq!(bound, 1_000);
    let start = Timestamp::now().millis() - 3_600_000;
    let su = |i: usize| start + i as i64 * 1_000;
    // batches as Lambda hands them out (up to 100 records): 995 changes, then 10 that pass
    // the bound by 5, then 100 more past it
    let mut sizes = vec![100; 9];
    sizes.extend([95, 10, 100]);
    let mut changes = 0;
    let mut last = Value::Null;
    for size in sizes {
        last = creations(&org, "busy", changes..changes + size, su);
        feed(&last).await;
        changes += size;
    }
    // the last batch delivered again writes nothing and deletes nothing
    feed(&last).await;
    assert_eq!(changes, 1_105);
    let path = "/v1/products/busy/history";
    let ids = all_ids(&org, path, bound).await;
    let kept: Vec<String> = (changes - bound..changes)
        .rev()
        .map(|i| created_id(su(i)))
        .collect();
    assert_eq!(ids.len(), bound);
    assert!(ids == kept, "the newest {bound} changes, newest first");
    // as stored: the bound's entries, numbered on from the head's
    let (entries, head) = stored(&org, "product", "busy").await;
    assert_eq!(entries.len(), bound);
    let mut numbers: Vec<i64> = entries.iter().map(|e| number(e, "n")).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (106..=1_105).collect::<Vec<i64>>());
    assert_eq!(number(&head.expect("a head"), "n"), 1_105);
}

/// Issue 60, item 6: how long history is kept is an organization setting,
/// `historyRetentionDays` (1 to 90, default 90; `GET /settings` reads it, `PATCH
/// /settings` with `settings:manage` changes it). The feed reads it with the heads of a
/// batch's histories (no request more) and gives each entry it writes from then on that
/// time to live; an entry is never kept shorter than those before it in its history, so a
/// history expires oldest first and its total stays exact. Before, there was no such
/// setting (404) and every entry was kept 90 days.
#[tokio::test]
async fn retention_is_an_organization_setting_for_the_entries_written_after() {
    stacks().await;
    let org = Org::new().await;
    let day = 86_400;
    let r = org.get("/v1/settings").await;
    assert_eq!(
        (r.status, r.body.clone()),
        (200, json!({"result": {"historyRetentionDays": 90}}))
    );
    // a product changed under the default
    let r = org
        .patch("/v1/products/early", json!({"name": "Early"}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let early = history(&org, "/v1/products/early/history", 1).await;

    let range = "field 'historyRetentionDays' must be an integer from 1 to 90";
    for (body, error) in [
        (json!({"historyRetentionDays": 0}), range),
        (json!({"historyRetentionDays": 91}), range),
        (json!({"historyRetentionDays": 1.5}), range),
        (json!({"historyRetentionDays": "7"}), range),
        (
            json!({"retention": 7}),
            "unknown field 'retention' (allowed: historyRetentionDays)",
        ),
    ] {
        let r = org.patch("/v1/settings", body.clone()).await;
        assert_eq!(
            (r.status, r.body.clone(), r.ddb_requests()),
            (400, json!({ "error": error }), 0),
            "{body}"
        );
    }
    // reading is catalog:read's; changing is settings:manage's
    let reader = org
        .key_with(&[Scope::CatalogRead, Scope::CatalogWrite])
        .await;
    let r = Request::new("GET", "/v1/settings")
        .bearer(&reader)
        .send()
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = Request::new("PATCH", "/v1/settings")
        .bearer(&reader)
        .json(json!({"historyRetentionDays": 1}))
        .send()
        .await;
    r.assert_lacks("settings:manage");
    let r = org
        .patch("/v1/settings", json!({"historyRetentionDays": 1}))
        .await;
    assert_eq!(
        (r.status, r.body.clone(), r.ddb_requests()),
        (200, json!({"result": {"historyRetentionDays": 1}}), 1)
    );
    let r = org.get("/v1/settings").await;
    assert_eq!(
        (r.body.clone(), r.ddb_requests()),
        (json!({"result": {"historyRetentionDays": 1}}), 1)
    );

    // written from then on: a new history's entries live one day
    let r = org
        .patch("/v1/products/late", json!({"name": "Late"}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let late = history(&org, "/v1/products/late/history", 1).await;
    let at = |e: &Value| {
        Timestamp::parse(e["at"].as_str().unwrap())
            .unwrap()
            .millis()
            / 1000
    };
    let (entries, head) = stored(&org, "product", "late").await;
    assert_eq!(number(&entries[0], "ttl"), at(&late[0]) + day);
    assert_eq!(number(&head.unwrap(), "ttl"), at(&late[0]) + day);
    // an older history's entries stay as they were written; a new entry of it lives as
    // long as they do, so that the history expires from its oldest entry
    let r = org
        .patch("/v1/products/early", json!({"name": "Early, again"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    history(&org, "/v1/products/early/history", 2).await;
    let (entries, _) = stored(&org, "product", "early").await;
    let ttls: Vec<i64> = entries.iter().map(|e| number(e, "ttl")).collect();
    assert_eq!(ttls, vec![at(&early[0]) + 90 * day; 2]);
}

/// Issue 60, item 6: `DELETE /{products|variants|skus|assets}/{identifier}/history` (scope
/// `settings:manage`: a key that writes the catalog cannot erase the record of its own
/// changes) erases an entity's history for personal data: every entry, with what changed
/// and who changed it. GET then answers as for an entity that never had history, and the
/// stream's records of the erased changes, delivered again, do not bring them back; later
/// changes are recorded as ever. Before, there was no such route (405).
#[tokio::test]
async fn erasing_a_history_deletes_its_entries_for_good() {
    stacks().await;
    let org = Org::new().await;
    let start = Timestamp::now().millis() - 60_000;
    let batch = creations(&org, "ghost", 0..3, |i| start + i as i64 * 1_000);
    feed(&batch).await;
    let path = "/v1/products/ghost/history";
    assert_eq!(all_ids(&org, path, 3).await.len(), 3);

    let writer = org
        .key_with(&[Scope::CatalogRead, Scope::CatalogWrite])
        .await;
    let r = Request::new("DELETE", path).bearer(&writer).send().await;
    r.assert_lacks("settings:manage");
    // the partition's keys (one Query), the deletes (one BatchWriteItem) and the erasure
    // mark (one UpdateItem), in one round trip after the Query
    let r = org.delete(path).await;
    assert_eq!(
        (r.status, r.body.clone(), r.ddb_requests()),
        (
            200,
            json!({"result": {"identifier": "ghost", "deleted": true, "erased": 3}}),
            3
        )
    );
    let gone = json!({"error": "product 'ghost' not found"});
    let r = org.get(path).await;
    assert_eq!((r.status, &r.body, r.ddb_requests()), (404, &gone, 3));
    // what is left: the mark of the erasure (its time, up to which the feed writes nothing
    // more, and the number later changes count on from), and no entry
    let (entries, mark) = stored(&org, "product", "ghost").await;
    assert!(entries.is_empty(), "{entries:?}");
    let mark = mark.expect("a mark");
    assert_eq!(number(&mark, "n"), 0);
    let mut names: Vec<String> = mark.into_keys().collect();
    names.sort_unstable();
    assert_eq!(names, ["PK", "SK", "erased", "n", "pos", "ttl"]);
    // the same records again (a retry, a redelivery): nothing comes back
    feed(&batch).await;
    let r = org.get(path).await;
    assert_eq!((r.status, &r.body), (404, &gone));
    assert!(stored(&org, "product", "ghost").await.0.is_empty());
    // nothing left to erase, of an entity that does not exist: 404, as GET
    let r = org.delete(path).await;
    assert_eq!((r.status, &r.body, r.ddb_requests()), (404, &gone, 2));
    let nope = json!({"error": "variant 'nope' not found"});
    let r = org.get("/v1/variants/nope/history").await;
    assert_eq!((r.status, &r.body), (404, &nope));
    let r = org.delete("/v1/variants/nope/history").await;
    assert_eq!((r.status, &r.body, r.ddb_requests()), (404, &nope, 2));

    // an entity that exists: its history is erased, its later changes are recorded
    for name in ["Lamp", "Desk lamp"] {
        let r = org
            .patch("/v1/products/lamp", json!({ "name": name }))
            .await;
        assert!(r.status == 201 || r.status == 200, "{:?}", r.body);
    }
    history(&org, "/v1/products/lamp/history", 2).await;
    let r = org.delete("/v1/products/lamp/history").await;
    assert_eq!(
        (r.status, r.body.clone(), r.ddb_requests()),
        (
            200,
            json!({"result": {"identifier": "lamp", "deleted": true, "erased": 2}}),
            3
        )
    );
    let r = org.get("/v1/products/lamp/history").await;
    assert_eq!(
        (r.status, r.body.clone(), r.ddb_requests()),
        (
            200,
            json!({"result": [], "pagination": {"limit": 100, "page": 1, "totalResults": 0,
                   "totalPages": 0, "nextCursor": null}}),
            3
        )
    );
    let r = org
        .patch("/v1/products/lamp", json!({"name": "Lamp"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let after = history(&org, "/v1/products/lamp/history", 1).await;
    assert_eq!(
        after[0]["changes"],
        json!({"name": {"old": "Desk lamp", "new": "Lamp"}})
    );
    // numbered from 1 again, as a new history
    let (entries, head) = stored(&org, "product", "lamp").await;
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (number(&entries[0], "n"), number(&head.unwrap(), "n")),
        (1, 1)
    );
}
