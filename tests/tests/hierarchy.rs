//! Products, variants and SKUs as a hierarchy, end to end through the real `products`,
//! `variants` and `skus` functions: nested writes, inherited attributes, change tracking,
//! deletes and the DynamoDB requests each call costs.

use catalog_e2e::{Org, Request, Response};
use serde_json::{json, Value};

fn ts(r: &Value, field: &str) -> String {
    r[field].as_str().unwrap_or_default().to_string()
}

/// One call to each function, so that request counts below start with a warm auth cache.
async fn warm(org: &Org) {
    for path in ["/v1/products/warm", "/v1/variants/warm", "/v1/skus/warm"] {
        assert_eq!(org.get(path).await.status, 404);
    }
}

async fn attributes(org: &Org) {
    for (entity, key, t) in [
        ("product", "brand", "text"),
        ("variant", "color", "text"),
        ("sku", "size", "text"),
        ("sku", "price", "price"),
    ] {
        org.define(json!({"displayName": key, "key": key, "targetEntity": entity, "type": t}))
            .await;
    }
}

/// A chair with two variants and three SKUs, through the API.
async fn chair(org: &Org) -> Response {
    attributes(org).await;
    let r = org
        .patch(
            "/v1/products/chair",
            json!({
                "name": "Chair",
                "values": {"brand": "Acme"},
                "variants": [
                    {"identifier": "chair-oak", "name": "Oak", "values": {"color": "brown"},
                     "skus": [
                        {"identifier": "chair-oak-s", "values": {"size": "S", "price": "10.00 EUR"}},
                        {"identifier": "chair-oak-m", "name": "Oak M"}
                     ]},
                    {"identifier": "chair-ash", "skus": [{"identifier": "chair-ash-s"}]}
                ]
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r
}

#[tokio::test]
async fn nested_patch_creates_the_tree_in_one_transaction() {
    let org = Org::new().await;
    warm(&org).await;
    let r = chair(&org).await;
    // definitions + tree read + one transaction for 6 entities and 5 identity items
    assert_eq!(r.ddb_requests(), 3);
    let res = &r.body["result"];
    assert_eq!(res["identifier"], "chair");
    assert_eq!(res["name"], "Chair");
    assert_eq!(res.as_object().unwrap().len(), 4);

    let got = org.get("/v1/products/chair?include=variants,skus").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.ddb_requests(), 1);
    let p = &got.body["result"];
    assert_eq!(p["attributes"]["product.brand"][0]["value"], "Acme");
    let variants = p["variants"].as_array().unwrap();
    let ids: Vec<&str> = variants
        .iter()
        .map(|v| v["identifier"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["chair-ash", "chair-oak"], "identifier order");
    let oak = &variants[1];
    assert_eq!(oak["name"], "Oak");
    assert_eq!(
        oak["attributes"],
        json!({"variant.color": [{"value": "brown", "data": "brown", "type": "text", "locale": null}]}),
        "embedded variants carry only their own attributes"
    );
    assert_eq!(
        variants[0]["name"], "chair-ash",
        "name defaults to the identifier"
    );
    let oak_skus: Vec<&str> = oak["skus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["identifier"].as_str().unwrap())
        .collect();
    assert_eq!(oak_skus, ["chair-oak-m", "chair-oak-s"]);
    let s = &oak["skus"][1];
    assert_eq!(
        s["attributes"]["sku.price"][0]["data"],
        json!({"amount": 10.0, "currency": "EUR"})
    );
    assert!(s.get("product").is_none() && s.get("variant").is_none());
    // everything was written at one time
    assert_eq!(ts(p, "updatedAt"), ts(res, "updatedAt"));
    assert_eq!(ts(oak, "selfUpdatedAt"), ts(res, "updatedAt"));

    // a second identical PATCH changes nothing and writes nothing
    let again = org
        .patch(
            "/v1/products/chair",
            json!({"variants": [{"identifier": "chair-oak", "name": "Oak"}]}),
        )
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["result"], *res);
    assert_eq!(again.ddb_requests(), 1, "tree read only");
}

#[tokio::test]
async fn an_invalid_body_changes_nothing_and_names_the_problem() {
    let org = Org::new().await;
    attributes(&org).await;
    let cases = [
        (
            json!({"variants": [{"identifier": "v1", "skus": [{"identifier": "s1", "values": {"price": "ten"}}]}]}),
            "variants[0].skus[0].values.price: 'ten' is not a price like \"12.50 EUR\"",
        ),
        (
            json!({"variants": [{"identifier": "v1", "values": {"brand": "x"}}]}),
            "variants[0].values: unknown attribute 'variant.brand'",
        ),
        (
            json!({"variants": [{"name": "no id"}]}),
            "variants[0]: field 'identifier' is required and must be a string",
        ),
        (
            json!({"variants": [{"identifier": "v1"}, {"identifier": "v1"}]}),
            "variants[1]: variant 'v1' is given twice",
        ),
        (
            json!({"variants": [{"identifier": "v1", "skus": [{"identifier": "s"}]}, {"identifier": "v2", "skus": [{"identifier": "s"}]}]}),
            "variants[1].skus[0]: sku 's' is given twice",
        ),
        (
            json!({"variants": [{"identifier": "v1", "colour": "x"}]}),
            "variants[0]: unknown field 'colour' (allowed: identifier, name, values, skus)",
        ),
        (json!({"variants": {}}), "field 'variants' must be an array"),
        (
            json!({"familyId": "one"}),
            "field 'familyId' must be a positive integer or null",
        ),
        (
            json!({"familyId": 99}),
            "field 'familyId': family 99 does not exist",
        ),
    ];
    for (body, error) in cases {
        let r = org.patch("/v1/products/p", body.clone()).await;
        assert_eq!(
            (r.status, r.body),
            (400, json!({ "error": error })),
            "{body}"
        );
    }
    assert_eq!(org.get("/v1/products/p").await.status, 404);
    assert_eq!(org.get("/v1/variants/v1").await.status, 404);
}

#[tokio::test]
async fn variant_and_sku_identifiers_are_unique_in_the_organization() {
    let org = Org::new().await;
    chair(&org).await;
    let r = org
        .patch(
            "/v1/products/table",
            json!({"variants": [{"identifier": "chair-oak"}]}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "variant 'chair-oak' already exists under another product"})
        )
    );
    assert_eq!(
        org.get("/v1/products/table").await.status,
        404,
        "nothing of the failed transaction is written"
    );
    let r = org
        .patch(
            "/v1/products/chair",
            json!({"variants": [{"identifier": "chair-ash", "skus": [{"identifier": "chair-oak-s"}]}]}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "sku 'chair-oak-s' belongs to variant 'chair-oak'"})
        )
    );
    let r = org
        .patch(
            "/v1/products/table",
            json!({"variants": [{"identifier": "t1", "skus": [{"identifier": "chair-ash-s"}]}]}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "sku 'chair-ash-s' already exists under another variant"})
        )
    );
    // another organization has its own identifiers
    let other = Org::new().await;
    assert_eq!(chair(&other).await.status, 201);
}

