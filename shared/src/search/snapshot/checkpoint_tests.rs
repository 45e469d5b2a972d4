//! Unit tests of `checkpoint.rs`: round trips, refusals, and a snapshot loaded from a
//! checkpoint plus the changes after it equal to one built from every change.

use super::super::{Row, Rows};
use super::*;
use crate::domain::values::StoredValues;
use crate::search::packed::{Packed, PackedValues};
use proptest::prelude::*;

fn values(color: &str) -> PackedValues {
    let v: StoredValues = serde_json::from_value(serde_json::json!({
        "color": {"t": "text", "e": [{"v": color}]}
    }))
    .expect("stored values");
    PackedValues::pack(&v)
}

/// A SKU under variant `v` of product `p`, changed at `tu`.
fn sku(id: &str, p: &str, v: &str, tu: i64, ver: u64, del: bool) -> Row {
    Row {
        entry: Entry {
            id: id.into(),
            pid: Some(p.into()),
            vid: Some(v.into()),
            self_updated_at: Timestamp::from_millis(tu),
            updated_at: Timestamp::from_millis(tu),
            ver,
            family_id: ver.is_multiple_of(2).then_some(ver as i64),
            packed: Packed::new(&format!("{id} v{ver}"), &values(&format!("c{ver}"))),
        },
        del,
    }
}

fn rows_of(changes: &[Row]) -> Rows {
    let mut rows = Rows::default();
    rows.apply(changes.to_vec());
    rows
}

/// The entries, the deletions kept, the budget's count, and the index queries' answers.
type View = (
    Vec<Entry>,
    Vec<(String, Timestamp)>,
    usize,
    Vec<Vec<String>>,
);

/// Everything a list reads of the rows: the entries, the deletions kept, the budget's count
/// and the parent and time indexes.
fn view(rows: &Rows) -> View {
    let entries: Vec<Entry> = rows.entries.values().cloned().collect();
    let mut deleted: Vec<(String, Timestamp)> =
        rows.deleted.iter().map(|(k, v)| (k.clone(), *v)).collect();
    deleted.sort();
    let mut indexes = Vec::new();
    for parent in ["p0", "p1", "p2", "v0", "v1", "v2", "v3"] {
        let p: Arc<str> = parent.into();
        let ids = if parent.starts_with('p') {
            rows.entries.of_product(&p).map(|s| s.to_string()).collect()
        } else {
            rows.entries.of_variant(&p).map(|s| s.to_string()).collect()
        };
        indexes.push(ids);
    }
    for t in [0, 50, 100, 150] {
        let t = Timestamp::from_millis(t);
        indexes.push(
            rows.entries
                .changed_after(t)
                .map(|s| s.to_string())
                .collect(),
        );
        indexes.push(
            rows.entries
                .tree_changed_after(t)
                .map(|s| s.to_string())
                .collect(),
        );
    }
    (entries, deleted, rows.bytes, indexes)
}

#[test]
fn a_checkpoint_reads_back_as_the_rows_it_was_made_of() {
    let changes: Vec<Row> = (0..250)
        .map(|i| {
            sku(
                &format!("s{i:03}"),
                "p1",
                &format!("v{}", i % 3),
                i,
                1,
                false,
            )
        })
        .chain([sku("s007", "p1", "v1", 300, 2, true)])
        .collect();
    let rows = rows_of(&changes);
    let synced = Timestamp::from_millis(400);
    for (block_entries, threads) in [(1, 1), (16, 2), (1000, 4)] {
        let bytes = encode(&rows, synced, block_entries);
        let (back, at) = decode(&bytes, threads, test_seal()).unwrap();
        assert_eq!(at, synced);
        assert_eq!(view(&back), view(&rows), "blocks of {block_entries}");
        assert_eq!(
            layout(&bytes, bytes.len() as u64, test_seal())
                .unwrap()
                .blocks
                .len(),
            249usize.div_ceil(block_entries)
        );
    }
    // an empty snapshot too
    let bytes = encode(&Rows::default(), synced, 16);
    let (empty, _) = decode(&bytes, 2, test_seal()).unwrap();
    assert_eq!(empty.entries.len(), 0);
}

