//! Keeping checkpoints fresh: a warm process writes a type's checkpoint in the background
//! after its full read, once 5 % of the entities changed since the checkpoint it wrote or
//! loaded, and when that checkpoint nears the age a loader refuses. It takes the snapshot
//! block by block, each under a short lock (a list call waits for one block's encoding at
//! most), and never replaces a newer checkpoint (`CheckpointStore::put_newer`). When another
//! process wrote one since, it takes that one instead of writing its own.
//!
//! A checkpoint taken this way can mix images from before and after changes applied while it
//! was encoded: every such change is after the position it claims (the snapshot's `synced`
//! when the write began), so the loader's delta from there brings each again, and applying
//! rows keeps the latest image (the tests below hold a checkpoint taken mid-change equal).

use super::checkpoint::{self, CheckpointKey, Encoder, Seal, BLOCK_ENTRIES};
use super::*;
use std::sync::Arc;

/// One entity in this many changed makes a new checkpoint due (5 %).
const CHANGED_SHARE: usize = 20;
/// Age at which a checkpoint is written again even without changes: a loader takes one up
/// to half the tombstones' retention, so rewritten at a quarter, one stays usable.
const REFRESH_AFTER_MS: i64 = TOMBSTONE_RETENTION_SECS * 1000 / 4;
/// How recent another process's checkpoint must be for a process to take it instead of
/// writing its own (the changes between it and now go uncounted: at most a reload period's).
const TAKE_WITHIN_MS: i64 = 15 * 60 * 1000;
/// Wait after a failed write before the next try.
const RETRY_AFTER: Duration = Duration::from_secs(60);
/// Longest a write may take, from its first request to S3 to its last (the checkpoint of
/// 5,000,000 entities is about 600 MB); past it, the process tries again a minute later.
const WRITE_WITHIN: Duration = Duration::from_secs(120);

/// What a process knows of a type's checkpoint.
#[derive(Debug, Default)]
pub(super) struct CheckpointState {
    /// The position of the checkpoint this process last wrote or loaded (`None`: none yet).
    at: Option<Timestamp>,
    /// Entities changed in the snapshot since.
    changed: usize,
    /// A write is under way.
    busy: bool,
    /// After a failed write: not before then.
    retry_after: Option<Instant>,
}

impl CheckpointState {
    /// After a full read (`None`) or a load from the checkpoint at `at`.
    pub(super) fn restart(&mut self, at: Option<Timestamp>) {
        self.at = at;
        self.changed = 0;
    }

    pub(super) fn count(&mut self, changed: usize) {
        self.changed += changed;
    }

    /// Whether a snapshot of `entries` entities, synced, is due for a new checkpoint.
    fn due(&self, entries: usize, now: Timestamp) -> bool {
        if self.busy || self.retry_after.is_some_and(|t| Instant::now() < t) {
            return false;
        }
        match self.at {
            None => true,
            Some(at) => {
                (self.changed > 0 && self.changed * CHANGED_SHARE >= entries)
                    || now.millis().saturating_sub(at.millis()) >= REFRESH_AFTER_MS
            }
        }
    }
}

impl Snapshots {
    /// Starts writing, in the background, the checkpoint of each of `org`'s `kinds` that is
    /// due (none without a checkpoint store, or before a snapshot is complete).
    pub(super) fn write_due_checkpoints(&self, org: &str, kinds: &[EntityKind]) {
        let Some(store) = &self.checkpoints else {
            return;
        };
        let now = Timestamp::now();
        let mut map = self.lock();
        for kind in kinds {
            let Some(snap) = map.get_mut(&(org.to_string(), *kind)) else {
                continue;
            };
            let Some(synced) = snap.synced else {
                continue;
            };
            if !snap.checkpoint.due(snap.rows.entries.len(), now) {
                continue;
            }
            snap.checkpoint.busy = true;
            let job = Job {
                known: snap.checkpoint.at,
                map: self.inner.clone(),
                store: store.clone(),
                key: self.checkpoint_key.clone(),
                org: org.to_string(),
                kind: *kind,
                synced,
                deleted: Arc::new(snap.rows.deleted.clone()),
                changed: snap.checkpoint.changed,
            };
            tokio::spawn(job.run());
        }
    }
}

