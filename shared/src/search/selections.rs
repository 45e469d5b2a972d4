//! Filtered lists already computed over the snapshots, kept while no snapshot of their
//! organization has changed since: paging through a filtered list evaluates it once, and
//! every further page costs its slice.

use crate::store::items::EntityKind;
use std::collections::VecDeque;
use std::sync::Arc;

/// The identifiers a list selected, in identifier order.
pub type SelectedIds = Arc<[Arc<str>]>;

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
    /// The selection `key` names, if it was computed from these generations.
    pub fn get(
        &mut self,
        org: &str,
        target: EntityKind,
        key: &str,
        generations: &[u64],
    ) -> Option<SelectedIds> {
        let at = self
            .0
            .iter()
            .position(|k| k.org == org && k.target == target && k.key == key)?;
        let kept = self.0.remove(at)?;
        if kept.generations != generations {
            return None;
        }
        let ids = kept.ids.clone();
        self.0.push_back(kept);
        Some(ids)
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
        ids.iter().map(|s| Arc::from(*s)).collect()
    }

    #[test]
    fn a_selection_serves_only_its_org_target_key_and_generations() {
        let p = EntityKind::Product;
        let mut s = Selections::default();
        s.put("o", p, "k".into(), vec![1, 2], sel(&["a", "b"]));
        assert_eq!(s.get("o", p, "k", &[1, 2]).unwrap().len(), 2);
        assert!(s.get("o2", p, "k", &[1, 2]).is_none());
        assert!(s.get("o", EntityKind::Sku, "k", &[1, 2]).is_none());
        assert!(s.get("o", p, "k2", &[1, 2]).is_none());
        // a snapshot changed: stale, and forgotten
        assert!(s.get("o", p, "k", &[1, 3]).is_none());
        assert!(s.get("o", p, "k", &[1, 2]).is_none());
    }

    #[test]
    fn the_least_recently_used_go_first() {
        let p = EntityKind::Product;
        let mut s = Selections::default();
        for i in 0..MAX_SELECTIONS {
            s.put("o", p, i.to_string(), vec![1], sel(&["a"]));
        }
        assert!(s.get("o", p, "0", &[1]).is_some());
        s.put("o", p, "new".into(), vec![1], sel(&["a"]));
        assert!(s.get("o", p, "0", &[1]).is_some(), "used, so kept");
        assert!(s.get("o", p, "1", &[1]).is_none(), "the oldest went");
        let big: SelectedIds = (0..MAX_IDS).map(|i| Arc::from(i.to_string())).collect();
        s.put("o", p, "big".into(), vec![1], big);
        assert!(s.get("o", p, "big", &[1]).is_some());
        assert!(
            s.get("o", p, "0", &[1]).is_none(),
            "dropped for the ids bound"
        );
    }
}
