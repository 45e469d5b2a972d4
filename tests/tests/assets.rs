//! Assets and their links to products end to end: the real `assets` and `products`
//! binaries on DynamoDB Local.

use catalog_e2e::{ids, send_to, Org, Request};
use serde_json::{json, Value};

async fn asset(org: &Org, id: &str, name: &str) {
    let url = format!("https://cdn.example.com/{id}.png");
    let r = org
        .post(
            "/v1/assets",
            json!({"identifier": id, "url": url, "name": name}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
}

async fn product(org: &Org, id: &str) {
    let r = org
        .patch(
            &format!("/v1/products/{id}"),
            json!({"name": id, "variants": [{"identifier": format!("{id}-v")}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
}

#[tokio::test]
async fn create_get_patch_list_and_409_on_an_existing_identifier() {
    let org = Org::new().await;
    org.define(
        json!({"displayName": "Alt text", "key": "alt", "targetEntity": "asset", "type": "text"}),
    )
    .await;
    org.get("/v1/assets").await; // warm the key cache: the counts below are the route's own
    let r = org
        .post(
            "/v1/assets",
            json!({"identifier": "logo", "url": "https://cdn.example.com/Logo.JPG", "values": {"alt": "Our logo"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let created = r.body["result"].clone();
    assert_eq!(
        created,
        json!({
            "identifier": "logo", "name": "logo", "url": "https://cdn.example.com/Logo.JPG",
            "mimeType": "image/jpeg",
            "attributes": {"asset.alt": [{"value": "Our logo", "data": "Our logo", "type": "text", "locale": null}]},
            "updatedAt": created["updatedAt"],
        })
    );
    assert_eq!(
        r.ddb_requests(),
        2,
        "definitions and scopes (BatchGetItem), then one conditional PutItem"
    );

    let again = org
        .post(
            "/v1/assets",
            json!({"identifier": "logo", "url": "https://cdn.example.com/other.png"}),
        )
        .await;
    assert_eq!(
        (again.status, again.body.clone(), again.ddb_requests()),
        (409, json!({"error": "asset 'logo' already exists"}), 1)
    );

    let got = org.get("/v1/assets/logo").await;
    assert_eq!((got.status, &got.body["result"]), (200, &created));

    let patched = org
        .patch(
            "/v1/assets/logo",
            json!({"name": "Logo", "mimeType": "image/x-logo"}),
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    let p = &patched.body["result"];
    assert_eq!(
        (&p["name"], &p["url"], &p["mimeType"], &p["attributes"]),
        (
            &json!("Logo"),
            &created["url"],
            &json!("image/x-logo"),
            &created["attributes"]
        ),
        "omitted fields are unchanged"
    );
    assert!(p["updatedAt"].as_str() > created["updatedAt"].as_str());
    let cleared = org
        .patch("/v1/assets/logo", json!({"values": {"alt": null}}))
        .await;
    assert_eq!(cleared.body["result"]["attributes"], json!({}));

    asset(&org, "banner", "Spring banner").await;
    asset(&org, "icon", "Cart icon").await;
    let all = org.get("/v1/assets").await;
    assert_eq!(ids(&all), ["banner", "icon", "logo"]);
    assert_eq!(
        all.body["pagination"],
        json!({"limit": 100, "page": 1, "totalPages": 1, "totalResults": 3, "nextCursor": null})
    );
    assert_eq!(
        all.ddb_requests(),
        catalog_e2e::shards() + 1,
        "the assets index's delta Query per shard, then the page's BatchGetItem"
    );
    let found = org.get("/v1/assets?search=LOGO").await;
    assert_eq!(ids(&found), ["logo"]);
    let found = org.get("/v1/assets?search=N").await;
    assert_eq!(ids(&found), ["banner", "icon"], "spring baNNer, cart icoN");
    let page = org.get("/v1/assets?limit=2&page=2").await;
    assert_eq!(ids(&page), ["logo"]);
    assert_eq!(
        page.body["pagination"],
        json!({"limit": 2, "page": 2, "totalPages": 2, "totalResults": 3, "nextCursor": null})
    );
    // the first page's cursor leads to the same second page
    let first = org.get("/v1/assets?limit=2").await;
    let cursor = first.body["pagination"]["nextCursor"].as_str().unwrap();
    let by_cursor = org
        .get(&format!("/v1/assets?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(ids(&by_cursor), ["logo"]);
    assert_eq!(
        by_cursor.body["pagination"]["page"],
        serde_json::Value::Null
    );
}

#[tokio::test]
async fn bad_asset_input_is_400_and_missing_assets_404() {
    let org = Org::new().await;
    let cases = [
        (
            json!({"url": "https://x.example/a.png"}),
            "field 'identifier' is required",
        ),
        (json!({"identifier": "a"}), "field 'url' is required"),
        (
            json!({"identifier": "a", "url": "ftp://x.example/a.png"}),
            "field 'url': 'ftp://x.example/a.png' is not an absolute http(s) URL of at most 2048 characters",
        ),
        (
            json!({"identifier": "a/b", "url": "https://x.example/a.png"}),
            "asset identifier must not contain '/'",
        ),
        (
            json!({"identifier": "a", "url": "https://x.example/a.png", "mimeType": "png"}),
            "field 'mimeType': 'png' is not a media type like image/png",
        ),
        (
            json!({"identifier": "a", "url": "https://x.example/a.png", "values": {"alt": "x"}}),
            "values: unknown attribute 'asset.alt'",
        ),
        (
            json!({"identifier": "a", "url": "https://x.example/a.png", "size": 3}),
            "unknown field 'size' (allowed: identifier, url, name, mimeType, values)",
        ),
    ];
    for (body, error) in cases {
        let r = org.post("/v1/assets", body).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })));
    }
    for r in [
        org.get("/v1/assets/nope").await,
        org.patch("/v1/assets/nope", json!({"name": "x"})).await,
        org.delete("/v1/assets/nope").await,
    ] {
        assert_eq!(
            (r.status, r.body),
            (404, json!({"error": "asset 'nope' not found"}))
        );
    }
    let r = org.get("/v1/products/nope/assets").await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": "product 'nope' not found"}))
    );
}

#[tokio::test]
async fn put_replaces_the_set_in_order_and_post_adds_without_duplicates() {
    let org = Org::new().await;
    for id in ["a", "b", "c"] {
        asset(&org, id, id).await;
    }
    product(&org, "p").await;
    let r = org
        .put("/v1/products/p/assets", json!({"assets": ["b", "a"]}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(ids(&r), ["b", "a"], "the order given");
    assert_eq!(
        r.body["pagination"],
        json!({"limit": 100, "page": 1, "totalPages": 1, "totalResults": 2})
    );
    let r = org
        .post("/v1/products/p/assets", json!({"assets": ["a", "c"]}))
        .await;
    assert_eq!(
        (r.status, ids(&r)),
        (200, vec!["b".into(), "a".into(), "c".into()])
    );
    let r = org.get("/v1/products/p/assets").await;
    assert_eq!(ids(&r), ["b", "a", "c"]);
    assert_eq!(
        r.ddb_requests(),
        2,
        "the product, then its assets in one batch"
    );
    let r = org.get("/v1/variants/p-v/assets").await;
    assert_eq!(
        ids(&r),
        ["b", "a", "c"],
        "a variant shows its product's assets"
    );

    let r = org
        .put("/v1/products/p/assets", json!({"assets": ["c"]}))
        .await;
    assert_eq!(ids(&r), ["c"], "left out means unlinked");
    let r = org
        .put("/v1/products/p/assets", json!({"assets": ["c", "zzz"]}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "field 'assets': asset 'zzz' does not exist"})
        )
    );
    let r = org
        .put("/v1/products/p/assets", json!({"assets": ["a", "a"]}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "field 'assets': asset 'a' is given twice"})
        )
    );
    assert_eq!(ids(&org.get("/v1/products/p/assets").await), ["c"]);
    let r = org
        .put("/v1/products/nope/assets", json!({"assets": ["a"]}))
        .await;
    assert_eq!(
        (r.status, r.body),
        (404, json!({"error": "product 'nope' not found"}))
    );
    // linking changes the product: its own timestamp moves
    let before = org.get("/v1/products/p").await.body["result"]["selfUpdatedAt"].clone();
    let r = org
        .put("/v1/products/p/assets", json!({"assets": []}))
        .await;
    assert_eq!((r.status, ids(&r)), (200, Vec::<String>::new()));
    let after = org.get("/v1/products/p").await.body["result"]["selfUpdatedAt"].clone();
    assert!(after.as_str() > before.as_str());
}

#[tokio::test]
async fn patch_product_assets_replace_the_set_create_unknown_ones_and_omission_keeps_links() {
    let org = Org::new().await;
    asset(&org, "a", "A").await;
    let r = org
        .patch(
            "/v1/products/p",
            json!({"name": "P", "assets": [
                {"identifier": "new", "url": "https://cdn.example.com/new.pdf", "name": "Manual"},
                {"identifier": "a", "name": "Renamed"}
            ]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(ids(&org.get("/v1/products/p/assets").await), ["new", "a"]);
    let created = org.get("/v1/assets/new").await.body["result"].clone();
    assert_eq!(
        (&created["name"], &created["mimeType"]),
        (&json!("Manual"), &json!("application/pdf"))
    );
    assert_eq!(
        org.get("/v1/assets/a").await.body["result"]["name"],
        "Renamed",
        "an existing asset takes the fields given"
    );
    let r = org.patch("/v1/products/p", json!({"name": "P2"})).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        ids(&org.get("/v1/products/p/assets").await),
        ["new", "a"],
        "omitting assets leaves links untouched"
    );
    let r = org
        .patch(
            "/v1/products/p",
            json!({"assets": [{"identifier": "missing"}]}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "assets[0]: asset 'missing' does not exist; give its 'url' to create it"})
        )
    );
    let r = org
        .patch("/v1/products/p", json!({"assets": [{"identifier": "a"}]}))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        ids(&org.get("/v1/products/p/assets").await),
        ["a"],
        "the complete set"
    );
    let r = org.patch("/v1/products/p", json!({"assets": []})).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        ids(&org.get("/v1/products/p/assets").await),
        Vec::<String>::new()
    );
    // the unlinked asset can go without touching the product
    let r = org.delete("/v1/assets/new").await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn deleting_an_asset_unlinks_it_everywhere() {
    let org = Org::new().await;
    asset(&org, "a", "A").await;
    asset(&org, "b", "B").await;
    for p in ["p1", "p2", "p3"] {
        product(&org, p).await;
    }
    for p in ["p1", "p2"] {
        let r = org
            .put(
                &format!("/v1/products/{p}/assets"),
                json!({"assets": ["a", "b"]}),
            )
            .await;
        assert_eq!(r.status, 200);
    }
    // p3 linked `a` and was deleted since: its stale entry must not block the delete
    org.put("/v1/products/p3/assets", json!({"assets": ["a"]}))
        .await;
    assert_eq!(org.delete("/v1/products/p3").await.status, 200);
    let r = org.delete("/v1/assets/a").await;
    assert_eq!(
        (r.status, r.body),
        (200, json!({"result": {"identifier": "a", "deleted": true}}))
    );
    assert_eq!(org.get("/v1/assets/a").await.status, 404);
    for p in ["p1", "p2"] {
        assert_eq!(
            ids(&org.get(&format!("/v1/products/{p}/assets")).await),
            ["b"]
        );
    }
    // a new asset of the same identifier is not linked anywhere
    asset(&org, "a", "A again").await;
    assert_eq!(ids(&org.get("/v1/products/p1/assets").await), ["b"]);
}

#[tokio::test]
async fn fifty_concurrent_creations_of_one_identifier_give_one_201_and_49_409() {
    let org = Org::new().await;
    org.get("/v1/assets").await;
    // ten processes of the function, as ten Lambda instances, each one request at a time
    let sends = (0..50).map(|i| {
        let req = Request::new("POST", "/v1/assets")
            .bearer(&org.key)
            .json(json!({"identifier": "race", "url": format!("https://cdn.example.com/{i}.png")}));
        async move { send_to(&format!("assets@instance{}", i % 10), req).await }
    });
    let results = futures_util::future::join_all(sends).await;
    let mut statuses: Vec<u16> = results.iter().map(|r| r.status).collect();
    statuses.sort();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1);
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 49);
    let winner = results.iter().find(|r| r.status == 201).unwrap();
    let stored = org.get("/v1/assets/race").await;
    assert_eq!(stored.body["result"]["url"], winner.body["result"]["url"]);
    let errors: Vec<&Value> = results
        .iter()
        .filter(|r| r.status == 409)
        .map(|r| &r.body)
        .collect();
    assert!(errors
        .iter()
        .all(|b| **b == json!({"error": "asset 'race' already exists"})));
}
