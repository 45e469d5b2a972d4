//! Metaobject definitions and entries, metaobject-typed attributes and `include=metaobjects`
//! end to end: the real `metaobjects`, `attributes`, `products`, `variants` and `skus`
//! binaries on DynamoDB Local.

use catalog_e2e::{faults, send_to, Org, Request, Response};
use serde_json::{json, Value};

/// A workspace with definition `material` (label per language, hardness), metaobjects oak,
/// walnut, pine and steel, attributes of type metaobject on products, variants and SKUs, and
/// product `chair` (oak) with variant `chair-w` (walnut) and SKU `chair-w-s` (pine).
async fn workspace() -> Org {
    let org = Org::new().await;
    org.languages(&["en-US", "de-DE"]).await;
    let r = org
        .post(
            "/v1/metaobject-definitions",
            json!({"name": "material", "displayName": "Material", "fields": [
                {"key": "label", "type": "text", "isLocalized": true},
                {"key": "hardness", "type": "number"}
            ]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    for (id, en, de) in [
        ("oak", "Oak", "Eiche"),
        ("walnut", "Walnut", "Nussbaum"),
        ("pine", "Pine", "Kiefer"),
        ("steel", "Steel", "Stahl"),
    ] {
        let r = org
            .put(
                &format!("/v1/metaobjects/material/{id}"),
                json!({"name": en, "values": {"label": [
                    {"locale": "en-US", "value": en}, {"locale": "de-DE", "value": de}
                ], "hardness": 3}}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    for (entity, key, multi) in [
        ("product", "material", false),
        ("product", "accents", true),
        ("variant", "finish", false),
        ("sku", "core", false),
    ] {
        org.define(
            json!({"displayName": key, "key": key, "targetEntity": entity,
            "type": "metaobject", "metaobjectDefinition": "material", "isMulti": multi}),
        )
        .await;
    }
    let r = org
        .patch(
            "/v1/products/chair",
            json!({"name": "Chair", "values": {"material": "oak"},
              "variants": [{"identifier": "chair-w", "values": {"finish": "walnut"},
                "skus": [{"identifier": "chair-w-s", "values": {"core": "pine"}}]}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    org
}

fn included_ids(body: &Value) -> Vec<String> {
    body["included"]
        .as_array()
        .unwrap_or_else(|| panic!("included: {body}"))
        .iter()
        .map(|m| m["identifier"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn definitions_are_created_once_listed_and_validated() {
    let org = Org::new().await;
    let body = json!({"name": "care", "fields": [{"key": "wash", "type": "select", "options": ["30", "60"]}]});
    let r = org.post("/v1/metaobject-definitions", body.clone()).await;
    assert_eq!(
        (r.status, r.body),
        (
            201,
            json!({"result": {"name": "care", "displayName": "care", "fields": [
                {"key": "wash", "type": "select", "isLocalized": false, "isMulti": false, "options": ["30", "60"]}
            ]}})
        )
    );
    let r = org.post("/v1/metaobject-definitions", body).await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "metaobject definition 'care' already exists"})
        )
    );
    let cases = [
        (json!({"fields": []}), "field 'name' is required"),
        (
            json!({"name": "Care", "fields": []}),
            "field 'name': 'Care' must match [a-z][a-z0-9_]{0,63}",
        ),
        (json!({"name": "x"}), "field 'fields' is required"),
        (
            json!({"name": "x", "fields": [{"key": "m", "type": "metaobject"}]}),
            "fields[0]: 'metaobject' is not a field type (the attribute types except metaobject)",
        ),
        (
            json!({"name": "x", "fields": [{"key": "a", "type": "text"}, {"key": "a", "type": "number"}]}),
            "fields[1]: key 'a' is given twice",
        ),
    ];
    for (body, error) in cases {
        let r = org.post("/v1/metaobject-definitions", body).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })));
    }
    let list = org.get("/v1/metaobject-definitions").await;
    assert_eq!(list.body["pagination"]["totalResults"], 1);
    assert_eq!(org.get("/v1/metaobject-definitions/care").await.status, 200);
    let r = org.get("/v1/metaobject-definitions/nope").await;
    assert_eq!(
        (r.status, r.body),
        (
            404,
            json!({"error": "metaobject definition 'nope' not found"})
        )
    );
    let r = org
        .post(
            "/v1/attributes",
            json!({"displayName": "M", "key": "m", "targetEntity": "product",
            "type": "metaobject", "metaobjectDefinition": "nope"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "field 'metaobjectDefinition': metaobject definition 'nope' does not exist"})
        )
    );
}

#[tokio::test]
async fn metaobjects_are_put_with_validated_values_and_carry_all_locales() {
    let org = workspace().await;
    let r = org.get("/v1/metaobjects/material/oak").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["result"],
        json!({"type": "metaobject", "definition": "material", "identifier": "oak", "name": "Oak",
            "attributes": {
                "metaobject.hardness": [{"value": "3", "data": 3, "type": "number", "locale": null}],
                "metaobject.label": [
                    {"value": "Eiche", "data": "Eiche", "type": "text", "locale": "de-DE"},
                    {"value": "Oak", "data": "Oak", "type": "text", "locale": "en-US"}
                ]},
            "updatedAt": r.body["result"]["updatedAt"]})
    );
    // the same again changes nothing; PUT replaces the values and the name
    let same = org
        .put(
            "/v1/metaobjects/material/oak",
            json!({"name": "Oak", "values": {"label": [
                {"locale": "en-US", "value": "Oak"}, {"locale": "de-DE", "value": "Eiche"}
            ], "hardness": 3}}),
        )
        .await;
    assert_eq!(
        (same.status, &same.body["result"]),
        (200, &r.body["result"])
    );
    let replaced = org
        .put(
            "/v1/metaobjects/material/oak",
            json!({"values": {"hardness": 4}}),
        )
        .await;
    assert_eq!(replaced.status, 200);
    assert_eq!(replaced.body["result"]["name"], "oak");
    assert_eq!(
        replaced.body["result"]["attributes"],
        json!({"metaobject.hardness": [{"value": "4", "data": 4, "type": "number", "locale": null}]})
    );
    let cases = [
        (
            json!({"values": {"color": "red"}}),
            "values: unknown attribute 'metaobject.color'",
        ),
        (
            json!({"values": {"label": "Oak"}}),
            "values.label: the attribute is localized: a 'locale' is required",
        ),
        (
            json!({"values": {"hardness": "hard"}}),
            "values.hardness: expected a number",
        ),
    ];
    for (body, error) in cases {
        let r = org.put("/v1/metaobjects/material/x", body).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })));
    }
    let r = org.put("/v1/metaobjects/nope/x", json!({})).await;
    assert_eq!(
        (r.status, r.body),
        (
            404,
            json!({"error": "metaobject definition 'nope' not found"})
        )
    );
    let list = org.get("/v1/metaobjects/material?limit=2").await;
    let ids: Vec<&str> = list.body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["identifier"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["oak", "pine"]);
    assert_eq!(list.body["pagination"]["totalResults"], 4);
    let r = org.get("/v1/metaobjects/material/nope").await;
    assert_eq!(
        (r.status, r.body),
        (
            404,
            json!({"error": "metaobject 'nope' of definition 'material' not found"})
        )
    );
}

