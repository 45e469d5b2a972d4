//! What the three list endpoints share: their query parameters, and which entities match
//! `updated_after` per the spec's table, in identifier order, before a page is cut.

use super::include::Include;
use crate::app::Call;
use crate::domain::selection::Selection;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::{Paging, Query};
use crate::store::items::EntityKind;
use crate::store::keys::{variant_skus_prefix, SKU_LEVEL};
use crate::store::lists::IndexEntry;
use crate::store::parallel::try_all;
use crate::store::{Store, StoreError};
use std::collections::{BTreeMap, HashSet};

const LIST_PARAMS: &[&str] = &[
    "updated_after",
    "search",
    "search_mode",
    "limit",
    "page",
    "include",
    "attributes",
    "exclude_attributes",
];

/// A checked list request.
#[derive(Debug)]
pub struct ListRequest {
    pub paging: Paging,
    pub include: Include,
    pub selection: Selection,
    pub updated_after: Option<Timestamp>,
}

/// Parses a list request; `extra` are the endpoint's own parameters, `includes` the
/// relations it embeds.
pub fn parse(call: &Call, extra: &[&str], includes: &[&str]) -> Result<ListRequest, ApiError> {
    let allowed: Vec<&str> = LIST_PARAMS.iter().chain(extra).copied().collect();
    let query = Query::parse(&call.request.query, &allowed)?;
    if let Some(mode) = query.get("search_mode") {
        if mode != "all" && mode != "any" {
            return Err(ApiError::bad_request(format!(
                "query parameter 'search_mode': '{mode}' is not one of all, any"
            )));
        }
    }
    for later in ["search", "completeness_profile", "completeness", "channel"] {
        if query.get(later).is_some() {
            return Err(ApiError::bad_request(format!(
                "query parameter '{later}' is not supported yet by this deployment"
            )));
        }
    }
    let updated_after = match query.get("updated_after") {
        None => None,
        Some(raw) => Some(Timestamp::parse(raw).ok_or_else(|| {
            ApiError::bad_request(format!(
                "query parameter 'updated_after': '{raw}' is not an RFC 3339 time"
            ))
        })?),
    };
    Ok(ListRequest {
        paging: Paging::from_query(&query)?,
        include: Include::parse(query.list("include"), includes)?,
        selection: Selection::parse(query.list("attributes"), query.list("exclude_attributes"))?,
        updated_after,
    })
}

/// Every entity of `kind` the list shows, in identifier order. Without `updated_after`:
/// the `byIdentifier` index. With it, the entity's `updatedAt` (own tree changes and
/// ancestors' own changes) must be later:
/// - products: `byChange` of products (`tu` covers the whole tree);
/// - variants: `byChange` of variants, plus the variants of products whose own `su` is
///   later (one Query per such product, in parallel);
/// - SKUs: likewise through variants and products.
pub async fn matching(
    store: &Store,
    org: &str,
    kind: EntityKind,
    after: Option<Timestamp>,
) -> Result<Vec<IndexEntry>, StoreError> {
    let Some(t) = after else {
        return store.index_all(org, kind).await;
    };
    let own = store.changed_after(org, kind, t);
    let (own, products, variants) = match kind {
        EntityKind::Product => (own.await?, Vec::new(), Vec::new()),
        EntityKind::Variant => {
            let (o, p) = crate::store::metrics::in_parallel(async {
                futures_util::try_join!(own, store.changed_after(org, EntityKind::Product, t))
            })
            .await?;
            (o, p, Vec::new())
        }
        EntityKind::Sku => {
            crate::store::metrics::in_parallel(async {
                futures_util::try_join!(
                    own,
                    store.changed_after(org, EntityKind::Product, t),
                    store.changed_after(org, EntityKind::Variant, t)
                )
            })
            .await?
        }
    };
    let products: Vec<&IndexEntry> = products.iter().filter(|p| p.su > t).collect();
    let product_ids: HashSet<&str> = products.iter().map(|p| p.id.as_str()).collect();
    let child_prefix = if kind == EntityKind::Variant {
        "L2/".to_string()
    } else {
        format!("{SKU_LEVEL}/")
    };
    let mut lookups: Vec<(String, String)> = products
        .iter()
        .map(|p| (p.id.clone(), child_prefix.clone()))
        .collect();
    lookups.extend(
        variants
            .iter()
            .filter(|v| v.su > t)
            .filter_map(|v| Some((v.pid.clone()?, v.id.clone())))
            .filter(|(pid, _)| !product_ids.contains(pid.as_str()))
            .map(|(pid, vid)| (pid, variant_skus_prefix(&vid))),
    );
    let inherited = try_all(
        lookups
            .iter()
            .map(|(pid, prefix)| store.descendants(org, pid, prefix)),
    )
    .await?;
    let mut by_id: BTreeMap<String, IndexEntry> = BTreeMap::new();
    for e in own.into_iter().chain(inherited.into_iter().flatten()) {
        by_id.insert(e.id.clone(), e);
    }
    Ok(by_id.into_values().collect())
}
