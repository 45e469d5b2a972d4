//! `search`, `search_mode` and completeness on the list endpoints, end to end: every
//! operator of every category matching and not matching, system filters, filters across
//! levels, exact totals under filters, each 400, and what a filtered page costs.

use catalog::domain::time::Timestamp;
use catalog_e2e::{encode, ids, shards, Org};
use serde_json::{json, Value};

/// `/v1/<list>?search=<filters>` plus `extra` parameters.
fn url(list: &str, filters: &Value, extra: &str) -> String {
    format!("/v1/{list}?search={}{extra}", encode(&filters.to_string()))
}

async fn define(org: &Org, entity: &str, key: &str, t: &str, extra: Value) {
    let mut body = json!({"displayName": key, "key": key, "targetEntity": entity, "type": t});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    org.define(body).await;
}

fn ago(hours: i64) -> String {
    Timestamp::from_millis(Timestamp::now().millis() - hours * 3_600_000).to_string()
}

/// Three products: p1 and p2 with values, a variant and SKUs; p3 with nothing.
async fn catalog() -> Org {
    let org = Org::new().await;
    org.languages(&["en-US", "de-DE"]).await;
    define(
        &org,
        "product",
        "title",
        "text",
        json!({"isLocalized": true}),
    )
    .await;
    define(&org, "product", "brand", "text", json!({})).await;
    let colors = json!({"options": ["red", "blue", "green"]});
    define(&org, "product", "color", "select", colors).await;
    define(&org, "product", "eco", "boolean", json!({})).await;
    define(&org, "product", "price", "price", json!({})).await;
    define(&org, "product", "weight", "weight", json!({})).await;
    define(&org, "product", "stock", "number", json!({})).await;
    define(&org, "product", "launch", "datetime", json!({})).await;
    org.metaobjects("material", json!([]), &["oak", "pine"])
        .await;
    let material = json!({"metaobjectDefinition": "material"});
    define(&org, "product", "material", "metaobject", material).await;
    let sizes = json!({"options": ["S", "M", "L"]});
    define(&org, "variant", "size", "select", sizes).await;
    define(&org, "sku", "price", "price", json!({})).await;
    define(&org, "sku", "ean", "text", json!({})).await;
    let r = org
        .patch(
            "/v1/products/p1",
            json!({"name": "Oak chair", "values": {
                "title": [{"locale": "en-US", "value": "Oak Chair"}, {"locale": "de-DE", "value": "Eichenstuhl"}],
                "brand": "Acme", "color": "red", "eco": true, "price": "12.50 EUR",
                "weight": "1.5 kg", "stock": 3, "launch": ago(1), "material": "oak"},
              "variants": [{"identifier": "p1-v", "values": {"size": "S"}, "skus": [
                  {"identifier": "p1-s1", "values": {"price": "10 EUR", "ean": "4006381333931"}},
                  {"identifier": "p1-s2", "values": {"price": "30 EUR"}}]}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = org
        .patch(
            "/v1/products/p2",
            json!({"name": "Pine table", "values": {
                "brand": "Birch & Co", "color": "blue", "eco": false, "price": "99 USD",
                "weight": "900 g", "stock": 0, "launch": ago(24 * 30), "material": "pine"},
              "variants": [{"identifier": "p2-v", "values": {"size": "L"}, "skus": [
                  {"identifier": "p2-s1", "values": {"price": "50 EUR"}}]}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(
        org.patch("/v1/products/p3", json!({"name": "Empty"}))
            .await
            .status,
        201
    );
    org
}

#[tokio::test]
async fn every_operator_of_every_category_matches_and_misses() {
    let org = catalog().await;
    let two_days_ago = ago(48);
    let cases: Vec<(Value, Vec<&str>)> = vec![
        // text
        (
            json!({"product.brand": [{"operator": "EQUALS", "value": "Acme"}]}),
            vec!["p1"],
        ),
        (
            json!({"product.brand": [{"operator": "EQUALS", "value": "acme"}]}),
            vec![],
        ),
        (
            json!({"product.brand": [{"operator": "NOT_EQUALS", "value": "Acme"}]}),
            vec!["p2", "p3"],
        ),
        (
            json!({"product.brand": [{"operator": "CONTAINS", "value": "BIRCH"}]}),
            vec!["p2"],
        ),
        (
            json!({"product.brand": [{"operator": "CONTAINS", "value": "oak"}]}),
            vec![],
        ),
        (
            json!({"product.brand": [{"operator": "NOT_CONTAINS", "value": "acme"}]}),
            vec!["p2", "p3"],
        ),
        (
            json!({"product.brand": [{"operator": "IN", "value": ["Acme", "Other"]}]}),
            vec!["p1"],
        ),
        (
            json!({"product.brand": [{"operator": "IN", "value": ["Other"]}]}),
            vec![],
        ),
        (
            json!({"product.brand": [{"operator": "NOT_IN", "value": ["Acme"]}]}),
            vec!["p2", "p3"],
        ),
        (
            json!({"product.brand": [{"operator": "EMPTY"}]}),
            vec!["p3"],
        ),
        (
            json!({"product.brand": [{"operator": "NOT_EMPTY"}]}),
            vec!["p1", "p2"],
        ),
        // localized: any locale's value matches
        (
            json!({"product.title": [{"operator": "CONTAINS", "value": "stuhl"}]}),
            vec!["p1"],
        ),
        (
            json!({"product.title": [{"operator": "EQUALS", "value": "Oak Chair"}]}),
            vec!["p1"],
        ),
        // preset: select, boolean, metaobject
        (
            json!({"product.color": [{"operator": "EQUALS", "value": "red"}]}),
            vec!["p1"],
        ),
        (
            json!({"product.color": [{"operator": "EQUALS", "value": "green"}]}),
            vec![],
        ),
        (
            json!({"product.color": [{"operator": "NOT_EQUALS", "value": "red"}]}),
            vec!["p2", "p3"],
        ),
        (
            json!({"product.color": [{"operator": "IN", "value": ["blue", "green"]}]}),
            vec!["p2"],
        ),
        (
            json!({"product.color": [{"operator": "NOT_IN", "value": ["blue"]}]}),
            vec!["p1", "p3"],
        ),
        (
            json!({"product.color": [{"operator": "EMPTY"}]}),
            vec!["p3"],
        ),
        (
            json!({"product.color": [{"operator": "NOT_EMPTY"}]}),
            vec!["p1", "p2"],
        ),
        (
            json!({"product.eco": [{"operator": "EQUALS", "value": true}]}),
            vec!["p1"],
        ),
        (
            json!({"product.eco": [{"operator": "EQUALS", "value": "false"}]}),
            vec!["p2"],
        ),
        (
            json!({"product.eco": [{"operator": "NOT_EQUALS", "value": true}]}),
            vec!["p2", "p3"],
        ),
        (
            json!({"product.material": [{"operator": "IN", "value": ["pine"]}]}),
            vec!["p2"],
        ),
        (
            json!({"product.material": [{"operator": "EQUALS", "value": "steel"}]}),
            vec![],
        ),
        // numeric: number, price (major units, optional currency), weight (grams)
        (
            json!({"product.stock": [{"operator": "EQUALS", "value": 3}]}),
            vec!["p1"],
        ),
        (
            json!({"product.stock": [{"operator": "NOT_EQUALS", "value": 3}]}),
            vec!["p2", "p3"],
        ),
        (
            json!({"product.stock": [{"operator": "GREATER_THAN", "value": 0}]}),
            vec!["p1"],
        ),
        (
            json!({"product.stock": [{"operator": "GREATER_THAN", "value": 3}]}),
            vec![],
        ),
        (
            json!({"product.stock": [{"operator": "LESS_THAN", "value": 1}]}),
            vec!["p2"],
        ),
        (
            json!({"product.stock": [{"operator": "EMPTY"}]}),
            vec!["p3"],
        ),
        (
            json!({"product.stock": [{"operator": "NOT_EMPTY"}]}),
            vec!["p1", "p2"],
        ),
        (
            json!({"product.stock": [{"operator": "GREATER_THAN", "value": -1}, {"operator": "LESS_THAN", "value": 2}]}),
            vec!["p2"],
        ),
        (
            json!({"product.price": [{"operator": "GREATER_THAN", "value": 12}]}),
            vec!["p1", "p2"],
        ),
        (
            json!({"product.price": [{"operator": "GREATER_THAN", "value": "12 EUR"}]}),
            vec!["p1"],
        ),
        (
            json!({"product.price": [{"operator": "LESS_THAN", "value": "100 USD"}]}),
            vec!["p2"],
        ),
        (
            json!({"product.price": [{"operator": "EQUALS", "value": 12.5}]}),
            vec!["p1"],
        ),
        (
            json!({"product.price": [{"operator": "EQUALS", "value": "12.50 USD"}]}),
            vec![],
        ),
        (
            json!({"product.weight": [{"operator": "GREATER_THAN", "value": 1000}]}),
            vec!["p1"],
        ),
        (
            json!({"product.weight": [{"operator": "LESS_THAN", "value": "1 kg"}]}),
            vec!["p2"],
        ),
        (
            json!({"product.weight": [{"operator": "EQUALS", "value": "1500 g"}]}),
            vec!["p1"],
        ),
        (
            json!({"product.weight": [{"operator": "LESS_THAN", "value": "1 oz"}]}),
            vec![],
        ),
        // datetime
        (
            json!({"product.launch": [{"operator": "AFTER", "value": two_days_ago}]}),
            vec!["p1"],
        ),
        (
            json!({"product.launch": [{"operator": "BEFORE", "value": two_days_ago}]}),
            vec!["p2"],
        ),
        (
            json!({"product.launch": [{"operator": "GREATER_THAN", "value": two_days_ago}]}),
            vec!["p1"],
        ),
        (
            json!({"product.launch": [{"operator": "LESS_THAN", "value": "2000-01-01T00:00:00Z"}]}),
            vec![],
        ),
        (
            json!({"product.launch": [{"operator": "IN_THE_LAST", "value": "2d"}]}),
            vec!["p1"],
        ),
        (
            json!({"product.launch": [{"operator": "IN_THE_LAST", "value": "30m"}]}),
            vec![],
        ),
        (
            json!({"product.launch": [{"operator": "NOT_IN_THE_LAST", "value": "48h"}]}),
            vec!["p2"],
        ),
        (
            json!({"product.launch": [{"operator": "EMPTY"}]}),
            vec!["p3"],
        ),
        (
            json!({"product.launch": [{"operator": "NOT_EMPTY"}]}),
            vec!["p1", "p2"],
        ),
        // system filters
        (
            json!({"_identifier": [{"operator": "IN", "value": ["p2", "p9"]}]}),
            vec!["p2"],
        ),
        (
            json!({"_identifier": [{"operator": "CONTAINS", "value": "P"}]}),
            vec!["p1", "p2", "p3"],
        ),
        (
            json!({"_updated_at": [{"operator": "IN_THE_LAST", "value": "1h"}]}),
            vec!["p1", "p2", "p3"],
        ),
        (
            json!({"_updated_at": [{"operator": "BEFORE", "value": two_days_ago}]}),
            vec![],
        ),
        (
            json!({"_family": [{"operator": "EMPTY"}]}),
            vec!["p1", "p2", "p3"],
        ),
    ];
    for (filters, expected) in cases {
        let r = org.get(&url("products", &filters, "")).await;
        assert_eq!(r.status, 200, "{filters}: {:?}", r.body);
        assert_eq!(ids(&r), expected, "{filters}");
        assert_eq!(
            r.body["pagination"]["totalResults"],
            expected.len(),
            "{filters}"
        );
    }
}

#[tokio::test]
async fn filters_match_across_levels_and_combine() {
    let org = catalog().await;
    let family = org.post("/v1/families", json!({"name": "Tables"})).await;
    let family_id = family.body["result"]["id"].clone();
    let r = org
        .patch("/v1/products/p2", json!({"familyId": family_id}))
        .await;
    assert_eq!(r.status, 200);
    let cases: Vec<(&str, Value, &str, Vec<&str>)> = vec![
        // on /products, a variant or SKU filter matches through any variant or SKU
        (
            "products",
            json!({"variant.size": [{"operator": "EQUALS", "value": "L"}]}),
            "",
            vec!["p2"],
        ),
        (
            "products",
            json!({"sku.price": [{"operator": "GREATER_THAN", "value": 20}]}),
            "",
            vec!["p1", "p2"],
        ),
        (
            "products",
            json!({"sku.price": [{"operator": "GREATER_THAN", "value": 40}]}),
            "",
            vec!["p2"],
        ),
        (
            "products",
            json!({"sku.ean": [{"operator": "NOT_EMPTY"}]}),
            "",
            vec!["p1"],
        ),
        (
            "products",
            json!({"_family": [{"operator": "EQUALS", "value": family_id}]}),
            "",
            vec!["p2"],
        ),
        // on /skus and /variants, a parent filter matches through the parent
        (
            "skus",
            json!({"product.brand": [{"operator": "EQUALS", "value": "Acme"}]}),
            "",
            vec!["p1-s1", "p1-s2"],
        ),
        (
            "skus",
            json!({"variant.size": [{"operator": "IN", "value": ["L"]}]}),
            "",
            vec!["p2-s1"],
        ),
        (
            "skus",
            json!({"_family": [{"operator": "NOT_EMPTY"}]}),
            "",
            vec!["p2-s1"],
        ),
        (
            "variants",
            json!({"product.color": [{"operator": "EQUALS", "value": "blue"}]}),
            "",
            vec!["p2-v"],
        ),
        (
            "variants",
            json!({"sku.price": [{"operator": "LESS_THAN", "value": 20}]}),
            "",
            vec!["p1-v"],
        ),
        (
            "skus",
            json!({"sku.price": [{"operator": "LESS_THAN", "value": 40}], "product.eco": [{"operator": "EQUALS", "value": true}]}),
            "",
            vec!["p1-s1", "p1-s2"],
        ),
        // search_mode: all (default) is AND across keys, any is OR
        (
            "products",
            json!({"product.brand": [{"operator": "EQUALS", "value": "Acme"}], "product.color": [{"operator": "EQUALS", "value": "blue"}]}),
            "",
            vec![],
        ),
        (
            "products",
            json!({"product.brand": [{"operator": "EQUALS", "value": "Acme"}], "product.color": [{"operator": "EQUALS", "value": "blue"}]}),
            "&search_mode=any",
            vec!["p1", "p2"],
        ),
        (
            "products",
            json!({"product.brand": [{"operator": "EQUALS", "value": "Acme"}], "sku.price": [{"operator": "GREATER_THAN", "value": 40}]}),
            "&search_mode=any",
            vec!["p1", "p2"],
        ),
        (
            "products",
            json!({"product.brand": [{"operator": "EQUALS", "value": "Acme"}]}),
            "&search_mode=all",
            vec!["p1"],
        ),
    ];
    for (list, filters, extra, expected) in cases {
        let r = org.get(&url(list, &filters, extra)).await;
        assert_eq!(r.status, 200, "{list} {filters}: {:?}", r.body);
        assert_eq!(ids(&r), expected, "{list} {filters} {extra}");
    }

    // updated_after and search combine
    let t = org.get("/v1/products/p2").await.body["result"]["updatedAt"]
        .as_str()
        .unwrap()
        .to_string();
    let r = org
        .patch("/v1/products/p1", json!({"name": "Oak chair 2"}))
        .await;
    assert_eq!(r.status, 200);
    let colors = json!({"product.color": [{"operator": "IN", "value": ["red", "blue"]}]});
    let r = org
        .get(&url(
            "products",
            &colors,
            &format!("&updated_after={}", encode(&t)),
        ))
        .await;
    assert_eq!(ids(&r), ["p1"]);
    let r = org
        .get(&url(
            "skus",
            &json!({"sku.price": [{"operator": "NOT_EMPTY"}]}),
            &format!("&updated_after={}", encode(&t)),
        ))
        .await;
    assert_eq!(
        ids(&r),
        ["p1-s1", "p1-s2"],
        "a product's own change moves its SKUs"
    );
}

#[tokio::test]
async fn filtered_pages_have_exact_totals_and_cost_two_round_trips() {
    let org = catalog().await;
    let filters = json!({"product.brand": [{"operator": "NOT_EMPTY"}]});
    let r = org.get(&url("products", &filters, "&limit=1&page=2")).await;
    assert_eq!(ids(&r), ["p2"]);
    assert_eq!(
        r.body["pagination"],
        json!({"limit": 1, "page": 2, "totalPages": 2, "totalResults": 2, "nextCursor": null})
    );
    let r = org.get(&url("products", &filters, "&limit=1&page=3")).await;
    assert_eq!(ids(&r), Vec::<String>::new());
    assert_eq!(r.body["pagination"]["totalResults"], 2);
    // snapshot delta + definitions and scopes, in parallel; past the end, no page to read
    assert_eq!((r.ddb_requests(), r.ddb_round_trips()), (shards() + 1, 1));
    let r = org.get(&url("products", &filters, "&limit=1")).await;
    assert_eq!((r.ddb_requests(), r.ddb_round_trips()), (shards() + 2, 2));
    // a SKU filter on /products adds the SKU delta to the same round trip
    let skus = json!({"sku.price": [{"operator": "GREATER_THAN", "value": 0}]});
    let r = org.get(&url("products", &skus, "")).await;
    assert_eq!(ids(&r), ["p1", "p2"]);
    assert_eq!(
        (r.ddb_requests(), r.ddb_round_trips()),
        (2 * shards() + 2, 2)
    );

    // writes are visible to the next list call: a change, a deletion
    let r = org
        .patch("/v1/products/p3", json!({"values": {"brand": "Late"}}))
        .await;
    assert_eq!(r.status, 200);
    let r = org.get(&url("products", &filters, "")).await;
    assert_eq!(ids(&r), ["p1", "p2", "p3"]);
    assert_eq!(org.delete("/v1/products/p1").await.status, 200);
    let r = org.get(&url("products", &filters, "")).await;
    assert_eq!(ids(&r), ["p2", "p3"]);
    assert_eq!(r.body["pagination"]["totalResults"], 2);
    let r = org.get("/v1/skus").await;
    assert_eq!(ids(&r), ["p2-s1"]);
    assert_eq!(org.delete("/v1/variants/p2-v").await.status, 200);
    let r = org.get("/v1/variants").await;
    assert_eq!(r.body["pagination"]["totalResults"], 0);
    // recreated after its deletion: listed again
    let r = org
        .patch("/v1/products/p1", json!({"values": {"brand": "Acme"}}))
        .await;
    assert_eq!(r.status, 201);
    let r = org.get(&url("products", &filters, "")).await;
    assert_eq!(ids(&r), ["p1", "p2", "p3"]);
}

#[tokio::test]
async fn malformed_filters_are_400_naming_key_operator_and_problem() {
    let org = catalog().await;
    let cases: Vec<(String, &str)> = vec![
        (
            "/v1/products?search=%7B".into(),
            "query parameter 'search' is not valid JSON: EOF while parsing an object at line 1 column 1",
        ),
        (
            url("products", &json!([1]), ""),
            "query parameter 'search' must be a JSON object of filters",
        ),
        (
            url("products", &json!({"product.nope": [{"operator": "EQUALS", "value": "x"}]}), ""),
            "filter 'product.nope': unknown attribute",
        ),
        (
            url("products", &json!({"brand": [{"operator": "EQUALS", "value": "x"}]}), ""),
            "filter 'brand': a key is '<entity>.<attribute>' with entity product, variant or sku",
        ),
        (
            url("products", &json!({"_color": [{"operator": "EQUALS", "value": "x"}]}), ""),
            "filter '_color': unknown system filter (known: _updated_at, _family, _identifier)",
        ),
        (
            url("products", &json!({"product.price": [{"operator": "CONTAINS", "value": "1"}]}), ""),
            "filter 'product.price': operator 'CONTAINS' is not valid for numeric fields",
        ),
        (
            url("products", &json!({"product.color": [{"operator": "GREATER_THAN", "value": "red"}]}), ""),
            "filter 'product.color': operator 'GREATER_THAN' is not valid for preset fields",
        ),
        (
            url("products", &json!({"product.brand": [{"operator": "LIKE", "value": "x"}]}), ""),
            "filter 'product.brand': unknown operator 'LIKE'",
        ),
        (
            url("products", &json!({"product.brand": [{"operator": "IN", "value": "Acme"}]}), ""),
            "filter 'product.brand': operator 'IN': expected a non-empty array",
        ),
        (
            url("products", &json!({"product.brand": [{"operator": "EMPTY", "value": "x"}]}), ""),
            "filter 'product.brand': operator 'EMPTY': takes no value",
        ),
        (
            url("products", &json!({"product.brand": [{"operator": "EQUALS"}]}), ""),
            "filter 'product.brand': operator 'EQUALS': needs a value",
        ),
        (
            url("products", &json!({"product.stock": [{"operator": "GREATER_THAN", "value": "many"}]}), ""),
            "filter 'product.stock': operator 'GREATER_THAN': expected a number",
        ),
        (
            url("products", &json!({"product.launch": [{"operator": "IN_THE_LAST", "value": "7 weeks"}]}), ""),
            "filter 'product.launch': operator 'IN_THE_LAST': expected a duration such as \"7d\", \"24h\" or \"30m\"",
        ),
        (
            url("products", &json!({"product.brand": {"operator": "EQUALS"}}), ""),
            "filter 'product.brand': expected an array of {operator, value} objects",
        ),
        (
            url("skus", &json!({"sku.nope": [{"operator": "EMPTY"}]}), ""),
            "filter 'sku.nope': unknown attribute",
        ),
        (
            url("products", &json!({"product.brand": [{"operator": "EMPTY"}]}), "&search_mode=some"),
            "query parameter 'search_mode': 'some' is not one of all, any",
        ),
    ];
    for (path, error) in cases {
        let r = org.get(&path).await;
        assert_eq!(
            (r.status, r.body),
            (400, json!({ "error": error })),
            "{path}"
        );
    }
}

#[tokio::test]
async fn completeness_follows_profile_locales_and_channels() {
    let org = Org::new().await;
    org.languages(&["en-US", "de-DE"]).await;
    for (id, locales) in [
        ("web", json!(["en-US", "de-DE"])),
        ("print", json!(["en-US"])),
    ] {
        let r = org
            .post(
                "/v1/channels",
                json!({"identifier": id, "name": id, "locales": locales}),
            )
            .await;
        assert_eq!(r.status, 201);
    }
    define(
        &org,
        "product",
        "title",
        "text",
        json!({"isLocalized": true}),
    )
    .await;
    let both = json!({"isLocalized": true, "isChannelScoped": true});
    define(&org, "product", "desc", "text", both).await;
    define(&org, "sku", "price", "price", json!({})).await;
    let full = json!([
        {"locale": "en-US", "value": "T"}, {"locale": "de-DE", "value": "T"}
    ]);
    let desc_all = json!([
        {"locale": "en-US", "channel": "web", "value": "D"},
        {"locale": "de-DE", "channel": "web", "value": "D"},
        {"locale": "en-US", "channel": "print", "value": "D"}
    ]);
    let products = [
        // complete everywhere
        (
            "c1",
            json!({"name": "C1", "values": {"title": full, "desc": desc_all},
            "variants": [{"identifier": "c1-v", "skus": [{"identifier": "c1-s", "values": {"price": "1 EUR"}}]}]}),
        ),
        // English only, print only: complete for print
        (
            "c2",
            json!({"name": "C2", "values": {"title": [{"locale": "en-US", "value": "T"}],
            "desc": [{"locale": "en-US", "channel": "print", "value": "D"}]},
            "variants": [{"identifier": "c2-v", "skus": [{"identifier": "c2-s", "values": {"price": "1 EUR"}}]}]}),
        ),
        // one SKU without a price
        (
            "c3",
            json!({"name": "C3", "values": {"title": full, "desc": desc_all},
            "variants": [{"identifier": "c3-v", "skus": [{"identifier": "c3-s1", "values": {"price": "1 EUR"}}, {"identifier": "c3-s2"}]}]}),
        ),
        // a SKU without a price (an empty name, the case this once was, is now a 400)
        (
            "c4",
            json!({"name": "C4", "values": {"title": full, "desc": desc_all},
            "variants": [{"identifier": "c4-v", "skus": [{"identifier": "c4-s"}]}]}),
        ),
    ];
    for (id, body) in products {
        let r = org.patch(&format!("/v1/products/{id}"), body).await;
        assert_eq!(r.status, 201, "{id}: {:?}", r.body);
    }
    let profile = json!({"identifier": "ready", "name": "Ready",
        "requiredAttributes": ["product.name", "product.title", "product.desc", "sku.price"]});
    let r = org.post("/v1/completeness-profiles", profile.clone()).await;
    assert_eq!(
        (r.status, r.body),
        (
            201,
            json!({"result": {"identifier": "ready", "name": "Ready",
                "requiredAttributes": ["product.name", "product.title", "product.desc", "sku.price"],
                "locales": [], "channels": []}})
        )
    );
    let r = org.post("/v1/completeness-profiles", profile).await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "completeness profile 'ready' already exists"})
        )
    );
    let r = org
        .post(
            "/v1/completeness-profiles",
            json!({"identifier": "en-print", "name": "English print",
                "requiredAttributes": ["product.title", "product.desc"], "locales": ["en-US"], "channels": ["print"]}),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = org.get("/v1/completeness-profiles/en-print").await;
    assert_eq!(r.body["result"]["channels"], json!(["print"]));
    let r = org.get("/v1/completeness-profiles").await;
    assert_eq!(ids(&r), ["en-print", "ready"]);
    assert_eq!(org.get("/v1/completeness-profiles/nope").await.status, 404);

    let list = |q: &str| format!("/v1/products?{q}");
    let cases = [
        // default channel (web, the first created): its locales
        (
            "completeness_profile=ready&completeness=complete",
            vec!["c1"],
        ),
        (
            "completeness_profile=ready&completeness=incomplete",
            vec!["c2", "c3", "c4"],
        ),
        (
            "completeness_profile=ready&completeness=complete&channel=web",
            vec!["c1"],
        ),
        (
            "completeness_profile=ready&completeness=complete&channel=print",
            vec!["c1", "c2"],
        ),
        (
            "completeness_profile=ready&completeness=incomplete&channel=print",
            vec!["c3", "c4"],
        ),
        // the profile's own locales and channels
        (
            "completeness_profile=en-print&completeness=complete",
            vec!["c1", "c2", "c3", "c4"],
        ),
        // a profile alone filters nothing
        ("completeness_profile=ready", vec!["c1", "c2", "c3", "c4"]),
    ];
    for (q, expected) in cases {
        let r = org.get(&list(q)).await;
        assert_eq!(r.status, 200, "{q}: {:?}", r.body);
        assert_eq!(ids(&r), expected, "{q}");
    }
    let r = org
        .get(&url(
            "products",
            &json!({"_identifier": [{"operator": "NOT_EQUALS", "value": "c1"}]}),
            "&completeness_profile=ready&completeness=complete&channel=print",
        ))
        .await;
    assert_eq!(ids(&r), ["c2"], "search and completeness combine");

    let errors = [
        ("completeness=complete", "query parameter 'completeness': requires 'completeness_profile'"),
        ("channel=web", "query parameter 'channel': requires 'completeness_profile'"),
        ("completeness_profile=nope&completeness=complete", "query parameter 'completeness_profile': unknown completeness profile 'nope'"),
        ("completeness_profile=ready&completeness=done", "query parameter 'completeness': 'done' is not one of complete, incomplete"),
        ("completeness_profile=ready&completeness=complete&channel=tv", "query parameter 'channel': unknown channel 'tv'"),
        ("completeness_profile=en-print&completeness=complete&channel=web", "query parameter 'channel': completeness profile 'en-print' does not apply to channel 'web'"),
    ];
    for (q, error) in errors {
        let r = org.get(&list(q)).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })), "{q}");
    }
    let r = org.get("/v1/skus?completeness_profile=ready").await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "unknown query parameter 'completeness_profile'"})
        )
    );
    let bad_profiles = [
        (json!({"identifier": "x", "name": "X", "requiredAttributes": []}), "field 'requiredAttributes' must be a non-empty array of attribute keys"),
        (json!({"identifier": "x", "name": "X", "requiredAttributes": ["product.nope"]}), "field 'requiredAttributes': attribute 'product.nope' does not exist"),
        (json!({"identifier": "x", "name": "X", "requiredAttributes": ["bundle.name"]}), "field 'requiredAttributes': \"bundle.name\" is not an attribute key like 'product.color' (entity one of product, variant, sku)"),
        (json!({"identifier": "x", "name": "X", "requiredAttributes": ["product.title"], "locales": ["fr-FR"]}), "field 'locales': language 'fr-FR' does not exist"),
        (json!({"identifier": "x", "name": "X", "requiredAttributes": ["product.title"], "channels": ["tv"]}), "field 'channels': channel 'tv' does not exist"),
        (json!({"identifier": "x", "requiredAttributes": ["product.title"]}), "field 'name' is required"),
    ];
    for (body, error) in bad_profiles {
        let r = org.post("/v1/completeness-profiles", body).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })));
    }
}
