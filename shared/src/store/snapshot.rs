//! A warm Lambda's copy of what lists sort and filter on: per organization and entity type,
//! every entity's identifier, parents, timestamps, name, family and values. It is read once
//! from the type's `byChange` partition, then brought up to date on every list call by one
//! Query of the entries changed since (tombstones bring deletions), so a filtered page of any
//! depth is computed in memory and only the page's items are read.

use super::items::EntityKind;
use super::keys::INDEX_BY_CHANGE;
use super::lists::IndexEntry;
use super::parallel::try_all;
use super::writes::TOMBSTONE_RETENTION_SECS;
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use crate::domain::values::StoredValues;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One entity as the `byChange` index projects it (or a tombstone, `del`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Entry {
    pub id: String,
    #[serde(default)]
    pub pid: Option<String>,
    #[serde(default)]
    pub vid: Option<String>,
    pub su: Timestamp,
    pub tu: Timestamp,
    #[serde(default)]
    pub ver: u64,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "familyId", default)]
    pub family_id: Option<i64>,
    #[serde(default)]
    pub vals: StoredValues,
    #[serde(default)]
    pub del: bool,
}

impl Entry {
    pub fn index_entry(&self) -> IndexEntry {
        IndexEntry {
            id: self.id.clone(),
            pid: self.pid.clone(),
            vid: self.vid.clone(),
            su: self.su,
            tu: self.tu,
        }
    }
}

/// Projection of the snapshot Query (`name` is a reserved word).
const PROJECTION: &str = "id, pid, vid, su, tu, ver, #n, familyId, vals, del";

/// Entities of one type, in identifier order.
pub type Entities = BTreeMap<String, Entry>;

/// The snapshot of one organization's entities of one type.
#[derive(Debug)]
struct TypeSnapshot {
    entries: Entities,
    /// Deletions seen, kept while an overlapping delta could still bring an older image.
    deleted: HashMap<String, Timestamp>,
    /// When the last successful read started (local clock): every change older than this
    /// minus the overlap was visible to it.
    synced: Option<Timestamp>,
    loaded: Instant,
    used: Instant,
}

impl TypeSnapshot {
    fn new() -> Self {
        Self {
            entries: BTreeMap::new(),
            deleted: HashMap::new(),
            synced: None,
            loaded: Instant::now(),
            used: Instant::now(),
        }
    }

    /// Applies rows in change order, read by a Query that started at `started`; re-applying
    /// a row already seen changes nothing.
    fn apply(&mut self, rows: Vec<Entry>, started: Timestamp, overlap: Duration) {
        for row in rows {
            if row.del {
                if self.entries.get(&row.id).is_none_or(|e| e.tu <= row.tu) {
                    self.entries.remove(&row.id);
                }
                let t = self.deleted.entry(row.id.clone()).or_insert(row.tu);
                *t = (*t).max(row.tu);
                continue;
            }
            if self.deleted.get(&row.id).is_some_and(|t| *t >= row.tu) {
                continue;
            }
            match self.entries.get(&row.id) {
                Some(e) if (e.tu, e.ver) > (row.tu, row.ver) => {}
                _ => {
                    self.entries.insert(row.id.clone(), row);
                }
            }
        }
        self.synced = Some(started);
        // a tombstone older than every later delta's start cannot meet an older image again
        let horizon = started.millis() - 2 * overlap.as_millis() as i64;
        self.deleted.retain(|_, t| t.millis() >= horizon);
    }
}

/// How the snapshots are kept (see docs/architecture.md, Lists).
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPolicy {
    /// How far back each delta re-reads, to catch writes that become visible in the index
    /// after later ones (clock skew between writers, index propagation).
    pub overlap: Duration,
    /// Age after which a snapshot is read again in full.
    pub reload_after: Duration,
    /// Most entries kept in one process; the least recently used snapshots go first.
    pub max_entries: usize,
}

impl Default for SnapshotPolicy {
    fn default() -> Self {
        Self {
            overlap: Duration::from_secs(5),
            reload_after: Duration::from_secs(900),
            max_entries: 2_000_000,
        }
    }
}

/// Every snapshot of this process.
#[derive(Debug, Default)]
pub struct Snapshots {
    policy: SnapshotPolicy,
    inner: Mutex<HashMap<(String, EntityKind), TypeSnapshot>>,
}

/// Read access to the snapshots of one organization.
pub struct Levels<'a> {
    map: &'a HashMap<(String, EntityKind), TypeSnapshot>,
    org: &'a str,
}

static EMPTY: Entities = BTreeMap::new();

impl Levels<'_> {
    /// The entities of `kind` (empty when that type was not refreshed for this call).
    pub fn of(&self, kind: EntityKind) -> &Entities {
        self.map
            .get(&(self.org.to_string(), kind))
            .map(|s| &s.entries)
            .unwrap_or(&EMPTY)
    }
}