#[tokio::test]
async fn variant_and_sku_endpoints_merge_inherited_attributes() {
    let org = Org::new().await;
    chair(&org).await;
    warm(&org).await;

    let v = org.get("/v1/variants/chair-oak").await;
    assert_eq!(v.status, 200);
    assert_eq!(v.ddb_requests(), 2, "identity + BatchGetItem");
    let r = &v.body["result"];
    assert_eq!(
        r["attributes"],
        json!({
            "product.brand": [{"value": "Acme", "data": "Acme", "type": "text", "locale": null}],
            "variant.color": [{"value": "brown", "data": "brown", "type": "text", "locale": null}]
        })
    );
    assert_eq!(
        r["product"],
        json!({"identifier": "chair", "name": "Chair"})
    );
    assert!(r.get("skus").is_none());

    let v = org.get("/v1/variants/chair-oak?include=skus").await;
    assert_eq!(v.ddb_requests(), 2, "identity + one filtered Query");
    let skus = v.body["result"]["skus"].as_array().unwrap();
    assert_eq!(skus.len(), 2);
    assert_eq!(
        skus[1]["attributes"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["sku.price", "sku.size"],
        "embedded SKUs carry only their own attributes"
    );

    let s = org.get("/v1/skus/chair-oak-s").await;
    assert_eq!(s.status, 200);
    assert_eq!(s.ddb_requests(), 2, "identity + BatchGetItem");
    let r = &s.body["result"];
    assert_eq!(
        r["attributes"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["product.brand", "sku.price", "sku.size", "variant.color"]
    );
    assert_eq!(
        r["product"],
        json!({"identifier": "chair", "name": "Chair"})
    );
    assert_eq!(
        r["variant"],
        json!({"identifier": "chair-oak", "name": "Oak"})
    );

    // selectors apply at the level where the attribute is defined
    let s = org
        .get("/v1/skus/chair-oak-s?attributes=product.*,sku.p*&exclude_attributes=sku.size")
        .await;
    assert_eq!(
        s.body["result"]["attributes"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["product.brand", "sku.price"]
    );
    let s = org.get("/v1/variants/chair-oak?attributes=").await;
    assert_eq!(s.body["result"]["attributes"], json!({}));
    let s = org
        .get("/v1/products/chair?include=variants&attributes=variant.color")
        .await;
    assert_eq!(s.body["result"]["attributes"], json!({}));
    assert_eq!(
        s.body["result"]["variants"][1]["attributes"]
            .as_object()
            .unwrap()
            .len(),
        1
    );

    for (path, error) in [
        ("/v1/variants/nope", "variant 'nope' not found"),
        ("/v1/skus/nope", "sku 'nope' not found"),
    ] {
        let r = org.get(path).await;
        assert_eq!((r.status, r.body), (404, json!({ "error": error })));
    }
    for (path, error) in [
        (
            "/v1/variants/chair-oak?include=variants",
            "include: unknown value 'variants' (allowed: skus, metaobjects)",
        ),
        (
            "/v1/skus/chair-oak-s?include=skus",
            "include: unknown value 'skus' (allowed: metaobjects)",
        ),
    ] {
        let r = org.get(path).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })));
    }
    let m = org.get("/v1/skus/chair-oak-s?include=metaobjects").await;
    assert_eq!(m.body["included"], json!([]));
}

