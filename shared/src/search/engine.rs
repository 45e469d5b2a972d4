//! The list engine port: which entities a list returns, in identifier order, and how many.
//! Handlers reach lists only through [`ListEngine`]; the embedded engine over the warm
//! snapshots of the `byChange` index (`store/snapshot.rs`) is the default adapter. A search
//! tier for organizations past one process (docs/scaling.md) would be a second adapter.

use super::select::{select, Criteria};
use crate::store::items::EntityKind;
use crate::store::lists::IndexEntry;
use crate::store::{Store, StoreError};
use lambda_http::BoxFuture;
use std::ops::Range;

/// One page of a list and the list's true total.
pub type Page = (Vec<IndexEntry>, usize);

/// What a list handler needs of a list engine.
pub trait ListEngine: Sync {
    /// Brings what the engine knows of `kinds` in `org` up to date; the first call of an
    /// engine that must load may answer `StoreError::Loading` (retry later).
    fn refresh<'a>(
        &'a self,
        org: &'a str,
        kinds: &'a [EntityKind],
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The entities of `target` that `criteria` selects, cut to `page` (a range of the
    /// identifier-ordered result, clamped to it by `paging`), with their total.
    fn page(
        &self,
        org: &str,
        target: EntityKind,
        criteria: &Criteria,
        paging: &dyn Fn(usize) -> Range<usize>,
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
        paging: &dyn Fn(usize) -> Range<usize>,
    ) -> Page {
        self.0.with_snapshots(org, |levels| {
            if criteria.is_everything() {
                // An unfiltered page walks to its start; nothing is evaluated or collected.
                let all = levels.of(target);
                let range = paging(all.len());
                let page = all
                    .values()
                    .skip(range.start)
                    .take(range.len())
                    .map(|e| e.index_entry())
                    .collect();
                return (page, all.len());
            }
            let all = select(levels, target, criteria);
            let page = all[paging(all.len())]
                .iter()
                .map(|e| e.index_entry())
                .collect();
            (page, all.len())
        })
    }
}
