//! The entities of one type as the list snapshot holds them: compact entries in identifier
//! order, and the indexes that let an `updated_after` page find its entities without looking
//! at the others (by own change, by tree change, by parent).

use super::packed::Packed;
use crate::domain::time::Timestamp;
use crate::store::lists::IndexEntry;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

/// One entity: what lists sort, filter and page on.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: Arc<str>,
    pub pid: Option<Arc<str>>,
    pub vid: Option<Arc<str>>,
    /// When the entity itself last changed.
    pub self_updated_at: Timestamp,
    /// When the entity or a descendant last changed.
    pub updated_at: Timestamp,
    pub ver: u64,
    pub family_id: Option<i64>,
    /// The name and the values, in one allocation.
    pub packed: Packed,
}

/// Bytes of one row of a `BTreeSet` index or map slot beyond its key (node share).
const INDEX_ROW: usize = 48;

impl Entry {
    pub fn name(&self) -> &str {
        self.packed.name()
    }

    /// The entry with `values` in place of its own (tests' writes).
    #[cfg(test)]
    pub(crate) fn set_values(&mut self, values: &super::packed::PackedValues) {
        self.packed = Packed::new(self.name(), values);
    }

    pub fn index_entry(&self) -> IndexEntry {
        let s = |a: &Option<Arc<str>>| a.as_deref().map(str::to_string);
        IndexEntry {
            id: self.id.to_string(),
            pid: s(&self.pid),
            vid: s(&self.vid),
            self_updated_at: self.self_updated_at,
            updated_at: self.updated_at,
        }
    }

    /// Roughly the bytes this entry and its index rows hold in memory: what the process's
    /// snapshot budget counts.
    pub fn weight(&self) -> usize {
        let arc = |a: &Option<Arc<str>>| a.as_ref().map_or(0, |s| 16 + s.len() + INDEX_ROW);
        std::mem::size_of::<Entry>()
            + 16
            + self.id.len()
            + arc(&self.pid)
            + arc(&self.vid)
            + self.packed.len()
            + 3 * INDEX_ROW
    }
}

type ByTime = BTreeSet<(Timestamp, Arc<str>)>;
type ByParent = BTreeSet<(Arc<str>, Arc<str>)>;

/// Entities of one type, in identifier order, with their indexes.
#[derive(Debug, Default)]
pub struct Entities {
    by_id: BTreeMap<Arc<str>, Entry>,
    /// By tree change (`tu`): an entity's own `updatedAt` part.
    by_tu: ByTime,
    /// By own change (`su`): what raises its descendants' `updatedAt`.
    by_su: ByTime,
    by_pid: ByParent,
    by_vid: ByParent,
}

fn later_than(index: &ByTime, t: Timestamp) -> impl Iterator<Item = &Arc<str>> {
    let from = (
        Timestamp::from_millis(t.millis().saturating_add(1)),
        Arc::from(""),
    );
    index.range(from..).map(|(_, id)| id)
}

fn children<'a>(index: &'a ByParent, parent: &'a Arc<str>) -> impl Iterator<Item = &'a Arc<str>> {
    index
        .range((
            Bound::Included((parent.clone(), Arc::from(""))),
            Bound::Unbounded,
        ))
        .take_while(move |(p, _)| p == parent)
        .map(|(_, id)| id)
}

