//! Links from products to assets and categories. The product holds the ordered list; each
//! linked asset or category holds the product in its `linkedBy` set, so deleting it can
//! unlink it everywhere without a scan.
//!
//! Invariant: every link on a product is in its target's `linkedBy` (the set may hold more).
//! Writes keep it in any prefix of their transactions: set additions commit before or with
//! the product write, removals after it; a delete unlinks (or at least re-versions) every
//! product in `linkedBy` before the conditional delete of the target.

use super::asset_input::{apply, new_asset, MAX_LINKS};
use super::retry::Retry;
use super::tree_patch::ProductPatch;
use super::write_plan::{WritePlan, Writer};
use crate::domain::time::Timestamp;
use crate::error::Failure;
use crate::store::items::EntityItem;
use crate::store::resources::{ResourceItem, ResourceKind, Shelf};
use crate::store::writes::{Expect, TreeWrite};
use crate::store::Store;
use crate::store::StoreError;
use std::collections::{HashMap, HashSet};

/// The product field that holds links to `kind`.
fn links_of(product: &mut EntityItem, kind: ResourceKind) -> Option<&mut Vec<String>> {
    match kind {
        ResourceKind::Asset => Some(&mut product.assets),
        ResourceKind::Category => product.categories.as_mut(),
        _ => None,
    }
}

/// Set additions for targets newly linked by `owner` (`skip`: targets this write puts whole
/// with the owner already in `linkedBy`), each its own group, to go before the owner's write.
pub fn additions(
    write: &mut TreeWrite,
    org: &str,
    shelf: Shelf<'_>,
    owner: &str,
    old: &[String],
    new: &[String],
    skip: &HashSet<String>,
) -> Result<(), StoreError> {
    let added = new
        .iter()
        .filter(|id| !old.contains(id) && !skip.contains(*id));
    members(write, org, shelf, owner, added, true)
}

/// Set removals for targets `owner` no longer links, to go after the owner's write.
pub fn removals(
    write: &mut TreeWrite,
    org: &str,
    shelf: Shelf<'_>,
    owner: &str,
    old: &[String],
    new: &[String],
) -> Result<(), StoreError> {
    let dropped = old.iter().filter(|id| !new.contains(id));
    members(write, org, shelf, owner, dropped, false)
}

fn members<'a>(
    write: &mut TreeWrite,
    org: &str,
    shelf: Shelf<'_>,
    owner: &str,
    ids: impl Iterator<Item = &'a String>,
    add: bool,
) -> Result<(), StoreError> {
    for id in ids {
        write.link(org, shelf, id, owner, add)?;
    }
    Ok(())
}

/// Deletes the asset or category `id` after unlinking it from every product that links it:
/// read the target, then its `linkedBy` products (one BatchGetItem), then one write that
/// rewrites each product without the link (a product listed but not linking it, a link
/// still in flight, only has its version moved, so that link's write fails and re-reads),
/// and deletes the target if it is still at the version read. 404 when it does not exist; a
/// category with subcategories is 409 (a new child moves the category's version, so the
/// check and the delete cannot miss one).
pub async fn delete_everywhere(w: &Writer<'_>, shelf: Shelf<'_>, id: &str) -> Result<(), Failure> {
    let (cx, org) = (w.cx, w.org);
    let what = shelf.kind.as_str();
    // the target, its subcategories' check, then the products its `linkedBy` names
    let read = || async {
        let target = cx
            .store
            .get_resource(org, shelf, id)
            .await?
            .ok_or_else(|| Failure::not_found(what, id));
        let target = super::etags::checked(w.if_match, target, super::etags::resource, what)?;
        if shelf.kind == ResourceKind::Category {
            let all = cx.store.list_resources(org, shelf).await?;
            let children: Vec<&str> = all
                .iter()
                .filter(|c| c.parent.as_deref() == Some(id))
                .map(|c| c.id.as_str())
                .collect();
            if !children.is_empty() {
                return Err(Failure::conflict(format!(
                    "category '{id}' has subcategories ({}); delete or move them first",
                    children.join(", ")
                )));
            }
        }
        let owners = cx.store.get_products(org, &target.linked_by).await?;
        Ok((target, owners))
    };
    let plan = |(target, owners): (ResourceItem, Vec<EntityItem>)| {
        let mut write = TreeWrite::new();
        for mut product in owners {
            let expect = Expect::Version(product.ver);
            let links = links_of(&mut product, shelf.kind);
            match links {
                Some(list) if list.iter().any(|l| l == id) => {
                    list.retain(|l| l != id);
                    product.touch(Timestamp::next_after([product.updated_at]));
                    write.put(org, &product, expect)?;
                }
                _ => write.bump(&product)?,
            }
        }
        write.delete_resource(org, &target)?;
        Ok(WritePlan { write, outcome: () })
    };
    w.run(&format!("{what} '{id}'"), read, plan, Retry::from)
        .await
}

