//! Unit tests of the parent module.

use super::*;

const ORG: &str = "abc123";

fn item(kind: EntityKind, id: &str, parents: (Option<&str>, Option<&str>), ver: u64) -> EntityItem {
    let mut e = EntityItem::new(
        ORG,
        kind,
        id,
        parents,
        id,
        StoredValues::new(),
        Timestamp::from_millis(1_000),
    );
    e.ver = ver;
    e
}

fn entity(id: &str) -> EntityPatch {
    EntityPatch {
        id: id.into(),
        ..EntityPatch::default()
    }
}

fn named(id: &str, name: &str) -> EntityPatch {
    EntityPatch {
        id: id.into(),
        name: Some(name.into()),
        values: Vec::new(),
    }
}

fn tree() -> ProductTree {
    ProductTree {
        product: item(EntityKind::Product, "p", (None, None), 3),
        variants: vec![item(EntityKind::Variant, "v1", (Some("p"), None), 2)],
        skus: vec![item(EntityKind::Sku, "s1", (Some("p"), Some("v1")), 5)],
    }
}

#[test]
fn a_new_tree_is_created_parents_first_with_identity_claims() {
    let patch = ProductPatch {
        entity: named("p", "Chair"),
        variants: vec![VariantPatch {
            entity: entity("v1"),
            skus: vec![entity("s1")],
        }],
        ..ProductPatch::default()
    };
    let plan = plan(ORG, "p", None, &patch, true).unwrap();
    assert!(plan.created);
    assert_eq!(plan.product.name, "Chair");
    let ids: Vec<&str> = plan.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["p", "v1", "s1"]);
    // product; variant + its identity item; SKU + its identity item
    assert_eq!(plan.write.len(), 5);
    assert_eq!(plan.write.transaction_sizes(), vec![5]);
    // one time for the whole write
    assert!(plan
        .items
        .iter()
        .all(|i| i.self_updated_at == plan.product.self_updated_at
            && i.updated_at == plan.product.updated_at));
}

#[test]
fn an_update_writes_what_changed_and_raises_the_ancestors() {
    let patch = ProductPatch {
        entity: entity("p"),
        variants: vec![VariantPatch {
            entity: entity("v1"),
            skus: vec![named("s1", "Small")],
        }],
        ..ProductPatch::default()
    };
    let plan = plan(ORG, "p", Some(tree()), &patch, true).unwrap();
    assert!(!plan.created);
    let ids: Vec<&str> = plan.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["p", "v1", "s1"], "the SKU and its ancestors' tu");
    let sku = plan.item(EntityKind::Sku, "s1").unwrap();
    assert_eq!(sku.name, "Small");
    assert!(sku.self_updated_at > Timestamp::from_millis(1_000));
    let product = plan.item(EntityKind::Product, "p").unwrap();
    assert_eq!(
        product.self_updated_at,
        Timestamp::from_millis(1_000),
        "the product itself is unchanged"
    );
    assert!(product.updated_at > Timestamp::from_millis(1_000));
    // three conditional puts, no identity claims: they exist
    assert_eq!(plan.write.len(), 3);
}

#[test]
fn a_patch_that_changes_nothing_writes_nothing() {
    let patch = ProductPatch {
        entity: named("p", "p"),
        variants: vec![VariantPatch {
            entity: entity("v1"),
            skus: vec![entity("s1")],
        }],
        ..ProductPatch::default()
    };
    let plan = plan(ORG, "p", Some(tree()), &patch, true).unwrap();
    assert!(plan.write.is_empty());
    assert!(plan.items.is_empty());
    assert!(!plan.created);
}

#[test]
fn missing_entities_are_404_without_create_and_a_moved_sku_is_409() {
    let patch = ProductPatch {
        entity: entity("p"),
        variants: vec![VariantPatch {
            entity: entity("v2"),
            skus: vec![],
        }],
        ..ProductPatch::default()
    };
    assert_eq!(
        plan(ORG, "p", Some(tree()), &patch, false).unwrap_err(),
        Failure::not_found("variant", "v2")
    );
    assert_eq!(
        plan(ORG, "q", None, &ProductPatch::default(), false).unwrap_err(),
        Failure::not_found("product", "q")
    );
    let moved = ProductPatch {
        entity: entity("p"),
        variants: vec![VariantPatch {
            entity: entity("v2"),
            skus: vec![entity("s1")],
        }],
        ..ProductPatch::default()
    };
    let err = plan(ORG, "p", Some(tree()), &moved, true).unwrap_err();
    assert_eq!(
        (err.status(), err.message()),
        (409, "sku 's1' belongs to variant 'v1'")
    );
}

