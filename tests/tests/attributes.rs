//! `/attributes` end to end, and definitions driving value validation on products.

use catalog_e2e::{Org, Request};
use serde_json::{json, Value};

async fn post(org: &Org, body: Value) -> catalog_e2e::Response {
    Request::new("POST", "/v1/attributes")
        .bearer(&org.key)
        .json(body)
        .send()
        .await
}

#[tokio::test]
async fn create_get_and_conflict() {
    let org = Org::new().await;
    let body = json!({"displayName": "Size", "key": "size", "targetEntity": "variant", "type": "select",
                      "presets": ["S", "M", "L"], "isLocalized": false});
    let r = post(&org, body.clone()).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let expected = json!({
        "key": "variant.size", "name": "Size", "type": "select", "targetEntity": "variant",
        "isLocalized": false, "isMulti": false, "isChannelScoped": false,
        "optionsSource": "manual", "options": ["S", "M", "L"]
    });
    assert_eq!(r.body, json!({"result": expected}));
    let again = post(&org, body).await;
    assert_eq!(
        (again.status, again.body),
        (
            409,
            json!({"error": "attribute 'variant.size' already exists"})
        )
    );
    // same key on another entity is a different attribute
    let product_size = post(
        &org,
        json!({"displayName": "Size", "key": "size", "targetEntity": "product", "type": "text"}),
    )
    .await;
    assert_eq!(product_size.status, 201);

    let got = org.get("/v1/attributes/variant.size").await;
    assert_eq!(
        (got.status, got.body),
        (200, expected),
        "the definition itself, not wrapped"
    );
    let missing = org.get("/v1/attributes/sku.size").await;
    assert_eq!(
        (missing.status, missing.body),
        (404, json!({"error": "attribute 'sku.size' not found"}))
    );
    let bad = org.get("/v1/attributes/size").await;
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn list_with_filter_and_pagination() {
    let org = Org::new().await;
    for (key, entity) in [("b", "product"), ("a", "product"), ("c", "sku")] {
        let r = post(
            &org,
            json!({"displayName": key, "key": key, "targetEntity": entity, "type": "text"}),
        )
        .await;
        assert_eq!(r.status, 201);
    }
    let all = org.get("/v1/attributes").await;
    let keys: Vec<&str> = all.body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, vec!["product.a", "product.b", "sku.c"]);
    assert_eq!(
        all.body["pagination"],
        json!({"limit": 100, "page": 1, "totalPages": 1, "totalResults": 3})
    );
    let page2 = org
        .get("/v1/attributes?targetEntity=product&limit=1&page=2")
        .await;
    assert_eq!(page2.body["result"][0]["key"], "product.b");
    assert_eq!(
        page2.body["pagination"],
        json!({"limit": 1, "page": 2, "totalPages": 2, "totalResults": 2})
    );
    let past = org.get("/v1/attributes?limit=2&page=9").await;
    assert_eq!(
        past.body,
        json!({"result": [], "pagination": {"limit": 2, "page": 9, "totalPages": 2, "totalResults": 3}})
    );
    for (q, msg) in [
        (
            "limit=0",
            "query parameter 'limit' must be an integer from 1 to 200",
        ),
        (
            "limit=201",
            "query parameter 'limit' must be an integer from 1 to 200",
        ),
        (
            "page=0",
            "query parameter 'page' must be an integer from 1 to 4294967295",
        ),
        (
            "targetEntity=order",
            "query parameter 'targetEntity': 'order' is not one of product, variant, sku, bundle, asset",
        ),
    ] {
        let r = org.get(&format!("/v1/attributes?{q}")).await;
        assert_eq!((r.status, r.body), (400, json!({"error": msg})), "{q}");
    }
}

#[tokio::test]
async fn invalid_definitions_are_refused_with_the_field_named() {
    let org = Org::new().await;
    let cases = [
        (json!({"displayName": "X", "key": "x", "targetEntity": "product", "type": "float"}),
         "field 'type': 'float' is not one of text, html, select, boolean, number, price, weight, image, color, url, datetime, metaobject"),
        (json!({"displayName": "X", "key": "x-y", "targetEntity": "product", "type": "text"}),
         "field 'key': 'x-y' must match [a-z][a-z0-9_]{0,63}"),
        (json!({"displayName": "X", "key": "x", "targetEntity": "product", "type": "text", "extra": 1}),
         "unknown field 'extra' (allowed: displayName, key, targetEntity, type, isChannelScoped, isLocalized, isMulti, options, presets, metaobjectDefinition)"),
        (json!({"displayName": "X", "key": "x", "targetEntity": "product", "type": "text", "isMulti": "yes"}),
         "field 'isMulti' must be true or false"),
    ];
    for (body, msg) in cases {
        let r = post(&org, body).await;
        assert_eq!((r.status, r.body), (400, json!({"error": msg})));
    }
    assert_eq!(
        org.get("/v1/attributes").await.body["pagination"]["totalResults"],
        0
    );
}