#[tokio::test]
async fn patch_sku_updates_it_and_moves_its_parents_tree_timestamps() {
    let org = Org::new().await;
    chair(&org).await;
    let before = org.get("/v1/variants/chair-oak").await.body["result"].clone();
    let product_before = org.get("/v1/products/chair").await.body["result"].clone();
    warm(&org).await;

    let r = org
        .patch(
            "/v1/skus/chair-oak-s",
            json!({"name": "Oak S", "values": {"size": null}}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.ddb_requests(),
        4,
        "definitions + identity + BatchGetItem + transaction"
    );
    let res = &r.body["result"];
    assert_eq!(res["identifier"], "chair-oak-s");
    assert_eq!(res["name"], "Oak S");
    assert!(ts(res, "selfUpdatedAt") > ts(&before, "updatedAt"));

    let s = org.get("/v1/skus/chair-oak-s").await.body["result"].clone();
    assert!(s["attributes"].get("sku.size").is_none(), "null removed it");
    assert_eq!(ts(&s, "selfUpdatedAt"), ts(res, "selfUpdatedAt"));

    let v = org.get("/v1/variants/chair-oak").await.body["result"].clone();
    assert_eq!(ts(&v, "selfUpdatedAt"), ts(&before, "selfUpdatedAt"));
    assert_eq!(ts(&v, "updatedAt"), ts(res, "selfUpdatedAt"));
    let p = org.get("/v1/products/chair").await.body["result"].clone();
    assert_eq!(
        ts(&p, "selfUpdatedAt"),
        ts(&product_before, "selfUpdatedAt")
    );
    assert_eq!(ts(&p, "updatedAt"), ts(res, "selfUpdatedAt"));

    let missing = org.patch("/v1/skus/nope", json!({"name": "x"})).await;
    assert_eq!(
        (missing.status, missing.body),
        (404, json!({"error": "sku 'nope' not found"}))
    );
    let bad = org
        .patch("/v1/skus/chair-oak-s", json!({"values": {"color": "red"}}))
        .await;
    assert_eq!(
        (bad.status, bad.body),
        (
            400,
            json!({"error": "values: unknown attribute 'sku.color'"})
        )
    );
    let bad = org.patch("/v1/skus/chair-oak-s", json!({"skus": []})).await;
    assert_eq!(
        (bad.status, bad.body),
        (
            400,
            json!({"error": "unknown field 'skus' (allowed: name, values)"})
        )
    );
}

#[tokio::test]
async fn a_parent_change_moves_descendants_updated_at_without_rewriting_them() {
    let org = Org::new().await;
    chair(&org).await;
    let sku_before = org.get("/v1/skus/chair-oak-s").await.body["result"].clone();
    warm(&org).await;
    let r = org
        .patch("/v1/products/chair", json!({"name": "Armchair"}))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.ddb_requests(),
        2,
        "GetItem + one conditional put, whatever the tree"
    );
    let at = ts(&r.body["result"], "selfUpdatedAt");
    let sku = org.get("/v1/skus/chair-oak-s").await.body["result"].clone();
    assert_eq!(ts(&sku, "selfUpdatedAt"), ts(&sku_before, "selfUpdatedAt"));
    assert_eq!(ts(&sku, "updatedAt"), at);
    assert_eq!(sku["product"]["name"], "Armchair");
    let v = org.get("/v1/variants/chair-ash").await.body["result"].clone();
    assert_eq!(ts(&v, "updatedAt"), at);
    assert!(ts(&v, "selfUpdatedAt") < at);
}