impl Entities {
    pub const fn new() -> Self {
        Self {
            by_id: BTreeMap::new(),
            by_tu: BTreeSet::new(),
            by_su: BTreeSet::new(),
            by_pid: BTreeSet::new(),
            by_vid: BTreeSet::new(),
        }
    }

    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.by_id.get(id)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Every entity, in identifier order.
    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.by_id.values()
    }

    /// The entities after `id`, in identifier order.
    pub fn after(&self, id: &str) -> impl Iterator<Item = &Entry> {
        self.by_id
            .range::<str, _>((Bound::Excluded(id), Bound::Unbounded))
            .map(|(_, e)| e)
    }

    /// Identifiers of the entities whose tree changed after `t` (`tu > t`).
    pub fn tree_changed_after(&self, t: Timestamp) -> impl Iterator<Item = &Arc<str>> {
        later_than(&self.by_tu, t)
    }

    /// Identifiers of the entities that themselves changed after `t` (`su > t`).
    pub fn changed_after(&self, t: Timestamp) -> impl Iterator<Item = &Arc<str>> {
        later_than(&self.by_su, t)
    }

    /// Identifiers of the entities under product `pid`.
    pub fn of_product<'a>(&'a self, pid: &'a Arc<str>) -> impl Iterator<Item = &'a Arc<str>> {
        children(&self.by_pid, pid)
    }

    /// Identifiers of the entities under variant `vid`.
    pub fn of_variant<'a>(&'a self, vid: &'a Arc<str>) -> impl Iterator<Item = &'a Arc<str>> {
        children(&self.by_vid, vid)
    }

    fn unindex(&mut self, e: &Entry) {
        self.by_tu.remove(&(e.updated_at, e.id.clone()));
        self.by_su.remove(&(e.self_updated_at, e.id.clone()));
        if let Some(p) = &e.pid {
            self.by_pid.remove(&(p.clone(), e.id.clone()));
        }
        if let Some(v) = &e.vid {
            self.by_vid.remove(&(v.clone(), e.id.clone()));
        }
    }

    /// Puts `e` in place of the entity with its identifier; returns the one it replaced.
    pub fn insert(&mut self, e: Entry) -> Option<Entry> {
        let old = self.remove(&e.id);
        self.by_tu.insert((e.updated_at, e.id.clone()));
        self.by_su.insert((e.self_updated_at, e.id.clone()));
        if let Some(p) = &e.pid {
            self.by_pid.insert((p.clone(), e.id.clone()));
        }
        if let Some(v) = &e.vid {
            self.by_vid.insert((v.clone(), e.id.clone()));
        }
        self.by_id.insert(e.id.clone(), e);
        old
    }

    pub fn remove(&mut self, id: &str) -> Option<Entry> {
        let old = self.by_id.remove(id)?;
        self.unindex(&old);
        Some(old)
    }

    /// Moves every entity of `other` (none of which is in `self`) here.
    pub fn append(&mut self, other: &mut Entities) {
        self.by_id.append(&mut other.by_id);
        self.by_tu.append(&mut other.by_tu);
        self.by_su.append(&mut other.by_su);
        self.by_pid.append(&mut other.by_pid);
        self.by_vid.append(&mut other.by_vid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(id: &str, pid: Option<&str>, su: i64, tu: i64) -> Entry {
        Entry {
            id: id.into(),
            pid: pid.map(Arc::from),
            vid: None,
            self_updated_at: Timestamp::from_millis(su),
            updated_at: Timestamp::from_millis(tu),
            ver: 1,
            family_id: None,
            packed: Packed::default(),
        }
    }

    fn ids<'a>(it: impl Iterator<Item = &'a Arc<str>>) -> Vec<String> {
        it.map(|s| s.to_string()).collect()
    }

    #[test]
    fn indexes_follow_inserts_replacements_removals_and_appends() {
        let t = Timestamp::from_millis;
        let mut a = Entities::default();
        a.insert(e("s1", Some("p1"), 10, 10));
        a.insert(e("s2", Some("p1"), 20, 30));
        a.insert(e("s3", Some("p2"), 5, 5));
        assert_eq!(ids(a.tree_changed_after(t(10))), ["s2"]);
        assert_eq!(ids(a.tree_changed_after(t(9))), ["s1", "s2"]);
        assert_eq!(ids(a.changed_after(t(10))), ["s2"]);
        let p1: Arc<str> = "p1".into();
        assert_eq!(ids(a.of_product(&p1)), ["s1", "s2"]);
        // s1 moves to p2 and changes: the old index rows go
        let old = a.insert(e("s1", Some("p2"), 40, 40)).unwrap();
        assert_eq!(old.updated_at, t(10));
        assert_eq!(ids(a.of_product(&p1)), ["s2"]);
        assert_eq!(ids(a.tree_changed_after(t(25))), ["s2", "s1"]);
        assert!(a.remove("s2").is_some());
        assert!(a.remove("s2").is_none());
        assert_eq!(ids(a.of_product(&p1)), Vec::<String>::new());
        assert_eq!(ids(a.tree_changed_after(t(0))), ["s3", "s1"]);
        let mut b = Entities::default();
        b.insert(e("s0", Some("p1"), 50, 50));
        a.append(&mut b);
        assert!(b.is_empty());
        assert_eq!(
            a.values().map(|e| &*e.id).collect::<Vec<_>>(),
            ["s0", "s1", "s3"]
        );
        assert_eq!(
            a.after("s0").map(|e| &*e.id).collect::<Vec<_>>(),
            ["s1", "s3"]
        );
        assert_eq!(ids(a.of_product(&p1)), ["s0"]);
        assert_eq!(ids(a.changed_after(t(45))), ["s0"]);
        assert_eq!(a.len(), 3);
    }
}
