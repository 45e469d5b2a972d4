//! `PATCH /products` (bulk) end to end: the real `products` binary, real DynamoDB Local.

use catalog_e2e::{Org, Request};
use serde_json::{json, Value};

async fn bulk(org: &Org, body: Value) -> catalog_e2e::Response {
    org.patch("/v1/products", body).await
}

async fn bulk_raw(org: &Org, content_type: &str, body: &str) -> catalog_e2e::Response {
    Request::new("PATCH", "/v1/products")
        .bearer(&org.key)
        .raw_body(content_type, body)
        .send()
        .await
}

/// The catalog the tests write into: a text attribute on products, a select on variants,
/// a price and a number on SKUs.
async fn catalog(org: &Org) {
    org.define(
        json!({"key": "color", "displayName": "Color", "type": "text", "targetEntity": "product"}),
    )
    .await;
    org.define(json!({"key": "size", "displayName": "Size", "type": "select", "targetEntity": "variant", "options": ["S", "M", "L"]}))
        .await;
    org.define(
        json!({"key": "price", "displayName": "Price", "type": "price", "targetEntity": "sku"}),
    )
    .await;
    org.define(
        json!({"key": "stock", "displayName": "Stock", "type": "number", "targetEntity": "sku"}),
    )
    .await;
}

/// A product with one variant and three SKUs, five values in all.
fn tree(i: usize) -> Value {
    json!({
        "identifier": format!("p{i:04}"),
        "name": format!("Product {i}"),
        "values": {"color": "Red"},
        "variants": [{
            "identifier": format!("p{i:04}-v"),
            "values": {"size": "M"},
            "skus": [
                {"identifier": format!("p{i:04}-s1"), "values": {"price": "12.50 EUR"}},
                {"identifier": format!("p{i:04}-s2"), "values": {"stock": 3}},
                {"identifier": format!("p{i:04}-s3"), "values": {"price": "9 EUR"}},
            ]
        }]
    })
}

fn line(result: &Value, n: usize) -> &Value {
    &result["result"][n - 1]
}

