//! Unit tests of the parent module.

use super::*;

fn put(id: &str, bytes: usize) -> TransactWriteItem {
    let s = |v: &str| AttributeValue::S(v.to_string());
    let item = Item::from([
        ("PK".to_string(), s(&format!("O#o#P#{id}"))),
        ("SK".to_string(), s("L1")),
        ("kind".to_string(), s("product")),
        ("id".to_string(), s(id)),
        ("v".to_string(), s(&"x".repeat(bytes))),
    ]);
    put_action(item, Expect::Absent).unwrap()
}

#[test]
fn transactions_hold_at_most_4_mb_of_items() {
    let mut write = TreeWrite::new();
    for i in 0..10 {
        write.start_group();
        write.push(put(&format!("p{i}"), 390 * 1024));
    }
    // 9 items of 390 KB fit the 3.5 MB kept for whole items, the 10th does not
    assert_eq!(write.transaction_sizes(), vec![9, 1]);
    assert!(write.check_limits(&Origin::none()).is_ok());
}

#[test]
fn an_item_over_400_kb_or_a_key_over_its_limit_is_refused_before_any_request() {
    let mut write = TreeWrite::new();
    write.push(put("small", 10));
    write.push(put("big", 400 * 1024));
    let err = write.check_limits(&Origin::none()).unwrap_err();
    assert!(
        matches!(&err, StoreError::TooLarge(m) if m.starts_with("product 'big' would take 409")),
        "{err:?}"
    );
    let mut write = TreeWrite::new();
    write.push(put(&"k".repeat(2100), 10));
    assert!(matches!(
        write.check_limits(&Origin::none()),
        Err(StoreError::Refused(m)) if m.ends_with("its partition key would exceed DynamoDB's 2,048 bytes")
    ));
}

#[test]
fn the_writers_stamp_is_counted_in_the_item_before_any_request() {
    let s = |v: &str| AttributeValue::S(v.to_string());
    let mut item = Item::from([
        ("PK".to_string(), s("O#o#P#p")),
        ("SK".to_string(), s("L1")),
        ("kind".to_string(), s("product")),
        ("id".to_string(), s("p")),
        ("su".to_string(), s("2026-11-27T00:00:00.000Z")),
    ]);
    let used = limits::item_bytes(&item) + 1;
    item.insert("v".into(), s(&"x".repeat(limits::ITEM_BYTES - used)));
    let mut write = TreeWrite::new();
    write.push(put_action(item, Expect::Absent).unwrap());
    // exactly at the limit without a writer; its 16-byte stamp (`by`, `k:<12>`) passes it
    assert!(write.check_limits(&Origin::none()).is_ok());
    let keyed = Origin::new(
        crate::domain::actor::Actor::ApiKey("abc123def456".into()),
        None,
    );
    assert!(matches!(
        write.check_limits(&keyed),
        Err(StoreError::TooLarge(m)) if m.starts_with("product 'p' would take 409616 bytes")
    ));
}

fn product_with(bytes: usize) -> EntityItem {
    let note = crate::domain::values::StoredAttribute::single(
        crate::domain::attributes::AttributeType::Text,
        &"x".repeat(bytes),
    );
    let values = StoredValues::from([("note".to_string(), note)]);
    let at = Timestamp::parse("2026-11-27T00:00:00.000Z").unwrap();
    EntityItem {
        pk: "O#o#P#p".into(),
        sk: "L1".into(),
        gsi1pk: String::new(),
        gsi2sk: String::new(),
        kind: EntityKind::Product,
        id: "p".into(),
        name: "p".into(),
        pid: None,
        vid: None,
        values,
        self_updated_at: at,
        updated_at: at,
        ver: 1,
        family_id: Some(7),
        attribute_keys: Vec::new(),
        assets: Vec::new(),
        categories: None,
        src: None,
        mr: None,
    }
}

#[test]
fn a_deleted_product_keeps_its_last_state_while_the_tombstone_fits() {
    let at = Timestamp::parse("2026-11-28T00:00:00.000Z").unwrap();
    let small = actions::tombstone("o", &product_with(100), at);
    let Some(AttributeValue::M(last)) = small.get(LAST_STATE) else {
        panic!("no last state: {small:?}");
    };
    assert_eq!(last.get("familyId"), Some(&AttributeValue::N("7".into())));
    assert_eq!(
        last.get("su"),
        Some(&AttributeValue::S("2026-11-27T00:00:00.000Z".into()))
    );
    assert!(last.contains_key("vals") && last.contains_key("id"));
    // a product near the item size keeps a tombstone that still fits, without the state
    let big = actions::tombstone("o", &product_with(400 * 1024 - 600), at);
    assert!(!big.contains_key(LAST_STATE));
    assert!(limits::item_bytes(&big) < limits::ITEM_BYTES);
    // a SKU is nobody's ancestor: it keeps none
    let mut sku = product_with(100);
    sku.kind = EntityKind::Sku;
    assert!(!actions::tombstone("o", &sku, at).contains_key(LAST_STATE));
}
