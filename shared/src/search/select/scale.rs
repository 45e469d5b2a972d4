//! The bench's catalog shape and filtered lists, in memory, for the CPU measurements of the
//! list engine (`select_at_scale`, `selection_under_writes_at_scale`).

use super::*;
use crate::domain::values::{StoredAttribute, StoredValues};
use crate::search::packed::{Packed, PackedValues};
use crate::search::parse::{Condition, Operand};

fn entity(id: &str, pid: Option<&str>, vid: Option<&str>) -> Entry {
    Entry {
        id: id.into(),
        pid: pid.map(Into::into),
        vid: vid.map(Into::into),
        self_updated_at: Timestamp::from_millis(1),
        updated_at: Timestamp::from_millis(1),
        ver: 1,
        family_id: None,
        packed: Packed::new(id, &PackedValues::default()),
    }
}

fn text(v: String, t: AttributeType) -> StoredAttribute {
    StoredAttribute::single(t, &v)
}

/// A SKU's values: `price` and `ean`.
pub(crate) fn sku_values(price: usize, ean: &str) -> PackedValues {
    PackedValues::pack(&StoredValues::from([
        (
            "price".into(),
            text(format!("{price}.00 EUR"), AttributeType::Price),
        ),
        ("ean".into(), text(ean.to_string(), AttributeType::Text)),
    ]))
}

/// `n` products with brand, color and price, one variant each, three SKUs each with price
/// and EAN: the bench's catalog shape.
pub(crate) fn catalog(n: usize) -> Vec<(EntityKind, Vec<Entry>)> {
    let mut products = Vec::new();
    let mut variants = Vec::new();
    let mut skus = Vec::new();
    for i in 0..n {
        let pid = format!("bench-{i:07}");
        let mut p = entity(&pid, None, None);
        p.set_values(&PackedValues::pack(&StoredValues::from([
            (
                "brand".into(),
                text(format!("Brand {:02}", i % 40), AttributeType::Text),
            ),
            (
                "color".into(),
                text(
                    ["red", "blue", "green"][i % 3].into(),
                    AttributeType::Select,
                ),
            ),
            (
                "price".into(),
                text(format!("{}.00 EUR", 5 + i % 200), AttributeType::Price),
            ),
        ])));
        products.push(p);
        let vid = format!("{pid}-v");
        variants.push(entity(&vid, Some(&pid), None));
        for s in 0..3 {
            let mut k = entity(&format!("{pid}-s{s}"), Some(&pid), Some(&vid));
            k.set_values(&sku_values(10 + (i + s) % 90, &format!("400{i:07}{s}")));
            skus.push(k);
        }
    }
    vec![
        (EntityKind::Product, products),
        (EntityKind::Variant, variants),
        (EntityKind::Sku, skus),
    ]
}

fn filter(
    entity: TargetEntity,
    key: &str,
    attr_type: AttributeType,
    op: Operator,
    operand: Operand,
) -> Filter {
    Filter {
        key: format!("{entity:?}.{key}"),
        field: Field::Attribute {
            entity,
            key: key.into(),
            attr_type,
        },
        conditions: vec![Condition { op, operand }],
    }
}

/// The bench's filtered lists: `/products` by brand and SKU price, `/skus` by product color.
pub(crate) fn lists() -> Vec<(&'static str, EntityKind, Criteria)> {
    let both = Criteria {
        filters: vec![
            filter(
                TargetEntity::Product,
                "brand",
                AttributeType::Text,
                Operator::Contains,
                Operand::Text("brand 1".into()),
            ),
            filter(
                TargetEntity::Sku,
                "price",
                AttributeType::Price,
                Operator::LessThan,
                Operand::Number {
                    value: 20.0,
                    currency: Some("EUR".into()),
                },
            ),
        ],
        ..Criteria::default()
    };
    let colors = Criteria {
        filters: vec![filter(
            TargetEntity::Product,
            "color",
            AttributeType::Select,
            Operator::In,
            Operand::Texts(vec!["red".into(), "blue".into()]),
        )],
        ..Criteria::default()
    };
    vec![
        ("products, brand + sku price", EntityKind::Product, both),
        ("skus, product color", EntityKind::Sku, colors),
    ]
}
