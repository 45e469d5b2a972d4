//! What is declared in more than one place stays equal: the table in code and in the
//! template, the route tables and the local router, the template's routes, and the sample
//! events (which must work against the real functions).

use catalog::store::table::TABLE;
use catalog_e2e::{invoke, repo_root, Org};
use serde_json::Value;
use std::collections::BTreeSet;

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn between<'a>(text: &'a str, begin: &str, end: &str) -> &'a str {
    let start = text
        .find(begin)
        .unwrap_or_else(|| panic!("marker {begin} missing"));
    let start = start + text[start..].find('\n').expect("line end") + 1;
    let stop = text
        .find(end)
        .unwrap_or_else(|| panic!("marker {end} missing"));
    text[start..stop].trim_end_matches(' ')
}

#[test]
fn template_table_matches_the_table_in_code() {
    let template = read("infra/template.yaml");
    let declared = between(&template, "# BEGIN table-shape", "# END table-shape");
    assert_eq!(
        declared,
        TABLE.cloudformation_yaml(6),
        "infra/template.yaml differs from the code: regenerate with `catalog-admin table-yaml`"
    );
}

#[test]
fn local_router_matches_the_route_tables() {
    let cargo = read("Cargo.toml");
    let declared = between(&cargo, "# BEGIN router", "# END router");
    let expected = format!(
        "[workspace.metadata.lambda.watch.router]\n{}",
        catalog::api::router_toml()
    );
    assert_eq!(
        declared, expected,
        "regenerate with `catalog-admin router-toml`"
    );
}

#[test]
fn the_openapi_file_is_the_generated_document() {
    assert_eq!(
        read("docs/openapi.yaml"),
        catalog::api::openapi::yaml(),
        "docs/openapi.yaml differs from the route tables: regenerate with `catalog-admin openapi > docs/openapi.yaml`"
    );
}

#[tokio::test]
async fn the_openapi_document_is_served_without_authentication() {
    let r = catalog_e2e::Request::new("GET", "/v1/openapi.json")
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, catalog::api::openapi::document());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let paths = r.body["paths"].as_object().unwrap();
    for api in catalog::api::FUNCTIONS {
        for route in api.routes() {
            let op = &paths[route.path][route.method.to_ascii_lowercase()];
            assert!(
                op.is_object(),
                "{} {} is documented",
                route.method,
                route.path
            );
        }
    }
    let r = catalog_e2e::Request::new("GET", "/v1/openapi.json?x=1")
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            serde_json::json!({"error": "unknown query parameter 'x'"})
        )
    );
    let r = catalog_e2e::Request::new("POST", "/v1/openapi.json")
        .send()
        .await;
    assert_eq!(r.status, 401, "only GET is public");
}

#[test]
fn template_routes_are_exactly_the_served_routes() {
    let template = read("infra/template.yaml");
    let lines: Vec<&str> = template.lines().map(str::trim).collect();
    let mut declared = BTreeSet::new();
    for pair in lines.windows(2) {
        if let (Some(m), Some(p)) = (
            pair[0].strip_prefix("Method: "),
            pair[1].strip_prefix("Path: "),
        ) {
            declared.insert(format!("{m} {p}"));
        }
    }
    let served: BTreeSet<String> = catalog::api::FUNCTIONS
        .iter()
        .flat_map(|api| api.routes().map(|r| format!("{} /v1{}", r.method, r.path)))
        .collect();
    assert_eq!(declared, served);
}

#[tokio::test]
async fn sample_events_work_against_the_real_functions() {
    let org = Org::new().await;
    let mut seen = 0;
    // Writes first so that the reads find what they ask for.
    let fixtures = [
        ("products", "events/products/patch-product.json", 201),
        ("products", "events/products/bulk-patch-products.json", 200),
        ("products", "events/products/get-product.json", 200),
        ("products", "events/products/list-products.json", 200),
        ("variants", "events/variants/get-variant.json", 200),
        ("variants", "events/variants/list-variants.json", 200),
        ("skus", "events/skus/get-sku.json", 200),
        ("skus", "events/skus/list-skus.json", 200),
        ("skus", "events/skus/patch-sku.json", 200),
        ("attributes", "events/attributes/create-attribute.json", 201),
        ("attributes", "events/attributes/get-attribute.json", 200),
        ("attributes", "events/attributes/list-attributes.json", 200),
        ("attributes", "events/attributes/delete-attribute.json", 200),
        ("attributes", "events/attributes/create-family.json", 201),
        ("attributes", "events/attributes/get-family.json", 200),
        ("attributes", "events/attributes/list-families.json", 200),
        ("attributes", "events/attributes/create-language.json", 201),
        ("attributes", "events/attributes/list-languages.json", 200),
        ("attributes", "events/attributes/create-channel.json", 201),
        ("attributes", "events/attributes/list-channels.json", 200),
        (
            "attributes",
            "events/attributes/create-completeness-profile.json",
            201,
        ),
        (
            "attributes",
            "events/attributes/get-completeness-profile.json",
            200,
        ),
        (
            "attributes",
            "events/attributes/list-completeness-profiles.json",
            200,
        ),
        (
            "products",
            "events/products/list-products-filtered.json",
            200,
        ),
        ("assets", "events/assets/create-asset.json", 201),
        ("assets", "events/assets/get-asset.json", 200),
        ("assets", "events/assets/list-assets.json", 200),
        ("assets", "events/assets/put-product-assets.json", 200),
        ("assets", "events/assets/list-product-assets.json", 200),
        ("assets", "events/assets/delete-asset.json", 200),
        ("categories", "events/categories/put-category.json", 201),
        ("categories", "events/categories/list-categories.json", 200),
        (
            "metaobjects",
            "events/metaobjects/create-definition.json",
            201,
        ),
        ("metaobjects", "events/metaobjects/put-metaobject.json", 201),
        ("metaobjects", "events/metaobjects/get-metaobject.json", 200),
        ("bundles", "events/bundles/put-bundle.json", 201),
        ("bundles", "events/bundles/list-bundles.json", 200),
        ("bundles", "events/bundles/delete-bundle.json", 200),
        ("skus", "events/skus/delete-sku.json", 200),
        ("variants", "events/variants/delete-variant.json", 200),
        ("products", "events/products/delete-product.json", 200),
        ("webhooks", "events/webhooks/create-webhook.json", 201),
        ("webhooks", "events/webhooks/list-webhooks.json", 200),
        ("imports", "events/imports/list-imports.json", 200),
        // Not HTTP: a batch whose records all succeed reports no failures (the upload's
        // import does not exist: nothing to run).
        ("import-worker", "events/import-worker/s3-upload.json", 0),
        // Not HTTP: a batch whose records all succeed reports no failures.
        ("change-feed", "events/change-feed/stream-batch.json", 0),
        (
            "webhook-delivery",
            "events/webhook-delivery/sqs-batch.json",
            0,
        ),
    ];
    for (function, file, status) in fixtures {
        let text = read(file).replace("${CATALOG_API_KEY}", &org.key);
        let event: Value = serde_json::from_str(&text).expect("valid JSON");
        let out = invoke(function, event).await;
        if status == 0 {
            assert_eq!(out, serde_json::json!({"batchItemFailures": []}), "{file}");
        } else {
            assert_eq!(out["statusCode"], status, "{file}: {out}");
        }
        seen += 1;
    }
    let files: usize = std::fs::read_dir(repo_root().join("events"))
        .unwrap()
        .map(|dir| std::fs::read_dir(dir.unwrap().path()).unwrap().count())
        .sum();
    assert_eq!(seen, files, "every fixture in events/ is exercised");
}