/// The products' asset links set to `ids` (`replace`) or `ids` added to them (POST): read
/// the product and the assets it links next, plan the product's write with the links'
/// additions and removals. Answers the assets it links, in order.
pub async fn relink_assets(
    w: &Writer<'_>,
    pid: &str,
    ids: &[String],
    replace: bool,
) -> Result<Vec<ResourceItem>, Failure> {
    let (cx, org) = (w.cx, w.org);
    // what the product links next decides which assets are read
    let read = || async move {
        let product = cx
            .store
            .get_product(org, pid)
            .await?
            .ok_or_else(|| Failure::not_found("product", pid))?;
        let mut new = if replace {
            Vec::new()
        } else {
            product.assets.clone()
        };
        for id in ids {
            if !new.contains(id) {
                new.push(id.clone());
            }
        }
        if new.len() > MAX_LINKS {
            return Err(Failure::invalid(format!(
                "field 'assets': a product links at most {MAX_LINKS} assets"
            )));
        }
        let assets = assets_in_order(&cx.store, org, &new).await?;
        Ok((product, new, assets))
    };
    let plan = |(mut product, new, assets): (EntityItem, Vec<String>, Vec<ResourceItem>)| {
        if let Some(missing) = new.iter().find(|id| !assets.iter().any(|a| &a.id == *id)) {
            return Err(Failure::invalid(format!(
                "field 'assets': asset '{missing}' does not exist"
            )));
        }
        let old = product.assets.clone();
        if new == old {
            return Ok(WritePlan::unchanged(assets));
        }
        let mut write = TreeWrite::new();
        additions(
            &mut write,
            org,
            Shelf::ASSETS,
            pid,
            &old,
            &new,
            &HashSet::new(),
        )?;
        let expect = Expect::Version(product.ver);
        product.assets = new.clone();
        product.touch(Timestamp::next_after([product.updated_at]));
        write.put(org, &product, expect)?;
        removals(&mut write, org, Shelf::ASSETS, pid, &old, &new)?;
        Ok(WritePlan {
            write,
            outcome: assets,
        })
    };
    w.run(&format!("product '{pid}'"), read, plan, Retry::from)
        .await
}

