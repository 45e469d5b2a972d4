//! The write of one validated product patch, shared by `PATCH /products/{identifier}` and
//! every item of the bulk `PATCH /products`: read the tree (and link targets), plan, commit,
//! and again on a lost condition.

use super::etags;
use super::etags::check;
use super::links;
use super::references;
use super::retry::{with_retries, Retry};
use super::tree_delete::find_sku;
use super::tree_patch::{self, EntityPatch, Plan, ProductPatch, VariantPatch, Written};
use super::write_plan::{WritePlan, Writer};
use crate::context::Context;
use crate::error::Failure;
use crate::http::render;
use crate::store::items::EntityItem;
use crate::store::items::EntityKind;
use crate::store::metrics::in_parallel;
use crate::store::products::{ProductTree, TreeDepth};
use crate::store::resources::ResourceItem;
use crate::store::StoreError;

/// Writes one validated product patch: read the tree (and link targets), plan, commit,
/// again on a lost condition. The single PATCH and every item of the bulk PATCH.
///
/// `known` is the product item as a batched read found it (`Some(None)`: absent), which
/// spares the first attempt its tree read when that is all the plan needs ([`known_tree`]).
/// Every retry reads afresh.
pub async fn upsert_product(
    w: &Writer<'_>,
    id: &str,
    patch: &ProductPatch,
    known: Option<Option<EntityItem>>,
) -> Result<Written, Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    let known = &std::sync::Mutex::new(known_tree(known, patch));
    // The tag of the product as an attempt that committed part of its writes stored it: a
    // later attempt finds it, not the tag `If-Match` names, and goes on.
    let ours = &std::sync::Mutex::new(None::<String>);
    with_retries(&format!("product '{id}'"), move || async move {
        let first = known.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (tree, targets) = read(cx, org, id, patch, first).await?;
        let current = tree.as_ref().map(|t| etags::entity(&t.product));
        let mine = current.is_some() && *ours.lock().unwrap_or_else(|e| e.into_inner()) == current;
        if !mine {
            check(if_match, current.as_deref(), "product")?;
        }
        let plan = plan_write(org, id, patch, tree, &targets)?;
        if !plan.write.is_empty() {
            if let Err(e) = cx.store.commit(&plan.write, &w.origin).await {
                if matches!(e, StoreError::Partial { .. }) {
                    *ours.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(etags::entity(&plan.product));
                }
                return Err(references::named(e, &patch.value_changes()));
            }
        }
        Ok(tree_patch::written(
            &plan,
            &plan.product,
            plan.product.updated_at,
        ))
    })
    .await
}

/// Patches the SKU `id` (`name`, `values`; 404 when it does not exist) under `if_match`:
/// the SKU path read (identity GetItem, then one BatchGetItem), planned as a patch of its
/// product, and one transaction moving the variant's and product's tree timestamps.
pub async fn patch_sku(
    w: &Writer<'_>,
    id: &str,
    sku_patch: &EntityPatch,
) -> Result<Written, Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    let read = || async move { Ok::<_, StoreError>(find_sku(cx, org, id).await) };
    let plan = |tree: Result<ProductTree, Failure>| {
        let tree = etags::checked(if_match, tree, |t| etags::entity(&t.skus[0]), "sku")?;
        let patch = ProductPatch {
            variants: vec![VariantPatch {
                entity: tree_patch::EntityPatch {
                    id: tree.variants[0].id.clone(),
                    ..Default::default()
                },
                skus: vec![sku_patch.clone()],
            }],
            ..Default::default()
        };
        let pid = tree.product.id.clone();
        let (v, s) = (tree.variants[0].clone(), tree.skus[0].clone());
        let plan = tree_patch::plan(org, &pid, Some(tree), &patch, false)?;
        let v = plan.item(EntityKind::Variant, &v.id).unwrap_or(&v);
        let s = plan.item(EntityKind::Sku, id).unwrap_or(&s);
        let updated = render::sku_updated(&plan.product, v, s);
        let outcome = tree_patch::written(&plan, s, updated);
        Ok(WritePlan {
            write: plan.write,
            outcome,
        })
    };
    let failed = |e| references::named(e, &[(String::new(), &sku_patch.values)]);
    w.run(&format!("sku '{id}'"), read, plan, failed).await
}

/// The product as a batched read found it (`Some(None)`: absent), as the tree a first
/// attempt may plan on: only when that is all the plan needs (the product does not exist, or
/// the patch names no variants); `None` means read the tree.
pub(super) fn known_tree(
    known: Option<Option<EntityItem>>,
    patch: &ProductPatch,
) -> Option<Option<ProductTree>> {
    match known {
        Some(None) => Some(None),
        Some(Some(product)) if patch.depth() == TreeDepth::Product => Some(Some(ProductTree {
            product,
            variants: Vec::new(),
            skus: Vec::new(),
        })),
        _ => None,
    }
}

/// What one product write plans on: the tree as deep as the patch needs (`first`, when a
/// batched read already has it, costs nothing) and the assets and categories it links, read
/// in parallel as one round trip.
pub(super) async fn read(
    cx: &Context,
    org: &str,
    id: &str,
    patch: &ProductPatch,
    first: Option<Option<ProductTree>>,
) -> Result<(Option<ProductTree>, Vec<ResourceItem>), StoreError> {
    let read_tree = async {
        match first {
            Some(tree) => Ok(tree),
            None => cx.store.get_product_tree(org, id, patch.depth()).await,
        }
    };
    in_parallel(async { futures_util::try_join!(read_tree, links::targets(&cx.store, org, patch)) })
        .await
}

/// The writes of one product patch on what was read, in order: links added before the
/// product's write, the tree, links dropped after it.
pub(super) fn plan_write(
    org: &str,
    id: &str,
    patch: &ProductPatch,
    tree: Option<ProductTree>,
    targets: &[ResourceItem],
) -> Result<Plan, Retry> {
    let old = tree.as_ref().map(|t| t.product.clone());
    let mut plan = tree_patch::plan(org, id, tree, patch, true)?;
    let mut write = links::product_link_writes(org, id, patch, targets, old.as_ref())?;
    write.append(std::mem::take(&mut plan.write));
    links::unlink_dropped(&mut write, org, old.as_ref(), Some(&plan.product))?;
    plan.write = write;
    Ok(plan)
}
