//! Deleting a product, a variant or a SKU: the entity and everything below it (with their
//! identity items) in one write, each item conditioned on the version read, and the parents
//! that stay touched; again after a lost condition (`write_plan.rs`).

use super::etags;
use super::links;
use super::retry::Retry;
use super::write_plan::{WritePlan, Writer};
use crate::context::Context;
use crate::domain::time::Timestamp;
use crate::error::Failure;
use crate::store::items::{EntityItem, EntityKind};
use crate::store::products::{ProductTree, TreeDepth};
use crate::store::writes::{Expect, TreeWrite};
use crate::store::StoreError;

/// The product `id`, its variants and SKUs (and their identity items). Children go first
/// and the product last, so a retry after a partial failure finishes the job.
pub async fn delete_product(w: &Writer<'_>, id: &str) -> Result<(), Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    let read = || async move {
        let tree = cx.store.get_product_tree(org, id, TreeDepth::Skus).await?;
        Ok::<_, StoreError>(tree.ok_or_else(|| Failure::not_found("product", id)))
    };
    let plan = |tree: Result<ProductTree, Failure>| {
        let tree = etags::checked(if_match, tree, |t| etags::entity(&t.product), "product")?;
        let mut write = TreeWrite::new();
        for item in tree.skus.iter().chain(&tree.variants) {
            write.delete(org, item)?;
        }
        write.delete(org, &tree.product)?;
        links::unlink_dropped(&mut write, org, Some(&tree.product), None)?;
        Ok(WritePlan { write, outcome: () })
    };
    w.run(&format!("product '{id}'"), read, plan, Retry::from)
        .await
}

/// The variant `id` and its SKUs; its product's `updatedAt` moves.
pub async fn delete_variant(w: &Writer<'_>, id: &str) -> Result<(), Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    let read = || async move { Ok::<_, StoreError>(find_variant(cx, org, id, true).await) };
    let plan = |tree: Result<ProductTree, Failure>| {
        let tree = etags::checked(if_match, tree, |t| etags::entity(&t.variants[0]), "variant")?;
        let variant = &tree.variants[0];
        let mut write = TreeWrite::new();
        for s in tree.skus.iter().filter(|s| s.vid.as_deref() == Some(id)) {
            write.delete(org, s)?;
        }
        write.delete(org, variant)?;
        let at = Timestamp::next_after([tree.product.updated_at, variant.updated_at]);
        touch(&mut write, org, &[&tree.product], at)?;
        Ok(WritePlan { write, outcome: () })
    };
    w.run(&format!("variant '{id}'"), read, plan, Retry::from)
        .await
}

/// The SKU `id`; its variant's and product's `updatedAt` move.
pub async fn delete_sku(w: &Writer<'_>, id: &str) -> Result<(), Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    let read = || async move { Ok::<_, StoreError>(find_sku(cx, org, id).await) };
    let plan = |tree: Result<ProductTree, Failure>| {
        let tree = etags::checked(if_match, tree, |t| etags::entity(&t.skus[0]), "sku")?;
        let s = &tree.skus[0];
        let at = Timestamp::next_after([
            tree.product.updated_at,
            tree.variants[0].updated_at,
            s.updated_at,
        ]);
        let mut write = TreeWrite::new();
        write.delete(org, s)?;
        touch(&mut write, org, &[&tree.variants[0], &tree.product], at)?;
        Ok(WritePlan { write, outcome: () })
    };
    w.run(&format!("sku '{id}'"), read, plan, Retry::from).await
}

/// The parents that stay, their tree timestamps moved to `at`, each conditioned on the
/// version read.
fn touch(
    write: &mut TreeWrite,
    org: &str,
    parents: &[&EntityItem],
    at: Timestamp,
) -> Result<(), StoreError> {
    for parent in parents {
        let mut parent = (*parent).clone();
        let expect = Expect::Version(parent.ver);
        parent.touch_tree(at);
        write.put(org, &parent, expect)?;
    }
    Ok(())
}

/// The variant `id` with its product (and its SKUs when `with_skus`), or 404: the identity
/// GetItem, then one request for the path.
pub async fn find_variant(
    cx: &Context,
    org: &str,
    id: &str,
    with_skus: bool,
) -> Result<ProductTree, Failure> {
    let not_found = || Failure::not_found("variant", id);
    let identity = cx
        .store
        .identity(org, EntityKind::Variant, id)
        .await?
        .ok_or_else(not_found)?;
    cx.store
        .get_variant_path(org, &identity.pid, id, with_skus)
        .await?
        .ok_or_else(not_found)
}

/// The SKU `id` with its variant and product, or 404.
pub async fn find_sku(cx: &Context, org: &str, id: &str) -> Result<ProductTree, Failure> {
    let not_found = || Failure::not_found("sku", id);
    let identity = cx
        .store
        .identity(org, EntityKind::Sku, id)
        .await?
        .ok_or_else(not_found)?;
    let vid = identity.vid.as_deref().unwrap_or_default();
    cx.store
        .get_sku_path(org, &identity.pid, vid, id)
        .await?
        .ok_or_else(not_found)
}