#[tokio::test]
async fn values_reference_existing_metaobjects_by_identifier_only() {
    let org = workspace().await;
    let a = org.get("/v1/products/chair").await.body["result"]["attributes"].clone();
    assert_eq!(
        a["product.material"],
        json!([{"value": "oak", "data": "oak", "type": "metaobject", "locale": null,
            "metaobjectDefinition": "material"}])
    );
    let r = org
        .patch(
            "/v1/products/chair",
            json!({"values": {"material": "granite"}}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "values.material: metaobject 'granite' of definition 'material' does not exist"})
        )
    );
    let r = org
        .patch(
            "/v1/products/chair",
            json!({"variants": [{"identifier": "chair-w", "values": {"finish": "granite"}}]}),
        )
        .await;
    assert_eq!(
        r.body,
        json!({"error": "variants[0].values.finish: metaobject 'granite' of definition 'material' does not exist"})
    );
    let r = org
        .patch("/v1/skus/chair-w-s", json!({"values": {"core": "granite"}}))
        .await;
    assert_eq!(r.status, 400);
    let r = org
        .patch(
            "/v1/products/chair",
            json!({"values": {"accents": ["steel", "walnut"]}}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let accents =
        org.get("/v1/products/chair").await.body["result"]["attributes"]["product.accents"].clone();
    assert_eq!(
        accents,
        json!([{"value": "[\"steel\",\"walnut\"]", "data": ["steel", "walnut"], "type": "metaobject",
            "locale": null, "isMulti": true, "metaobjectDefinition": "material"}])
    );
}

#[tokio::test]
async fn include_metaobjects_sideloads_each_referenced_metaobject_once_after_selection() {
    let org = workspace().await;
    let r = org.get("/v1/products/chair?include=metaobjects").await;
    assert_eq!(r.status, 200);
    assert_eq!(included_ids(&r.body), ["oak"]);
    let oak = &r.body["included"][0];
    assert_eq!(
        oak,
        &json!({"type": "metaobject", "definition": "material", "identifier": "oak", "name": "Oak",
            "attributes": {
                "metaobject.hardness": [{"value": "3", "data": 3, "type": "number", "locale": null}],
                "metaobject.label": [
                    {"value": "Eiche", "data": "Eiche", "type": "text", "locale": "de-DE"},
                    {"value": "Oak", "data": "Oak", "type": "text", "locale": "en-US"}
                ]},
            "updatedAt": oak["updatedAt"]})
    );
    assert_eq!(
        r.ddb_requests(),
        2,
        "the product, then one batch of metaobjects"
    );
    // the whole returned hierarchy
    let r = org
        .get("/v1/products/chair?include=variants,skus,metaobjects")
        .await;
    assert_eq!(included_ids(&r.body), ["oak", "pine", "walnut"]);
    assert_eq!((r.ddb_requests(), r.ddb_round_trips()), (2, 2));
    // selection prunes the sideload
    let r = org
        .get("/v1/products/chair?include=variants,skus,metaobjects&attributes=variant.*")
        .await;
    assert_eq!(included_ids(&r.body), ["walnut"]);
    let r = org
        .get("/v1/products/chair?include=variants,skus,metaobjects&exclude_attributes=sku.core,product.material")
        .await;
    assert_eq!(included_ids(&r.body), ["walnut"]);
    let r = org
        .get("/v1/products/chair?include=metaobjects&attributes=")
        .await;
    assert_eq!(
        (r.body["included"].clone(), r.ddb_requests()),
        (json!([]), 1),
        "nothing referenced: no extra read"
    );
    // absent when not asked for
    let r = org.get("/v1/products/chair?include=variants").await;
    assert!(r.body.get("included").is_none());
    // variants and SKUs merge their parents' attributes, and so their references
    let r = org
        .get("/v1/variants/chair-w?include=metaobjects,skus")
        .await;
    assert_eq!(included_ids(&r.body), ["oak", "pine", "walnut"]);
    let r = org.get("/v1/skus/chair-w-s?include=metaobjects").await;
    assert_eq!(included_ids(&r.body), ["oak", "pine", "walnut"]);
    let r = org
        .get("/v1/skus?include=metaobjects&attributes=sku.*")
        .await;
    assert_eq!(included_ids(&r.body), ["pine"]);
    let r = org.get("/v1/variants?include=metaobjects").await;
    assert_eq!(included_ids(&r.body), ["oak", "walnut"]);
}

#[tokio::test]
async fn a_page_of_100_products_sideloads_in_one_extra_round_trip_deduplicated() {
    let org = workspace().await;
    let ids: Vec<String> = (0..101).map(|i| format!("m{i:03}")).collect();
    for id in &ids {
        let r = org
            .put(&format!("/v1/metaobjects/material/{id}"), json!({}))
            .await;
        assert_eq!(r.status, 201);
    }
    // 100 products: each references oak (shared) and one metaobject of its own; one more
    // product outside the page references m100
    for (i, own) in ids.iter().enumerate() {
        let r = org
            .patch(
                &format!("/v1/products/p{i:03}"),
                json!({"values": {"material": "oak", "accents": [own]}}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    let plain = org.get("/v1/products?limit=100").await;
    let with = org.get("/v1/products?limit=100&include=metaobjects").await;
    assert_eq!(with.status, 200);
    assert_eq!(with.body["result"], plain.body["result"]);
    let included = included_ids(&with.body);
    // chair (oak) sorts first, so the page holds chair and p000..p098
    let mut expected: Vec<String> = ids[..99].to_vec();
    expected.push("oak".into());
    assert_eq!(
        included, expected,
        "each metaobject once, in (definition, identifier) order"
    );
    assert_eq!(
        with.ddb_round_trips() - plain.ddb_round_trips(),
        1,
        "one batched read of the distinct metaobjects"
    );
    assert_eq!(
        with.ddb_requests() - plain.ddb_requests(),
        1,
        "100 distinct metaobjects: one BatchGetItem"
    );
}

#[tokio::test]
async fn a_referenced_metaobject_cannot_be_deleted() {
    let org = workspace().await;
    let r = org.delete("/v1/metaobjects/material/pine").await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "metaobject 'pine' of definition 'material' is still referenced by sku 'chair-w-s'; remove the references first"})
        )
    );
    let r = org
        .patch("/v1/skus/chair-w-s", json!({"values": {"core": null}}))
        .await;
    assert_eq!(r.status, 200);
    let r = org.delete("/v1/metaobjects/material/pine").await;
    assert_eq!(
        (r.status, r.body),
        (
            200,
            json!({"result": {"identifier": "pine", "deleted": true}})
        )
    );
    assert_eq!(org.get("/v1/metaobjects/material/pine").await.status, 404);
    assert_eq!(
        org.delete("/v1/metaobjects/material/pine").await.status,
        404
    );
}

