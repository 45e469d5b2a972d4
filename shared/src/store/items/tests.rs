//! Unit tests of the parent module.

use super::*;
use crate::domain::attributes::AttributeType;
use crate::domain::values::{StoredAttribute, StoredEntry};

/// What an export counts of an entity is what DynamoDB counts of its item.
#[test]
fn an_entitys_stored_bytes_are_its_items() {
    let at = Timestamp::parse("2026-11-21T02:39:29.597Z").unwrap();
    let mut e = EntityItem {
        pk: "O#org1#P#p1".into(),
        sk: "L1".into(),
        gsi1pk: "O#org1#T#product#3".into(),
        gsi2sk: format!("{at}#p1"),
        kind: EntityKind::Product,
        id: "p1".into(),
        name: "Chair é".into(),
        pid: None,
        vid: None,
        values: StoredValues::new(),
        self_updated_at: at,
        updated_at: at,
        ver: 7,
        family_id: None,
        attribute_keys: Vec::new(),
        assets: Vec::new(),
        categories: None,
        src: None,
        mr: None,
    };
    let stored =
        |e: &EntityItem| crate::store::limits::item_bytes(&serde_dynamo::to_item(e).unwrap());
    assert_eq!(e.stored_bytes(), stored(&e));
    e.values.insert(
        "color".into(),
        StoredAttribute::single(AttributeType::Select, "red"),
    );
    e.values.insert(
        "description".into(),
        StoredAttribute {
            attr_type: AttributeType::Html,
            is_multi: true,
            metaobject_definition: Some("swatch".into()),
            entries: vec![
                StoredEntry {
                    locale: Some("en_US".into()),
                    channel: Some("web".into()),
                    value: "<p>x</p>".repeat(100),
                },
                StoredEntry {
                    locale: None,
                    channel: Some("pos".into()),
                    value: String::new(),
                },
            ],
        },
    );
    (e.pid, e.vid, e.family_id) = (Some("p0".into()), Some("v0".into()), Some(-12));
    e.attribute_keys = vec!["color".into(), "description".into()];
    e.assets = vec!["a1".into()];
    e.categories = Some(Vec::new());
    e.src = Some("imp_1#4".into());
    e.mr = Some(vec!["swatch/red".into()]);
    e.ver = 1_000_000;
    assert_eq!(e.stored_bytes(), stored(&e));
}
