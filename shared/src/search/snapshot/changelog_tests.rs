//! Unit tests of `changelog.rs`: a kept selection brought up to date after random writes at
//! every level equals a fresh evaluation, and a write costs no fresh evaluation.

use super::super::{Levels, Outcome, Row, Rows, SnapshotPolicy, Snapshots};
use crate::domain::attributes::{AttributeType, TargetEntity};
use crate::domain::time::Timestamp;
use crate::domain::values::StoredValues;
use crate::search::entities::Entry;
use crate::search::operators::Operator;
use crate::search::packed::{Packed, PackedValues};
use crate::search::parse::{Condition, Field, Filter, Operand};
use crate::search::select::{reselect, select, Completeness, Criteria, Requirement};
use crate::search::selections::SelectedIds;
use crate::store::items::EntityKind;
use proptest::prelude::*;
use std::cell::Cell;

const P: EntityKind = EntityKind::Product;
const V: EntityKind = EntityKind::Variant;
const S: EntityKind = EntityKind::Sku;
const PRODUCTS: u8 = 8;
const VARIANTS: u8 = 16;
const SKUS: u8 = 32;

fn values(a: &str) -> PackedValues {
    let v: StoredValues = serde_json::from_value(serde_json::json!({
        "a": {"t": "text", "e": [{"v": a}]}
    }))
    .expect("stored values");
    PackedValues::pack(&v)
}

/// Entity `n` of `kind` at time `t`: variant `n` under product `n % 8`, SKU `n` under
/// variant `parent` (and its product), with value `a` and family `family`.
fn entity(kind: EntityKind, n: u8, parent: u8, a: &str, family: u8, t: i64) -> Entry {
    let (id, pid, vid) = match kind {
        EntityKind::Product => (format!("p{n}"), None, None),
        EntityKind::Variant => (format!("v{n}"), Some(format!("p{}", n % PRODUCTS)), None),
        EntityKind::Sku => (
            format!("s{n}"),
            Some(format!("p{}", parent % PRODUCTS)),
            Some(format!("v{parent}")),
        ),
    };
    Entry {
        id: id.into(),
        pid: pid.map(Into::into),
        vid: vid.map(Into::into),
        self_updated_at: Timestamp::from_millis(t),
        updated_at: Timestamp::from_millis(t),
        ver: t as u64,
        family_id: (family > 0).then_some(family as i64),
        packed: Packed::new(if family == 0 { "" } else { "named" }, &values(a)),
    }
}

fn contains_x(entity: TargetEntity) -> Filter {
    Filter {
        key: format!("{entity:?}.a"),
        field: Field::Attribute {
            entity,
            key: "a".into(),
            attr_type: AttributeType::Text,
        },
        conditions: vec![Condition {
            op: Operator::Contains,
            operand: Operand::Text("x".into()),
        }],
    }
}

fn by(target: EntityKind, filters: Vec<Filter>) -> (EntityKind, Criteria) {
    let criteria = Criteria {
        filters,
        ..Criteria::default()
    };
    (target, criteria)
}

/// Lists of every shape: own, ancestor and descendant filters, `any`, family,
/// `updated_after` and completeness either way.
fn lists() -> Vec<(EntityKind, Criteria)> {
    let (tp, tv, ts) = (
        TargetEntity::Product,
        TargetEntity::Variant,
        TargetEntity::Sku,
    );
    let family = Filter {
        key: "_family".into(),
        field: Field::Family,
        conditions: vec![Condition {
            op: Operator::In,
            operand: Operand::Texts(vec!["1".into()]),
        }],
    };
    let completeness = |complete| Completeness {
        required: vec![
            Requirement {
                level: P,
                key: "name".into(),
                builtin_name: true,
            },
            Requirement {
                level: S,
                key: "a".into(),
                builtin_name: false,
            },
        ],
        locales: vec![],
        channel: None,
        complete,
    };
    let mut out = vec![
        by(P, vec![contains_x(tp)]),
        by(P, vec![contains_x(ts)]),
        by(P, vec![contains_x(tv), contains_x(tp)]),
        by(S, vec![contains_x(tp)]),
        by(S, vec![contains_x(tv), family.clone()]),
        by(V, vec![contains_x(ts)]),
        by(S, vec![family]),
    ];
    let mut any = by(V, vec![contains_x(tp), contains_x(ts)]);
    any.1.any = true;
    out.push(any);
    for complete in [true, false] {
        let mut c = by(P, vec![]);
        c.1.completeness = Some(completeness(complete));
        out.push(c);
    }
    for target in [V, S] {
        let mut c = by(target, vec![]);
        c.1.updated_after = Some(Timestamp::from_millis(1_000));
        out.push(c);
    }
    out
}

/// A catalog of 8 products, 16 variants and 32 SKUs, loaded at time 1.
fn loaded(a: &[u8]) -> Snapshots {
    let snaps = Snapshots::new(SnapshotPolicy::default());
    for kind in [P, V, S] {
        load(&snaps, kind, a);
    }
    snaps
}