impl Snapshots {
    pub fn new(policy: SnapshotPolicy) -> Self {
        let reload_cap = Duration::from_secs(TOMBSTONE_RETENTION_SECS as u64 / 2);
        Self {
            policy: SnapshotPolicy {
                reload_after: policy.reload_after.min(reload_cap),
                ..policy
            },
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, EntityKind), TypeSnapshot>> {
        // A panic while holding the lock leaves whole entries behind: keep using them.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What to read per type: `None` for a full read, `Some(since)` for a delta.
    fn plan(&self, org: &str, kinds: &[EntityKind]) -> Vec<(EntityKind, Option<Timestamp>)> {
        let map = self.lock();
        let overlap = self.policy.overlap.as_millis() as i64;
        kinds
            .iter()
            .map(|k| {
                let since = map
                    .get(&(org.to_string(), *k))
                    .filter(|s| s.loaded.elapsed() < self.policy.reload_after)
                    .and_then(|s| s.synced)
                    .map(|t| Timestamp::from_millis(t.millis() - overlap));
                (*k, since)
            })
            .collect()
    }

    /// Stores what a read that started at `started` brought.
    fn store(
        &self,
        org: &str,
        started: Timestamp,
        results: Vec<(EntityKind, Option<Timestamp>, Vec<Entry>)>,
    ) {
        let mut map = self.lock();
        for (kind, since, rows) in results {
            let key = (org.to_string(), kind);
            let snapshot = match since {
                None => map.entry(key).insert_entry(TypeSnapshot::new()).into_mut(),
                Some(_) => map.entry(key).or_insert_with(TypeSnapshot::new),
            };
            snapshot.apply(rows, started, self.policy.overlap);
            snapshot.used = Instant::now();
        }
        let total: usize = map.values().map(|s| s.entries.len()).sum();
        if total > self.policy.max_entries {
            let mut others: Vec<((String, EntityKind), Instant, usize)> = map
                .iter()
                .filter(|((o, _), _)| o != org)
                .map(|(k, s)| (k.clone(), s.used, s.entries.len()))
                .collect();
            others.sort_by_key(|(_, used, _)| *used);
            let mut excess = total - self.policy.max_entries;
            for (key, _, len) in others {
                if excess == 0 {
                    break;
                }
                map.remove(&key);
                excess = excess.saturating_sub(len);
            }
        }
    }
}

impl Store {
    /// Brings the snapshots of `kinds` up to date: one Query per type, in parallel (the
    /// first call of a process reads each type's whole `byChange` partition).
    pub async fn refresh_snapshots(
        &self,
        org: &str,
        kinds: &[EntityKind],
    ) -> Result<(), StoreError> {
        let started = Timestamp::now();
        let plan = self.snapshots.plan(org, kinds);
        let rows = try_all(
            plan.iter()
                .map(|(kind, since)| self.change_rows(org, *kind, *since)),
        )
        .await?;
        let results = plan
            .into_iter()
            .zip(rows)
            .map(|((k, since), rows)| (k, since, rows))
            .collect();
        self.snapshots.store(org, started, results);
        Ok(())
    }

    /// Runs `f` over the organization's snapshots (refresh them first).
    pub fn with_snapshots<R>(&self, org: &str, f: impl FnOnce(&Levels<'_>) -> R) -> R {
        let map = self.snapshots.lock();
        f(&Levels { map: &map, org })
    }

    /// Index entries of a type changed after `since` (all with `None`), in change order.
    async fn change_rows(
        &self,
        org: &str,
        kind: EntityKind,
        since: Option<Timestamp>,
    ) -> Result<Vec<Entry>, StoreError> {
        let mut query = self
            .type_query(INDEX_BY_CHANGE, org, kind.as_str())
            .projection_expression(PROJECTION)
            .expression_attribute_names("#n", "name");
        query = match since {
            None => query.key_condition_expression("GSI1PK = :t"),
            // GSI2SK is `<tu>#<id>`: every key of a later tu sorts after `<since>$`.
            Some(t) => query
                .key_condition_expression("GSI1PK = :t AND GSI2SK > :after")
                .expression_attribute_values(":after", AttributeValue::S(format!("{t}$"))),
        };
        serde_dynamo::from_items(self.query_all(query).await?)
            .map_err(|e| StoreError::serde("index entry", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timestamp = Timestamp::from_millis(50);

    fn row(id: &str, tu: i64, ver: u64, del: bool) -> Entry {
        Entry {
            id: id.into(),
            pid: None,
            vid: None,
            su: Timestamp::from_millis(tu),
            tu: Timestamp::from_millis(tu),
            ver,
            name: format!("{id}@{ver}"),
            family_id: None,
            vals: StoredValues::new(),
            del,
        }
    }

    fn ids(s: &TypeSnapshot) -> Vec<String> {
        s.entries
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
        assert!(s.deleted.contains_key("a"));
        s.apply(
            vec![row("b", 100, 1, false)],
            Timestamp::from_millis(100),
            overlap,
        );
        assert!(!s.deleted.contains_key("a"));
    }

    #[test]
    fn eviction_keeps_the_calling_org() {
        let snaps = Snapshots::new(SnapshotPolicy {
            max_entries: 3,
            ..SnapshotPolicy::default()
        });
        let rows = |n: usize| (0..n).map(|i| row(&i.to_string(), 1, 1, false)).collect();
        snaps.store("o1", T, vec![(EntityKind::Product, None, rows(2))]);
        snaps.store("o2", T, vec![(EntityKind::Product, None, rows(2))]);
        let map = snaps.lock();
        assert!(map.contains_key(&("o2".to_string(), EntityKind::Product)));
        assert!(!map.contains_key(&("o1".to_string(), EntityKind::Product)));
    }
}
