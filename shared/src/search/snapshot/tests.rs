//! Unit tests of the parent module.

use super::*;
use crate::search::packed::PackedValues;

const T: Timestamp = Timestamp::from_millis(50);

pub(super) fn row(id: &str, tu: i64, ver: u64, del: bool) -> Row {
    Row {
        entry: Entry {
            id: id.into(),
            pid: None,
            vid: None,
            self_updated_at: Timestamp::from_millis(tu),
            updated_at: Timestamp::from_millis(tu),
            ver,
            family_id: None,
            packed: Packed::new(&format!("{id}@{ver}"), &PackedValues::default()),
        },
        del,
    }
}

fn ids(s: &TypeSnapshot) -> Vec<String> {
    s.rows
        .entries
        .values()
        .map(|e| format!("{}@{}", e.id, e.ver))
        .collect()
}

#[test]
fn deltas_apply_in_order_and_are_idempotent() {
    let overlap = Duration::from_secs(5);
    let mut s = TypeSnapshot::new();
    s.apply(
        vec![row("b", 10, 1, false), row("a", 20, 1, false)],
        T,
        overlap,
    );
    assert_eq!(ids(&s), ["a@1", "b@1"]);
    // an overlapping delta re-reads a's old image after its update: no step back
    s.apply(vec![row("a", 30, 2, false)], T, overlap);
    s.apply(vec![row("a", 20, 1, false)], T, overlap);
    assert_eq!(ids(&s), ["a@2", "b@1"]);
    // same millisecond, later version wins
    s.apply(vec![row("a", 30, 3, false)], T, overlap);
    assert_eq!(ids(&s), ["a@3", "b@1"]);
    assert_eq!(s.synced, Some(T));
}

#[test]
fn tombstones_remove_and_block_older_images_but_not_recreation() {
    let overlap = Duration::from_secs(5);
    let mut s = TypeSnapshot::new();
    s.apply(
        vec![row("a", 10, 1, false), row("b", 10, 1, false)],
        T,
        overlap,
    );
    s.apply(vec![row("a", 11, 0, true)], T, overlap);
    assert_eq!(ids(&s), ["b@1"]);
    // the old image again (overlap): stays deleted
    s.apply(vec![row("a", 10, 1, false)], T, overlap);
    assert_eq!(ids(&s), ["b@1"]);
    // recreated later: back
    s.apply(vec![row("a", 12, 1, false)], T, overlap);
    assert_eq!(ids(&s), ["a@1", "b@1"]);
    // a tombstone older than the recreation changes nothing
    s.apply(vec![row("a", 11, 0, true)], T, overlap);
    assert_eq!(ids(&s), ["a@1", "b@1"]);
}

#[test]
fn old_tombstones_are_forgotten() {
    let overlap = Duration::from_millis(10);
    let mut s = TypeSnapshot::new();
    s.apply(
        vec![row("a", 1, 0, true)],
        Timestamp::from_millis(2),
        overlap,
    );
    assert!(s.rows.deleted.contains_key("a"));
    s.apply(
        vec![row("b", 100, 1, false)],
        Timestamp::from_millis(100),
        overlap,
    );
    assert!(!s.rows.deleted.contains_key("a"));
}

#[test]
fn weights_follow_inserts_replacements_and_deletions() {
    let mut rows = Rows::default();
    rows.apply(vec![row("a", 10, 1, false), row("b", 10, 1, false)]);
    let two = rows.bytes;
    assert_eq!(
        two,
        row("a", 10, 1, false).entry.weight() + row("b", 10, 1, false).entry.weight()
    );
    rows.apply(vec![row("a", 11, 2, false)]);
    assert_eq!(rows.bytes, two);
    rows.apply(vec![row("a", 12, 0, true)]);
    assert_eq!(rows.bytes, row("b", 10, 1, false).entry.weight());
    let mut other = Rows::default();
    other.apply(vec![row("c", 10, 1, false)]);
    rows.absorb(other);
    assert_eq!(
        rows.entries.values().map(|e| &*e.id).collect::<Vec<_>>(),
        ["b", "c"]
    );
    assert_eq!(rows.bytes, 2 * row("b", 10, 1, false).entry.weight());
}

#[test]
fn eviction_keeps_the_calling_org_and_counts_bytes() {
    let one = row("0", 1, 1, false).entry.weight();
    let snaps = Snapshots::new(SnapshotPolicy {
        max_bytes: 3 * one,
        ..SnapshotPolicy::default()
    });
    let loaded = |n: usize| {
        let mut load = Load::new(1);
        load.shards[0]
            .rows
            .apply((0..n).map(|i| row(&i.to_string(), 1, 1, false)).collect());
        load.shards[0].cursor = Cursor::Done;
        Outcome::Loaded {
            rows: load.into_rows(),
            delta_started: T,
            delta: Vec::new(),
            full: Timestamp::from_millis(0),
        }
    };
    snaps.keep("o1", EntityKind::Product, loaded(2));
    snaps.keep("o2", EntityKind::Product, loaded(2));
    let map = snaps.lock();
    assert!(map.contains_key(&("o2".to_string(), EntityKind::Product)));
    assert!(!map.contains_key(&("o1".to_string(), EntityKind::Product)));
}

