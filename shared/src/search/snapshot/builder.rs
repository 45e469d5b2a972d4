//! Building checkpoints, in the process whose job it is (the `checkpoint-builder`
//! function, on a schedule; `workers/checkpoints.rs`), never in a serving process: a
//! process frozen between calls may never finish a write it started after one. A build
//! loads the list as a cold process would (the checkpoint and the changes after it) or, once
//! the last full read is older than the deployment's period, reads the index in full, which
//! heals anything a delta could have missed; then it writes a new checkpoint when 5 % of
//! the entities changed since the last one, after a full read, or when the last one nears
//! the age a loader refuses. Serving processes reload from a checkpoint of a newer full
//! read (`refresh.rs`), so each list is read in full by one process per period, not by
//! every warm process every 15 minutes.
//!
//! The snapshot is encoded block by block, each under a short lock. A checkpoint taken
//! this way can mix images from before and after changes applied while it was encoded:
//! every such change is after the position it claims (the snapshot's `synced` when the
//! write began), so the loader's delta from there brings each again, and applying rows
//! keeps the latest image (the tests below hold a checkpoint taken mid-change equal).

use super::checkpoint::{self, CheckpointKey, Encoder, Seal, Stamp, BLOCK_ENTRIES};
use super::*;
use std::sync::Arc;

/// One entity in this many changed makes a new checkpoint due (5 %).
const CHANGED_SHARE: usize = 20;
/// Age at which a checkpoint is written again even without changes: a loader takes one up
/// to half the tombstones' retention, so rewritten at a quarter, one stays usable.
const REFRESH_AFTER_MS: i64 = TOMBSTONE_RETENTION_SECS * 1000 / 4;

/// What one build did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Built {
    /// Entities in the list.
    pub entries: usize,
    /// Entities changed since the checkpoint it started from (all, after a full read).
    pub changed: usize,
    /// Whether it read the index in full.
    pub read_in_full: bool,
    /// Whether it wrote a checkpoint (a newer one written meanwhile is left as it is).
    pub wrote: bool,
    /// How old the checkpoint there was when the build began, in milliseconds (`None`:
    /// there was none).
    pub age_before_ms: Option<i64>,
}

/// Whether a list loaded from the checkpoint at `stamp` (or read in full) with `changed` of
/// its `entries` changed since needs a new checkpoint at `now`.
fn due(
    stamp: Option<Stamp>,
    read_in_full: bool,
    changed: usize,
    entries: usize,
    now: Timestamp,
) -> bool {
    let Some(stamp) = stamp.filter(|_| !read_in_full) else {
        return true;
    };
    (changed > 0 && changed * CHANGED_SHARE >= entries)
        || now.millis().saturating_sub(stamp.synced.millis()) >= REFRESH_AFTER_MS
}

/// Where a build reads and writes.
pub struct BuildPlace<'a> {
    pub store: &'a Store,
    pub checkpoints: Arc<dyn CheckpointStore>,
    pub key: CheckpointKey,
    /// The snapshots' policy (a build's load budget should cover a whole read).
    pub policy: SnapshotPolicy,
    /// How often a list is read in full again.
    pub full_every: Duration,
    /// When a read that has not finished gives up (the next run starts it again).
    pub deadline: Instant,
    /// When the run began: a checkpoint written since is another run's, and left alone.
    pub run_started: Timestamp,
}

