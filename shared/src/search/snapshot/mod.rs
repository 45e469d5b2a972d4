//! A warm Lambda's copy of what lists sort and filter on: per organization and entity type,
//! every entity's identifier, parents, timestamps, name, family and values. It is loaded
//! once from the checkpoint builder's checkpoint (`builder.rs`) or read from the type's
//! `byChange` partition, then brought up to date on every list call by one
//! Query of the entries changed since (tombstones bring deletions), so a filtered page of any
//! depth is computed in memory and only the page's items are read. The store reads the
//! index (`store/changes.rs`); what is kept, and how, is here.

use super::entities::{Entities, Entry};
use super::packed::Packed;
use super::selections::{SelectedIds, Selections};
use crate::domain::time::Timestamp;
use crate::store::changes::{ChangeRow, PageKey};
use crate::store::index_shards;
use crate::store::items::EntityKind;
use crate::store::parallel::try_all;
use crate::store::writes::TOMBSTONE_RETENTION_SECS;
use crate::store::{Store, StoreError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use crate::store::changes::SnapshotPolicy;

mod builder;
mod changelog;
mod checkpoint;
mod refresh;

pub use builder::{BuildPlace, Built};
pub use checkpoint::{
    failed_key, failure_of, list_of, wanted_key, CheckpointKey, CheckpointStore, Fetched, Stamp,
    PREFIX as CHECKPOINT_PREFIX,
};

#[cfg(test)]
mod tests;

/// A decoded row: the compact entry, or a tombstone for its identifier and time.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    entry: Entry,
    del: bool,
}

impl From<ChangeRow> for Row {
    fn from(p: ChangeRow) -> Self {
        Row {
            entry: Entry {
                id: p.id.into(),
                pid: p.pid.map(Into::into),
                vid: p.vid.map(Into::into),
                self_updated_at: p.self_updated_at,
                updated_at: p.updated_at,
                ver: p.ver,
                family_id: p.family_id,
                packed: Packed::pack(&p.name, &p.values),
            },
            del: p.del,
        }
    }
}

/// Entries and recent deletions, as rows of the index are applied to them.
#[derive(Debug, Default)]
struct Rows {
    entries: Entities,
    /// Deletions seen, kept while an overlapping delta could still bring an older image.
    deleted: HashMap<String, Timestamp>,
    bytes: usize,
}

impl Rows {
    /// Applies rows in change order; re-applying a row already seen changes nothing.
    /// Returns how many entities changed.
    fn apply(&mut self, rows: Vec<Row>) -> usize {
        self.apply_noting(rows, |_| {})
    }

    /// `apply`, showing `note` the old and the new image of each entity that changed.
    fn apply_noting(&mut self, rows: Vec<Row>, mut note: impl FnMut(&Entry)) -> usize {
        let mut changed = 0;
        for Row { entry: row, del } in rows {
            if del {
                if self
                    .entries
                    .get(&row.id)
                    .is_none_or(|e| e.updated_at <= row.updated_at)
                {
                    if let Some(old) = self.entries.remove(&row.id) {
                        note(&old);
                        self.bytes -= old.weight();
                        changed += 1;
                    }
                }
                let t = self
                    .deleted
                    .entry(row.id.to_string())
                    .or_insert(row.updated_at);
                *t = (*t).max(row.updated_at);
                continue;
            }
            if self
                .deleted
                .get(&*row.id)
                .is_some_and(|t| *t >= row.updated_at)
            {
                continue;
            }
            match self.entries.get(&row.id) {
                // the same image again (an overlapping delta), or an older one
                Some(e) if (e.updated_at, e.ver) >= (row.updated_at, row.ver) => {}
                _ => {
                    self.bytes += row.weight();
                    note(&row);
                    if let Some(old) = self.entries.insert(row) {
                        note(&old);
                        self.bytes -= old.weight();
                    }
                    changed += 1;
                }
            }
        }
        changed
    }

    /// Adds the rows of another shard (disjoint identifiers).
    fn absorb(&mut self, other: Rows) {
        let mut entries = other.entries;
        self.entries.append(&mut entries);
        self.deleted.extend(other.deleted);
        self.bytes += other.bytes;
    }

    /// Forgets deletions older than every later delta's start can meet again.
    fn forget_deletions_before(&mut self, horizon: i64) {
        self.deleted.retain(|_, t| t.millis() >= horizon);
    }
}

