//! Reads of the `byChange` index for the warm copies of it (the list engine's snapshots in
//! `search/snapshot/`, the flat lists' indexes of `search/flat/`): rows changed since a time, and full
//! reads page by page, with the projection the copies keep. How long the copies are kept
//! is their [`SnapshotPolicy`].

use super::items::EntityKind;
use super::keys::change_pks;
use super::keys::entity_org;
use super::parallel::try_all;
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use crate::domain::values::StoredValues;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::Deserialize;
use std::collections::HashMap;
use std::time::Duration;

/// The organization of a stream image of an item of `entity_type`, from its keys, when the
/// item is that entity itself (not a tombstone, an identity item or other state): the change
/// feed tells entities from other items by it.
pub fn image_org(image: &serde_dynamo::Item, entity_type: &str) -> Option<String> {
    entity_org(text(image, "PK")?, text(image, "GSI1PK"), entity_type).map(str::to_string)
}

/// The (PK, SK) of a stream record's `Keys`: a tree item's place, which
/// `products::ancestor_keys` reads its ancestors' from.
pub fn record_key(keys: &serde_dynamo::Item) -> Option<(String, String)> {
    Some((text(keys, "PK")?.to_string(), text(keys, "SK")?.to_string()))
}

fn text<'a>(image: &'a serde_dynamo::Item, name: &str) -> Option<&'a str> {
    match image.get(name) {
        Some(serde_dynamo::AttributeValue::S(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// One row of the `byChange` index as the warm copies read it (or a tombstone, `del`).
#[derive(Debug, Clone, Deserialize)]
pub struct ChangeRow {
    pub id: String,
    #[serde(default)]
    pub pid: Option<String>,
    #[serde(default)]
    pub vid: Option<String>,
    #[serde(rename = "su")]
    pub self_updated_at: Timestamp,
    #[serde(rename = "tu")]
    pub updated_at: Timestamp,
    #[serde(default)]
    pub ver: u64,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "familyId", default)]
    pub family_id: Option<i64>,
    #[serde(default, rename = "vals")]
    pub values: StoredValues,
    #[serde(default)]
    pub del: bool,
}

/// Projection of the rows (`name` is a reserved word).
const PROJECTION: &str = "id, pid, vid, su, tu, ver, #n, familyId, vals, del";

/// Where a full read goes on (of one shard, or of a flat list's partition): the last key a
/// page read (opaque).
#[derive(Debug, Clone)]
pub struct PageKey(HashMap<String, AttributeValue>);

impl PageKey {
    /// Where the page after `page` starts; `None` after the last one.
    pub(super) fn after(page: &aws_sdk_dynamodb::operation::query::QueryOutput) -> Option<Self> {
        page.last_evaluated_key
            .clone()
            .filter(|k| !k.is_empty())
            .map(Self)
    }

    /// The Query's `ExclusiveStartKey` for a read going on from `key`.
    pub(super) fn start(key: Option<Self>) -> Option<HashMap<String, AttributeValue>> {
        key.map(|k| k.0)
    }
}

/// How the warm copies of the index are kept (see docs/design/table.md, "Lists and filtering").
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPolicy {
    /// How far back each delta re-reads, to catch writes that become visible in the index
    /// after later ones (clock skew between writers, index propagation).
    pub overlap: Duration,
    /// Age after which a snapshot is read again in full.
    pub reload_after: Duration,
    /// Most bytes (as `Entry::weight` counts them) the process's snapshots hold; the least
    /// recently used snapshots of other organizations go first.
    pub max_bytes: usize,
    /// How long one call may spend on the first full read of a type before it answers 503
    /// (the read goes on from where it stopped in the next call).
    pub load_budget: Duration,
    /// How long one call spends on a reload while the old snapshot still serves.
    pub reload_slice: Duration,
    /// Items per Query page of a full read (`None`: DynamoDB's 1 MB pages); tests make it
    /// small to see a read stop and go on between pages.
    pub load_page_items: Option<i32>,
}

impl Default for SnapshotPolicy {
    fn default() -> Self {
        Self {
            overlap: Duration::from_secs(5),
            reload_after: Duration::from_secs(900),
            max_bytes: 1 << 30,
            load_budget: Duration::from_secs(5),
            reload_slice: Duration::from_secs(1),
            load_page_items: None,
        }
    }
}

impl Store {
    /// The rows of `org`'s `kind` changed after `since`, from every shard in parallel (one
    /// paginated Query each).
    pub async fn changes_since(
        &self,
        org: &str,
        kind: EntityKind,
        since: Timestamp,
    ) -> Result<Vec<ChangeRow>, StoreError> {
        let per_shard = try_all(
            change_pks(org, kind.as_str())
                .into_iter()
                .map(|pk| async move {
                    // GSI2SK is `<tu>#<id>`: every key of a later tu sorts after `<since>$`.
                    let query = self
                        .rows_query(pk)
                        .key_condition_expression("GSI1PK = :t AND GSI2SK > :after")
                        .expression_attribute_values(
                            ":after",
                            AttributeValue::S(format!("{since}$")),
                        );
                    let mut rows = Vec::new();
                    let mut pages = query.into_paginator().send();
                    while let Some(page) = pages.next().await {
                        rows.extend(decode(page.map_err(|e| StoreError::from_sdk("Query", e))?)?);
                    }
                    Ok::<_, StoreError>(rows)
                }),
        )
        .await?;
        Ok(per_shard.into_iter().flatten().collect())
    }

    /// One page of a full read of shard `shard` of `org`'s `kind` (from its start, or after
    /// `after`), at most `limit` rows (`None`: DynamoDB's 1 MB page); with the key to go on
    /// from, `None` when the shard is read to its end.
    pub async fn changes_page(
        &self,
        org: &str,
        kind: EntityKind,
        shard: usize,
        after: Option<PageKey>,
        limit: Option<i32>,
    ) -> Result<(Vec<ChangeRow>, Option<PageKey>), StoreError> {
        let Some(pk) = change_pks(org, kind.as_str()).into_iter().nth(shard) else {
            return Ok((Vec::new(), None));
        };
        let page = self
            .rows_query(pk)
            .key_condition_expression("GSI1PK = :t")
            .set_exclusive_start_key(PageKey::start(after))
            .set_limit(limit)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        let next = PageKey::after(&page);
        Ok((decode(page)?, next))
    }

    /// A Query of one `byChange` partition for the rows' projection.
    fn rows_query(&self, pk: String) -> super::ops::QueryBuilder {
        self.change_query(pk)
            .projection_expression(PROJECTION)
            .expression_attribute_names("#n", "name")
    }
}

/// A Query page's items as rows; the raw page is dropped here.
fn decode(
    page: aws_sdk_dynamodb::operation::query::QueryOutput,
) -> Result<Vec<ChangeRow>, StoreError> {
    serde_dynamo::from_items(page.items.unwrap_or_default())
        .map_err(|e| StoreError::serde("index entry", e))
}