impl Snapshots {
    /// Builds the checkpoint of `org`'s list of `kind` (module docs).
    pub async fn build(
        place: &BuildPlace<'_>,
        org: &str,
        kind: EntityKind,
    ) -> Result<Built, String> {
        let object = checkpoint::key(org, kind);
        let stamp = place.checkpoints.stamp(&object).await?;
        let now = Timestamp::now();
        let age_before_ms = stamp.map(|s| now.millis().saturating_sub(s.synced.millis()));
        // written since this run began (by a run that overlaps it): nothing to do yet
        if stamp.is_some_and(|s| s.synced > place.run_started) {
            return Ok(Built {
                entries: 0,
                changed: 0,
                read_in_full: false,
                wrote: false,
                age_before_ms,
            });
        }
        let every = place.full_every.as_millis() as i64;
        let start_over =
            stamp.is_none_or(|s| now.millis().saturating_sub(s.full.millis()) >= every);
        // no read outlasts the run: each refresh reads until its budget ends
        let policy = SnapshotPolicy {
            load_budget: place
                .policy
                .load_budget
                .min(place.deadline.saturating_duration_since(Instant::now())),
            ..place.policy
        };
        let mut snaps = Snapshots::new(policy);
        if !start_over {
            snaps = snaps.with_checkpoints(place.checkpoints.clone(), place.key.clone());
            // the builder's own loads keep no list alive (only serving processes' notes do)
            snaps.notes = false;
        }
        loop {
            match snaps.refresh(place.store, org, &[kind]).await {
                Ok(()) => break,
                Err(StoreError::Loading { .. }) if Instant::now() < place.deadline => continue,
                Err(StoreError::Loading { read }) => {
                    return Err(format!(
                        "the list was not read in time ({read} entries read)"
                    ))
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        let (synced, full, changed, entries, deleted) = {
            let map = snaps.lock();
            let snap = map
                .get(&(org.to_string(), kind))
                .ok_or("the list was not loaded")?;
            let (Some(synced), Some(full)) = (snap.synced, snap.full) else {
                return Err("the list was not loaded".into());
            };
            let deleted = Arc::new(snap.rows.deleted.clone());
            (synced, full, snap.changed, snap.rows.entries.len(), deleted)
        };
        let read_in_full = stamp.is_none_or(|s| full > s.full);
        let mut built = Built {
            entries,
            changed: if read_in_full { entries } else { changed },
            read_in_full,
            wrote: false,
            age_before_ms,
        };
        if !due(stamp, read_in_full, changed, entries, now) {
            return Ok(built);
        }
        let (map, owner, sealing) = (snaps.inner.clone(), org.to_string(), place.key.clone());
        let bytes = tokio::task::spawn_blocking(move || {
            let seal = Seal {
                key: &sealing,
                org: &owner,
                kind,
            };
            encode(&map, seal, synced, &deleted)
        })
        .await
        .map_err(|e| format!("the encoder failed: {e}"))?
        .ok_or("the snapshot was dropped meanwhile")?;
        built.wrote = place
            .checkpoints
            .put_newer(&object, bytes, Stamp { synced, full })
            .await?;
        Ok(built)
    }
}

/// The checkpoint of `org`'s `kind` as the snapshot holds it, synced to `synced`, taken a
/// block at a time, each under its own lock; `None` when the snapshot is dropped meanwhile.
fn encode(
    map: &Mutex<Map>,
    seal: Seal<'_>,
    synced: Timestamp,
    deleted: &HashMap<String, Timestamp>,
) -> Option<Vec<u8>> {
    encode_between(map, seal, synced, deleted, BLOCK_ENTRIES, |_| {})
}

/// [`encode`] in blocks of `block_entries`, running `between` (tests: changes made while a
/// checkpoint is taken) under each block's lock before the block is taken.
fn encode_between(
    map: &Mutex<Map>,
    seal: Seal<'_>,
    synced: Timestamp,
    deleted: &HashMap<String, Timestamp>,
    block_entries: usize,
    mut between: impl FnMut(&mut Map),
) -> Option<Vec<u8>> {
    let key = (seal.org.to_string(), seal.kind);
    let mut encoder = Encoder::new();
    let mut after: Option<Arc<str>> = None;
    loop {
        let mut map = lock(map);
        between(&mut map);
        let snap = map.get(&key).filter(|s| s.synced.is_some())?;
        let entries = &snap.rows.entries;
        let block: Vec<&Entry> = match &after {
            None => entries.values().take(block_entries).collect(),
            Some(id) => entries.after(id).take(block_entries).collect(),
        };
        let Some(last) = block.last() else {
            break;
        };
        after = Some(last.id.clone());
        encoder.block(block.into_iter());
    }
    Some(encoder.finish(synced, deleted.iter(), seal))
}

#[cfg(test)]
mod tests {
    use super::super::tests::row;
    use super::*;

    fn names(rows: &Rows) -> Vec<String> {
        rows.entries
            .values()
            .map(|e| e.name().to_string())
            .collect()
    }

    /// Changes applied while the checkpoint is taken (before, behind and ahead of the block
    /// being taken) are after the position it claims: the loader's delta brings them again,
    /// and the checkpoint plus that delta is the snapshot as it ended up.
    #[test]
    fn a_checkpoint_taken_while_changes_apply_plus_the_delta_is_the_snapshot() {
        let synced = Timestamp::from_millis(100);
        let key = ("o".to_string(), EntityKind::Product);
        let mut snap = TypeSnapshot::new();
        snap.rows.apply(
            ["a", "c", "e", "g", "i"]
                .map(|id| row(id, 10, 1, false))
                .into(),
        );
        snap.synced = Some(synced);
        let map = Mutex::new(HashMap::from([(key.clone(), snap)]));
        // the changes after `synced`, applied one per block while the checkpoint is taken
        let later = vec![
            vec![],
            vec![row("a", 110, 0, true)],  // behind the cursor: deleted
            vec![row("b", 120, 1, false)], // behind the cursor: new
            vec![row("i", 130, 2, false)], // ahead of it: changed
            vec![row("f", 140, 1, false), row("e", 150, 0, true)],
        ];
        let mut pending = later.clone().into_iter();
        let bytes = encode_between(
            &map,
            checkpoint::test_seal(),
            synced,
            &HashMap::new(),
            1,
            |map| {
                let rows = pending.next().unwrap_or_default();
                map.get_mut(&key).unwrap().rows.apply(rows);
            },
        )
        .expect("the snapshot stayed");
        let (mut loaded, at) = checkpoint::decode(&bytes, 2, checkpoint::test_seal()).unwrap();
        assert_eq!(at, synced);
        loaded.apply(later.concat());
        let map = lock(&map);
        assert_eq!(names(&loaded), names(&map[&key].rows));
        assert_eq!(names(&loaded), ["b@1", "c@1", "f@1", "g@1", "i@2"]);
    }

    #[test]
    fn a_checkpoint_of_a_snapshot_dropped_meanwhile_is_not_written() {
        let map = Mutex::new(Map::new());
        let gone = encode(
            &map,
            Seal {
                kind: EntityKind::Sku,
                ..checkpoint::test_seal()
            },
            Timestamp::from_millis(1),
            &HashMap::new(),
        );
        assert!(gone.is_none());
    }

    #[test]
    fn a_checkpoint_is_due_after_a_full_read_5_percent_of_changes_or_a_quarter_day() {
        let now = Timestamp::from_millis(REFRESH_AFTER_MS * 10);
        let at = |ms: i64| {
            Some(Stamp {
                synced: Timestamp::from_millis(ms),
                full: Timestamp::from_millis(0),
            })
        };
        let recent = at(now.millis() - 1_000);
        // none there, or a full read: due
        assert!(due(None, false, 0, 1_000, now));
        assert!(due(recent, true, 0, 1_000, now));
        // 49 of 1,000 changed: not yet; 50: due
        assert!(!due(recent, false, 49, 1_000, now));
        assert!(due(recent, false, 50, 1_000, now));
        // nothing changed, young: not due; as old as a quarter of the retention: due
        assert!(!due(recent, false, 0, 1_000, now));
        assert!(!due(
            at(now.millis() - REFRESH_AFTER_MS + 1),
            false,
            0,
            1_000,
            now
        ));
        assert!(due(
            at(now.millis() - REFRESH_AFTER_MS),
            false,
            0,
            1_000,
            now
        ));
        // an empty type whose only entity went
        assert!(due(recent, false, 1, 0, now));
    }
}