/// A full read of `kind`'s entities with values from `a`.
fn load(snaps: &Snapshots, kind: EntityKind, a: &[u8]) {
    let value = |i: usize| ["x", "xy", "y", ""][a[i % a.len()] as usize % 4];
    let count = [PRODUCTS, VARIANTS, SKUS][[P, V, S].iter().position(|k| *k == kind).unwrap()];
    let entries = (0..count).map(|n| entity(kind, n, n % VARIANTS, value(n as usize), n % 3, 1));
    read_in_full(snaps, kind, entries.collect());
}

/// `entries` as the full read of `kind`, at time 1.
fn read_in_full(snaps: &Snapshots, kind: EntityKind, entries: Vec<Entry>) {
    let mut rows = Rows::default();
    rows.apply(
        entries
            .into_iter()
            .map(|entry| Row { entry, del: false })
            .collect(),
    );
    let outcome = Outcome::Loaded {
        rows,
        delta_started: Timestamp::from_millis(1),
        delta: vec![],
        full: Timestamp::from_millis(0),
    };
    snaps.keep("o", kind, outcome);
}

/// The list through the kept selections, as the engine takes it, counting fresh
/// evaluations.
fn selection(
    snaps: &Snapshots,
    target: EntityKind,
    c: &Criteria,
    fresh: &Cell<usize>,
) -> SelectedIds {
    let selected = |levels: &Levels<'_>| -> SelectedIds {
        fresh.set(fresh.get() + 1);
        std::sync::Arc::new(
            select(levels, target, c)
                .iter()
                .map(|e| e.id.clone())
                .collect(),
        )
    };
    snaps.with_selection(
        "o",
        target,
        c.selection_key(),
        selected,
        |levels, old, affected| reselect(levels, target, c, old, affected),
        |_, ids| ids.clone(),
    )
}

/// The list's identifiers through the kept selections.
fn kept(snaps: &Snapshots, target: EntityKind, c: &Criteria, fresh: &Cell<usize>) -> Vec<String> {
    let ids = selection(snaps, target, c, fresh);
    ids.iter().map(|id| id.to_string()).collect()
}

fn evaluated(snaps: &Snapshots, target: EntityKind, c: &Criteria) -> Vec<String> {
    snaps.read("o", |levels| {
        select(levels, target, c)
            .iter()
            .map(|e| e.id.to_string())
            .collect()
    })
}

/// One write: which level, which entity, its new parent (SKUs move), value, family, and
/// whether it is a delete.
fn write() -> impl Strategy<Value = (u8, u8, u8, u8, u8, bool)> {
    (
        0u8..3,
        0u8..SKUS,
        0u8..VARIANTS,
        0u8..4,
        0u8..3,
        prop::bool::weighted(0.15),
    )
}

fn apply(
    snaps: &Snapshots,
    t: i64,
    (level, n, parent, a, family, del): (u8, u8, u8, u8, u8, bool),
) {
    let (kind, n) = match level {
        0 => (P, n % PRODUCTS),
        1 => (V, n % VARIANTS),
        _ => (S, n),
    };
    let a = ["x", "xy", "y", ""][a as usize];
    let row = Row {
        entry: entity(kind, n, parent, a, family, t),
        del,
    };
    let started = Timestamp::from_millis(t);
    snaps.keep(
        "o",
        kind,
        Outcome::Delta {
            started,
            rows: vec![row],
        },
    );
}

proptest! {
    /// After every write, each kept list (brought up to date from the changes alone) is the
    /// list a fresh evaluation of the same snapshots selects.
    #[test]
    fn a_kept_selection_under_random_writes_equals_a_fresh_evaluation(
        initial in prop::collection::vec(0u8..4, 1..16),
        writes in prop::collection::vec(write(), 1..60),
    ) {
        let snaps = loaded(&initial);
        let lists = lists();
        let fresh = Cell::new(0);
        for (target, c) in &lists {
            prop_assert_eq!(kept(&snaps, *target, c, &fresh), evaluated(&snaps, *target, c));
        }
        for (i, w) in writes.into_iter().enumerate() {
            apply(&snaps, 2 + i as i64 * 100, w);
            for (target, c) in &lists {
                prop_assert_eq!(
                    kept(&snaps, *target, c, &fresh),
                    evaluated(&snaps, *target, c),
                    "{:?} {:?} after write {}", target, c, i
                );
            }
        }
    }
}