/// Definition `color` with metaobjects `ids`, and attributes `product.color` and `sku.shade`
/// of type metaobject naming it.
async fn colors(ids: &[&str]) -> Org {
    let org = Org::new().await;
    org.metaobjects("color", json!([{"key": "hex", "type": "text"}]), ids)
        .await;
    for (entity, key) in [("product", "color"), ("sku", "shade")] {
        org.define(
            json!({"displayName": key, "key": key, "targetEntity": entity,
            "type": "metaobject", "metaobjectDefinition": "color"}),
        )
        .await;
    }
    org
}

fn status_and_body(r: &Response) -> (u16, Value) {
    (r.status, r.body.clone())
}

fn does_not_exist(field: &str, id: &str) -> (u16, Value) {
    (
        400,
        json!({"error": format!("{field}: metaobject '{id}' of definition 'color' does not exist")}),
    )
}

fn still_referenced(id: &str) -> (u16, Value) {
    (
        409,
        json!({"error": format!("metaobject '{id}' of definition 'color' is still referenced; remove the references first")}),
    )
}

fn deleted(id: &str) -> (u16, Value) {
    (200, json!({"result": {"identifier": id, "deleted": true}}))
}

/// The race played in both orders, each side held at its transaction by the fault proxy's
/// gate after its reads: a write that found the metaobject, then the delete (which finds no
/// reference yet); a delete that found no reference, then a write. Either way exactly one of
/// them wins, and what is stored agrees with the answers.
#[tokio::test]
async fn a_delete_and_a_write_referencing_the_metaobject_exclude_each_other() {
    let db = faults::faulty_db().await;
    let _exclusive = db.exclusive.lock().await;
    let org = colors(&["red", "blue"]).await;
    let patch = |product: &str, color: &str| {
        Request::new("PATCH", &format!("/v1/products/{product}"))
            .bearer(&org.key)
            .json(json!({"values": {"color": color}}))
    };

    // the write has checked that red exists and waits at its transaction
    db.close_gate("TransactWriteItems");
    let write = tokio::spawn(send_to("products@faultydb", patch("p1", "red")));
    db.holding(1).await;
    let delete = org.delete("/v1/metaobjects/color/red").await;
    db.release();
    let write = write.await.expect("write");
    db.reset();
    assert_eq!(status_and_body(&delete), deleted("red"));
    assert_eq!(
        status_and_body(&write),
        does_not_exist("values.color", "red")
    );
    assert_eq!(
        org.get("/v1/products/p1").await.status,
        404,
        "nothing written"
    );

    // the delete has found no reference to blue and waits at its transaction
    db.close_gate("TransactWriteItems");
    let delete = tokio::spawn(send_to(
        "metaobjects@faultydb",
        Request::new("DELETE", "/v1/metaobjects/color/blue").bearer(&org.key),
    ));
    db.holding(1).await;
    let write = org
        .patch("/v1/products/p2", json!({"values": {"color": "blue"}}))
        .await;
    db.release();
    let delete = delete.await.expect("delete");
    db.reset();
    assert_eq!(write.status, 201, "{:?}", write.body);
    assert_eq!(status_and_body(&delete), still_referenced("blue"));
    assert_eq!(org.get("/v1/metaobjects/color/blue").await.status, 200);
}

