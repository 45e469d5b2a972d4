//! The write of one validated product patch, shared by `PATCH /products/{identifier}` and
//! every item of the bulk `PATCH /products`: read the tree (and link targets), plan, commit,
//! and again on a lost condition.

use super::etags;
use super::links;
use super::references;
use super::retry::with_retries;
use super::tree_patch::{self, ProductPatch};
use crate::context::Context;
use crate::error::ApiError;
use crate::http::etag::check;
use crate::http::ApiResponse;
use crate::store::idempotency::Guard;
use crate::store::items::EntityItem;
use crate::store::metrics::in_parallel;
use crate::store::products::{ProductTree, TreeDepth};
use crate::store::StoreError;

/// Writes one validated product patch: read the tree (and link targets), plan, commit,
/// again on a lost condition. The single PATCH and every item of the bulk PATCH.
///
/// `known` is the product item as a batched read found it (`Some(None)`: absent), which
/// spares the first attempt its tree read when that is all the plan needs: the product
/// does not exist, or the patch names no variants. Every retry reads afresh.
pub async fn upsert_product(
    cx: &Context,
    org: &str,
    id: &str,
    patch: &ProductPatch,
    known: Option<Option<EntityItem>>,
    if_match: Option<&str>,
    guard: Option<&Guard>,
) -> Result<ApiResponse, ApiError> {
    let depth = patch.depth();
    let known = &std::sync::Mutex::new(match known {
        Some(None) => Some(None),
        Some(Some(product)) if depth == TreeDepth::Product => Some(Some(ProductTree {
            product,
            variants: Vec::new(),
            skus: Vec::new(),
        })),
        _ => None,
    });
    // The tag of the product as an attempt that committed part of its writes stored it: a
    // later attempt finds it, not the tag `If-Match` names, and goes on.
    let ours = &std::sync::Mutex::new(None::<String>);
    with_retries(&format!("product '{id}'"), move || async move {
        let first = known.lock().unwrap_or_else(|e| e.into_inner()).take();
        let read_tree = async {
            match first {
                Some(tree) => Ok(tree),
                None => cx.store.get_product_tree(org, id, depth).await,
            }
        };
        let (tree, targets) = in_parallel(async {
            futures_util::try_join!(read_tree, links::targets(&cx.store, org, patch))
        })
        .await?;
        let old = tree.as_ref().map(|t| t.product.clone());
        let current = old.as_ref().map(etags::entity);
        let mine = current.is_some() && *ours.lock().unwrap_or_else(|e| e.into_inner()) == current;
        if !mine {
            check(if_match, current.as_deref(), "product")?;
        }
        let mut plan = tree_patch::plan(org, id, tree, patch, true)?;
        // links added before the product write, the tree, links dropped after it
        let mut write = links::product_link_writes(org, id, patch, &targets, old.as_ref())?;
        write.append(std::mem::take(&mut plan.write));
        links::unlink_dropped(&mut write, org, old.as_ref(), Some(&plan.product))?;
        if !write.is_empty() {
            if let Err(e) = cx.store.commit(&write, guard).await {
                if matches!(e, StoreError::Partial { .. }) {
                    *ours.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(etags::entity(&plan.product));
                }
                return Err(references::named(e, &patch.value_changes()));
            }
        }
        Ok(
            tree_patch::written(&plan, &plan.product, plan.product.updated_at)
                .with_etag(etags::entity(&plan.product)),
        )
    })
    .await
}
