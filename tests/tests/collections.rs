//! Categories (and products' `categories`) and bundles end to end: the real `categories`,
//! `bundles`, `products` and `skus` binaries on DynamoDB Local.

use catalog_e2e::Org;
use serde_json::json;

#[tokio::test]
async fn categories_form_a_tree_without_cycles() {
    let org = Org::new().await;
    let r = org
        .put("/v1/categories/furniture", json!({"name": "Furniture"}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(
        r.body["result"],
        json!({"identifier": "furniture", "name": "Furniture", "parent": null,
            "updatedAt": r.body["result"]["updatedAt"]})
    );
    let r = org
        .put(
            "/v1/categories/chairs",
            json!({"name": "Chairs", "parent": "furniture"}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body["result"]["parent"]),
        (201, &json!("furniture"))
    );
    let r = org
        .put(
            "/v1/categories/stools",
            json!({"name": "Stools", "parent": "chairs"}),
        )
        .await;
    assert_eq!(r.status, 201);
    let same = org
        .put(
            "/v1/categories/chairs",
            json!({"name": "Chairs", "parent": "furniture"}),
        )
        .await;
    assert_eq!(same.status, 200);
    let cases = [
        (
            "furniture",
            json!({"name": "F", "parent": "stools"}),
            "field 'parent': category 'stools' is 'furniture' or one of its descendants",
        ),
        (
            "chairs",
            json!({"name": "C", "parent": "chairs"}),
            "field 'parent': category 'chairs' is 'chairs' or one of its descendants",
        ),
        (
            "tables",
            json!({"name": "T", "parent": "nope"}),
            "field 'parent': category 'nope' does not exist",
        ),
        (
            "tables",
            json!({"parent": "furniture"}),
            "field 'name' is required",
        ),
    ];
    for (id, body, error) in cases {
        let r = org.put(&format!("/v1/categories/{id}"), body).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })), "{id}");
    }
    let list = org.get("/v1/categories").await;
    let ids: Vec<&str> = list.body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["identifier"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["chairs", "furniture", "stools"]);
    assert_eq!(
        list.ddb_requests(),
        2,
        "the first list of the process reads the partition once, then the page's items"
    );
    let r = org.delete("/v1/categories/furniture").await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "category 'furniture' has subcategories (chairs); delete or move them first"})
        )
    );
    // moving a category: chairs becomes a root, then furniture can go
    let r = org
        .put("/v1/categories/chairs", json!({"name": "Chairs"}))
        .await;
    assert_eq!((r.status, &r.body["result"]["parent"]), (200, &json!(null)));
    assert_eq!(org.delete("/v1/categories/furniture").await.status, 200);
    assert_eq!(
        org.get("/v1/categories/furniture").await.body,
        json!({"error": "category 'furniture' not found"})
    );
}

#[tokio::test]
async fn products_carry_their_categories_and_a_deleted_category_leaves_them() {
    let org = Org::new().await;
    for id in ["chairs", "outdoor"] {
        assert_eq!(
            org.put(&format!("/v1/categories/{id}"), json!({"name": id}))
                .await
                .status,
            201
        );
    }
    let r = org.patch("/v1/products/p", json!({"name": "P"})).await;
    assert_eq!(r.status, 201);
    let p = org.get("/v1/products/p").await.body["result"].clone();
    assert!(p.get("categories").is_none(), "absent until set: {p}");
    let r = org
        .patch(
            "/v1/products/p",
            json!({"categories": ["outdoor", "chairs"]}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        org.get("/v1/products/p").await.body["result"]["categories"],
        json!(["outdoor", "chairs"])
    );
    let r = org
        .patch("/v1/products/p", json!({"categories": ["chairs", "nope"]}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "field 'categories': category 'nope' does not exist"})
        )
    );
    let r = org
        .patch("/v1/products/p", json!({"categories": ["chairs"]}))
        .await;
    assert_eq!(r.status, 200);
    let listed = org.get("/v1/products").await.body["result"][0]["categories"].clone();
    assert_eq!(listed, json!(["chairs"]), "replaces the set");
    let r = org.delete("/v1/categories/chairs").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        org.get("/v1/products/p").await.body["result"]["categories"],
        json!([])
    );
}

