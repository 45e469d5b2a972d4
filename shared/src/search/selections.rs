//! Filtered lists already computed over the snapshots, kept with the snapshot generations
//! they were computed at: paging through a filtered list evaluates it once, every further
//! page costs its slice, and after a write only what changed is decided again
//! (`snapshot::Levels::affected`, `select::reselect`).

use crate::store::items::EntityKind;
use std::collections::VecDeque;
use std::sync::Arc;

/// The identifiers a list selected, in identifier order (a `Vec`, so that the one owner of a
/// kept selection can move its identifiers into the next one instead of copying them).
pub type SelectedIds = Arc<Vec<Arc<str>>>;

/// Most selections kept, and most identifiers among them (16 bytes each).
const MAX_SELECTIONS: usize = 32;
const MAX_IDS: usize = 1_000_000;

#[derive(Debug)]
struct Kept {
    org: String,
    target: EntityKind,
    key: String,
    /// The organization's snapshot generations the selection was computed from.
    generations: Vec<u64>,
    ids: SelectedIds,
}

/// The process's kept selections, most recently used last.
#[derive(Debug, Default)]
pub struct Selections(VecDeque<Kept>);

impl Selections {
    /// Takes out the selection `key` names, with the generations it was computed from
    /// (`put` it back, or its successor).
    pub fn take(
        &mut self,
        org: &str,
        target: EntityKind,
        key: &str,
    ) -> Option<(SelectedIds, Vec<u64>)> {
        let at = self
            .0
            .iter()
            .position(|k| k.org == org && k.target == target && k.key == key)?;
        let kept = self.0.remove(at)?;
        Some((kept.ids, kept.generations))
    }

    /// Keeps a selection, dropping the least recently used ones past the bounds.
    pub fn put(
        &mut self,
        org: &str,
        target: EntityKind,
        key: String,
        generations: Vec<u64>,
        ids: SelectedIds,
    ) {
        if ids.len() > MAX_IDS {
            return;
        }
        self.0
            .retain(|k| !(k.org == org && k.target == target && k.key == key));
        self.0.push_back(Kept {
            org: org.to_string(),
            target,
            key,
            generations,
            ids,
        });
        let mut total: usize = self.0.iter().map(|k| k.ids.len()).sum();
        while self.0.len() > MAX_SELECTIONS || total > MAX_IDS {
            let Some(old) = self.0.pop_front() else { break };
            total -= old.ids.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(ids: &[&str]) -> SelectedIds {
        Arc::new(ids.iter().map(|s| Arc::from(*s)).collect())
    }

    /// Takes `key`'s selection and puts it back, as a call that serves it does.
    fn used(s: &mut Selections, key: &str) -> bool {
        let p = EntityKind::Product;
        match s.take("o", p, key) {
            Some((ids, generations)) => {
                s.put("o", p, key.into(), generations, ids);
                true
            }
            None => false,
        }
    }

    #[test]
    fn a_selection_serves_only_its_org_target_and_key_with_its_generations() {
        let p = EntityKind::Product;
        let mut s = Selections::default();
        s.put("o", p, "k".into(), vec![1, 2], sel(&["a", "b"]));
        assert!(s.take("o2", p, "k").is_none());
        assert!(s.take("o", EntityKind::Sku, "k").is_none());
        assert!(s.take("o", p, "k2").is_none());
        let (ids, generations) = s.take("o", p, "k").unwrap();
        assert_eq!((ids.len(), generations), (2, vec![1, 2]));
        assert_eq!(Arc::strong_count(&ids), 1, "taken: its one owner");
        assert!(s.take("o", p, "k").is_none());
        // brought up to date: its successor put in its place
        s.put("o", p, "k".into(), vec![1, 3], sel(&["a"]));
        s.put("o", p, "k".into(), vec![1, 4], sel(&["b"]));
        assert_eq!(s.0.len(), 1);
        assert_eq!(s.take("o", p, "k").unwrap().1, vec![1, 4]);
    }

    #[test]
    fn the_least_recently_used_go_first() {
        let p = EntityKind::Product;
        let mut s = Selections::default();
        for i in 0..MAX_SELECTIONS {
            s.put("o", p, i.to_string(), vec![1], sel(&["a"]));
        }
        assert!(used(&mut s, "0"));
        s.put("o", p, "new".into(), vec![1], sel(&["a"]));
        assert!(used(&mut s, "0"), "used, so kept");
        assert!(!used(&mut s, "1"), "the oldest went");
        let big: SelectedIds = Arc::new((0..MAX_IDS).map(|i| Arc::from(i.to_string())).collect());
        s.put("o", p, "big".into(), vec![1], big);
        assert!(used(&mut s, "big"));
        assert!(!used(&mut s, "0"), "dropped for the ids bound");
    }
}
