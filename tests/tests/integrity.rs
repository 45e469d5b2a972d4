//! Refused requests change nothing, and limits hold before the first write (decisions.md,
//! "Integrity of refused requests" and "Limits"), through the real binaries: every test
//! asserts the stored state after the answer, not only the status.

use catalog_e2e::{faults, send_to, Org, Request, Response};
use serde_json::{json, Value};

/// The identifiers of a product's SKUs, as stored.
async fn sku_ids(org: &Org, product: &str) -> Vec<String> {
    let r = org
        .get(&format!("/v1/products/{product}?include=variants,skus"))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body["result"]["variants"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|v| v["skus"].as_array().unwrap().clone())
        .map(|s| s["identifier"].as_str().unwrap().to_string())
        .collect()
}

fn error(r: &Response) -> (u16, &str) {
    (r.status, r.body["error"].as_str().unwrap_or_default())
}

/// 60 new variants, the last one too large to store: before, the first transaction (49
/// variants) was committed and the answer was a 400; now the size is checked first.
#[tokio::test]
async fn a_refused_tree_patch_writes_nothing() {
    let org = Org::new().await;
    let mut notes = serde_json::Map::new();
    for i in 0..5 {
        org.define(json!({"displayName": "Notes", "key": format!("notes{i}"), "targetEntity": "variant", "type": "text"}))
            .await;
        notes.insert(format!("notes{i}"), json!("x".repeat(90_000)));
    }
    let mut variants: Vec<Value> = (0..60)
        .map(|i| json!({"identifier": format!("big-v{i:02}")}))
        .collect();
    variants[59]["values"] = Value::Object(notes);
    let r = org
        .patch("/v1/products/big", json!({"variants": variants}))
        .await;
    assert_eq!(
        error(&r),
        (
            400,
            "variant 'big-v59' would take 450385 bytes, over the storage limit of 400 KB (409600 bytes); store less data in its values"
        )
    );
    assert_eq!(
        org.get("/v1/products/big").await.status,
        404,
        "nothing written"
    );
    assert_eq!(org.get("/v1/variants/big-v00").await.status, 404);
    let list = org.get("/v1/variants").await;
    assert_eq!(list.body["pagination"]["totalResults"], json!(0));
}

