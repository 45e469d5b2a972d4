//! Unit tests of the parent module.

use super::*;
use crate::domain::values::StoredAttribute;
use serde_json::json;

fn defs() -> HashMap<TargetEntity, HashMap<String, AttributeDefinition>> {
    let mut defs: HashMap<TargetEntity, HashMap<String, AttributeDefinition>> = HashMap::new();
    for (entity, key, t) in [
        (TargetEntity::Product, "color", AttributeType::Text),
        (TargetEntity::Variant, "size", AttributeType::Select),
        (TargetEntity::Sku, "stock", AttributeType::Number),
    ] {
        defs.entry(entity)
            .or_default()
            .insert(key.into(), AttributeDefinition::simple(entity, key, t));
    }
    defs
}

fn kept(filter: serde_json::Value) -> Result<EventFilter, Failure> {
    parse(Some(&filter))?.flatten().unwrap().kept(&defs())
}

fn error(filter: serde_json::Value) -> String {
    kept(filter).unwrap_err().message().to_string()
}

fn facts(id: &str, vals: &[(&str, &str)]) -> Facts {
    let vals = vals
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                StoredAttribute::single(AttributeType::Text, v),
            )
        })
        .collect();
    Facts {
        id: id.into(),
        vals,
        family_id: Some(7),
        updated_at: None,
        self_updated_at: None,
    }
}

#[test]
fn the_body_field_is_checked_before_any_read() {
    assert!(parse(None).unwrap().is_none());
    assert!(parse(Some(&json!(null))).unwrap().unwrap().is_none());
    let text = |v: serde_json::Value| parse(Some(&v)).unwrap_err().message().to_string();
    assert_eq!(
        text(json!([])),
        r#"field 'filter': expected null or {"search": {...}, "searchMode"?: "all"|"any"}"#
    );
    assert_eq!(
        text(
            json!({"search": {"product.color": [{"operator": "EQUALS", "value": "red"}]}, "mode": "any"})
        ),
        "field 'filter': unknown field 'mode'"
    );
    assert_eq!(
        text(
            json!({"search": {"product.color": [{"operator": "EQUALS", "value": "red"}]}, "searchMode": "some"})
        ),
        "field 'filter': 'searchMode' \"some\" is not one of all, any"
    );
    assert_eq!(
        text(json!({"search": {}})),
        "field 'filter': 'search' must name at least one filter"
    );
    assert_eq!(
        text(json!({"searchMode": "any"})),
        "field 'filter': 'search' is required: an object of filters, as the lists' search parameter"
    );
    let long = "x".repeat(MAX_FILTER_BYTES);
    let text_of_long =
        text(json!({"search": {"_identifier": [{"operator": "EQUALS", "value": long}]}}));
    assert_eq!(
        text_of_long,
        "field 'filter': 'search' must be at most 8192 bytes of JSON; this one has 8242"
    );
    // the lists' own texts
    assert_eq!(
        text(json!({"search": {"product.color": "red"}})),
        "filter 'product.color': expected an array of {operator, value} objects"
    );
}

#[test]
fn filters_are_validated_as_the_lists_validate_search() {
    assert_eq!(
        error(json!({"search": {"product.colour": [{"operator": "EQUALS", "value": "red"}]}})),
        "filter 'product.colour': unknown attribute"
    );
    assert_eq!(
        error(json!({"search": {"sku.stock": [{"operator": "CONTAINS", "value": "1"}]}})),
        "filter 'sku.stock': operator 'CONTAINS' is not valid for numeric fields"
    );
    let f = kept(json!({"search": {"sku.stock": [{"operator": "GREATER_THAN", "value": 0}], "_family": [{"operator": "IN", "value": [7]}]}, "searchMode": "any"})).unwrap();
    assert!(f.any);
    assert_eq!(
        f.types,
        BTreeMap::from([("sku.stock".to_string(), AttributeType::Number)])
    );
}