/// Where a shard's full read stands.
#[derive(Debug, Clone)]
enum Cursor {
    Start,
    After(PageKey),
    Done,
}

/// One shard of a full read: its cursor and what it has read so far.
#[derive(Debug)]
struct ShardLoad {
    cursor: Cursor,
    rows: Rows,
}

/// A full read of one type's `byChange` partitions in progress. It survives the call that
/// could not finish it: the next call goes on from each shard's cursor.
#[derive(Debug)]
struct Load {
    /// When the read started: every change older than this minus the overlap is in it, and
    /// a delta from there brings what changed while it ran.
    started: Timestamp,
    shards: Vec<ShardLoad>,
    /// Whether this cold start tried the type's checkpoint already (once: a checkpoint that
    /// could not be used within the call's budget is not tried again).
    tried_checkpoint: bool,
}

impl Load {
    fn new(shards: u32) -> Self {
        Self {
            started: Timestamp::now(),
            shards: (0..shards)
                .map(|_| ShardLoad {
                    cursor: Cursor::Start,
                    rows: Rows::default(),
                })
                .collect(),
            tried_checkpoint: false,
        }
    }

    /// Whether no shard has been read yet, nor the checkpoint tried.
    fn untouched(&self) -> bool {
        !self.tried_checkpoint
            && self
                .shards
                .iter()
                .all(|s| matches!(s.cursor, Cursor::Start))
    }

    /// Its shards' rows, as one.
    fn into_rows(self) -> Rows {
        let mut rows = Rows::default();
        for shard in self.shards {
            rows.absorb(shard.rows);
        }
        rows
    }

    fn done(&self) -> bool {
        self.shards.iter().all(|s| matches!(s.cursor, Cursor::Done))
    }

    fn entries_read(&self) -> usize {
        self.shards.iter().map(|s| s.rows.entries.len()).sum()
    }
}

/// The snapshot of one organization's entities of one type.
#[derive(Debug)]
struct TypeSnapshot {
    rows: Rows,
    /// When the read the rows are synced to started (local clock); `None` until a full read
    /// completed.
    synced: Option<Timestamp>,
    loaded: Instant,
    used: Instant,
    /// A full read under way (the first one, or a reload).
    load: Option<Load>,
    /// Changes whenever the entities change (unique in the process, never reused).
    generation: u64,
    /// The start of the full read the rows descend from (through a checkpoint, or this
    /// process's own read); `None` until one completed.
    full: Option<Timestamp>,
    /// Entities changed by deltas since the rows were loaded (a checkpoint builder's
    /// measure of how far a checkpoint is behind, `builder.rs`).
    changed: usize,
    /// The full read of a checkpoint a reload could not load: not tried again.
    refused: Option<Timestamp>,
    /// What the deltas since the last full read changed (`changelog.rs`).
    log: changelog::ChangeLog,
}

/// Whether the snapshots held (`total`, the serving one's `serving` bytes among them) and a
/// reload's copy of the serving one would pass `max` bytes.
fn two_copies_exceed(total: usize, serving: usize, max: usize) -> bool {
    total.saturating_add(serving) > max
}

/// A generation no snapshot of this process had before.
fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl TypeSnapshot {
    fn new() -> Self {
        Self {
            rows: Rows::default(),
            synced: None,
            loaded: Instant::now(),
            used: Instant::now(),
            load: None,
            generation: 0,
            full: None,
            changed: 0,
            refused: None,
            log: changelog::ChangeLog::default(),
        }
    }

    fn bytes(&self) -> usize {
        self.rows.bytes
            + self.log.bytes()
            + self
                .load
                .as_ref()
                .map_or(0, |l| l.shards.iter().map(|s| s.rows.bytes).sum())
    }

    /// Applies a delta read that started at `started`.
    fn apply(&mut self, rows: Vec<Row>, started: Timestamp, overlap: Duration) {
        let mut touched = Vec::new();
        let changed = self
            .rows
            .apply_noting(rows, |e| touched.push(changelog::Touched::from(e)));
        if changed > 0 {
            self.generation = next_generation();
            self.log
                .push(self.generation, touched, self.rows.entries.len());
        }
        self.changed += changed;
        self.synced = Some(started);
        self.rows
            .forget_deletions_before(started.millis() - 2 * overlap.as_millis() as i64);
    }
}