/// DELETE of a tree whose last SKU is in a bundle: before, the SKUs of the first
/// transactions were gone when the 409 came.
#[tokio::test]
async fn a_refused_delete_deletes_nothing() {
    let org = Org::new().await;
    let skus: Vec<Value> = (0..30)
        .map(|i| json!({"identifier": format!("d-s{i:02}")}))
        .collect();
    let r = org
        .patch(
            "/v1/products/d",
            json!({"variants": [{"identifier": "d-v", "skus": skus}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = org
        .put(
            "/v1/bundles/d-set",
            json!({"name": "Set", "items": [{"sku": "d-s29", "quantity": 1}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let held = (
        409,
        "sku 'd-s29' is part of a bundle; remove it from its bundles before deleting it",
    );
    let r = org.delete("/v1/products/d").await;
    assert_eq!(error(&r), held);
    assert_eq!(sku_ids(&org, "d").await.len(), 30, "no SKU deleted");
    let r = org.delete("/v1/variants/d-v").await;
    assert_eq!(error(&r), held);
    assert_eq!(sku_ids(&org, "d").await.len(), 30, "no SKU deleted");
    let deletions = org.get("/v1/deletions?entity_type=sku").await;
    assert_eq!(deletions.body["pagination"]["totalResults"], json!(0));
    // once out of the bundle, the delete goes through whole
    assert_eq!(org.delete("/v1/bundles/d-set").await.status, 200);
    assert_eq!(org.delete("/v1/products/d").await.status, 200);
    assert_eq!(org.get("/v1/skus/d-s00").await.status, 404);
}

/// A write of three transactions whose second one storage keeps failing: the answer says
/// it was partially applied (503, `Retry-After`, the header), what is stored is a valid
/// tree, and repeating the same request completes it.
#[tokio::test]
async fn a_write_cut_by_storage_says_it_was_partially_applied_and_a_repeat_completes_it() {
    const TRANSACT: &str = "TransactWriteItems";
    let db = faults::faulty_db().await;
    let _exclusive = db.exclusive.lock().await;
    let org = Org::new().await;
    let skus: Vec<Value> = (0..150)
        .map(|i| json!({"identifier": format!("cut-s{i:03}")}))
        .collect();
    let body = json!({"name": "Cut", "variants": [{"identifier": "cut-v", "skus": skus}]});
    db.throttle(TRANSACT, 1, faults::ALWAYS);
    let r = send_to(
        "products@faultydb",
        Request::new("PATCH", "/v1/products/cut")
            .bearer(&org.key)
            .json(body.clone()),
    )
    .await;
    db.reset();
    assert_eq!(
        (
            r.status,
            r.body["error"].as_str().unwrap_or_default(),
            r.header("retry-after"),
            r.header("catalog-partially-applied")
        ),
        (
            503,
            "the request was partially applied: part of its writes are stored, then it stopped (service temporarily unavailable, retry later); repeat the same request to complete it",
            Some("1"),
            Some("true")
        )
    );
    let written = sku_ids(&org, "cut").await;
    assert!(
        (1..150).contains(&written.len()),
        "the first transaction only: {}",
        written.len()
    );
    // every stored SKU sits under its stored variant
    for id in &written {
        let sku = org.get(&format!("/v1/skus/{id}")).await;
        assert_eq!(sku.body["result"]["variant"]["identifier"], json!("cut-v"));
    }
    let r = org.patch("/v1/products/cut", body).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(sku_ids(&org, "cut").await.len(), 150);

    // the same cut with If-Match: the repeat's own first write does not make it a 412
    let skus: Vec<Value> = (150..300)
        .map(|i| json!({"identifier": format!("cut-s{i:03}")}))
        .collect();
    let body = json!({"name": "Cut 2", "variants": [{"identifier": "cut-v2", "skus": skus}]});
    let tag = org.get("/v1/products/cut").await.headers["etag"].clone();
    db.throttle(TRANSACT, 1, faults::ALWAYS);
    let r = send_to(
        "products@faultydb",
        Request::new("PATCH", "/v1/products/cut")
            .bearer(&org.key)
            .header("if-match", &tag)
            .json(body),
    )
    .await;
    db.reset();
    assert_eq!(r.status, 503, "{:?}", r.body);
    assert_eq!(r.header("catalog-partially-applied"), Some("true"));
}

#[tokio::test]
async fn entity_names_follow_the_display_name_rule() {
    let org = Org::new().await;
    for (body, message) in [
        (
            json!({"name": ""}),
            "field 'name' must be 1 to 255 characters, not blank",
        ),
        (
            json!({"name": "  "}),
            "field 'name' must be 1 to 255 characters, not blank",
        ),
        (
            json!({"name": "a\u{7}b"}),
            "field 'name' must not contain control characters",
        ),
        (
            json!({"name": "x".repeat(256)}),
            "field 'name' must be 1 to 255 characters, not blank",
        ),
        (
            json!({"variants": [{"identifier": "n-v", "name": "line\nbreak"}]}),
            "variants[0]: field 'name' must not contain control characters",
        ),
        (
            json!({"variants": [{"identifier": "n-v", "skus": [{"identifier": "n-s", "name": ""}]}]}),
            "variants[0].skus[0]: field 'name' must be 1 to 255 characters, not blank",
        ),
    ] {
        let r = org.patch("/v1/products/n", body).await;
        assert_eq!(error(&r), (400, message));
    }
    assert_eq!(
        org.get("/v1/products/n").await.status,
        404,
        "nothing written"
    );
    // omitted: a new entity is named after its identifier; an update keeps the name
    let r = org
        .patch(
            "/v1/products/n",
            json!({"variants": [{"identifier": "n-v"}]}),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(
        org.get("/v1/products/n").await.body["result"]["name"],
        json!("n")
    );
    assert_eq!(
        org.patch("/v1/products/n", json!({"name": "N"}))
            .await
            .status,
        200
    );
    assert_eq!(
        org.patch("/v1/products/n", json!({"values": {}}))
            .await
            .status,
        200
    );
    assert_eq!(
        org.get("/v1/products/n").await.body["result"]["name"],
        json!("N")
    );
    let r = org.patch("/v1/skus/missing", json!({"name": ""})).await;
    assert_eq!(
        error(&r),
        (400, "field 'name' must be 1 to 255 characters, not blank")
    );
}

/// 255 characters of `€` are 765 bytes: every identifier over 300 bytes is a 400 naming it,
/// wherever it is given, before anything is read or written.
#[tokio::test]
async fn identifiers_are_limited_in_bytes() {
    let org = Org::new().await;
    let long = "€".repeat(101);
    let fits = "€".repeat(100);
    let r = org
        .patch(
            &format!("/v1/products/{}", catalog_e2e::encode(&long)),
            json!({}),
        )
        .await;
    assert_eq!(
        error(&r),
        (400, "product identifier must be at most 300 bytes of UTF-8")
    );
    let r = org
        .patch(
            "/v1/products/ok",
            json!({"variants": [{"identifier": fits, "skus": [{"identifier": long}]}]}),
        )
        .await;
    assert_eq!(
        error(&r),
        (
            400,
            "variants[0].skus[0]: sku identifier must be at most 300 bytes of UTF-8"
        )
    );
    assert_eq!(org.get("/v1/products/ok").await.status, 404);
    // the longest identifiers fit every key: variant and SKU of 300 bytes each
    let r = org
        .patch(
            &format!("/v1/products/{}", catalog_e2e::encode(&fits)),
            json!({"variants": [{"identifier": fits, "skus": [{"identifier": format!("{}abc", "€".repeat(99))}]}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = org
        .patch(
            "/v1/products",
            json!([{"identifier": long}, {"identifier": "fine"}]),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["result"][0],
        json!({"line": 1, "identifier": long, "status": 400, "error": "product identifier must be at most 300 bytes of UTF-8"})
    );
    assert_eq!(r.body["result"][1]["status"], json!(201));
}

/// Trees, `values`, `search` and bulk requests are bounded, each refused with its limit
/// named before the store is read or written.
#[tokio::test]
async fn trees_values_searches_and_bulk_requests_are_bounded() {
    let org = Org::new().await;
    let variants = |n: usize, prefix: &str| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"identifier": format!("{prefix}-v{i:03}")}))
            .collect()
    };
    let r = org
        .patch("/v1/products/t", json!({"variants": variants(101, "t")}))
        .await;
    assert_eq!(
        error(&r),
        (
            400,
            "field 'variants': a product has at most 100 variants; this body names 101"
        )
    );
    let skus: Vec<Value> = (0..501)
        .map(|i| json!({"identifier": format!("t-s{i:03}")}))
        .collect();
    let r = org
        .patch(
            "/v1/products/t",
            json!({"variants": [{"identifier": "t-v", "skus": skus}]}),
        )
        .await;
    assert_eq!(
        error(&r),
        (
            400,
            "field 'variants': a product has at most 500 SKUs; this body names 501"
        )
    );
    assert_eq!(org.get("/v1/products/t").await.status, 404);
    // the stored tree counts too
    let r = org
        .patch("/v1/products/t", json!({"variants": variants(100, "t")}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = org
        .patch(
            "/v1/products/t",
            json!({"variants": [{"identifier": "t-extra"}]}),
        )
        .await;
    assert_eq!(
        error(&r),
        (
            400,
            "field 'variants': a product has at most 100 variants; this write would make 101"
        )
    );
    assert_eq!(org.get("/v1/variants/t-extra").await.status, 404);

    // 20,000 unknown keys cost 201 requests before: now none
    let keys: serde_json::Map<String, Value> =
        (0..20_000).map(|i| (format!("k{i}"), json!(1))).collect();
    let r = org.patch("/v1/products/t", json!({"values": keys})).await;
    assert_eq!(
        error(&r),
        (
            400,
            "field 'values': at most 300 attribute keys per entity; this one has 20000"
        )
    );
    assert_eq!(r.ddb_requests(), 0);
    let keys: serde_json::Map<String, Value> =
        (0..300).map(|i| (format!("k{i}"), json!(1))).collect();
    let body = json!({"values": keys, "variants": [{"identifier": "t-v000", "values": keys}]});
    let r = org.patch("/v1/products/t", body).await;
    assert_eq!(
        error(&r),
        (
            400,
            "field 'values': a write names at most 500 distinct attribute keys; this one names 600"
        )
    );
    assert_eq!(r.ddb_requests(), 0);
    let some: serde_json::Map<String, Value> =
        (0..200).map(|i| (format!("k{i}"), json!(1))).collect();
    let body = json!({"values": keys, "variants": [{"identifier": "t-v000", "values": some}]});
    let r = org.patch("/v1/products/t", body).await;
    assert_eq!(error(&r), (400, "values: unknown attribute 'product.k0'"));
    assert_eq!(
        r.ddb_requests(),
        6,
        "500 definitions and the scopes item: six BatchGetItem requests"
    );
    let keys: serde_json::Map<String, Value> =
        (0..300).map(|i| (format!("Bad-{i}"), json!(1))).collect();
    let r = org.patch("/v1/products/t", json!({"values": keys})).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.ddb_requests(),
        0,
        "keys no attribute can have are not read"
    );

    let search = |s: Value| {
        format!(
            "/v1/products?search={}",
            catalog_e2e::encode(&s.to_string())
        )
    };
    let many: serde_json::Map<String, Value> = (0..21)
        .map(|i| (format!("product.k{i}"), json!([{"operator": "NOT_EMPTY"}])))
        .collect();
    let r = org.get(&search(Value::Object(many))).await;
    assert_eq!(
        error(&r),
        (
            400,
            "query parameter 'search': at most 20 filter keys; this one has 21"
        )
    );
    let conditions: Vec<Value> = (0..11).map(|_| json!({"operator": "NOT_EMPTY"})).collect();
    let r = org.get(&search(json!({"product.k": conditions}))).await;
    assert_eq!(
        error(&r),
        (
            400,
            "filter 'product.k': at most 10 conditions per key; this one has 11"
        )
    );
    let values: Vec<String> = (0..101).map(|i| i.to_string()).collect();
    let r = org
        .get(&search(
            json!({"product.k": [{"operator": "IN", "value": values}]}),
        ))
        .await;
    assert_eq!(
        error(&r),
        (
            400,
            "filter 'product.k': IN takes at most 100 values; this one has 101"
        )
    );

    let items: Vec<Value> = (0..11)
        .map(|i| {
            let skus: Vec<Value> = (0..455)
                .map(|j| json!({"identifier": format!("b{i}-s{j}")}))
                .collect();
            json!({"identifier": format!("b{i}"), "variants": [{"identifier": format!("b{i}-v"), "skus": skus}]})
        })
        .collect();
    let r = org.patch("/v1/products", Value::Array(items)).await;
    assert_eq!(
        error(&r),
        (
            413,
            "a bulk request writes at most 5000 variants and SKUs in all; this one names 5016"
        )
    );
    assert_eq!(org.get("/v1/products/b0").await.status, 404);
}

/// A list page with `include` embeds at most 5,000 variants and SKUs.
#[tokio::test]
async fn a_list_page_embeds_a_bounded_number_of_entities() {
    let org = Org::new().await;
    let mut items = Vec::new();
    for i in 0..11 {
        let skus: Vec<Value> = (0..460)
            .map(|j| json!({"identifier": format!("e{i}-s{j}")}))
            .collect();
        items.push(json!({"identifier": format!("e{i:02}"), "variants": [{"identifier": format!("e{i}-v"), "skus": skus}]}));
        if items.len() == 5 || i == 10 {
            let r = org
                .patch("/v1/products", Value::Array(std::mem::take(&mut items)))
                .await;
            assert_eq!(r.status, 200, "{:?}", r.body);
            assert!(
                r.body["result"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|l| l["status"] == json!(201)),
                "{:?}",
                r.body
            );
        }
    }
    let r = org.get("/v1/products?include=variants,skus").await;
    assert_eq!(
        error(&r),
        (400, "query parameter 'include': this page would embed 5071 variants and SKUs, more than the 5000 a page holds; ask for a lower 'limit'")
    );
    let r = org.get("/v1/products?include=variants,skus&limit=10").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["result"].as_array().unwrap().len(), 10);
    let r = org.get("/v1/products?include=variants").await;
    assert_eq!(r.status, 200);
}
