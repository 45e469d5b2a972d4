//! The sample catalog: one ordered list of requests that is both the OpenAPI document's
//! examples (every operation's path and body examples come from here) and the data the
//! contract test writes before schemathesis runs, so that the examples reach real entities.

use serde_json::{json, Value};

/// One example request.
pub struct Sample {
    /// The example's name in the document (unique per operation).
    pub name: &'static str,
    pub method: &'static str,
    /// A concrete path under `/v1`.
    pub path: &'static str,
    /// The JSON body of a write.
    pub body: Option<Value>,
}

fn write(name: &'static str, method: &'static str, path: &'static str, body: Value) -> Sample {
    Sample {
        name,
        method,
        path,
        body: Some(body),
    }
}

fn read(name: &'static str, method: &'static str, path: &'static str) -> Sample {
    Sample {
        name,
        method,
        path,
        body: None,
    }
}

/// The writes that build the sample catalog, in dependency order; a fresh organization
/// accepts every one of them (the webhook's only when its host resolves to a public address).
pub fn writes() -> Vec<Sample> {
    vec![
        write(
            "english",
            "POST",
            "/languages",
            json!({"code": "en-US", "name": "English", "isDefault": true}),
        ),
        write(
            "german",
            "POST",
            "/languages",
            json!({"code": "de-DE", "name": "German"}),
        ),
        write(
            "web-shop",
            "POST",
            "/channels",
            json!({"identifier": "web", "name": "Web shop", "locales": ["en-US", "de-DE"], "isDefault": true}),
        ),
        write(
            "material",
            "POST",
            "/metaobject-definitions",
            json!({"name": "material", "displayName": "Material", "fields": [
            {"key": "label", "type": "text", "isLocalized": true}, {"key": "hardness", "type": "number"}]}),
        ),
        write(
            "oak",
            "PUT",
            "/metaobjects/material/oak",
            json!({"name": "Oak", "values": {
            "label": [{"locale": "en-US", "value": "Oak"}, {"locale": "de-DE", "value": "Eiche"}], "hardness": 3}}),
        ),
        write(
            "pine",
            "PUT",
            "/metaobjects/material/pine",
            json!({"name": "Pine", "values": {"hardness": 1}}),
        ),
        write(
            "color",
            "POST",
            "/attributes",
            json!({"displayName": "Color", "key": "color", "targetEntity": "product", "type": "text", "isLocalized": true}),
        ),
        write(
            "material-attribute",
            "POST",
            "/attributes",
            json!({"displayName": "Material", "key": "material", "targetEntity": "product", "type": "metaobject", "metaobjectDefinition": "material"}),
        ),
        write(
            "legacy-code",
            "POST",
            "/attributes",
            json!({"displayName": "Legacy code", "key": "legacy_code", "targetEntity": "product", "type": "text"}),
        ),
        write(
            "size",
            "POST",
            "/attributes",
            json!({"displayName": "Size", "key": "size", "targetEntity": "variant", "type": "select", "options": ["S", "M", "L"]}),
        ),
        write(
            "price",
            "POST",
            "/attributes",
            json!({"displayName": "Price", "key": "price", "targetEntity": "sku", "type": "price", "isChannelScoped": true}),
        ),
        write(
            "weight",
            "POST",
            "/attributes",
            json!({"displayName": "Weight", "key": "weight", "targetEntity": "sku", "type": "weight"}),
        ),
        write(
            "chairs-family",
            "POST",
            "/families",
            json!({"name": "Chairs", "attributes": ["product.color", "product.material"]}),
        ),
        write(
            "web-ready",
            "POST",
            "/completeness-profiles",
            json!({"identifier": "web-ready", "name": "Ready for the web shop",
            "requiredAttributes": ["product.color"], "locales": ["en-US"], "channels": ["web"]}),
        ),
        write(
            "furniture",
            "PUT",
            "/categories/furniture",
            json!({"name": "Furniture"}),
        ),
        write(
            "chairs",
            "PUT",
            "/categories/chairs",
            json!({"name": "Chairs", "parent": "furniture"}),
        ),
        write(
            "archive",
            "PUT",
            "/categories/archive",
            json!({"name": "Archive"}),
        ),
        write(
            "chair-photo",
            "POST",
            "/assets",
            json!({"identifier": "chair-photo", "url": "https://images.example.com/chair.jpg", "name": "Chair, front"}),
        ),
        write(
            "old-photo",
            "POST",
            "/assets",
            json!({"identifier": "old-photo", "url": "https://images.example.com/old.png"}),
        ),
        write(
            "chair",
            "PATCH",
            "/products/chair",
            json!({
            "name": "Chair", "familyId": 1, "categories": ["chairs"],
            "values": {"color": [{"locale": "en-US", "value": "Red"}, {"locale": "de-DE", "value": "Rot"}], "material": "oak"},
            "assets": [{"identifier": "chair-photo"}, {"identifier": "chair-side", "url": "https://images.example.com/chair-side.jpg"}],
            "variants": [
                {"identifier": "chair-oak", "name": "Oak chair", "values": {"size": "M"}, "skus": [
                    {"identifier": "chair-oak-m", "name": "Oak chair, M", "values": {"price": [{"channel": "web", "value": "49.90 EUR"}], "weight": "4.2 kg"}},
                    {"identifier": "chair-oak-l", "name": "Oak chair, L", "values": {"price": [{"channel": "web", "value": "59.90 EUR"}]}}]},
                {"identifier": "chair-walnut", "name": "Walnut chair", "skus": [{"identifier": "chair-walnut-m"}]}]}),
        ),
        write(
            "stool",
            "PATCH",
            "/products/stool",
            json!({"name": "Stool", "values": {"legacy_code": "ST-1"}}),
        ),
        write(
            "desk-and-lamp",
            "PATCH",
            "/products",
            json!([
                {"identifier": "desk", "name": "Desk"},
                {"identifier": "lamp", "name": "Lamp", "values": {"legacy_code": "LA-1"}}]),
        ),
        write(
            "chair-oak-m",
            "PATCH",
            "/skus/chair-oak-m",
            json!({"values": {"price": [{"channel": "web", "value": "44.90 EUR"}]}}),
        ),
        write(
            "chair-photos",
            "PUT",
            "/products/chair/assets",
            json!({"assets": ["chair-photo", "chair-side"]}),
        ),
        write(
            "add-old-photo",
            "POST",
            "/products/stool/assets",
            json!({"assets": ["old-photo"]}),
        ),
        write(
            "chair-photo-name",
            "PATCH",
            "/assets/chair-photo",
            json!({"name": "Chair, front view"}),
        ),
        write(
            "chair-set",
            "PUT",
            "/bundles/chair-set",
            json!({"name": "Four oak chairs", "items": [{"sku": "chair-oak-m", "quantity": 4}]}),
        ),
        write(
            "old-set",
            "PUT",
            "/bundles/old-set",
            json!({"name": "Old set", "items": [{"sku": "chair-walnut-m", "quantity": 2}]}),
        ),
        write(
            "ndjson-import",
            "POST",
            "/imports",
            json!({"format": "ndjson"}),
        ),
        write(
            "catalog-export",
            "POST",
            "/exports",
            json!({"entity": "products", "include": ["variants", "skus"]}),
        ),
        write(
            "history-for-30-days",
            "PATCH",
            "/settings",
            json!({"historyRetentionDays": 30}),
        ),
        write(
            "ci-reader",
            "POST",
            "/api-keys",
            json!({"name": "CI reader", "scopes": ["catalog:read"]}),
        ),
        write(
            "subscription",
            "POST",
            "/webhooks",
            json!({"url": "https://hooks.example.com/catalog", "topics": ["product.updated", "product.deleted"], "description": "ERP sync"}),
        ),
    ]
}