/// The snapshots by organization and type.
type Map = HashMap<(String, EntityKind), TypeSnapshot>;

fn lock(map: &Mutex<Map>) -> std::sync::MutexGuard<'_, Map> {
    // A panic while holding the lock leaves whole entries behind: keep using them.
    map.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every snapshot of this process.
#[derive(Default)]
pub struct Snapshots {
    policy: SnapshotPolicy,
    /// Where checkpoints are kept, when the deployment has them (`checkpoint.rs`).
    checkpoints: Option<std::sync::Arc<dyn CheckpointStore>>,
    /// What they are sealed with.
    checkpoint_key: CheckpointKey,
    /// Whether loads and reloads leave a note that the list is in use (serving processes;
    /// the checkpoint builder builds only noted lists, and a note unrefreshed for a day
    /// expires with the bucket's lifecycle).
    notes: bool,
    /// Shared with a checkpoint's encoding (`builder.rs`).
    inner: std::sync::Arc<Mutex<Map>>,
    /// Filtered lists computed over the snapshots (always locked after `inner`).
    selections: Mutex<Selections>,
}

/// Read access to the snapshots of one organization.
pub struct Levels<'a> {
    map: &'a HashMap<(String, EntityKind), TypeSnapshot>,
    org: &'a str,
}

static EMPTY: Entities = Entities::new();

/// Runs `f` over levels holding `entities` (for tests of what lists select).
#[cfg(test)]
pub(crate) fn with_levels<R>(
    entities: Vec<(EntityKind, Vec<Entry>)>,
    f: impl FnOnce(&Levels<'_>) -> R,
) -> R {
    let mut map = HashMap::new();
    for (kind, list) in entities {
        let mut snap = TypeSnapshot::new();
        snap.rows.apply(
            list.into_iter()
                .map(|entry| Row { entry, del: false })
                .collect(),
        );
        map.insert(("o".to_string(), kind), snap);
    }
    f(&Levels {
        map: &map,
        org: "o",
    })
}

impl Levels<'_> {
    /// The entities of `kind` (empty when that type was not refreshed for this call).
    pub fn of(&self, kind: EntityKind) -> &Entities {
        self.map
            .get(&(self.org.to_string(), kind))
            .map(|s| &s.rows.entries)
            .unwrap_or(&EMPTY)
    }
}

/// What one call does for one type.
enum Step {
    /// Changes since a time, applied to a serving snapshot.
    Delta(Timestamp),
    /// Continue (or start) a full read; `serving` when an older snapshot still answers
    /// (descended from the full read that started at `full`).
    Load {
        load: Load,
        serving: Option<Timestamp>,
        full: Option<Timestamp>,
    },
}

impl Snapshots {
    pub fn new(policy: SnapshotPolicy) -> Self {
        let reload_cap = Duration::from_secs(TOMBSTONE_RETENTION_SECS as u64 / 2);
        Self {
            policy: SnapshotPolicy {
                reload_after: policy.reload_after.min(reload_cap),
                ..policy
            },
            checkpoints: None,
            checkpoint_key: CheckpointKey::default(),
            notes: false,
            inner: Default::default(),
            selections: Mutex::default(),
        }
    }

    /// These snapshots, loaded from `checkpoints` when cold and reloaded from a newer full
    /// read's, sealed with `key`; a full read leaves a note that the list wants one.
    pub fn with_checkpoints(
        mut self,
        checkpoints: std::sync::Arc<dyn CheckpointStore>,
        key: CheckpointKey,
    ) -> Self {
        self.checkpoints = Some(checkpoints);
        self.checkpoint_key = key;
        self.notes = true;
        self
    }