/// Twenty writers reference a metaobject while it is deleted, three times over: whoever
/// wins, no stored product references a deleted metaobject, every writer answers 201 or
/// 400 (never a 5xx), and a refused writer stored nothing.
#[tokio::test]
async fn concurrent_writers_and_a_delete_leave_no_dangling_reference() {
    let org = colors(&["hot0", "hot1", "hot2"]).await;
    for round in 0..3 {
        let color = format!("hot{round}");
        let writers: Vec<_> = (0..20)
            .map(|i| {
                let (org, color) = (&org, color.clone());
                async move {
                    let id = format!("r{round}-{i}");
                    let r = org
                        .patch(
                            &format!("/v1/products/{id}"),
                            json!({"values": {"color": color}}),
                        )
                        .await;
                    (id, r)
                }
            })
            .collect();
        let path = format!("/v1/metaobjects/color/{color}");
        let (written, delete) =
            tokio::join!(futures_util::future::join_all(writers), org.delete(&path));
        let gone = match delete.status {
            200 => true,
            409 => false,
            _ => panic!("delete: {:?}", delete.body),
        };
        assert_eq!(
            org.get(&path).await.status,
            if gone { 404 } else { 200 },
            "round {round}"
        );
        for (id, r) in &written {
            let stored = org.get(&format!("/v1/products/{id}")).await;
            match r.status {
                201 => {
                    assert!(!gone, "round {round}: {id} references deleted {color}");
                    assert_eq!(
                        stored.body["result"]["attributes"]["product.color"][0]["data"],
                        json!(color)
                    );
                }
                400 => {
                    assert_eq!(status_and_body(r), does_not_exist("values.color", &color));
                    assert_eq!(
                        stored.status, 404,
                        "round {round}: {id} refused, not stored"
                    );
                }
                _ => panic!("round {round}: {id}: {} {:?}", r.status, r.body),
            }
        }
    }
}

