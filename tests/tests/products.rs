//! Products routes end to end: real `products` binary, real DynamoDB Local.

use catalog::domain::attributes::{AttributeDefinition, AttributeType, TargetEntity};
use catalog::domain::time::Timestamp;
use catalog::domain::values::StoredValues;
use catalog::store::items::{EntityItem, EntityKind};
use catalog_e2e::{stack, Org, Request};
use serde_json::json;

fn is_ms_timestamp(v: &serde_json::Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    s.len() == 24 && s.ends_with('Z') && s.as_bytes()[19] == b'.' && Timestamp::parse(s).is_some()
}

async fn define(org: &Org, key: &str, t: AttributeType) {
    let def = AttributeDefinition::simple(TargetEntity::Product, key, t);
    stack()
        .await
        .store()
        .put_definition(&org.id, &def, None, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn patch_creates_with_201_then_updates_with_200_and_get_returns_it() {
    let org = Org::new().await;
    let created = org.patch("/v1/products/p1", json!({"name": "Chair"})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.header("content-type"), Some("application/json"));
    // no browser reads an answer as anything but JSON (before: the header was missing)
    assert_eq!(created.header("x-content-type-options"), Some("nosniff"));
    let r = &created.body["result"];
    assert_eq!(r["identifier"], "p1");
    assert_eq!(r["name"], "Chair");
    assert!(is_ms_timestamp(&r["selfUpdatedAt"]), "{r}");
    assert_eq!(r["selfUpdatedAt"], r["updatedAt"]);
    assert_eq!(r.as_object().unwrap().len(), 4);

    let updated = org
        .patch("/v1/products/p1", json!({"name": "Armchair"}))
        .await;
    assert_eq!(updated.status, 200);
    let u = &updated.body["result"];
    assert_eq!(u["name"], "Armchair");
    assert!(u["updatedAt"].as_str() >= r["updatedAt"].as_str());

    let got = org.get("/v1/products/p1").await;
    assert_eq!(got.status, 200);
    assert_eq!(
        got.body,
        json!({"result": {
            "identifier": "p1", "name": "Armchair", "attributes": {}, "familyId": null,
            "selfUpdatedAt": u["selfUpdatedAt"], "updatedAt": u["updatedAt"]
        }})
    );
}

#[tokio::test]
async fn patch_without_changes_keeps_timestamps_and_name_is_kept_when_omitted() {
    let org = Org::new().await;
    define(&org, "color", AttributeType::Text).await;
    let first = org
        .patch("/v1/products/same", json!({"name": "Lamp"}))
        .await;
    assert_eq!(first.status, 201);
    let again = org
        .patch("/v1/products/same", json!({"name": "Lamp"}))
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, first.body);
    let values_only = org
        .patch("/v1/products/same", json!({"values": {"color": "Red"}}))
        .await;
    assert_eq!(values_only.status, 200);
    assert_eq!(values_only.body["result"]["name"], "Lamp");
    let created_without_name = org.patch("/v1/products/nameless", json!({})).await;
    assert_eq!(created_without_name.status, 201);
    assert_eq!(created_without_name.body["result"]["name"], "nameless");
}

#[tokio::test]
async fn text_values_are_stored_and_rendered_with_their_entry_shape() {
    let org = Org::new().await;
    define(&org, "color", AttributeType::Text).await;
    define(&org, "material", AttributeType::Text).await;
    let r = org
        .patch(
            "/v1/products/p2",
            json!({"name": "Table", "values": {"color": "Blue", "material": "Oak"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let got = org.get("/v1/products/p2").await;
    assert_eq!(
        got.body["result"]["attributes"],
        json!({
            "product.color": [{"value": "Blue", "data": "Blue", "type": "text", "locale": null}],
            "product.material": [{"value": "Oak", "data": "Oak", "type": "text", "locale": null}]
        })
    );
    // null removes; only attributes with a value appear
    org.patch("/v1/products/p2", json!({"values": {"material": null}}))
        .await;
    let got = org
        .get("/v1/products/p2?attributes=product.*&exclude_attributes=product.size")
        .await;
    assert_eq!(got.status, 200);
    assert_eq!(
        got.body["result"]["attributes"].as_object().unwrap().len(),
        1
    );
    let none = org.get("/v1/products/p2?attributes=").await;
    assert_eq!(none.body["result"]["attributes"], json!({}));
}

#[tokio::test]
async fn bad_input_gets_a_400_that_names_the_problem_and_changes_nothing() {
    let org = Org::new().await;
    define(&org, "color", AttributeType::Text).await;
    org.patch("/v1/products/p3", json!({"name": "Sofa"})).await;
    let cases = [
        (
            json!({"values": {"size": "XL"}}),
            "values: unknown attribute 'product.size'",
        ),
        (
            json!({"values": {"color": 5}}),
            "values.color: expected a string for a text attribute",
        ),
        (json!({"name": 7}), "field 'name' must be a string"),
        (
            json!({"nmae": "x"}),
            "unknown field 'nmae' (allowed: name, values, familyId, variants, assets, categories)",
        ),
        (json!({"values": ["a"]}), "field 'values' must be an object"),
    ];
    for (body, msg) in cases {
        let r = org.patch("/v1/products/p3", body.clone()).await;
        assert_eq!(
            (r.status, r.body.clone()),
            (400, json!({"error": msg})),
            "{body}"
        );
    }
    let bad_json = Request::new("PATCH", "/v1/products/p3")
        .bearer(&org.key)
        .raw_body("application/json", "{\"name\": ")
        .send()
        .await;
    assert_eq!(bad_json.status, 400);
    assert!(bad_json.body["error"]
        .as_str()
        .unwrap()
        .starts_with("request body is not valid JSON"));
    let wrong_type = Request::new("PATCH", "/v1/products/p3")
        .bearer(&org.key)
        .raw_body("text/plain", "{\"name\": \"x\"}")
        .send()
        .await;
    assert_eq!(wrong_type.status, 415);
    assert_eq!(
        wrong_type.body,
        json!({"error": "request body must be sent with Content-Type: application/json"})
    );
    let got = org.get("/v1/products/p3").await;
    assert_eq!(got.body["result"]["name"], "Sofa");
    assert_eq!(got.body["result"]["attributes"], json!({}));
}

#[tokio::test]
async fn identifiers_are_percent_decoded_and_checked() {
    let org = Org::new().await;
    let r = org
        .patch(
            "/v1/products/blue%20chair%231",
            json!({"name": "Blue chair"}),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["result"]["identifier"], "blue chair#1");
    assert_eq!(org.get("/v1/products/blue%20chair%231").await.status, 200);
    let slash = org.get("/v1/products/a%2Fb").await;
    assert_eq!(
        (slash.status, slash.body),
        (
            400,
            json!({"error": "product identifier must not contain '/'"})
        )
    );
    let long = org.get(&format!("/v1/products/{}", "x".repeat(256))).await;
    assert_eq!(long.status, 400);
}

#[tokio::test]
async fn missing_products_routes_and_methods() {
    let org = Org::new().await;
    let r = org.get("/v1/products/nope").await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": "product 'nope' not found"}))
    );
    let r = Request::new("DELETE", "/v1/products/nope")
        .bearer(&org.key)
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": "product 'nope' not found"}))
    );
    let r = Request::new("POST", "/v1/products/nope")
        .bearer(&org.key)
        .send()
        .await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, PATCH, DELETE"));
    let r = org.get("/v1/products/p1?include=skus").await;
    assert_eq!(
        (r.status, r.body),
        (400, json!({"error": "include: 'skus' requires 'variants'"}))
    );
    let r = org.get("/v1/products/p1?include=assets").await;
    assert_eq!(r.status, 400);
    let r = org.get("/v1/products/p1?colour=red").await;
    assert_eq!(
        (r.status, r.body),
        (400, json!({"error": "unknown query parameter 'colour'"}))
    );
    let r = org.get("/v1/products/p1?attributes=product.*name").await;
    assert_eq!(r.status, 400);
}

/// Writes a product with 3 variants and 9 SKUs straight through the library.
async fn seed_tree(org: &Org, product: &str) {
    let store = stack().await.store();
    let now = Timestamp::now();
    let mut items = vec![EntityItem::new(
        &org.id,
        EntityKind::Product,
        product,
        (None, None),
        "Tree",
        StoredValues::new(),
        now,
    )];
    for v in 0..3 {
        let vid = format!("{product}-v{v}");
        items.push(EntityItem::new(
            &org.id,
            EntityKind::Variant,
            &vid,
            (Some(product), None),
            "V",
            StoredValues::new(),
            now,
        ));
        for s in 0..3 {
            let sid = format!("{vid}-s{s}");
            items.push(EntityItem::new(
                &org.id,
                EntityKind::Sku,
                &sid,
                (Some(product), Some(&vid)),
                "S",
                StoredValues::new(),
                now,
            ));
        }
    }
    store.create_entities(&org.id, &items).await.unwrap();
}

#[tokio::test]
async fn whole_tree_read_costs_exactly_one_dynamodb_request() {
    let org = Org::new().await;
    seed_tree(&org, "tree").await;
    let cold = org.get("/v1/products/tree").await;
    assert_eq!(cold.status, 200);
    assert_eq!(
        cold.ddb_requests(),
        2,
        "cold auth cache: key lookup + GetItem"
    );

    let r = org.get("/v1/products/tree?include=variants,skus").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.ddb_requests(), 1);
    let variants = r.body["result"]["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 3);
    for (i, v) in variants.iter().enumerate() {
        assert_eq!(v["identifier"], format!("tree-v{i}"));
        let skus: Vec<_> = v["skus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["identifier"].clone())
            .collect();
        assert_eq!(
            skus,
            vec![
                json!(format!("tree-v{i}-s0")),
                json!(format!("tree-v{i}-s1")),
                json!(format!("tree-v{i}-s2"))
            ]
        );
    }
    let r = org.get("/v1/products/tree?include=variants").await;
    assert_eq!(r.ddb_requests(), 1);
    assert!(r.body["result"]["variants"][0].get("skus").is_none());
    let r = org.get("/v1/products/tree?include=metaobjects").await;
    assert_eq!(
        (r.ddb_requests(), r.body["included"].clone()),
        (1, json!([]))
    );
    assert_eq!(org.get("/v1/products/tree").await.ddb_requests(), 1);
}

#[tokio::test]
async fn writes_cost_a_read_and_a_conditional_put() {
    let org = Org::new().await;
    define(&org, "color", AttributeType::Text).await;
    org.get("/v1/products/warm").await; // warm the auth cache
    let create = org.patch("/v1/products/w1", json!({"name": "A"})).await;
    assert_eq!((create.status, create.ddb_requests()), (201, 2));
    let update = org
        .patch("/v1/products/w1", json!({"values": {"color": "Red"}}))
        .await;
    assert_eq!(
        (update.status, update.ddb_requests()),
        (200, 3),
        "definitions + GetItem + PutItem"
    );
}