#[test]
fn large_writes_split_at_100_actions_never_inside_an_entity() {
    // 1 product + 50 variants with their identities = 101 actions
    let patch = ProductPatch {
        entity: entity("big"),
        variants: (0..50)
            .map(|i| VariantPatch {
                entity: entity(&format!("v{i:02}")),
                skus: vec![],
            })
            .collect(),
        ..ProductPatch::default()
    };
    let plan = plan(ORG, "big", None, &patch, true).unwrap();
    assert_eq!(plan.write.len(), 101);
    // the 50th variant and its identity item do not fit: both move to the next one
    assert_eq!(plan.write.transaction_sizes(), vec![99, 2]);
}

#[test]
fn an_import_line_that_created_a_product_reports_201_when_applied_again() {
    let patch = ProductPatch {
        entity: named("p", "Chair"),
        source: Some("imp_1#7".into()),
        ..ProductPatch::default()
    };
    let first = plan(ORG, "p", None, &patch, true).unwrap();
    assert_eq!(first.product.src.as_deref(), Some("imp_1#7"));
    let again = plan(
        ORG,
        "p",
        Some(ProductTree {
            product: first.product.clone(),
            variants: vec![],
            skus: vec![],
        }),
        &patch,
        true,
    )
    .unwrap();
    assert!(again.created && again.write.is_empty());
    let other_line = ProductPatch {
        source: Some("imp_1#8".into()),
        ..patch
    };
    let updated = plan(
        ORG,
        "p",
        Some(ProductTree {
            product: first.product,
            variants: vec![],
            skus: vec![],
        }),
        &other_line,
        true,
    )
    .unwrap();
    assert!(!updated.created);
}

/// The error a product body gets from parsing and shape checks, or `""`.
fn body_error(body: serde_json::Value) -> String {
    let parsed: Result<ProductBody, Failure> =
        crate::http::body::typed(body.as_object().expect("an object").clone());
    match parsed {
        Err(e) => e.message().to_string(),
        Ok(b) => RawProductPatch::new("p", &b)
            .err()
            .map(|e| e.message().to_string())
            .unwrap_or_default(),
    }
}

#[test]
fn a_product_body_is_parsed_whole_and_errors_name_the_path() {
    use serde_json::json;
    let cases = [
        (
            json!({"variants": [{"name": "x"}]}),
            "variants[0]: field 'identifier' is required and must be a string",
        ),
        (
            json!({"variants": [{"identifier": "v1"}, {"identifier": "v1"}]}),
            "variants[1]: variant 'v1' is given twice",
        ),
        (
            json!({"variants": [{"identifier": "v", "skus": [{"identifier": "s"}]},
                                {"identifier": "w", "skus": [{"identifier": "s"}]}]}),
            "variants[1].skus[0]: sku 's' is given twice",
        ),
        (
            json!({"variants": [{"identifier": "v", "colour": 1}]}),
            "variants[0]: unknown field 'colour' (allowed: identifier, name, values, skus)",
        ),
        (
            json!({"variants": [7]}),
            "field 'variants[0]' must be an object",
        ),
        (
            json!({"variants": [{"identifier": 7}]}),
            "variants[0]: field 'identifier' is required and must be a string",
        ),
        (
            json!({"variants": [{"identifier": "v", "name": 7}]}),
            "variants[0]: field 'name' must be a string",
        ),
        (json!({"variants": {}}), "field 'variants' must be an array"),
        (
            json!({"variants": null}),
            "field 'variants' must be an array",
        ),
        (
            json!({"familyId": 0}),
            "field 'familyId' must be a positive integer or null",
        ),
        (
            json!({"familyId": "1"}),
            "field 'familyId' must be a positive integer or null",
        ),
        (json!({"name": 7}), "field 'name' must be a string"),
        (json!({"name": null}), "field 'name' must be a string"),
        (
            json!({"assets": [{"identifier": "a"}, {"identifier": "a"}]}),
            "assets[1]: asset 'a' is given twice",
        ),
        (
            json!({"assets": [{"identifier": "a", "mimeType": "png"}]}),
            "assets[0]: field 'mimeType': 'png' is not a media type like image/png",
        ),
        (
            json!({"categories": ["c", "c"]}),
            "field 'categories': category 'c' is given twice",
        ),
        (
            json!({"nmae": 1}),
            "unknown field 'nmae' (allowed: name, values, familyId, variants, assets, categories)",
        ),
        // a variant's or SKU's name and values, and a variant's skus, may be null
        (
            json!({"familyId": null, "variants": [{"identifier": "v", "name": null, "values": null, "skus": null}]}),
            "",
        ),
    ];
    for (body, error) in cases {
        assert_eq!(body_error(body.clone()), error, "{body}");
    }
    assert!(body_error(json!({"variants": [{"identifier": " v"}]})).starts_with("variants[0]: "));
}
