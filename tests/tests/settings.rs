//! Families, channels and languages (served by the `settings` function), what values are
//! validated against, and DELETE /attributes.

use catalog_e2e::Org;
use serde_json::json;

#[tokio::test]
async fn families_get_integer_ids_and_products_carry_family_id() {
    let org = Org::new().await;
    org.define(
        json!({"displayName": "Brand", "key": "brand", "targetEntity": "product", "type": "text"}),
    )
    .await;
    let r = org
        .post(
            "/v1/families",
            json!({"name": "Chairs", "attributes": ["product.brand"]}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            201,
            json!({"result": {"id": 1, "name": "Chairs", "attributes": ["product.brand"]}})
        )
    );
    let r = org.post("/v1/families", json!({"name": "Tables"})).await;
    assert_eq!(r.body["result"]["id"], 2);
    let r = org.get("/v1/families").await;
    assert_eq!(
        r.body,
        json!({"result": [
            {"id": 1, "name": "Chairs", "attributes": ["product.brand"]},
            {"id": 2, "name": "Tables", "attributes": []}
        ], "pagination": {"limit": 100, "page": 1, "totalPages": 1, "totalResults": 2}})
    );
    assert_eq!(
        org.get("/v1/families/2").await.body["result"]["name"],
        "Tables"
    );
    for path in ["/v1/families/3", "/v1/families/x"] {
        let r = org.get(path).await;
        assert_eq!(r.status, 404, "{path}");
    }
    for (body, error) in [
        (json!({}), "field 'name' is required"),
        (
            json!({"name": "X", "attributes": ["product.nope"]}),
            "field 'attributes': attribute 'product.nope' does not exist",
        ),
        (
            json!({"name": "X", "attributes": ["brand"]}),
            "field 'attributes': \"brand\" is not an attribute key like 'product.color' (entity one of product, variant, sku, bundle)",
        ),
    ] {
        let r = org.post("/v1/families", body).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })));
    }

    let r = org.patch("/v1/products/p", json!({"familyId": 1})).await;
    assert_eq!(r.status, 201);
    assert_eq!(
        org.get("/v1/products/p").await.body["result"]["familyId"],
        1
    );
    let r = org.patch("/v1/products/p", json!({"familyId": null})).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        org.get("/v1/products/p").await.body["result"]["familyId"],
        serde_json::Value::Null
    );
    // another organization's family ids are its own
    let other = Org::new().await;
    let r = other.patch("/v1/products/p", json!({"familyId": 1})).await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "field 'familyId': family 1 does not exist"})
        )
    );
}

#[tokio::test]
async fn locales_and_channels_must_be_configured_languages_and_channels() {
    let org = Org::new().await;
    org.define(
        json!({"displayName": "Title", "key": "title", "targetEntity": "product", "type": "text",
                      "isLocalized": true, "isChannelScoped": true}),
    )
    .await;
    let value = |locale: &str, channel: &str| json!({"values": {"title": {"locale": locale, "channel": channel, "value": "x"}}});
    // nothing configured yet: every language is unknown
    let r = org.patch("/v1/products/p", value("fr-FR", "pos")).await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "values.title: locale 'fr-FR' is not a language of this workspace"})
        )
    );

    let r = org
        .post("/v1/languages", json!({"code": "en-US", "name": "English"}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            201,
            json!({"result": {"code": "en-US", "name": "English", "isDefault": true}})
        )
    );
    let r = org
        .post("/v1/languages", json!({"code": "de-DE", "isDefault": true}))
        .await;
    assert_eq!(
        r.body["result"],
        json!({"code": "de-DE", "name": "de-DE", "isDefault": true})
    );
    let r = org.get("/v1/languages").await;
    assert_eq!(
        r.body["result"],
        json!([
            {"code": "de-DE", "name": "de-DE", "isDefault": true},
            {"code": "en-US", "name": "English", "isDefault": false}
        ])
    );
    let r = org.post("/v1/languages", json!({"code": "en-US"})).await;
    assert_eq!(
        (r.status, r.body),
        (409, json!({"error": "language 'en-US' already exists"}))
    );
    let r = org.post("/v1/languages", json!({"code": "english"})).await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "field 'code': 'english' is not a BCP 47 language tag"})
        )
    );

    let r = org
        .post(
            "/v1/channels",
            json!({"identifier": "web", "name": "Web", "locales": ["en-US"]}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            201,
            json!({"result": {"identifier": "web", "name": "Web", "locales": ["en-US"], "isDefault": true}})
        )
    );
    let r = org
        .post(
            "/v1/channels",
            json!({"identifier": "pos", "name": "Stores"}),
        )
        .await;
    assert_eq!(
        r.body["result"]["isDefault"], false,
        "the first stays default"
    );
    let r = org
        .post(
            "/v1/channels",
            json!({"identifier": "app", "name": "App", "locales": ["fr-FR"]}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "field 'locales': language 'fr-FR' does not exist"})
        )
    );
    let r = org.get("/v1/channels").await;
    assert_eq!(r.body["pagination"]["totalResults"], 2);
    assert_eq!(r.body["result"][0]["identifier"], "pos");

    assert_eq!(
        org.patch("/v1/products/p", value("en-US", "web"))
            .await
            .status,
        201
    );
    let r = org.patch("/v1/products/p", value("fr-FR", "web")).await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "values.title: locale 'fr-FR' is not a language of this workspace"})
        )
    );
    let r = org.patch("/v1/products/p", value("en-US", "tv")).await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "values.title: channel 'tv' does not exist"})
        )
    );
    let p = org.get("/v1/products/p").await.body["result"]["attributes"]["product.title"].clone();
    assert_eq!(
        p,
        json!([{"value": "x", "data": "x", "type": "text", "locale": "en-US", "channel": "web"}])
    );
}

#[tokio::test]
async fn an_attribute_with_values_cannot_be_deleted() {
    let org = Org::new().await;
    org.define(
        json!({"displayName": "Size", "key": "size", "targetEntity": "sku", "type": "text"}),
    )
    .await;
    let r = org
        .patch(
            "/v1/products/p",
            json!({"variants": [{"identifier": "v", "skus": [{"identifier": "s", "values": {"size": "M"}}]}]}),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = org.delete("/v1/attributes/sku.size").await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "attribute 'sku.size' still has values; remove them before deleting it"})
        )
    );
    assert_eq!(org.get("/v1/attributes/sku.size").await.status, 200);
    let r = org
        .patch("/v1/skus/s", json!({"values": {"size": null}}))
        .await;
    assert_eq!(r.status, 200);
    let r = org.delete("/v1/attributes/sku.size").await;
    assert_eq!(
        (r.status, r.body),
        (
            200,
            json!({"result": {"identifier": "sku.size", "deleted": true}})
        )
    );
    let r = org.get("/v1/attributes/sku.size").await;
    assert_eq!(r.status, 404);
    let r = org.delete("/v1/attributes/sku.size").await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": "attribute 'sku.size' not found"}))
    );
    let r = org
        .patch("/v1/skus/s", json!({"values": {"size": "L"}}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "values: unknown attribute 'sku.size'"})
        )
    );
}