#[tokio::test]
async fn a_thousand_items_with_bad_ones_answer_a_status_per_line_and_write_only_the_good() {
    let org = Org::new().await;
    catalog(&org).await;
    // Two products exist already: their lines are updates (200), and line 70 claims a
    // variant identifier that p0001 holds before the request.
    for i in [1, 2] {
        let r = org
            .patch(
                &format!("/v1/products/p{i:04}"),
                json!({"name": "Old", "variants": [{"identifier": format!("p{i:04}-v")}]}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    let mut items: Vec<Value> = (1..=1000).map(tree).collect();
    items[9]["values"] = json!({"colour": "Red"}); // line 10: unknown attribute
    items[19]["variants"][0]["skus"][1]["values"] = json!({"stock": "many"}); // line 20
    items[29].as_object_mut().unwrap().remove("identifier"); // line 30
    items[39] = tree(1); // line 40: repeats line 1
    items[49] = json!(42); // line 50: not an object
    items[59]["familyId"] = json!(999); // line 60: no such family
    items[69]["variants"][0]["identifier"] = json!("p0001-v"); // line 70: p0001's variant
    let r = bulk(&org, Value::Array(items)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let result = &r.body;
    assert_eq!(result["result"].as_array().unwrap().len(), 1000);
    assert_eq!(result.as_object().unwrap().len(), 1, "only `result`");
    let expected_errors: Vec<(usize, Value, u16, &str)> = vec![
        (
            10,
            json!("p0010"),
            400,
            "values: unknown attribute 'product.colour'",
        ),
        (
            20,
            json!("p0020"),
            400,
            "variants[0].skus[1].values.stock: expected a number",
        ),
        (
            30,
            Value::Null,
            400,
            "field 'identifier' is required and must be a string",
        ),
        (
            40,
            json!("p0001"),
            400,
            "product 'p0001' is given on line 1 already",
        ),
        (50, Value::Null, 400, "item must be a JSON object"),
        (
            60,
            json!("p0060"),
            400,
            "field 'familyId': family 999 does not exist",
        ),
        (
            70,
            json!("p0070"),
            409,
            "variant 'p0001-v' already exists under another product",
        ),
    ];
    for (n, id, status, error) in &expected_errors {
        assert_eq!(
            line(result, *n),
            &json!({"line": n, "identifier": id, "status": status, "error": error}),
            "line {n}"
        );
    }
    for n in 1..=1000usize {
        if expected_errors.iter().any(|e| e.0 == n) {
            continue;
        }
        let status = if n <= 2 { 200 } else { 201 };
        assert_eq!(
            line(result, n),
            &json!({"line": n, "identifier": format!("p{n:04}"), "status": status}),
            "line {n}"
        );
    }

    // Written whole: every good product with its variant and three SKUs, every value.
    let listed = org.get("/v1/products?limit=1").await;
    assert_eq!(listed.body["pagination"]["totalResults"], 993);
    let skus = org.get("/v1/skus?limit=1").await;
    assert_eq!(skus.body["pagination"]["totalResults"], 993 * 3);
    let got = org.get("/v1/products/p0500?include=variants,skus").await;
    assert_eq!(got.status, 200);
    let p = &got.body["result"];
    assert_eq!(p["attributes"]["product.color"][0]["value"], "Red");
    assert_eq!(
        p["variants"][0]["attributes"]["variant.size"][0]["value"],
        "M"
    );
    let skus = p["variants"][0]["skus"].as_array().unwrap();
    assert_eq!(skus.len(), 3);
    assert_eq!(
        skus[0]["attributes"]["sku.price"][0]["data"],
        json!({"amount": 12.5, "currency": "EUR"})
    );
    assert_eq!(skus[1]["attributes"]["sku.stock"][0]["data"], 3);
    // Not at all: the refused items wrote nothing, not even their identity claims.
    for id in ["p0010", "p0020", "p0060", "p0070"] {
        assert_eq!(
            org.get(&format!("/v1/products/{id}")).await.status,
            404,
            "{id}"
        );
    }
    for v in ["p0010-v", "p0020-v", "p0060-v"] {
        assert_eq!(
            org.get(&format!("/v1/variants/{v}")).await.status,
            404,
            "{v}"
        );
    }
    assert_eq!(org.get("/v1/skus/p0020-s1").await.status, 404);
    // The updated products kept their identity and took the new name.
    let p1 = org.get("/v1/products/p0001").await;
    assert_eq!(p1.body["result"]["name"], "Product 1");
}

#[tokio::test]
async fn limits_and_malformed_bodies_write_nothing() {
    let org = Org::new().await;
    let too_many: Vec<Value> = (0..1001)
        .map(|i| json!({"identifier": format!("x{i}")}))
        .collect();
    let r = bulk(&org, Value::Array(too_many)).await;
    assert_eq!(r.status, 413);
    assert_eq!(
        r.body,
        json!({"error": "a bulk request holds at most 1000 items; this one has 1001"})
    );
    let ndjson: String = (0..1001)
        .map(|i| format!("{{\"identifier\":\"y{i}\"}}\n"))
        .collect();
    let r = bulk_raw(&org, "application/x-ndjson", &ndjson).await;
    assert_eq!(r.status, 413);
    // Over 6 MiB in a few items.
    let big = "a".repeat(6 * 1024 * 1024);
    let r = bulk(&org, json!([{"identifier": "big", "name": big}])).await;
    assert_eq!(r.status, 413);
    assert_eq!(
        r.body,
        json!({"error": format!("request body is larger than {} bytes", 6 * 1024 * 1024)})
    );
    let r = bulk(&org, json!({"identifier": "obj"})).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.body,
        json!({"error": "request body must be a JSON array of objects (or NDJSON with Content-Type: application/x-ndjson)"})
    );
    let r = bulk_raw(&org, "application/json", "[{\"identifier\": \"a\"},").await;
    assert_eq!(r.status, 400);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .starts_with("request body is not valid JSON"),
        "{:?}",
        r.body
    );
    let r = bulk_raw(&org, "text/csv", "identifier\na\n").await;
    assert_eq!(r.status, 415);
    let listed = org.get("/v1/products").await;
    assert_eq!(
        listed.body["pagination"]["totalResults"], 0,
        "nothing written"
    );
    // An empty array is a valid, empty request.
    let r = bulk(&org, json!([])).await;
    assert_eq!((r.status, r.body.clone()), (200, json!({"result": []})));
}

#[tokio::test]
async fn ndjson_lines_are_numbered_as_sent_and_bad_lines_stand_alone() {
    let org = Org::new().await;
    let body = "{\"identifier\":\"n1\",\"name\":\"One\"}\n\n{not json\n{\"identifier\":\"n2\"}\r\n{\"identifier\":\"a/b\"}\n";
    let r = bulk_raw(&org, "application/x-ndjson", body).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let lines = r.body["result"].as_array().unwrap();
    assert_eq!(lines.len(), 4);
    // a line refused for its identifier still echoes the identifier it was sent
    assert_eq!(
        lines[3],
        json!({"line": 5, "identifier": "a/b", "status": 400,
               "error": "product identifier must not contain '/'"})
    );
    assert_eq!(
        lines[0],
        json!({"line": 1, "identifier": "n1", "status": 201})
    );
    assert_eq!(lines[1]["line"], 3);
    assert_eq!(lines[1]["status"], 400);
    assert!(lines[1]["error"]
        .as_str()
        .unwrap()
        .starts_with("line is not valid JSON"));
    assert_eq!(
        lines[2],
        json!({"line": 4, "identifier": "n2", "status": 201})
    );
    assert_eq!(
        org.get("/v1/products/n1").await.body["result"]["name"],
        "One"
    );
}

/// The parts of a product tree that the input decides (timestamps differ between writes).
fn without_times(mut v: Value) -> Value {
    match &mut v {
        Value::Object(m) => {
            m.remove("selfUpdatedAt");
            m.remove("updatedAt");
            for x in m.values_mut() {
                *x = without_times(x.take());
            }
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                *x = without_times(x.take());
            }
        }
        _ => {}
    }
    v
}

#[tokio::test]
async fn bulk_and_single_patch_store_the_same_trees_and_bulk_reads_settings_once() {
    let single = Org::new().await;
    let bulked = Org::new().await;
    for org in [&single, &bulked] {
        catalog(org).await;
    }
    let items: Vec<Value> = (1..=3).map(tree).collect();
    for item in &items {
        let mut body = item.clone();
        let id = body.as_object_mut().unwrap().remove("identifier").unwrap();
        let r = single
            .patch(&format!("/v1/products/{}", id.as_str().unwrap()), body)
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    // A read first, so that the key is in the function's auth cache.
    assert_eq!(bulked.get("/v1/products").await.status, 200);
    let r = bulk(&bulked, Value::Array(items.clone())).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    // One of the organization's bulk slots, taken and given back (a PutItem, a DeleteItem);
    // one BatchGetItem of the definitions and scopes and one of the product items for the
    // whole request; new products need no tree read, and share one transaction (27 actions).
    assert_eq!(r.ddb_requests(), 2 + 1 + 1 + 1);
    for item in &items {
        let path = format!(
            "/v1/products/{}?include=variants,skus",
            item["identifier"].as_str().unwrap()
        );
        let a = single.get(&path).await;
        let b = bulked.get(&path).await;
        assert_eq!(a.status, 200);
        assert_eq!(without_times(a.body), without_times(b.body), "{path}");
    }
    // The same bulk again changes nothing: every line 200, no write.
    let again = bulk(&bulked, Value::Array(items)).await;
    let statuses: Vec<&Value> = again.body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["status"])
        .collect();
    assert_eq!(statuses, vec![&json!(200); 3]);
    assert_eq!(
        again.ddb_requests(),
        2 + 1 + 1 + 3,
        "the slot, then reads only: settings, product items, then each tree (it names variants)"
    );
    // Updates of existing products are planned on the batched read and share one
    // transaction too: no read of their own, one TransactWriteItems for the three.
    let renames: Vec<Value> = (1..=3)
        .map(|i| json!({"identifier": format!("p{i:04}"), "name": format!("Renamed {i}")}))
        .collect();
    let renamed = bulk(&bulked, Value::Array(renames)).await;
    assert_eq!(
        renamed.body,
        json!({"result": [
            {"line": 1, "identifier": "p0001", "status": 200},
            {"line": 2, "identifier": "p0002", "status": 200},
            {"line": 3, "identifier": "p0003", "status": 200}
        ]})
    );
    assert_eq!(
        renamed.ddb_requests(),
        2 + 1 + 1,
        "the slot, the product items, one transaction"
    );
    for i in 1..=3 {
        let got = bulked.get(&format!("/v1/products/p{i:04}")).await;
        assert_eq!(got.body["result"]["name"], format!("Renamed {i}"));
    }
}

#[tokio::test]
async fn a_line_refused_on_what_was_read_is_answered_from_that_read_and_stores_nothing() {
    let org = Org::new().await;
    // A read first, so that the key is in the function's auth cache.
    assert_eq!(org.get("/v1/products").await.status, 200);
    let r = bulk(
        &org,
        json!([
            {"identifier": "c1", "name": "One", "categories": ["nope"]},
            {"identifier": "c2", "name": "Two", "assets": [{"identifier": "a1"}]}
        ]),
    )
    .await;
    assert_eq!(
        r.body,
        json!({"result": [
            {"line": 1, "identifier": "c1", "status": 400,
             "error": "field 'categories': category 'nope' does not exist"},
            {"line": 2, "identifier": "c2", "status": 400,
             "error": "assets[0]: asset 'a1' does not exist; give its 'url' to create it"}
        ]})
    );
    // The bulk slot (a PutItem, a DeleteItem), the product items, and each line's link
    // targets once (one parallel round): no line is read a second time to be refused.
    assert_eq!(r.ddb_requests(), 2 + 1 + 2);
    for id in ["c1", "c2"] {
        assert_eq!(org.get(&format!("/v1/products/{id}")).await.status, 404);
    }
    assert_eq!(org.get("/v1/assets/a1").await.status, 404);
}