/// A reload from a checkpoint keeps the serving rows while it decodes the new copy when both
/// fit in the budget, and releases them first when they would not: one copy is enough.
#[test]
fn a_reload_releases_the_serving_rows_when_two_copies_would_not_fit() {
    let one = row("0", 1, 1, false).entry.weight();
    let snaps = |copies: usize| {
        let snaps = Snapshots::new(SnapshotPolicy {
            max_bytes: copies * one,
            ..SnapshotPolicy::default()
        });
        let mut load = Load::new(1);
        load.shards[0]
            .rows
            .apply((0..2).map(|i| row(&i.to_string(), 1, 1, false)).collect());
        load.shards[0].cursor = Cursor::Done;
        let full = Timestamp::from_millis(0);
        snaps.keep(
            "o1",
            EntityKind::Product,
            Outcome::Loaded {
                rows: load.into_rows(),
                delta_started: T,
                delta: Vec::new(),
                full,
            },
        );
        snaps
    };
    // two entities serving: a budget of 4 holds the reload's copy beside them
    let roomy = snaps(4);
    assert!(!roomy.release_for_reload("o1", EntityKind::Product));
    let map = roomy.lock();
    let s = &map[&("o1".to_string(), EntityKind::Product)];
    assert_eq!((s.rows.entries.len(), s.synced), (2, Some(T)));
    drop(map);
    // a budget of 3 does not: the serving rows go, and the type is cold
    let tight = snaps(3);
    assert!(tight.release_for_reload("o1", EntityKind::Product));
    let map = tight.lock();
    let s = &map[&("o1".to_string(), EntityKind::Product)];
    assert_eq!((s.rows.entries.len(), s.synced, s.bytes()), (0, None, 0));
    assert_eq!(s.full, None, "the next call loads it as a first call does");
    drop(map);
    assert!(
        !tight.release_for_reload("o2", EntityKind::Product),
        "nothing to release"
    );
}

#[test]
fn a_delta_never_completes_a_snapshot_that_was_not_read_in_full() {
    let snaps = Snapshots::new(SnapshotPolicy::default());
    snaps.keep(
        "o1",
        EntityKind::Product,
        Outcome::Delta {
            started: T,
            rows: vec![row("a", 1, 1, false)],
        },
    );
    let map = snaps.lock();
    let s = &map[&("o1".to_string(), EntityKind::Product)];
    assert_eq!(s.synced, None, "the next call reads it in full");
    assert!(s.rows.entries.is_empty());
}

#[test]
fn a_load_counts_its_shards_until_every_one_is_done() {
    let mut load = Load::new(3);
    assert!(!load.done());
    load.shards[0].rows.apply(vec![row("a", 1, 1, false)]);
    load.shards[2].rows.apply(vec![row("b", 1, 1, false)]);
    assert_eq!(load.entries_read(), 2);
    for s in &mut load.shards {
        s.cursor = Cursor::Done;
    }
    assert!(load.done());
    let snaps = Snapshots::new(SnapshotPolicy::default());
    snaps.keep(
        "o1",
        EntityKind::Sku,
        Outcome::Loaded {
            rows: load.into_rows(),
            delta_started: T,
            delta: vec![row("c", 60, 1, false), row("a", 61, 0, true)],
            full: Timestamp::from_millis(0),
        },
    );
    let map = snaps.lock();
    let s = &map[&("o1".to_string(), EntityKind::Sku)];
    assert_eq!(ids(s), ["b@1", "c@1"]);
    assert_eq!(s.synced, Some(T));
}

/// The template's default `ApiMemorySize` (MB).
fn default_api_memory_mb() -> usize {
    let template = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../infra/template.yaml"
    ))
    .expect("infra/template.yaml");
    let at = template.find("  ApiMemorySize:").expect("the parameter");
    template[at..]
        .lines()
        .find_map(|l| l.trim().strip_prefix("Default: "))
        .and_then(|v| v.parse().ok())
        .expect("its default")
}

/// A default deployment holds the catalog the bench and the README claim (250,000 entities:
/// 50,000 products with five values, as many variants with one, 150,000 SKUs with two)
/// within its snapshot budget (half the function's memory) twice over: a reload builds the
/// new snapshot while the old one serves, and both count. With less, a process would evict
/// and read the index again while it serves.
#[test]
fn the_default_function_holds_the_claimed_catalog_through_a_reload() {
    use crate::domain::values::StoredValues;
    let pack = |v: serde_json::Value| {
        PackedValues::pack(&serde_json::from_value::<StoredValues>(v).expect("values"))
    };
    let text = |v: String| serde_json::json!({"t": "text", "e": [{"v": v}]});
    let mut weight = 0;
    for i in 0..50_000 {
        let p = format!("p{i:07}");
        let product = pack(serde_json::json!({
            "brand": text(format!("Brand {:02}", i % 40)), "color": text("red".into()),
            "price": text(format!("{}.{:02} EUR", 5 + i % 200, i % 100)),
            "material": text("oak".into()), "weight": text(format!("{}.5 kg", 1 + i % 20)),
        }));
        let entry = |id: String, pid: Option<&str>, vid: Option<&str>, values| Entry {
            id: id.into(),
            pid: pid.map(Into::into),
            vid: vid.map(Into::into),
            self_updated_at: T,
            updated_at: T,
            ver: 1,
            family_id: None,
            packed: Packed::new(&format!("Product {i}"), &values),
        };
        weight += entry(p.clone(), None, None, product).weight();
        let v = format!("{p}-v");
        let size = pack(serde_json::json!({"size": text("M".into())}));
        weight += entry(v.clone(), Some(&p), None, size).weight();
        for s in 0..3 {
            let sku = pack(serde_json::json!({
                "price": text(format!("{}.00 EUR", 10 + (i + s) % 90)),
                "ean": text(format!("400{i:07}{s}")),
            }));
            weight += entry(format!("{p}-v-{s}"), Some(&p), Some(&v), sku).weight();
        }
    }
    let budget = default_api_memory_mb() << 19;
    assert!(
        2 * weight <= budget,
        "250,000 entities weigh {} MiB; twice that is over the default budget of {} MiB",
        weight >> 20,
        budget >> 20
    );
}