/// Reference, delete refused; reference removed, delete done; a write naming the deleted
/// metaobject refused with nothing written. Counting follows replaced values too.
#[tokio::test]
async fn references_are_counted_through_their_removal() {
    let org = colors(&["red", "blue"]).await;
    let r = org
        .patch("/v1/products/p", json!({"values": {"color": "red"}}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = org.delete("/v1/metaobjects/color/red").await;
    assert_eq!(
        status_and_body(&r),
        (
            409,
            json!({"error": "metaobject 'red' of definition 'color' is still referenced by product 'p'; remove the references first"})
        )
    );
    // red replaced by blue: red is free, blue is held
    let r = org
        .patch("/v1/products/p", json!({"values": {"color": "blue"}}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(reference_count(&org, "red").await, 0);
    assert_eq!(reference_count(&org, "blue").await, 1);
    let r = org.delete("/v1/metaobjects/color/red").await;
    assert_eq!(status_and_body(&r), deleted("red"));
    let r = org
        .patch(
            "/v1/products/q",
            json!({"name": "Q", "values": {"color": "red"}}),
        )
        .await;
    assert_eq!(status_and_body(&r), does_not_exist("values.color", "red"));
    assert_eq!(org.get("/v1/products/q").await.status, 404);
    // deleting the referrer frees blue
    assert_eq!(org.delete("/v1/products/p").await.status, 200);
    assert_eq!(reference_count(&org, "blue").await, 0);
    let r = org.delete("/v1/metaobjects/color/blue").await;
    assert_eq!(status_and_body(&r), deleted("blue"));
    // created again, a metaobject can be referenced again
    let r = org.put("/v1/metaobjects/color/red", json!({})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = org
        .patch("/v1/products/q", json!({"values": {"color": "red"}}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(reference_count(&org, "red").await, 1);
}

/// What the counters of metaobject `color/<id>` hold, read from the table.
async fn reference_count(org: &Org, id: &str) -> i64 {
    catalog_e2e::stack()
        .await
        .store()
        .reference_count(&org.id, "color", id)
        .await
        .expect("counters")
}

/// A product write of several transactions (150 SKUs) counts every SKU's reference: the
/// metaobject stays while any SKU references it, and deleting the product frees it.
#[tokio::test]
async fn a_write_of_several_transactions_counts_every_reference() {
    let org = colors(&["red"]).await;
    let skus: Vec<Value> = (0..150)
        .map(|i| json!({"identifier": format!("s{i:03}"), "values": {"shade": "red"}}))
        .collect();
    let r = org
        .patch(
            "/v1/products/big",
            json!({"variants": [{"identifier": "v", "skus": skus}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(reference_count(&org, "red").await, 150);
    let cleared: Vec<Value> = (0..149)
        .map(|i| json!({"identifier": format!("s{i:03}"), "values": {"shade": null}}))
        .collect();
    let r = org
        .patch(
            "/v1/products/big",
            json!({"variants": [{"identifier": "v", "skus": cleared}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(reference_count(&org, "red").await, 1);
    let r = org.delete("/v1/metaobjects/color/red").await;
    assert_eq!(
        status_and_body(&r),
        (
            409,
            json!({"error": "metaobject 'red' of definition 'color' is still referenced by sku 's149'; remove the references first"})
        )
    );
    assert_eq!(org.delete("/v1/products/big").await.status, 200);
    assert_eq!(reference_count(&org, "red").await, 0);
    let r = org.delete("/v1/metaobjects/color/red").await;
    assert_eq!(status_and_body(&r), deleted("red"));
}