/// The assets `ids`, in that order (one BatchGetItem); those that do not exist left out.
pub async fn assets_in_order(
    store: &Store,
    org: &str,
    ids: &[String],
) -> Result<Vec<ResourceItem>, StoreError> {
    let keys = ids.iter().map(|id| Shelf::ASSETS.key(org, id)).collect();
    let mut by_id: HashMap<String, ResourceItem> = store
        .get_resources(keys)
        .await?
        .into_iter()
        .map(|a| (a.id.clone(), a))
        .collect();
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

/// Whether a PATCH /products body names any asset or category (whose read [`targets`] is).
pub fn names_any(patch: &ProductPatch) -> bool {
    patch.assets.as_ref().is_some_and(|a| !a.is_empty())
        || patch.categories.as_ref().is_some_and(|c| !c.is_empty())
}

/// The assets and categories a PATCH /products body names (one BatchGetItem; none when it
/// names none).
pub async fn targets(
    store: &Store,
    org: &str,
    patch: &ProductPatch,
) -> Result<Vec<ResourceItem>, StoreError> {
    let mut keys: Vec<_> = patch
        .assets
        .iter()
        .flatten()
        .map(|a| Shelf::ASSETS.key(org, &a.identifier))
        .collect();
    keys.extend(
        patch
            .categories
            .iter()
            .flatten()
            .map(|c| Shelf::CATEGORIES.key(org, c)),
    );
    store.get_resources(keys).await
}

/// The writes that go before the product's in a PATCH /products: assets created or updated
/// as the body gives them (with the product in `linkedBy`), and `linkedBy` additions of the
/// other newly linked assets and categories. 400 for an unknown category, or an unknown asset
/// given without the `url` that would create it.
pub fn product_link_writes(
    org: &str,
    pid: &str,
    patch: &ProductPatch,
    targets: &[ResourceItem],
    old: Option<&EntityItem>,
) -> Result<TreeWrite, Retry> {
    let find = |kind: ResourceKind, id: &str| {
        targets
            .iter()
            .find(|t| t.kind == kind.as_str() && t.id == id)
    };
    let mut write = TreeWrite::new();
    if let Some(categories) = &patch.categories {
        if let Some(c) = categories
            .iter()
            .find(|c| find(ResourceKind::Category, c).is_none())
        {
            return Err(Retry::Fail(Failure::invalid(format!(
                "field 'categories': category '{c}' does not exist"
            ))));
        }
        let before = old.and_then(|p| p.categories.clone()).unwrap_or_default();
        additions(
            &mut write,
            org,
            Shelf::CATEGORIES,
            pid,
            &before,
            categories,
            &HashSet::new(),
        )?;
    }
    if let Some(assets) = &patch.assets {
        let at = Timestamp::next_after(targets.iter().map(|t| t.updated_at));
        let mut whole = HashSet::new();
        for (i, input) in assets.iter().enumerate() {
            let id = &input.identifier;
            let (mut item, expect) = match find(ResourceKind::Asset, id) {
                Some(existing) => (existing.clone(), Expect::Version(existing.ver)),
                None if input.url.is_some() => (new_asset(org, input, at), Expect::Absent),
                None => {
                    return Err(Retry::Fail(Failure::invalid(format!(
                        "assets[{i}]: asset '{id}' does not exist; give its 'url' to create it"
                    ))))
                }
            };
            let read = crate::store::counters::refs_of(&item.values);
            let changed = expect == Expect::Absent || apply(&mut item, input);
            if changed {
                if !item.linked_by.iter().any(|p| p == pid) {
                    item.linked_by.push(pid.to_string());
                }
                if expect != Expect::Absent {
                    item.touch(at);
                }
                let read = (expect != Expect::Absent).then_some(&read);
                write.put_resource_read(org, &item, expect, read)?;
                whole.insert(id.clone());
            }
        }
        let ids: Vec<String> = assets.iter().map(|a| a.identifier.clone()).collect();
        let before = old.map(|p| p.assets.clone()).unwrap_or_default();
        additions(&mut write, org, Shelf::ASSETS, pid, &before, &ids, &whole)?;
    }
    Ok(write)
}

/// `linkedBy` removals for what `old` linked and `new` (the product as written; `None` when
/// deleted) no longer links: they go after the product's write.
pub fn unlink_dropped(
    write: &mut TreeWrite,
    org: &str,
    old: Option<&EntityItem>,
    new: Option<&EntityItem>,
) -> Result<(), StoreError> {
    let Some(old) = old else { return Ok(()) };
    let pid = old.id.as_str();
    let new_assets = new.map(|p| p.assets.clone()).unwrap_or_default();
    removals(write, org, Shelf::ASSETS, pid, &old.assets, &new_assets)?;
    let old_categories = old.categories.clone().unwrap_or_default();
    let new_categories = new.and_then(|p| p.categories.clone()).unwrap_or_default();
    removals(
        write,
        org,
        Shelf::CATEGORIES,
        pid,
        &old_categories,
        &new_categories,
    )
}
