//! The list engine port: which entities a list returns, in identifier order, and how many.
//! Handlers reach lists only through [`ListEngine`]; the embedded engine over the warm
//! snapshots of the `byChange` index (`store/snapshot/`) is the default adapter. A search
//! tier for organizations past one process (docs/scaling.md) would be a second adapter.

use super::select::{select, Criteria};
use crate::store::items::EntityKind;
use crate::store::lists::IndexEntry;
use crate::store::selections::SelectedIds;
use crate::store::snapshot::Levels;
use crate::store::{Store, StoreError};
use lambda_http::BoxFuture;

/// Where a page starts in the identifier-ordered result.
#[derive(Debug, Clone, Copy)]
pub enum Cut<'a> {
    /// At this index (`page`): the engine walks to it.
    Index(usize),
    /// Just after this identifier (`cursor`): the engine seeks it, at the same cost at
    /// any depth.
    After(&'a str),
}

/// One page of a list, the list's true total, and whether more results follow the page.
pub type Page = (Vec<IndexEntry>, usize, bool);

/// What a list handler needs of a list engine.
pub trait ListEngine: Sync {
    /// Brings what the engine knows of `kinds` in `org` up to date; the first call of an
    /// engine that must load may answer `StoreError::Loading` (retry later).
    fn refresh<'a>(
        &'a self,
        org: &'a str,
        kinds: &'a [EntityKind],
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The entities of `target` that `criteria` selects, at most `limit` of them from
    /// `cut` on in identifier order, with their total.
    fn page(
        &self,
        org: &str,
        target: EntityKind,
        criteria: &Criteria,
        cut: Cut,
        limit: usize,
    ) -> Page;
}

/// The embedded engine: the process's warm snapshots.
pub struct Embedded<'a>(pub &'a Store);

impl ListEngine for Embedded<'_> {
    fn refresh<'a>(
        &'a self,
        org: &'a str,
        kinds: &'a [EntityKind],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.0.refresh_snapshots(org, kinds))
    }

    fn page(
        &self,
        org: &str,
        target: EntityKind,
        criteria: &Criteria,
        cut: Cut,
        limit: usize,
    ) -> Page {
        if criteria.is_everything() {
            // An unfiltered page walks to (or seeks) its start; nothing is evaluated.
            return self.0.with_snapshots(org, |levels| {
                let all = levels.of(target);
                let from: Box<dyn Iterator<Item = _>> = match cut {
                    Cut::Index(i) => Box::new(all.values().skip(i)),
                    Cut::After(id) => Box::new(all.after(id)),
                };
                let mut page: Vec<IndexEntry> =
                    from.take(limit + 1).map(|e| e.index_entry()).collect();
                let more = page.len() > limit;
                page.truncate(limit);
                (page, all.len(), more)
            });
        }
        // A filtered list is selected once for as long as the snapshots stay the same.
        let selected = |levels: &Levels<'_>| -> SelectedIds {
            select(levels, target, criteria)
                .iter()
                .map(|e| e.id.clone())
                .collect()
        };
        let key = criteria.selection_key();
        self.0
            .with_selection(org, target, key, selected, |levels, all| {
                let start = match cut {
                    Cut::Index(i) => i.min(all.len()),
                    Cut::After(id) => all.partition_point(|e| &**e <= id),
                };
                let end = start.saturating_add(limit).min(all.len());
                let entities = levels.of(target);
                let page = all[start..end]
                    .iter()
                    .filter_map(|id| entities.get(id).map(|e| e.index_entry()))
                    .collect();
                (page, all.len(), end < all.len())
            })
    }
}