#[test]
fn a_torn_altered_or_foreign_checkpoint_is_refused() {
    let rows = rows_of(&[
        sku("a", "p1", "v1", 1, 1, false),
        sku("b", "p1", "v1", 2, 1, false),
    ]);
    let bytes = encode(&rows, Timestamp::from_millis(5), 1);
    let mut altered = bytes.clone();
    altered[3] ^= 1;
    assert_eq!(
        decode(&altered, 1, test_seal()).unwrap_err(),
        Unusable("a block does not match its hash".into())
    );
    assert_eq!(
        decode(&bytes[..bytes.len() - 1], 1, test_seal()).unwrap_err(),
        Unusable("no checkpoint footer".into())
    );
    assert!(decode(&bytes[bytes.len() - 20..], 1, test_seal()).is_err());
    // the index, a byte flipped in place (and its hash made again when `rehash`)
    let with_index = |at: usize, value: u8, rehash: bool| {
        let mut b = bytes.clone();
        let n = b.len();
        let index_len = u32::from_le_bytes(b[n - FOOTER..n - FOOTER + 4].try_into().unwrap());
        let start = n - FOOTER - index_len as usize;
        b[start + at] ^= value;
        if rehash {
            let tag = test_seal().tag(&b[start..n - FOOTER]);
            b[n - FOOTER + 4..n - 8].copy_from_slice(&tag);
        }
        b
    };
    for (at, value, rehash, why) in [
        (
            9,
            0xff,
            false,
            "not sealed by this deployment for this organization and type",
        ),
        (0, 3, true, "another format version"),
        (1, 0x5a, true, "values packed in another layout"),
    ] {
        assert_eq!(
            decode(&with_index(at, value, rehash), 1, test_seal()).unwrap_err(),
            Unusable(why.into())
        );
    }
    assert!(decode(b"", 1, test_seal()).is_err());
}

/// Before, a checkpoint was checked by plain hashes only: one copied from organization A's
/// key to C's was trusted (C listed A's entities). Now it is sealed with the deployment's
/// key over its organization and type, and refused anywhere else.
#[test]
fn a_checkpoint_is_trusted_only_for_its_own_list_and_deployment() {
    let rows = rows_of(&[sku("a", "p1", "v1", 1, 1, false)]);
    let bytes = encode(&rows, Timestamp::from_millis(5), 1);
    assert!(decode(&bytes, 1, test_seal()).is_ok());
    let other_key = CheckpointKey::new([7; 32]);
    let refused = "not sealed by this deployment for this organization and type";
    for seal in [
        Seal {
            org: "c",
            ..test_seal()
        },
        Seal {
            kind: EntityKind::Sku,
            ..test_seal()
        },
        Seal {
            key: &other_key,
            ..test_seal()
        },
    ] {
        assert_eq!(
            decode(&bytes, 1, seal).unwrap_err(),
            Unusable(refused.into())
        );
    }
}

/// One change of a small catalog of SKUs that move between variants and products, are
/// deleted and made again.
fn change() -> impl Strategy<Value = (u8, u8, u8, bool)> {
    (0u8..12, 0u8..3, 0u8..4, prop::bool::weighted(0.2))
}

proptest! {
    /// A cold process that loads a checkpoint made at any point of the history and then
    /// applies the changes after it (from an overlap before its position, as the delta read
    /// does) has exactly the snapshot of a process that applied every change.
    #[test]
    fn checkpoint_plus_later_changes_equals_every_change(
        history in prop::collection::vec(change(), 1..120),
        cut in 0usize..120,
        overlap in 0usize..10,
    ) {
        let changes: Vec<Row> = history
            .iter()
            .enumerate()
            .map(|(t, &(s, p, v, del))| {
                sku(&format!("s{s}"), &format!("p{p}"), &format!("v{v}"), t as i64 + 1, t as u64 + 1, del)
            })
            .collect();
        let cut = cut.min(changes.len());
        let before = rows_of(&changes[..cut]);
        let synced = Timestamp::from_millis(cut as i64 + 1);
        let (mut loaded, at) = decode(&encode(&before, synced, 5), 2, test_seal()).unwrap();
        prop_assert_eq!(at, synced);
        loaded.apply(changes[cut.saturating_sub(overlap)..].to_vec());
        prop_assert_eq!(view(&loaded), view(&rows_of(&changes)));
    }
}