#[tokio::test]
async fn bundles_hold_existing_skus_which_cannot_be_deleted_while_held() {
    let org = Org::new().await;
    org.define(json!({"displayName": "Saving", "key": "saving", "targetEntity": "bundle", "type": "price"}))
        .await;
    let r = org
        .patch(
            "/v1/products/chair",
            json!({"variants": [{"identifier": "chair-oak", "skus": [
                {"identifier": "chair-oak-s"}, {"identifier": "chair-oak-l"}]}]}),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = org
        .put(
            "/v1/bundles/dining-set",
            json!({"name": "Dining set", "values": {"saving": "20 EUR"},
                "items": [{"sku": "chair-oak-s", "quantity": 4}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let b = &r.body["result"];
    assert_eq!(
        b,
        &json!({"identifier": "dining-set", "name": "Dining set",
            "attributes": {"bundle.saving": [{"value": "20 EUR", "data": {"amount": 20, "currency": "EUR"},
                "type": "price", "locale": null}]},
            "items": [{"sku": "chair-oak-s", "quantity": 4}],
            "selfUpdatedAt": b["selfUpdatedAt"], "updatedAt": b["updatedAt"]})
    );
    assert_eq!(org.get("/v1/bundles/dining-set").await.body["result"], *b);
    let cases = [
        (
            json!({"name": "S", "items": [{"sku": "nope", "quantity": 1}]}),
            "field 'items': sku 'nope' does not exist",
        ),
        (
            json!({"name": "S", "items": [{"sku": "chair-oak-s", "quantity": 0}]}),
            "items[0]: field 'quantity' must be an integer from 1 to 1000000",
        ),
        (
            json!({"name": "S", "items": []}),
            "field 'items' must hold 1 to 40 lines",
        ),
        (
            json!({"name": "S", "items": [{"sku": "chair-oak-s", "quantity": 1}, {"sku": "chair-oak-s", "quantity": 2}]}),
            "items[1]: sku 'chair-oak-s' is given twice",
        ),
        (
            json!({"name": "S", "values": {"nope": 1}, "items": [{"sku": "chair-oak-s", "quantity": 1}]}),
            "values: unknown attribute 'bundle.nope'",
        ),
    ];
    for (body, error) in cases {
        let r = org.put("/v1/bundles/other", body).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })));
    }
    let held = json!({"error": "sku 'chair-oak-s' is part of a bundle; remove it from its bundles before deleting it"});
    let r = org.delete("/v1/skus/chair-oak-s").await;
    assert_eq!((r.status, &r.body), (409, &held));
    let r = org.delete("/v1/products/chair").await;
    assert_eq!((r.status, &r.body), (409, &held), "nor with its product");
    assert_eq!(org.get("/v1/skus/chair-oak-s").await.status, 200);
    // the bundle moves to the large chair: the small one is free again
    let r = org
        .put(
            "/v1/bundles/dining-set",
            json!({"name": "Dining set", "items": [{"sku": "chair-oak-l", "quantity": 4}]}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["result"]["attributes"],
        json!({}),
        "PUT replaces values"
    );
    assert_eq!(org.delete("/v1/skus/chair-oak-s").await.status, 200);
    let list = org.get("/v1/bundles").await;
    assert_eq!(list.body["pagination"]["totalResults"], 1);
    let r = org.delete("/v1/bundles/dining-set").await;
    assert_eq!(
        (r.status, r.body),
        (
            200,
            json!({"result": {"identifier": "dining-set", "deleted": true}})
        )
    );
    assert_eq!(org.delete("/v1/products/chair").await.status, 200);
    assert_eq!(
        org.get("/v1/bundles/dining-set").await.body,
        json!({"error": "bundle 'dining-set' not found"})
    );
}
