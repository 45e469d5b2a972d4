//! Where each flat list's index (`search/flat/`) reads from: its full read is a strongly consistent
//! Query of the list's own partition; its delta is what was written since a time:
//! - resources: their type's `byChange` partitions (one Query per shard), live items of the
//!   shelf and the tombstones their deletes leave;
//! - deletions: the feed's own partition, whose sort key starts with the deletion time;
//! - a delivery log: its `byChange` partition (`keys::delivery_log_change_pk`).

use super::changes::PageKey;
use super::keys::{
    change_pks, deletions_pk, deliveries_pk, delivery_log_change_pk, tombstone_pk, SK, TTL,
};
use super::ops::Item;
use super::parallel::try_all;
use super::resources::{resource_identifier, ResourceKind, Shelf};
use super::writes::DELETION_RETENTION_SECS;
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::Deserialize;

/// What an index keeps of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// The entry's last change (a resource's `tu`, a deletion's time, a delivery's creation).
    pub at: Timestamp,
    pub ver: u64,
    /// The name in lower case, for lists that search names (assets).
    pub folded: Option<Box<str>>,
    /// Epoch seconds from which the entry is gone (its TTL), if it expires.
    pub expires: Option<i64>,
}

/// One row a read brought: an entry, or the removal of one (a tombstone).
#[derive(Debug, Clone)]
pub struct Change {
    pub key: String,
    pub mark: Mark,
    pub del: bool,
}

/// A flat list, as the list engine follows it.
#[derive(Debug, Clone, Copy)]
pub enum Followed<'a> {
    /// The resources of a shelf, in identifier order.
    Shelf { org: &'a str, shelf: Shelf<'a> },
    /// The deletions of one entity type, by position `<deletedAt>#<identifier>`.
    Deletions { org: &'a str, entity_type: &'a str },
    /// A subscription's delivery log, by delivery id.
    Deliveries { org: &'a str, webhook: &'a str },
}

impl Followed<'_> {
    /// The list's own partition: it names the index (and holds the organization).
    pub fn partition(&self) -> String {
        match *self {
            Self::Shelf { org, shelf } => shelf.pk(org),
            Self::Deletions { org, entity_type } => deletions_pk(org, entity_type),
            Self::Deliveries { org, webhook } => deliveries_pk(org, webhook),
        }
    }
}

/// A resource as the full read projects it.
#[derive(Deserialize)]
struct ShelfRow {
    #[serde(rename = "SK")]
    sk: String,
    #[serde(rename = "tu")]
    updated_at: Timestamp,
    #[serde(default)]
    ver: u64,
    #[serde(default)]
    name: String,
}

/// A resource (or its tombstone) as its `byChange` entry projects it.
#[derive(Deserialize)]
struct ChangeRow {
    #[serde(rename = "PK")]
    pk: String,
    id: String,
    #[serde(rename = "tu")]
    updated_at: Timestamp,
    #[serde(default)]
    ver: u64,
    #[serde(default)]
    name: String,
    #[serde(default)]
    del: bool,
}

/// The time a deletion's position starts with, and its expiry (as its TTL is written).
fn deletion_change(position: String) -> Option<Change> {
    let at = Timestamp::parse(position.split_once('#')?.0)?;
    let expires = at.millis() / 1000 + DELETION_RETENTION_SECS;
    Some(expiring(position, at, expires))
}

/// An entry of a list whose entries expire by TTL (deletions, delivery logs).
fn expiring(key: String, at: Timestamp, expires: i64) -> Change {
    Change {
        key,
        mark: Mark {
            at,
            ver: 0,
            folded: None,
            expires: Some(expires),
        },
        del: false,
    }
}

/// A delivery log entry from its `byChange` sort key `<createdAt>#<expires>#<id>`.
fn delivery_change(sk: &str) -> Option<Change> {
    let mut parts = sk.splitn(3, '#');
    let at = Timestamp::parse(parts.next()?)?;
    let expires = parts.next()?.parse().ok()?;
    Some(expiring(parts.next()?.to_string(), at, expires))
}

fn string(item: &Item, name: &str) -> Option<String> {
    item.get(name)?.as_s().ok().cloned()
}

fn shelf_mark(kind: ResourceKind, tu: Timestamp, ver: u64, name: &str) -> Mark {
    Mark {
        at: tu,
        ver,
        folded: (kind == ResourceKind::Asset).then(|| name.to_lowercase().into()),
        expires: None,
    }
}

