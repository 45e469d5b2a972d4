//! The list engine port: which entities a list returns, in its order, and how many.
//! Handlers and use cases reach every list only through [`ListEngine`], the `lists` of their
//! `Context`, chosen when the context is built. Two kinds of list go through it: the
//! filtered lists of products, variants and SKUs, over this process's warm snapshots of the
//! `byChange` index (`snapshot/`), and the flat lists (assets, categories, bundles,
//! metaobjects, deletions, delivery logs) over warm ordered indexes (`flat/`). The embedded
//! engine serves both; a function that lists no products gets [`FlatLists`], which links
//! no snapshot. A search tier for organizations past one process (docs/scaling.md) would be
//! a second adapter.

use super::flat::{FlatIndexes, FlatPage, PageQuery};
use super::packed::Values;
use super::select::{reselect, select, Criteria};
use super::selections::SelectedIds;
use super::snapshot::{Levels, SnapshotPolicy, Snapshots};
use crate::domain::values::identifiers_in;
use crate::store::flat_lists::Followed;
use crate::store::items::EntityKind;
use crate::store::lists::IndexEntry;
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

/// What list handlers and use cases need of a list engine.
pub trait ListEngine: Send + Sync {
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

    /// The first product, variant or SKU (in that order) whose values reference metaobject
    /// `def`/`id`, as `"product 'p1'"`; the engine brings those types up to date first.
    fn referrer<'a>(
        &'a self,
        org: &'a str,
        def: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>>;

    /// The flat lists this engine keeps.
    fn flat(&self) -> &FlatLists;
}

/// The flat lists' indexes of this process and the store they read from.
pub struct FlatLists {
    store: Store,
    indexes: FlatIndexes,
}

impl FlatLists {
    pub fn new(store: Store, policy: SnapshotPolicy) -> Self {
        Self {
            store,
            indexes: FlatIndexes::new(policy),
        }
    }

    /// Brings `list` up to date: read in full once per process (the first call may answer
    /// `StoreError::Loading`), then what was written since, on every call.
    pub async fn refresh(&self, list: &Followed<'_>) -> Result<(), StoreError> {
        self.indexes.refresh(&self.store, list).await
    }

    /// The page `query` selects of `list` (refreshed before), with the list's total.
    pub fn page(&self, list: &Followed<'_>, query: &PageQuery<'_>) -> FlatPage {
        self.indexes.with(list, |keys| keys.page(query))
    }

    /// Forgets `keys` of `list`: entries found gone when their page was read.
    pub fn forget<K: AsRef<str>>(&self, list: &Followed<'_>, keys: &[K]) {
        self.indexes.with(list, |index| {
            keys.iter().for_each(|k| index.remove(k.as_ref()))
        });
    }
}

/// The embedded engine: this process's warm snapshots and flat indexes, read from `store`.
pub struct Embedded {
    store: Store,
    snapshots: Snapshots,
    flat: FlatLists,
}

impl Embedded {
    pub fn new(store: Store, policy: SnapshotPolicy) -> Self {
        Self {
            flat: FlatLists::new(store.clone(), policy),
            store,
            snapshots: Snapshots::new(policy),
        }
    }

    /// The engine whose cold snapshots start from `checkpoints` (and reload from them),
    /// sealed with `key`.
    pub fn with_checkpoints(
        store: Store,
        policy: SnapshotPolicy,
        checkpoints: std::sync::Arc<dyn super::snapshot::CheckpointStore>,
        key: super::snapshot::CheckpointKey,
    ) -> Self {
        Self {
            flat: FlatLists::new(store.clone(), policy),
            store,
            snapshots: Snapshots::new(policy).with_checkpoints(checkpoints, key),
        }
    }
}

/// The engine of a function that serves only flat lists: a list of products, variants or
/// SKUs is a wiring bug (the function's `Parts` should name the embedded engine), answered
/// 500, never a wrong list.
const NO_LISTS: &str = "this function was built without the product list engine";

impl ListEngine for FlatLists {
    fn refresh<'a>(
        &'a self,
        _: &'a str,
        _: &'a [EntityKind],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Err(StoreError::Other(NO_LISTS.into())) })
    }

    fn page(&self, _: &str, _: EntityKind, _: &Criteria, _: Cut, _: usize) -> Page {
        // never an empty list taken for a true one (an export's later pages skip the
        // refresh that fails first); the HTTP pipeline answers a panic 500
        unreachable!("{NO_LISTS}")
    }

    fn referrer<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async { Err(StoreError::Other(NO_LISTS.into())) })
    }

    fn flat(&self) -> &FlatLists {
        self
    }
}

/// Whether packed values reference metaobject `def`/`id`.
fn references(vals: Values<'_>, def: &str, id: &str) -> bool {
    vals.iter().any(|a| {
        a.definition == Some(def)
            && identifiers_in(a.attr_type, a.is_multi, a.values().map(|v| v.value))
                .iter()
                .any(|r| r == id)
    })
}

impl ListEngine for Embedded {
    fn refresh<'a>(
        &'a self,
        org: &'a str,
        kinds: &'a [EntityKind],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.snapshots.refresh(&self.store, org, kinds))
    }

    fn referrer<'a>(
        &'a self,
        org: &'a str,
        def: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        const TREE: [EntityKind; 3] = [EntityKind::Product, EntityKind::Variant, EntityKind::Sku];
        Box::pin(async move {
            self.snapshots.refresh(&self.store, org, &TREE).await?;
            Ok(self.snapshots.read(org, |levels| {
                TREE.iter().find_map(|k| {
                    levels
                        .of(*k)
                        .values()
                        .find(|e| references(e.packed.values(), def, id))
                        .map(|e| format!("{} '{}'", k.as_str(), e.id))
                })
            }))
        })
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
            return self.snapshots.read(org, |levels| {
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
            std::sync::Arc::new(
                select(levels, target, criteria)
                    .iter()
                    .map(|e| e.id.clone())
                    .collect(),
            )
        };
        let key = criteria.selection_key();
        let maintained = |levels: &Levels<'_>, old: SelectedIds, affected: &_| {
            reselect(levels, target, criteria, old, affected)
        };
        self.snapshots
            .with_selection(org, target, key, selected, maintained, |levels, all| {
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

    fn flat(&self) -> &FlatLists {
        &self.flat
    }
}
