//! What each recent delta changed, per snapshot, so that a kept selection is brought up to
//! date by deciding again only the entities a change can have moved in or out of it,
//! instead of evaluating the whole list again after every write.

use super::{Levels, TypeSnapshot};
use crate::search::entities::Entry;
use crate::store::items::EntityKind;
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

/// Most identifiers a snapshot's log holds: a quarter of its entities (past that share of
/// changes a kept selection is evaluated again in full anyway), at least `MIN_LOGGED` and at
/// most `MAX_LOGGED`; past it, the oldest deltas are forgotten (a selection older than what
/// is left is evaluated again in full).
const MIN_LOGGED: usize = 1_024;
const MAX_LOGGED: usize = 100_000;

/// One image of a changed entity: its identifier and parents (a change notes its old and
/// its new image).
#[derive(Debug, Clone)]
pub(super) struct Touched {
    id: Arc<str>,
    pid: Option<Arc<str>>,
    vid: Option<Arc<str>>,
}

impl From<&Entry> for Touched {
    fn from(e: &Entry) -> Self {
        Self {
            id: e.id.clone(),
            pid: e.pid.clone(),
            vid: e.vid.clone(),
        }
    }
}

/// The changes of a snapshot's recent generations.
#[derive(Debug, Default)]
pub(super) struct ChangeLog {
    /// The oldest generation the log reaches back to: what changed after it is all here.
    base: u64,
    deltas: VecDeque<(u64, Vec<Touched>)>,
    ids: usize,
}

impl ChangeLog {
    /// Starts over at `generation` (after a full read or a checkpoint's load).
    pub(super) fn reset(&mut self, generation: u64) {
        self.base = generation;
        self.deltas.clear();
        self.ids = 0;
    }

    /// Notes what the delta that made `generation` changed, in the log of a snapshot of
    /// `entities` entities.
    pub(super) fn push(&mut self, generation: u64, touched: Vec<Touched>, entities: usize) {
        self.ids += touched.len();
        self.deltas.push_back((generation, touched));
        let cap = (entities / 4).clamp(MIN_LOGGED, MAX_LOGGED);
        while self.ids > cap {
            let Some((oldest, gone)) = self.deltas.pop_front() else {
                break;
            };
            self.base = oldest;
            self.ids -= gone.len();
        }
    }

    /// Bytes the log holds (what the snapshots' budget counts): its own rows; the
    /// identifiers are mostly shared with the entries.
    pub(super) fn bytes(&self) -> usize {
        self.ids * std::mem::size_of::<Touched>()
    }

    /// What changed after `generation`, when the log reaches back that far.
    fn after(&self, generation: u64) -> Option<impl Iterator<Item = &Touched>> {
        (generation >= self.base).then(|| {
            self.deltas
                .iter()
                .filter(move |(g, _)| *g > generation)
                .flat_map(|(_, t)| t)
        })
    }
}

const LEVELS: [EntityKind; 3] = [EntityKind::Product, EntityKind::Variant, EntityKind::Sku];

impl Levels<'_> {
    /// The snapshot of `kind`, if this process holds one.
    fn snapshot(&self, kind: EntityKind) -> Option<&TypeSnapshot> {
        self.map.get(&(self.org.to_string(), kind))
    }

    /// The generations of the organization's snapshots (products, variants, SKUs): equal
    /// exactly while none changed.
    pub fn generations(&self) -> Vec<u64> {
        LEVELS
            .iter()
            .map(|k| self.snapshot(*k).map_or(0, |s| s.generation))
            .collect()
    }

    /// The entities of `target` whose place in a list can have changed since the snapshots
    /// were at `generations`: those that changed, the `target` descendants of changed
    /// ancestors, and the `target` ancestors of changed descendants. `None` when a log does
    /// not reach back that far (or a snapshot was read again in full since).
    pub fn affected(&self, target: EntityKind, generations: &[u64]) -> Option<BTreeSet<Arc<str>>> {
        let mut out = BTreeSet::new();
        let own = self.of(target);
        for (kind, since) in LEVELS.iter().zip(generations) {
            let now = self.snapshot(*kind).map_or(0, |s| s.generation);
            if now == *since {
                continue;
            }
            let changed = self.snapshot(*kind)?.log.after(*since)?;
            for t in changed {
                match kind.cmp(&target) {
                    std::cmp::Ordering::Equal => {
                        out.insert(t.id.clone());
                    }
                    std::cmp::Ordering::Less if *kind == EntityKind::Product => {
                        out.extend(own.of_product(&t.id).cloned())
                    }
                    std::cmp::Ordering::Less => out.extend(own.of_variant(&t.id).cloned()),
                    std::cmp::Ordering::Greater => out.extend(if target == EntityKind::Product {
                        t.pid.clone()
                    } else {
                        t.vid.clone()
                    }),
                }
            }
        }
        Some(out)
    }
}

#[cfg(test)]
#[path = "changelog_tests.rs"]
mod tests;