impl Store {
    /// One page of the full read of `list` from `start`, and where the next one starts.
    pub(crate) async fn flat_load_page(
        &self,
        list: &Followed<'_>,
        start: Option<PageKey>,
        limit: Option<i32>,
    ) -> Result<(Vec<Change>, Option<PageKey>), StoreError> {
        let query = self
            .partition_query(list.partition(), None)
            .set_exclusive_start_key(PageKey::start(start))
            .set_limit(limit);
        let query = match list {
            Followed::Shelf { .. } => query
                .projection_expression("SK, tu, ver, #n")
                .expression_attribute_names("#n", "name"),
            Followed::Deletions { .. } => query.projection_expression(SK),
            Followed::Deliveries { .. } => query
                .projection_expression("SK, #ttl")
                .expression_attribute_names("#ttl", TTL),
        };
        let page = query
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        let next = PageKey::after(&page);
        let items = page.items.unwrap_or_default();
        let rows = match list {
            Followed::Shelf { shelf, .. } => {
                let rows: Vec<ShelfRow> = serde_dynamo::from_items(items)
                    .map_err(|e| StoreError::serde("resource", e))?;
                rows.into_iter()
                    .map(|r| Change {
                        mark: shelf_mark(shelf.kind, r.updated_at, r.ver, &r.name),
                        key: r.sk,
                        del: false,
                    })
                    .collect()
            }
            Followed::Deletions { .. } => items
                .iter()
                .filter_map(|i| deletion_change(string(i, SK)?))
                .collect(),
            Followed::Deliveries { .. } => items
                .iter()
                .filter_map(|i| {
                    let expires = i.get(TTL)?.as_n().ok()?.parse().ok()?;
                    Some(Change {
                        key: string(i, SK)?,
                        mark: Mark {
                            at: Timestamp::from_millis(0),
                            ver: 0,
                            folded: None,
                            expires: Some(expires),
                        },
                        del: false,
                    })
                })
                .collect(),
        };
        Ok((rows, next))
    }

    /// What was written to `list` after `since` (and, for resources, what was deleted).
    pub(crate) async fn flat_delta(
        &self,
        list: &Followed<'_>,
        since: Timestamp,
    ) -> Result<Vec<Change>, StoreError> {
        // Every sort key of a later time sorts after `<since>$`.
        let after = AttributeValue::S(format!("{since}$"));
        match *list {
            Followed::Shelf { org, shelf } => {
                let kind = shelf.kind.as_str();
                let pk = shelf.pk(org);
                let per_shard = try_all(change_pks(org, kind).into_iter().map(|t| {
                    let query = self
                        .change_query(t)
                        .key_condition_expression("GSI1PK = :t AND GSI2SK > :after")
                        .expression_attribute_values(":after", after.clone())
                        .projection_expression("PK, id, tu, ver, #n, del")
                        .expression_attribute_names("#n", "name");
                    self.query_all(query)
                }))
                .await?;
                let mut rows = Vec::new();
                for item in per_shard.into_iter().flatten() {
                    let r: ChangeRow = serde_dynamo::from_item(item)
                        .map_err(|e| StoreError::serde("index entry", e))?;
                    let ours = if r.del {
                        r.pk == tombstone_pk(
                            org,
                            kind,
                            &resource_identifier(shelf.definition, &r.id),
                        )
                    } else {
                        r.pk == pk
                    };
                    if ours {
                        rows.push(Change {
                            mark: shelf_mark(shelf.kind, r.updated_at, r.ver, &r.name),
                            key: r.id,
                            del: r.del,
                        });
                    }
                }
                Ok(rows)
            }
            Followed::Deletions { org, entity_type } => {
                let query = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .consistent_read(true)
                    .key_condition_expression("PK = :pk AND #sk > :after")
                    .expression_attribute_names("#sk", SK)
                    .expression_attribute_values(
                        ":pk",
                        AttributeValue::S(deletions_pk(org, entity_type)),
                    )
                    .expression_attribute_values(":after", after)
                    .projection_expression("#sk");
                Ok(self
                    .query_all(query)
                    .await?
                    .iter()
                    .filter_map(|i| deletion_change(string(i, SK)?))
                    .collect())
            }
            Followed::Deliveries { org, webhook } => {
                let query = self
                    .change_query(delivery_log_change_pk(org, webhook))
                    .key_condition_expression("GSI1PK = :t AND GSI2SK > :after")
                    .expression_attribute_values(":after", after)
                    .projection_expression("GSI2SK");
                Ok(self
                    .query_all(query)
                    .await?
                    .iter()
                    .filter_map(|i| delivery_change(&string(i, "GSI2SK")?))
                    .collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_log_keys_carry_time_and_expiry() {
        let d = deletion_change("2026-01-02T03:04:05.678Z#a#b".into()).unwrap();
        assert_eq!(d.key, "2026-01-02T03:04:05.678Z#a#b");
        let at = Timestamp::parse("2026-01-02T03:04:05.678Z").unwrap();
        assert_eq!(
            d.mark.expires,
            Some(at.millis() / 1000 + DELETION_RETENTION_SECS)
        );
        let sk = super::super::keys::delivery_log_sk("2026-01-02T03:04:05.678Z", 1700, "dlv_1");
        let c = delivery_change(&sk).unwrap();
        assert_eq!(
            (c.key.as_str(), c.mark.expires, c.mark.at),
            ("dlv_1", Some(1700), at)
        );
        assert!(delivery_change("nonsense").is_none());
        assert_eq!(resource_identifier(Some("color"), "red"), "color/red");
        assert_eq!(resource_identifier(None, "red"), "red");
    }
}
