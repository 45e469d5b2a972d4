//! Each function's binary links only what its entry point names (`context::Parts`, the
//! fallback's handler-free route table, the OpenAPI document rendered ahead of time): read from the symbols of the test build, whose
//! linker drops what nothing reaches, as the deploy build's does.

use catalog_e2e::{binary, repo_root};

/// A mangled-name fragment, and what holds it.
const LIST_ENGINE: &str = "6search8snapshot";
const S3_CLIENT: &str = "10aws_sdk_s3";
const PRODUCT_HANDLERS: &str = "3api8products";
const WEBHOOK_HANDLERS: &str = "3api8webhooks";

/// The functions that list (or check a metaobject's referrers, or export through a list),
/// and so reach S3 too: the list checkpoints are there (and imports' and exports' files).
const LISTING: &[&str] = &[
    "products",
    "variants",
    "skus",
    "metaobjects",
    "imports",
    "import-worker",
    // builds the checkpoints from the list engine's snapshots
    "checkpoint-builder",
];

fn functions() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo_root().join("functions"))
        .expect("functions/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The binaries' symbols as the test build links them: an optimized build inlines and
/// merges more, so the markers hold for the `debug` profile the tests run.
fn debug_profile() {
    let profile = std::env::var("CATALOG_E2E_PROFILE").unwrap_or_else(|_| "debug".into());
    assert_eq!(
        profile, "debug",
        "these checks read the debug build's symbols"
    );
}

fn holds(bytes: &[u8], fragment: &str) -> bool {
    memchr::memmem::find(bytes, fragment.as_bytes()).is_some()
}

#[test]
fn each_function_links_the_list_engine_and_s3_only_when_it_uses_them() {
    debug_profile();
    let mut found = Vec::new();
    let mut expected = Vec::new();
    for name in functions() {
        let bytes = std::fs::read(binary(&name)).expect("read the binary");
        found.push((
            name.clone(),
            holds(&bytes, LIST_ENGINE),
            holds(&bytes, S3_CLIENT),
        ));
        expected.push((
            name.clone(),
            LISTING.contains(&name.as_str()),
            LISTING.contains(&name.as_str()),
        ));
    }
    assert_eq!(found, expected, "(function, list engine, S3 client)");
}

#[test]
fn the_fallback_and_the_openapi_document_link_no_other_functions_handlers() {
    debug_profile();
    let read = |name: &str| std::fs::read(binary(name)).expect("read the binary");
    let (fallback, products, webhooks) = (read("fallback"), read("products"), read("webhooks"));
    assert!(holds(&products, PRODUCT_HANDLERS), "the marker names them");
    assert!(holds(&webhooks, WEBHOOK_HANDLERS), "the marker names them");
    // the fallback matches a table without handlers (`api/served.rs`)
    assert!(!holds(&fallback, PRODUCT_HANDLERS));
    assert!(!holds(&fallback, WEBHOOK_HANDLERS));
    // `products` serves the document rendered ahead of time (`openapi/document.json`)
    assert!(!holds(&products, WEBHOOK_HANDLERS));
}