#[tokio::test]
async fn definitions_made_through_the_api_validate_product_values() {
    let org = Org::new().await;
    let mut localized = json!({"displayName": "Title", "key": "title", "targetEntity": "product", "type": "text", "isLocalized": true});
    assert_eq!(post(&org, localized.take()).await.status, 201);
    assert_eq!(post(&org, json!({"displayName": "Price", "key": "price", "targetEntity": "product", "type": "price"})).await.status, 201);
    org.languages(&["en-US", "de-DE"]).await;
    let r = org
        .patch(
            "/v1/products/p1",
            json!({"name": "Chair", "values": {
            "title": [{"locale": "en-US", "value": "Chair"}, {"locale": "de-DE", "value": "Stuhl"}],
            "price": "12.50 EUR"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let attrs = org.get("/v1/products/p1").await.body["result"]["attributes"].clone();
    assert_eq!(
        attrs,
        json!({
            "product.price": [{"value": "12.50 EUR", "data": {"amount": 12.5, "currency": "EUR"}, "type": "price", "locale": null}],
            "product.title": [
                {"value": "Stuhl", "data": "Stuhl", "type": "text", "locale": "de-DE"},
                {"value": "Chair", "data": "Chair", "type": "text", "locale": "en-US"}
            ]
        })
    );
    let r = org
        .patch("/v1/products/p1", json!({"values": {"title": "Chair"}}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "values.title: the attribute is localized: a 'locale' is required"})
        )
    );
}

#[tokio::test]
async fn every_type_validates_and_renders_its_typed_data() {
    let org = Org::new().await;
    let types = [
        (
            "size",
            "select",
            json!({"options": ["S", "M"], "isMulti": true}),
        ),
        ("count", "number", json!({})),
        ("active", "boolean", json!({})),
        ("weight", "weight", json!({})),
        ("photo", "image", json!({})),
        ("link", "url", json!({})),
        ("shade", "color", json!({})),
        ("launch", "datetime", json!({})),
        ("body", "html", json!({})),
        (
            "part",
            "metaobject",
            json!({"metaobjectDefinition": "material"}),
        ),
    ];
    org.metaobjects("material", json!([]), &["oak"]).await;
    for (key, t, extra) in &types {
        let mut body =
            json!({"displayName": key, "key": key, "targetEntity": "product", "type": t});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        assert_eq!(post(&org, body).await.status, 201, "{key}");
    }
    let r = org
        .patch(
            "/v1/products/p",
            json!({"values": {
                "size": ["S", "M"], "count": 3, "active": true, "weight": "1.5 kg",
                "photo": "https://img.example/p.png", "link": "http://example.com",
                "shade": "#A0B1C2", "launch": "2026-11-21T02:39:29.597Z", "body": "<p>x</p>",
                "part": "oak"
            }}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let a = org.get("/v1/products/p").await.body["result"]["attributes"].clone();
    assert_eq!(
        a["product.size"],
        json!([{"value": "[\"S\",\"M\"]", "data": ["S", "M"], "type": "select", "locale": null, "isMulti": true}])
    );
    assert_eq!(a["product.count"][0]["data"], json!(3));
    assert_eq!(a["product.count"][0]["value"], json!("3"));
    assert_eq!(a["product.active"][0]["data"], json!(true));
    assert_eq!(
        a["product.weight"][0]["data"],
        json!({"value": 1.5, "unit": "kg"})
    );
    assert_eq!(
        a["product.part"],
        json!([{"value": "oak", "data": "oak", "type": "metaobject", "locale": null, "metaobjectDefinition": "material"}])
    );
    for key in ["photo", "link", "shade", "launch", "body"] {
        let entry = &a[format!("product.{key}")][0];
        assert_eq!(entry["data"], entry["value"], "{key}");
    }
    let cases = [
        (
            json!({"size": ["XL"]}),
            "values.size: [0]: 'XL' is not one of the options (S, M)",
        ),
        (
            json!({"size": "S"}),
            "values.size: the attribute is multi-value: expected an array",
        ),
        (json!({"count": "three"}), "values.count: expected a number"),
        (
            json!({"active": "yes"}),
            "values.active: expected true or false",
        ),
        (
            json!({"weight": "1.5 stone"}),
            "values.weight: '1.5 stone' is not a weight like \"1.5 kg\" (units g, kg, lb, oz)",
        ),
        (
            json!({"photo": "ftp://x/y.png"}),
            "values.photo: 'ftp://x/y.png' is not an absolute http(s) URL",
        ),
        (
            json!({"shade": "red"}),
            "values.shade: 'red' is not a color like \"#1A2B3C\"",
        ),
        (
            json!({"launch": "tomorrow"}),
            "values.launch: 'tomorrow' is not an RFC 3339 date-time",
        ),
        (
            json!({"count": {"locale": "en-US", "value": 1}}),
            "values.count: the attribute is not localized: 'locale' is not allowed",
        ),
        (
            json!({"count": {"channel": "web", "value": 1}}),
            "values.count: the attribute is not channel-scoped: 'channel' is not allowed",
        ),
    ];
    for (values, error) in cases {
        let r = org
            .patch("/v1/products/p", json!({ "values": values }))
            .await;
        assert_eq!(
            (r.status, r.body),
            (400, json!({ "error": error })),
            "{values}"
        );
    }
}