#[test]
fn a_write_decides_only_what_it_can_move_not_the_whole_list() {
    let snaps = loaded(&[0, 2]);
    let fresh = Cell::new(0);
    let lists = lists();
    for (target, c) in &lists {
        kept(&snaps, *target, c, &fresh);
    }
    assert_eq!(fresh.get(), lists.len(), "each list evaluated once");
    // one write at each level: every list kept, none evaluated again
    for (i, w) in [
        (0, 3, 0, 0, 1, false),
        (1, 5, 0, 2, 0, false),
        (2, 7, 9, 3, 2, false),
    ]
    .into_iter()
    .enumerate()
    {
        apply(&snaps, 2_000 + i as i64, w);
        for (target, c) in &lists {
            assert_eq!(
                kept(&snaps, *target, c, &fresh),
                evaluated(&snaps, *target, c)
            );
        }
    }
    assert_eq!(
        fresh.get(),
        lists.len(),
        "no list evaluated again after a write"
    );
    // a full read of SKUs again: their log starts over, so each list is evaluated once more
    load(&snaps, S, &[1]);
    for (target, c) in &lists {
        assert_eq!(
            kept(&snaps, *target, c, &fresh),
            evaluated(&snaps, *target, c)
        );
    }
    assert_eq!(fresh.get(), 2 * lists.len());
}

/// CPU cost of a filtered list at the bench's 250,000 entities, kept, and brought up to date
/// after a second of writes at 10 writes/s (each a SKU's price, which also moves its
/// variant's and product's tree time), against evaluating it again, without DynamoDB:
/// `cargo test -p catalog --release --lib selection_under_writes_at_scale -- --ignored
/// --nocapture`.
#[test]
#[ignore]
fn selection_under_writes_at_scale() {
    use crate::search::select::scale;
    use std::time::{Duration, Instant};
    let snaps = Snapshots::new(SnapshotPolicy::default());
    let products = 50_000;
    for (kind, entries) in scale::catalog(products) {
        read_in_full(&snaps, kind, entries);
    }
    let p50 = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let mut t = 10;
    for (name, target, c) in scale::lists() {
        let fresh = Cell::new(0);
        let mut evaluations = Vec::new();
        for _ in 0..3 {
            let began = Instant::now();
            snaps.read("o", |l| select(l, target, &c).len());
            evaluations.push(began.elapsed());
        }
        let hits = selection(&snaps, target, &c, &fresh).len();
        let (mut quiet, mut written) = (Vec::new(), Vec::new());
        for round in 0..20 {
            let began = Instant::now();
            selection(&snaps, target, &c, &fresh);
            quiet.push(began.elapsed());
            for w in 0..10 {
                t += 1;
                let i = (round * 7_919 + w * 104_729) % products;
                let pid = format!("bench-{i:07}");
                let touched = |kind: EntityKind, id: &str| {
                    let mut e = snaps
                        .read("o", |l| l.of(kind).get(id).cloned())
                        .expect("in the catalog");
                    e.updated_at = Timestamp::from_millis(t);
                    e.ver += 1;
                    e
                };
                let mut sku = touched(S, &format!("{pid}-s0"));
                sku.self_updated_at = sku.updated_at;
                sku.set_values(&scale::sku_values(10 + t as usize % 20, "4000000000"));
                for (kind, entry) in [
                    (S, sku),
                    (V, touched(V, &format!("{pid}-v"))),
                    (P, touched(P, &pid)),
                ] {
                    let rows = vec![Row { entry, del: false }];
                    let started = Timestamp::from_millis(t);
                    snaps.keep("o", kind, Outcome::Delta { started, rows });
                }
            }
            let began = Instant::now();
            selection(&snaps, target, &c, &fresh);
            written.push(began.elapsed());
        }
        assert_eq!(
            fresh.get(),
            1,
            "{name}: kept and brought up to date, never evaluated again"
        );
        assert_eq!(
            kept(&snaps, target, &c, &fresh),
            evaluated(&snaps, target, &c)
        );
        println!(
            "{name}: {hits} results; evaluated again: {:?}; kept, no write since: p50 {:?}; \
             kept after 10 writes: p50 {:?}",
            evaluations,
            p50(quiet),
            p50(written)
        );
    }
}

#[test]
fn a_log_keeps_the_changes_of_at_most_a_quarter_of_its_entities() {
    use super::{ChangeLog, Touched};
    let touched = |n: u64| {
        vec![Touched::from(&entity(
            S,
            (n % 32) as u8,
            0,
            "x",
            0,
            n as i64,
        ))]
    };
    let mut log = ChangeLog::default();
    log.reset(1);
    // a large snapshot: all 3,000 changes kept
    for g in 2..3_002 {
        log.push(g, touched(g), 400_000);
    }
    assert_eq!(log.ids, 3_000);
    assert!(log.after(1).is_some());
    // a snapshot of 100 entities keeps 1,024 at least, the newest
    for g in 3_002..5_002 {
        log.push(g, touched(g), 100);
    }
    assert_eq!(log.ids, 1_024);
    assert!(log.after(3_976).is_none(), "forgotten");
    assert_eq!(log.after(3_977).map(Iterator::count), Some(1_024));
    assert_eq!(log.after(3_978).map(Iterator::count), Some(1_023));
    assert_eq!(log.bytes(), 1_024 * std::mem::size_of::<Touched>());
}