/// What a checkpoint write did.
#[derive(Debug)]
enum Written {
    /// Wrote this process's checkpoint.
    Ours,
    /// Found one written by another process after the one this process knew, within
    /// the last 15 minutes: took it as its own instead of writing (with N warm processes,
    /// about one writes per 5 % of change, not N).
    Theirs(Timestamp),
    /// A checkpoint at least as new as this one came first.
    Newer,
}

/// One checkpoint write.
struct Job {
    /// The position of the checkpoint the process knew when the write began.
    known: Option<Timestamp>,
    map: Arc<Mutex<Map>>,
    store: Arc<dyn CheckpointStore>,
    key: CheckpointKey,
    org: String,
    kind: EntityKind,
    /// The position the checkpoint claims: the snapshot's when the write began.
    synced: Timestamp,
    deleted: Arc<HashMap<String, Timestamp>>,
    /// The changes counted when the write began (those counted since stay counted).
    changed: usize,
}

impl Job {
    async fn run(self) {
        let (org, kind) = (self.org.as_str(), self.kind.as_str());
        let outcome = match tokio::time::timeout(WRITE_WITHIN, self.write()).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("not done within {WRITE_WITHIN:?}")),
        };
        let mut map = lock(&self.map);
        if let Some(snap) = map.get_mut(&(self.org.clone(), self.kind)) {
            let state = &mut snap.checkpoint;
            state.busy = false;
            match &outcome {
                Ok(written) => {
                    state.at = Some(match written {
                        Written::Theirs(at) => *at,
                        Written::Ours | Written::Newer => self.synced,
                    });
                    state.changed = state.changed.saturating_sub(self.changed);
                    state.retry_after = None;
                }
                Err(_) => state.retry_after = Some(Instant::now() + RETRY_AFTER),
            }
        }
        drop(map);
        match outcome {
            Ok(Written::Ours) => tracing::info!(%org, kind, "checkpoint written"),
            Ok(Written::Theirs(_)) => {
                tracing::info!(%org, kind, "checkpoint of another process taken")
            }
            Ok(Written::Newer) => tracing::info!(%org, kind, "a newer checkpoint is there"),
            Err(e) => tracing::warn!(%org, kind, error = %e, "checkpoint not written"),
        }
    }

    /// Takes a newer checkpoint another process wrote, or encodes (off the async threads)
    /// and writes this one.
    async fn write(&self) -> Result<Written, String> {
        let key = checkpoint::key(&self.org, self.kind);
        if let Some(theirs) = self.store.position(&key).await? {
            let young = self.synced.millis().saturating_sub(theirs.millis()) < TAKE_WITHIN_MS;
            if young && self.known.is_none_or(|known| theirs > known) {
                return Ok(Written::Theirs(theirs));
            }
        }
        let (map, org, kind) = (self.map.clone(), self.org.clone(), self.kind);
        let (synced, deleted) = (self.synced, Arc::clone(&self.deleted));
        let sealing = self.key.clone();
        let bytes = tokio::task::spawn_blocking(move || {
            let seal = Seal {
                key: &sealing,
                org: &org,
                kind,
            };
            encode(&map, seal, synced, &deleted)
        })
        .await
        .map_err(|e| format!("the encoder failed: {e}"))?
        .ok_or("the snapshot was dropped meanwhile")?;
        let wrote = self.store.put_newer(&key, bytes, self.synced).await?;
        Ok(if wrote { Written::Ours } else { Written::Newer })
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
    use futures_util::future::BoxFuture;

    fn names(rows: &Rows) -> Vec<String> {
        rows.entries.values().map(|e| e.name.to_string()).collect()
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

    /// A checkpoint store that keeps the positions written, with a position the test sets.
    #[derive(Default)]
    struct Fake {
        there: Mutex<Option<Timestamp>>,
        puts: Mutex<Vec<Timestamp>>,
    }

    impl CheckpointStore for Fake {
        fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, String>> {
            Box::pin(async { Ok(None) })
        }
        fn position<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Timestamp>, String>> {
            Box::pin(async { Ok(*self.there.lock().unwrap()) })
        }
        fn put_newer<'a>(
            &'a self,
            _: &'a str,
            _: Vec<u8>,
            synced: Timestamp,
        ) -> BoxFuture<'a, Result<bool, String>> {
            Box::pin(async move {
                self.puts.lock().unwrap().push(synced);
                Ok(true)
            })
        }
    }

    /// The position the process knows once its write of `org`'s products has ended.
    async fn settled(snaps: &Snapshots) -> Option<Timestamp> {
        let key = ("o".to_string(), EntityKind::Product);
        for _ in 0..1000 {
            if let Some(s) = snaps.lock().get(&key).filter(|s| !s.checkpoint.busy) {
                return s.checkpoint.at;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the checkpoint write did not end within 10 s");
    }

    #[tokio::test]
    async fn a_process_writes_its_checkpoint_unless_another_wrote_a_newer_one() {
        let fake = Arc::new(Fake::default());
        let snaps = Snapshots::new(SnapshotPolicy::default())
            .with_checkpoints(fake.clone(), CheckpointKey::default());
        let now = Timestamp::now();
        let at = |ms: i64| Timestamp::from_millis(now.millis() + ms);
        let mut rows = Rows::default();
        rows.apply(vec![row("a", 1, 1, false), row("b", 1, 1, false)]);
        let loaded = Outcome::Loaded {
            rows,
            delta_started: now,
            delta: Vec::new(),
            checkpoint: None,
        };
        // a full read, no checkpoint known: this process writes one at its position
        snaps.keep("o", EntityKind::Product, loaded);
        snaps.write_due_checkpoints("o", &[EntityKind::Product]);
        assert_eq!(settled(&snaps).await, Some(now));
        assert_eq!(*fake.puts.lock().unwrap(), [now]);
        // nothing changed since: not due
        snaps.write_due_checkpoints("o", &[EntityKind::Product]);
        assert_eq!(settled(&snaps).await, Some(now));
        // another process wrote a newer one; a change here makes one due: it takes theirs
        *fake.there.lock().unwrap() = Some(at(1));
        let delta = vec![row("c", now.millis() + 2, 1, false)];
        let outcome = Outcome::Delta {
            started: at(2),
            rows: delta,
        };
        snaps.keep("o", EntityKind::Product, outcome);
        snaps.write_due_checkpoints("o", &[EntityKind::Product]);
        assert_eq!(settled(&snaps).await, Some(at(1)));
        assert_eq!(fake.puts.lock().unwrap().len(), 1, "written again");
        // the one there is the one it knows: the next due one is written
        let outcome = Outcome::Delta {
            started: at(3),
            rows: vec![row("d", now.millis() + 3, 1, false)],
        };
        snaps.keep("o", EntityKind::Product, outcome);
        snaps.write_due_checkpoints("o", &[EntityKind::Product]);
        assert_eq!(settled(&snaps).await, Some(at(3)));
        assert_eq!(*fake.puts.lock().unwrap(), [now, at(3)]);
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

    fn state(at: Option<i64>, changed: usize) -> CheckpointState {
        CheckpointState {
            at: at.map(Timestamp::from_millis),
            changed,
            ..CheckpointState::default()
        }
    }

    #[test]
    fn a_checkpoint_is_due_after_a_full_read_5_percent_of_changes_or_a_quarter_day() {
        let now = Timestamp::from_millis(REFRESH_AFTER_MS * 10);
        let recent = Some(now.millis() - 1_000);
        // after a full read: none written yet
        assert!(state(None, 0).due(1_000, now));
        // 49 of 1,000 changed: not yet; 50: due
        assert!(!state(recent, 49).due(1_000, now));
        assert!(state(recent, 50).due(1_000, now));
        // nothing changed, young: not due; as old as a quarter of the retention: due
        assert!(!state(recent, 0).due(1_000, now));
        assert!(!state(Some(now.millis() - REFRESH_AFTER_MS + 1), 0).due(1_000, now));
        assert!(state(Some(now.millis() - REFRESH_AFTER_MS), 0).due(1_000, now));
        // an empty type whose only entity went
        assert!(state(recent, 1).due(0, now));
        // never two at once, nor right after a failure
        let mut busy = state(None, 0);
        busy.busy = true;
        assert!(!busy.due(1_000, now));
        let mut failed = state(None, 0);
        failed.retry_after = Some(Instant::now() + Duration::from_secs(60));
        assert!(!failed.due(1_000, now));
    }
}