#[tokio::test]
async fn deletes_cascade_and_free_identifiers() {
    let org = Org::new().await;
    chair(&org).await;
    let before = org.get("/v1/products/chair").await.body["result"].clone();

    let r = org.delete("/v1/skus/chair-oak-m").await;
    assert_eq!(
        (r.status, r.body),
        (
            200,
            json!({"result": {"identifier": "chair-oak-m", "deleted": true}})
        )
    );
    assert_eq!(org.get("/v1/skus/chair-oak-m").await.status, 404);
    let v = org.get("/v1/variants/chair-oak?include=skus").await.body["result"].clone();
    assert_eq!(v["skus"].as_array().unwrap().len(), 1);
    assert!(
        ts(&v, "updatedAt") > ts(&v, "selfUpdatedAt"),
        "a deletion below moves updatedAt"
    );
    let p = org.get("/v1/products/chair").await.body["result"].clone();
    assert!(ts(&p, "updatedAt") > ts(&before, "updatedAt"));
    assert_eq!(ts(&p, "selfUpdatedAt"), ts(&before, "selfUpdatedAt"));

    let r = org.delete("/v1/variants/chair-oak").await;
    assert_eq!(r.status, 200);
    assert_eq!(org.get("/v1/variants/chair-oak").await.status, 404);
    assert_eq!(
        org.get("/v1/skus/chair-oak-s").await.status,
        404,
        "cascaded"
    );
    assert_eq!(org.get("/v1/skus/chair-ash-s").await.status, 200);

    let r = org.delete("/v1/products/chair").await;
    assert_eq!(
        (r.status, r.body),
        (
            200,
            json!({"result": {"identifier": "chair", "deleted": true}})
        )
    );
    for path in [
        "/v1/products/chair",
        "/v1/variants/chair-ash",
        "/v1/skus/chair-ash-s",
    ] {
        assert_eq!(org.get(path).await.status, 404, "{path}");
    }
    let again = org.delete("/v1/products/chair").await;
    assert_eq!(
        (again.status, again.body),
        (404, json!({"error": "product 'chair' not found"}))
    );
    assert_eq!(org.delete("/v1/variants/chair-ash").await.status, 404);
    assert_eq!(org.delete("/v1/skus/chair-ash-s").await.status, 404);
    // the identifiers are free again, under another product
    let r = org
        .patch(
            "/v1/products/table",
            json!({"variants": [{"identifier": "chair-oak", "skus": [{"identifier": "chair-oak-s"}]}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let s = org.get("/v1/skus/chair-oak-s").await;
    assert_eq!(s.body["result"]["product"]["identifier"], "table");
}

/// Eight writers of one product, each through its own function process (as eight Lambda
/// instances would be): their optimistic writes really race, and all of them land.
#[tokio::test]
async fn concurrent_patches_of_one_product_all_land() {
    let org = Org::new().await;
    assert_eq!(org.patch("/v1/products/busy", json!({})).await.status, 201);
    let writers = (0..8).map(|i| {
        let org = &org;
        async move {
            let req = Request::new("PATCH", "/v1/products/busy")
                .bearer(&org.key)
                .json(json!({"variants": [{"identifier": format!("busy-{i}"), "skus": [{"identifier": format!("busy-{i}-s")}]}]}));
            catalog_e2e::send_to(&format!("products@racer{i}"), req).await
        }
    });
    for r in futures_util::future::join_all(writers).await {
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let p = org.get("/v1/products/busy?include=variants,skus").await;
    let variants = p.body["result"]["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 8);
    assert!(variants
        .iter()
        .all(|v| v["skus"].as_array().unwrap().len() == 1));
}

#[tokio::test]
async fn a_large_patch_uses_the_fewest_transactions() {
    let org = Org::new().await;
    warm(&org).await;
    // 1 product + 30 variants + 30 identities + 60 SKUs + 60 identities = 181 actions
    let variants: Vec<Value> = (0..30)
        .map(|v| {
            json!({"identifier": format!("big-v{v:02}"), "skus": [
                {"identifier": format!("big-v{v:02}-a")}, {"identifier": format!("big-v{v:02}-b")}
            ]})
        })
        .collect();
    let r = org
        .patch("/v1/products/big", json!({"variants": variants}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(
        r.ddb_requests(),
        1 + 1 + 2,
        "tree read + identity check + ceil(181 / 100) transactions"
    );
    let p = org.get("/v1/products/big?include=variants,skus").await;
    assert_eq!(p.body["result"]["variants"].as_array().unwrap().len(), 30);
    let skus = org.get("/v1/skus?limit=200").await;
    assert_eq!(skus.status, 200, "{:?}", skus.body);
    assert_eq!(skus.body["pagination"]["totalResults"], 60);
}

#[tokio::test]
async fn a_taken_identifier_in_a_large_patch_writes_nothing() {
    let org = Org::new().await;
    chair(&org).await;
    // 60 new variants (120 actions, two transactions); the last one is taken
    let mut variants: Vec<Value> = (0..59)
        .map(|v| json!({"identifier": format!("new-v{v:02}")}))
        .collect();
    variants.push(json!({"identifier": "chair-oak"}));
    let r = org
        .patch("/v1/products/new", json!({"variants": variants}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "variant 'chair-oak' already exists under another product"})
        )
    );
    assert_eq!(org.get("/v1/products/new").await.status, 404);
    assert_eq!(org.get("/v1/variants/new-v00").await.status, 404);
}

#[tokio::test]
async fn an_entity_over_the_item_size_limit_is_a_400() {
    let org = Org::new().await;
    let mut values = serde_json::Map::new();
    for i in 0..5 {
        let key = format!("notes{i}");
        org.define(
            json!({"displayName": key, "key": key, "targetEntity": "product", "type": "text"}),
        )
        .await;
        values.insert(key, json!("x".repeat(95_000)));
    }
    let r = org
        .patch("/v1/products/heavy", json!({"values": values}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "product 'heavy' would take 475367 bytes, over the storage limit of 400 KB (409600 bytes); store less data in its values"})
        )
    );
    assert_eq!(org.get("/v1/products/heavy").await.status, 404);
}

#[tokio::test]
async fn deleting_a_variant_moves_the_products_updated_at() {
    let org = Org::new().await;
    chair(&org).await;
    let before = org.get("/v1/products/chair").await.body["result"].clone();
    let t = before["updatedAt"].as_str().unwrap().to_string();
    assert_eq!(org.delete("/v1/variants/chair-ash").await.status, 200);
    let after = org.get("/v1/products/chair?include=variants").await.body["result"].clone();
    assert!(ts(&after, "updatedAt") > t);
    assert_eq!(ts(&after, "selfUpdatedAt"), ts(&before, "selfUpdatedAt"));
    assert_eq!(after["variants"].as_array().unwrap().len(), 1);
    let r = org.get(&format!("/v1/products?updated_after={t}")).await;
    assert_eq!(r.body["pagination"]["totalResults"], 1);
}

#[tokio::test]
async fn selection_exclusion_wins_and_bad_parameters_are_named() {
    let org = Org::new().await;
    chair(&org).await;
    let r = org
        .get("/v1/products/chair?include=variants,skus&attributes=sku.*,product.brand&exclude_attributes=sku.price,product.*")
        .await;
    let p = &r.body["result"];
    assert_eq!(p["attributes"], json!({}), "exclusion wins over selection");
    let s = &p["variants"][1]["skus"][1]["attributes"];
    assert_eq!(
        s.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["sku.size"],
        "embedded SKUs are selected at their own level"
    );
    let list = org.get("/v1/skus?attributes=variant.color").await;
    assert_eq!(
        list.body["result"][1]["attributes"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["variant.color"]
    );
    for (path, error) in [
        (
            "/v1/products/chair?attributes=product.*name",
            "attributes: invalid selector 'product.*name': '*' is allowed only at the end",
        ),
        (
            "/v1/products/chair?include=assets",
            "include: unknown value 'assets' (allowed: variants, skus, metaobjects)",
        ),
        (
            "/v1/variants?limit=0",
            "query parameter 'limit' must be an integer from 1 to 200",
        ),
        (
            "/v1/skus?page=0",
            "query parameter 'page' must be an integer from 1 to 4294967295",
        ),
        (
            "/v1/variants?include=variants",
            "include: unknown value 'variants' (allowed: skus, metaobjects)",
        ),
    ] {
        let r = org.get(path).await;
        assert_eq!(
            (r.status, r.body),
            (400, json!({ "error": error })),
            "{path}"
        );
    }
}
