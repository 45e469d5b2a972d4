//! Creating, replacing and deleting a bundle: every SKU it holds must exist, and each SKU's
//! `bundles` set follows the bundle's items in the same transaction.

use super::etags;
use super::etags::check;
use super::references;
use super::retry::Retry;
use super::write_plan::{WritePlan, Writer};
use crate::domain::time::Timestamp;
use crate::domain::values::{self, StoredValues, ValueChange};
use crate::error::Failure;
use crate::store::metrics::in_parallel;
use crate::store::resources::{BundleLine, ResourceItem, Shelf};
use crate::store::writes::{Expect, TreeWrite};
use std::collections::HashSet;

/// A bundle's fields as a PUT sets them (validated; the metaobjects its values reference
/// checked to exist).
pub struct BundleInput<'a> {
    pub name: &'a str,
    pub items: &'a [BundleLine],
    pub changes: &'a [ValueChange],
}

/// The bundle `id` as `input` sets it, under `if_match`: whether it was created, and the
/// bundle as stored. Reads the bundle and the SKUs' identity items (one round trip), then
/// one transaction: the bundle, and the `bundles` sets of SKUs added and removed.
pub async fn put_bundle(
    w: &Writer<'_>,
    id: &str,
    input: &BundleInput<'_>,
) -> Result<(bool, ResourceItem), Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    let skus: &Vec<&str> = &input.items.iter().map(|l| l.sku.as_str()).collect();
    let read = || async move {
        in_parallel(async {
            futures_util::try_join!(
                cx.store.get_resource(org, Shelf::BUNDLES, id),
                cx.store.existing_skus(org, skus)
            )
        })
        .await
    };
    let plan = |(existing, skus): (Option<ResourceItem>, _)| {
        plan_put(org, id, input, if_match, existing, &skus)
    };
    let failed = |e| references::named(e, &[(String::new(), input.changes)]);
    w.run(&format!("bundle '{id}'"), read, plan, failed).await
}

fn plan_put(
    org: &str,
    id: &str,
    input: &BundleInput<'_>,
    if_match: Option<&str>,
    existing: Option<ResourceItem>,
    skus: &HashSet<String>,
) -> Result<WritePlan<(bool, ResourceItem)>, Failure> {
    check(
        if_match,
        existing.as_ref().map(etags::resource).as_deref(),
        "bundle",
    )?;
    if let Some(l) = input.items.iter().find(|l| !skus.contains(&l.sku)) {
        return Err(Failure::invalid(format!(
            "field 'items': sku '{}' does not exist",
            l.sku
        )));
    }
    let at = Timestamp::next_after(existing.as_ref().map(|b| b.updated_at));
    let created = existing.is_none();
    let (mut bundle, expect) = match existing {
        Some(b) => {
            let ver = b.ver;
            (b, Expect::Version(ver))
        }
        None => (
            ResourceItem::new(org, Shelf::BUNDLES, id, input.name, at),
            Expect::Absent,
        ),
    };
    let old_items = bundle.items.clone();
    let mut vals = StoredValues::new();
    values::apply(&mut vals, input.changes);
    let changed = bundle.name != input.name || bundle.items != input.items || bundle.values != vals;
    if !created && !changed {
        return Ok(WritePlan::unchanged((created, bundle)));
    }
    let read = crate::store::counters::refs_of(&bundle.values);
    bundle.name = input.name.to_string();
    bundle.items = input.items.to_vec();
    bundle.values = vals;
    bundle.touch(at);
    let mut write = TreeWrite::new();
    write.put_resource_read(org, &bundle, expect, Some(&read))?;
    let has = |list: &[BundleLine], sku: &str| list.iter().any(|l| l.sku == sku);
    for l in input.items.iter().filter(|l| !has(&old_items, &l.sku)) {
        write.bundle_member(org, &l.sku, id, true)?;
    }
    for l in old_items.iter().filter(|l| !has(input.items, &l.sku)) {
        write.bundle_member(org, &l.sku, id, false)?;
    }
    Ok(WritePlan {
        write,
        outcome: (created, bundle),
    })
}

/// Deletes the bundle `id` under `if_match`, and its place in its SKUs' `bundles` sets, in
/// one transaction.
pub async fn delete_bundle(w: &Writer<'_>, id: &str) -> Result<(), Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    let read = || cx.store.get_resource(org, Shelf::BUNDLES, id);
    let plan = |found: Option<ResourceItem>| {
        let found = found.ok_or_else(|| Failure::not_found("bundle", id));
        let bundle = etags::checked(if_match, found, etags::resource, "bundle")?;
        let mut write = TreeWrite::new();
        write.delete_resource(org, &bundle)?;
        for l in &bundle.items {
            write.bundle_member(org, &l.sku, id, false)?;
        }
        Ok(WritePlan { write, outcome: () })
    };
    w.run(&format!("bundle '{id}'"), read, plan, Retry::from)
        .await
}