/// Example paths of the operations that take no body (reads, deletes); a delete names an
/// entity nothing else's example needs.
pub fn reads() -> Vec<Sample> {
    vec![
        read("chair", "GET", "/products/chair"),
        read("chair", "GET", "/products/chair/assets"),
        read("chair", "GET", "/products/chair/history"),
        read("stool", "DELETE", "/products/stool"),
        read("stool", "DELETE", "/products/stool/history"),
        read("chair-oak", "GET", "/variants/chair-oak"),
        read("chair-oak", "GET", "/variants/chair-oak/assets"),
        read("chair-oak", "GET", "/variants/chair-oak/history"),
        read("chair-walnut", "DELETE", "/variants/chair-walnut"),
        read("chair-walnut", "DELETE", "/variants/chair-walnut/history"),
        read("chair-oak-m", "GET", "/skus/chair-oak-m"),
        read("chair-oak-m", "GET", "/skus/chair-oak-m/history"),
        read("chair-oak-l", "DELETE", "/skus/chair-oak-l"),
        read("chair-oak-l", "DELETE", "/skus/chair-oak-l/history"),
        read("color", "GET", "/attributes/product.color"),
        read("legacy-code", "DELETE", "/attributes/product.legacy_code"),
        read("chairs-family", "GET", "/families/1"),
        read("web-ready", "GET", "/completeness-profiles/web-ready"),
        read("chair-photo", "GET", "/assets/chair-photo"),
        read("chair-photo", "GET", "/assets/chair-photo/history"),
        read("old-photo", "DELETE", "/assets/old-photo"),
        read("old-photo", "DELETE", "/assets/old-photo/history"),
        read("chairs", "GET", "/categories/chairs"),
        read("archive", "DELETE", "/categories/archive"),
        read("chair-set", "GET", "/bundles/chair-set"),
        read("old-set", "DELETE", "/bundles/old-set"),
        read("material", "GET", "/metaobject-definitions/material"),
        read("material", "GET", "/metaobjects/material"),
        read("oak", "GET", "/metaobjects/material/oak"),
        read("pine", "DELETE", "/metaobjects/material/pine"),
    ]
}

/// Examples of the query parameters, by component name, in the spec's own terms.
pub fn query_examples() -> Vec<(&'static str, Value)> {
    vec![
        ("include", json!("variants,skus,metaobjects")),
        ("variant_include", json!("skus,metaobjects")),
        ("sku_include", json!("metaobjects")),
        ("attributes", json!("product.color,sku.price_*")),
        ("exclude_attributes", json!("sku.weight")),
        ("updated_after", json!("2026-01-01T00:00:00Z")),
        (
            "search",
            json!(r#"{"product.color":[{"operator":"CONTAINS","value":"Red"}]}"#),
        ),
        ("completeness_profile", json!("web-ready")),
        ("channel", json!("web")),
        ("asset_search", json!("chair")),
    ]
}