/// A memory figure of this process (`VmRSS:` now, `VmHWM:` its peak), in MiB.
fn rss_mib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// The 5,000,000-entity design point of docs/scaling.md, built in memory (no API seeding):
/// 1,000,000 products, 1,000,000 variants and 3,000,000 SKUs, each with a name and two
/// values, checkpointed per type and loaded back on every core. Prints sizes, times and the
/// peak RSS:
/// `cargo test --release -p catalog --lib checkpoints_of_5m_entities -- --ignored --nocapture`
#[test]
#[ignore = "a measurement: about a minute and several GiB"]
fn checkpoints_of_5m_entities() {
    use std::time::Instant;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    if let Some(dir) = std::env::var_os(SERVE_FROM) {
        return serve_5m(std::path::Path::new(&dir), threads);
    }
    let two_values = |i: usize| {
        let v: StoredValues = serde_json::from_value(serde_json::json!({
            "color": {"t": "text", "e": [{"v": format!("color {}", i % 40)}]},
            "price": {"t": "price", "e": [{"v": format!("{}.99 EUR", i % 500)}]}
        }))
        .expect("stored values");
        PackedValues::pack(&v)
    };
    let mut checkpoints = Vec::new();
    for (kind, count) in [
        ("product", 1_000_000),
        ("variant", 1_000_000),
        ("sku", 3_000_000),
    ] {
        let mut rows = Rows::default();
        for i in 0..count {
            let product = match kind {
                "product" => i,
                "variant" => i,
                _ => i / 3,
            };
            let entry = Entry {
                id: format!("{kind}-{i:08}").into(),
                pid: (kind != "product").then(|| format!("product-{product:08}").into()),
                vid: (kind == "sku").then(|| format!("variant-{product:08}").into()),
                self_updated_at: Timestamp::from_millis(1_800_000_000_000 + i as i64),
                updated_at: Timestamp::from_millis(1_800_000_000_000 + i as i64),
                ver: 1,
                family_id: Some((i % 20) as i64),
                packed: Packed::new(&format!("{kind} number {i}"), &two_values(i)),
            };
            rows.bytes += entry.weight();
            rows.entries.insert(entry);
        }
        let started = Instant::now();
        let bytes = encode(&rows, Timestamp::from_millis(1_900_000_000_000), 16_384);
        println!(
            "{kind}: {count} entries, checkpoint {:.1} MiB, encoded in {:.2} s",
            bytes.len() as f64 / 1048576.0,
            started.elapsed().as_secs_f64()
        );
        checkpoints.push((kind, count, bytes));
    }
    let before = rss_mib("VmRSS:");
    let mut loaded = Vec::new();
    let mut load_secs = 0.0;
    for (kind, count, bytes) in &checkpoints {
        let started = Instant::now();
        let (back, _) = decode(bytes, threads, test_seal()).unwrap();
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(back.entries.len(), *count);
        println!(
            "{kind}: loaded in {secs:.2} s on {threads} threads; snapshot budget count {:.0} MiB",
            back.bytes as f64 / 1048576.0
        );
        load_secs += secs;
        // the loaded snapshots stay, as in a process that serves all three types
        loaded.push(back);
    }
    let total: usize = loaded.iter().map(|r| r.entries.len()).sum();
    let weight: usize = loaded.iter().map(|r| r.bytes).sum();
    println!(
        "total: {total} entities loaded in {load_secs:.2} s; checkpoints {:.1} MiB; snapshot budget count {:.0} MiB; RSS {before} -> {} MiB across the loads (the checkpoints' bytes held throughout); peak RSS of the run, building included, {} MiB",
        checkpoints.iter().map(|c| c.2.len()).sum::<usize>() as f64 / 1048576.0,
        weight as f64 / 1048576.0,
        rss_mib("VmRSS:"),
        rss_mib("VmHWM:")
    );
    // a reload of the largest type from its checkpoint, as a serving process without room
    // for two copies does it (`Snapshots::release_for_reload`): the serving rows go first,
    // so the peak stays where the loads left it; then as it was before, holding both
    let (kind, _, bytes) = &checkpoints[2];
    let peak = rss_mib("VmHWM:");
    drop(loaded.pop());
    let started = Instant::now();
    loaded.push(decode(bytes, threads, test_seal()).unwrap().0);
    println!(
        "{kind} reloaded with one copy in {:.2} s: peak RSS {peak} -> {} MiB",
        started.elapsed().as_secs_f64(),
        rss_mib("VmHWM:")
    );
    let peak = rss_mib("VmHWM:");
    let started = Instant::now();
    let second = decode(bytes, threads, test_seal()).unwrap().0;
    println!(
        "{kind} reloaded beside the serving copy in {:.2} s: peak RSS {peak} -> {} MiB",
        started.elapsed().as_secs_f64(),
        rss_mib("VmHWM:")
    );
    drop((second, loaded));
    // the serving process, measured on its own: a process of this test that holds only what
    // a serving process holds
    let dir = std::env::temp_dir().join(format!("catalog-5m-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    for (kind, _, bytes) in &checkpoints {
        std::fs::write(dir.join(kind), bytes).expect("a checkpoint written");
    }
    drop(checkpoints);
    let out = std::process::Command::new(std::env::current_exe().expect("this test"))
        .args([
            "--exact",
            "search::snapshot::checkpoint::tests::checkpoints_of_5m_entities",
        ])
        .args(["--ignored", "--nocapture", "--test-threads=1"])
        .env(SERVE_FROM, &dir)
        .output()
        .expect("the serving process runs");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    // (libtest prints the test's name on the line its output starts)
    if let Some(at) = text.find("serving process:") {
        println!("{}", text[at..].lines().next().unwrap_or_default());
    }
    assert!(out.status.success(), "the serving process failed: {text}");
}

/// Where `checkpoints_of_5m_entities` hands its checkpoints to the serving process.
const SERVE_FROM: &str = "CATALOG_TEST_5M_CHECKPOINTS";

/// The serving side of `checkpoints_of_5m_entities`, in a process of its own: each list
/// loaded from its checkpoint (its bytes held only while they are decoded, as a checkpoint
/// fetched from S3 is), then the SKUs reloaded with one copy (the serving rows released
/// first); the peak RSS of the process at each step.
fn serve_5m(dir: &std::path::Path, threads: usize) {
    use std::time::Instant;
    let base = rss_mib("VmHWM:");
    let started = Instant::now();
    let mut loaded = Vec::new();
    for kind in ["product", "variant", "sku"] {
        let bytes = std::fs::read(dir.join(kind)).expect("a checkpoint");
        loaded.push(decode(&bytes, threads, test_seal()).unwrap().0);
    }
    let load = started.elapsed().as_secs_f64();
    let entities: usize = loaded.iter().map(|r| r.entries.len()).sum();
    let after_load = (rss_mib("VmRSS:"), rss_mib("VmHWM:"));
    drop(loaded.pop());
    let started = Instant::now();
    let bytes = std::fs::read(dir.join("sku")).expect("a checkpoint");
    loaded.push(decode(&bytes, threads, test_seal()).unwrap().0);
    drop(bytes);
    println!(
        "serving process: base {base} MiB; {entities} entities loaded in {load:.2} s on {threads} threads: RSS {} MiB, peak {} MiB; SKUs reloaded with one copy in {:.2} s: RSS {} MiB, peak {} MiB",
        after_load.0,
        after_load.1,
        started.elapsed().as_secs_f64(),
        rss_mib("VmRSS:"),
        rss_mib("VmHWM:")
    );
}