    pub fn policy(&self) -> SnapshotPolicy {
        self.policy
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Map> {
        lock(&self.inner)
    }

    /// What to read per type; a load under way is taken out until the call puts it back.
    fn plan(&self, org: &str, kinds: &[EntityKind], shards: u32) -> Vec<(EntityKind, Step)> {
        let mut map = self.lock();
        let overlap = self.policy.overlap.as_millis() as i64;
        kinds
            .iter()
            .map(|k| {
                let snap = map
                    .entry((org.to_string(), *k))
                    .or_insert_with(TypeSnapshot::new);
                let since = snap
                    .synced
                    .map(|t| Timestamp::from_millis(t.millis() - overlap));
                let fresh = snap.loaded.elapsed() < self.policy.reload_after;
                let step = match (since, fresh, snap.load.take()) {
                    (Some(t), true, None) => Step::Delta(t),
                    (serving, _, load) => Step::Load {
                        load: load.unwrap_or_else(|| Load::new(shards)),
                        serving,
                        // a checkpoint that could not be loaded counts as known
                        full: snap.full.max(snap.refused),
                    },
                };
                (*k, step)
            })
            .collect()
    }

    /// Stores what one call's reads brought for `kind`.
    fn keep(&self, org: &str, kind: EntityKind, outcome: Outcome) {
        let mut map = self.lock();
        let snap = map
            .entry((org.to_string(), kind))
            .or_insert_with(TypeSnapshot::new);
        snap.used = Instant::now();
        match outcome {
            // A delta only completes a snapshot that was read in full (not one evicted since).
            Outcome::Delta { started, rows } if snap.synced.is_some() => {
                snap.apply(rows, started, self.policy.overlap)
            }
            Outcome::Delta { .. } => {}
            // No newer full read to reload from: the deltas keep serving it until the next
            // reload is due.
            Outcome::Postponed {
                started,
                rows,
                refused,
            } if snap.synced.is_some() => {
                snap.apply(rows, started, self.policy.overlap);
                snap.loaded = Instant::now();
                snap.load = None;
                snap.refused = snap.refused.max(refused);
            }
            Outcome::Postponed { .. } => {}
            Outcome::Loading(load) => snap.load = Some(load),
            Outcome::Loaded {
                rows,
                delta_started,
                delta,
                full,
            } => {
                snap.rows = rows;
                snap.generation = next_generation();
                snap.log.reset(snap.generation);
                snap.loaded = Instant::now();
                snap.load = None;
                snap.full = Some(full);
                snap.changed = 0;
                snap.apply(delta, delta_started, self.policy.overlap);
            }
        }
        self.evict(&mut map, org);
    }

    /// Before a reload from a checkpoint decodes its copy: drops `org`'s serving rows of
    /// `kind` when they and a copy as large would not fit in the budget together with the
    /// other snapshots, so that one copy is enough (the 5,000,000-entity design point in a
    /// function of at most 4 GB, docs/scaling.md). The type is then cold: a reload that
    /// fails answers 503 and the next call loads it as a first call does. Whether it did.
    fn release_for_reload(&self, org: &str, kind: EntityKind) -> bool {
        let mut map = self.lock();
        let total: usize = map.values().map(TypeSnapshot::bytes).sum();
        let Some(snap) = map.get_mut(&(org.to_string(), kind)) else {
            return false;
        };
        if !two_copies_exceed(total, snap.bytes(), self.policy.max_bytes) {
            return false;
        }
        let (used, refused) = (snap.used, snap.refused);
        *snap = TypeSnapshot::new();
        (snap.used, snap.refused) = (used, refused);
        true
    }

    /// Drops the least recently used snapshots of other organizations while the process
    /// holds more than its budget.
    fn evict(&self, map: &mut Map, org: &str) {
        let total: usize = map.values().map(TypeSnapshot::bytes).sum();
        if total <= self.policy.max_bytes {
            return;
        }
        let mut others: Vec<((String, EntityKind), Instant, usize)> = map
            .iter()
            .filter(|((o, _), _)| o != org)
            .map(|(k, s)| (k.clone(), s.used, s.bytes()))
            .collect();
        others.sort_by_key(|(_, used, _)| *used);
        let mut excess = total - self.policy.max_bytes;
        for (key, _, bytes) in others {
            if excess == 0 {
                break;
            }
            map.remove(&key);
            excess = excess.saturating_sub(bytes);
        }
    }
}

/// What one call's reads brought for one type.
enum Outcome {
    Delta {
        started: Timestamp,
        rows: Vec<Row>,
    },
    Loading(Load),
    /// A reload that found no newer full read: the changes since, and the next reload
    /// after another period.
    Postponed {
        started: Timestamp,
        rows: Vec<Row>,
        /// The full read of a checkpoint that could not be loaded.
        refused: Option<Timestamp>,
    },
    /// A full read, or a checkpoint, and the changes after it.
    Loaded {
        rows: Rows,
        delta_started: Timestamp,
        delta: Vec<Row>,
        /// The start of the full read the rows descend from.
        full: Timestamp,
    },
}