#[test]
fn keys_may_name_the_events_level_and_its_ancestors_only() {
    let f = kept(json!({"search": {"sku.stock": [{"operator": "GREATER_THAN", "value": 0}], "product.color": [{"operator": "EQUALS", "value": "red"}]}})).unwrap();
    let topics = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(check_levels(&f, &topics(&["sku.*", "sku.deleted"])).is_ok());
    assert_eq!(
        check_levels(&f, &topics(&["sku.*", "variant.updated"])).unwrap_err().message(),
        "filter 'sku.stock': a sku key cannot test variant events (topic 'variant.updated'); a filter may name the event's own level and its ancestors, not its descendants"
    );
    assert_eq!(
        check_levels(&f, &topics(&["asset.created"])).unwrap_err().message(),
        "field 'filter': a filter tests product, variant and sku events; topic 'asset.created' covers asset events"
    );
    assert_eq!(
        check_levels(&f, &topics(&["*"])).unwrap_err().message(),
        "filter 'sku.stock': a sku key cannot test product events (topic '*'); a filter may name the event's own level and its ancestors, not its descendants"
    );
    let own =
        kept(json!({"search": {"_identifier": [{"operator": "CONTAINS", "value": "a"}]}})).unwrap();
    assert!(check_levels(&own, &topics(&["product.*", "variant.*", "sku.*"])).is_ok());
    let family =
        kept(json!({"search": {"_family": [{"operator": "EQUALS", "value": 7}]}})).unwrap();
    assert!(check_levels(&family, &topics(&["sku.created", "product.*"])).is_ok());
}

#[test]
fn a_change_tests_its_entity_and_ancestors() {
    let f = kept(json!({"search": {"sku.stock": [{"operator": "GREATER_THAN", "value": 0}], "product.color": [{"operator": "EQUALS", "value": "red"}]}})).unwrap();
    let c = Compiled::of(&f).unwrap();
    assert_eq!(c.ancestors("sku"), vec![EntityKind::Product]);
    assert_eq!(c.ancestors("product"), vec![]);
    let now = Timestamp::now();
    let red = facts("chair", &[("color", "red")]);
    let blue = facts("chair", &[("color", "blue")]);
    let stocked = facts("s1", &[("stock", "3")]);
    let empty = facts("s1", &[("stock", "0")]);
    let t = |own, product| Tested {
        own,
        product,
        variant: None,
    };
    assert!(c.matches("sku", &t(&stocked, Some(&red)), now));
    assert!(!c.matches("sku", &t(&empty, Some(&red)), now));
    assert!(!c.matches("sku", &t(&stocked, Some(&blue)), now));
    // a missing ancestor has no values
    assert!(!c.matches("sku", &t(&stocked, None), now));

    let any = kept(json!({"search": {"sku.stock": [{"operator": "GREATER_THAN", "value": 0}], "product.color": [{"operator": "EQUALS", "value": "red"}]}, "searchMode": "any"})).unwrap();
    let any = Compiled::of(&any).unwrap();
    assert!(any.matches("sku", &t(&empty, Some(&red)), now));
    assert!(!any.matches("sku", &t(&empty, Some(&blue)), now));

    let own = kept(json!({"search": {"_identifier": [{"operator": "EQUALS", "value": "chair"}], "_family": [{"operator": "EQUALS", "value": 7}]}})).unwrap();
    let own = Compiled::of(&own).unwrap();
    assert_eq!(own.ancestors("sku"), vec![EntityKind::Product]);
    assert!(own.matches("product", &t(&red, None), now));
    assert!(!own.matches("sku", &t(&stocked, Some(&red)), now));
}

#[test]
fn updated_at_counts_the_ancestors_own_changes_as_the_lists_do() {
    let f = kept(json!({"search": {"_updated_at": [{"operator": "AFTER", "value": "2026-01-01T00:00:00Z"}]}})).unwrap();
    let c = Compiled::of(&f).unwrap();
    assert_eq!(
        c.ancestors("sku"),
        vec![EntityKind::Product, EntityKind::Variant]
    );
    let at = |s: &str| Timestamp::parse(s);
    let mut sku = facts("s1", &[]);
    sku.updated_at = at("2025-06-01T00:00:00Z");
    let mut product = facts("chair", &[]);
    product.self_updated_at = at("2026-02-01T00:00:00Z");
    let old = facts("chair", &[]);
    let now = Timestamp::now();
    let t = |product| Tested {
        own: &sku,
        product,
        variant: None,
    };
    // the product's own change in 2026 makes the SKU's updatedAt 2026 on the lists too
    assert!(c.matches("sku", &t(Some(&product)), now));
    assert!(!c.matches("sku", &t(Some(&old)), now));
}
