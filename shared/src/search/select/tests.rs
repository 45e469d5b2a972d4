//! Unit tests of the parent module.

use super::*;

use crate::domain::values::{StoredAttribute, StoredEntry, StoredValues};
use crate::search::packed::{Packed, PackedValues};
use crate::search::snapshot::with_levels;

/// An entity's values with one attribute, `a`.
fn attr(entries: &[(Option<&str>, Option<&str>, &str)]) -> PackedValues {
    let a = StoredAttribute {
        attr_type: AttributeType::Text,
        is_multi: false,
        metaobject_definition: None,
        entries: entries
            .iter()
            .map(|(l, c, v)| StoredEntry {
                locale: l.map(str::to_string),
                channel: c.map(str::to_string),
                value: v.to_string(),
            })
            .collect(),
    };
    PackedValues::pack(&StoredValues::from([("a".to_string(), a)]))
}

fn one(p: &PackedValues) -> Option<Attr<'_>> {
    p.get("a")
}

fn locales(l: &[&str]) -> Vec<String> {
    l.iter().map(|s| s.to_string()).collect()
}

#[test]
fn unscoped_values_need_one_non_empty_entry() {
    assert!(has_value(one(&attr(&[(None, None, "x")])), &[], None));
    assert!(!has_value(one(&attr(&[(None, None, "")])), &[], None));
    assert!(!has_value(one(&attr(&[(None, None, "[]")])), &[], None));
    assert!(!has_value(None, &[], Some("web")));
}

#[test]
fn localized_values_need_every_locale() {
    let a = attr(&[(Some("en"), None, "x"), (Some("de"), None, "y")]);
    assert!(has_value(one(&a), &locales(&["en", "de"]), None));
    assert!(!has_value(one(&a), &locales(&["en", "fr"]), None));
    // no locales to check: any value will do
    assert!(has_value(one(&a), &[], None));
}

#[test]
fn channel_scoped_values_need_the_channel_in_every_locale() {
    let a = attr(&[
        (Some("en"), Some("web"), "x"),
        (Some("de"), Some("web"), "y"),
        (Some("en"), Some("print"), "z"),
    ]);
    let both = locales(&["en", "de"]);
    assert!(has_value(one(&a), &both, Some("web")));
    assert!(!has_value(one(&a), &both, Some("print")));
    assert!(has_value(one(&a), &locales(&["en"]), Some("print")));
    assert!(!has_value(one(&a), &both, None));
    let scoped = attr(&[(None, Some("web"), "x")]);
    assert!(has_value(one(&scoped), &both, Some("web")));
    assert!(!has_value(one(&scoped), &both, Some("print")));
}

#[test]
fn levels_follow_the_filter_keys() {
    let p = EntityKind::Product;
    let (v, s) = (EntityKind::Variant, EntityKind::Sku);
    assert_eq!(levels_needed(p, ["product.a"], false), [p]);
    assert_eq!(levels_needed(p, ["sku.a", "variant.b"], false), [p, s, v]);
    assert_eq!(levels_needed(s, ["_family"], false), [s, p]);
    assert_eq!(levels_needed(s, ["_identifier"], true), [s, p, v]);
    assert_eq!(levels_needed(v, ["_updated_at"], false), [v, p]);
}

fn entity(id: &str, pid: Option<&str>, vid: Option<&str>, su: i64, tu: i64) -> Entry {
    Entry {
        id: id.into(),
        pid: pid.map(Into::into),
        vid: vid.map(Into::into),
        self_updated_at: Timestamp::from_millis(su),
        updated_at: Timestamp::from_millis(tu),
        ver: 1,
        family_id: None,
        packed: Packed::new(id, &PackedValues::default()),
    }
}

#[test]
fn updated_after_through_the_indexes_is_the_hierarchy_aware_updated_at() {
    let (p, v, s) = (EntityKind::Product, EntityKind::Variant, EntityKind::Sku);
    let products = vec![
        // p1 itself old, its tree changed through s2; p2 itself changed; p3 quiet
        entity("p1", None, None, 10, 70),
        entity("p2", None, None, 60, 60),
        entity("p3", None, None, 5, 5),
    ];
    let variants = vec![
        entity("v1", Some("p1"), None, 50, 70),
        entity("v2", Some("p2"), None, 20, 20),
        entity("v3", Some("p3"), None, 5, 5),
        entity("v4", Some("p1"), None, 15, 15),
    ];
    let skus = vec![
        entity("s1", Some("p1"), Some("v1"), 30, 30),
        entity("s2", Some("p1"), Some("v1"), 70, 70),
        entity("s3", Some("p2"), Some("v2"), 20, 20),
        entity("s4", Some("p3"), Some("v3"), 5, 5),
        entity("s5", Some("p1"), Some("v4"), 40, 40),
        // an orphan whose parents are not in the snapshot
        entity("s6", Some("px"), Some("vx"), 25, 25),
    ];
    let all = vec![(p, products), (v, variants), (s, skus)];
    with_levels(all, |levels| {
        for target in [p, v, s] {
            for t in 0..=75 {
                let t = Timestamp::from_millis(t);
                let criteria = Criteria {
                    updated_after: Some(t),
                    ..Criteria::default()
                };
                let got: Vec<&str> = select(levels, target, &criteria)
                    .iter()
                    .map(|e| &*e.id)
                    .collect();
                let want: Vec<&str> = levels
                    .of(target)
                    .values()
                    .filter(|e| updated_at(levels, target, e) > t)
                    .map(|e| &*e.id)
                    .collect();
                assert_eq!(got, want, "{target:?} after {t:?}");
            }
        }
        let after = |target, t| {
            let criteria = Criteria {
                updated_after: Some(Timestamp::from_millis(t)),
                ..Criteria::default()
            };
            select(levels, target, &criteria)
                .iter()
                .map(|e| e.id.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(after(s, 45), ["s1", "s2", "s3"]);
        assert_eq!(after(v, 45), ["v1", "v2"]);
        assert_eq!(after(p, 45), ["p1", "p2"]);
        assert_eq!(after(s, 24), ["s1", "s2", "s3", "s5", "s6"]);
    });
}

/// CPU cost of the bench's filtered lists over a catalog of the bench's shape, without
/// DynamoDB: `cargo test -p catalog --release --lib select_at_scale -- --ignored --nocapture`.
#[test]
#[ignore]
fn select_at_scale() {
    with_levels(super::scale::catalog(50_000), |levels| {
        for (name, target, c) in super::scale::lists() {
            for _ in 0..3 {
                let t = std::time::Instant::now();
                let hits = select(levels, target, &c).len();
                println!("{name}: {hits} in {:?}", t.elapsed());
            }
        }
    });
}
