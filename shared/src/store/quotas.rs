//! What an organization holds of a kind it creates through settings (attribute
//! definitions, families, profiles, metaobject definitions), counted for its quota, and
//! the hourly counters of actions limited per hour (replays).

use super::keys::{org_pk, TTL};
use super::ops::item_key;
use super::{Store, StoreError};
use aws_sdk_dynamodb::types::{AttributeValue, Select, TransactWriteItem, Update};

/// What a creator under a quota read before it counted: the version of the organization's
/// creations of that kind (`O#<org>` / `QUOTA#<kind>`, attribute `v`). Its create moves the
/// version in the same transaction, conditioned on this value, so of two creators that
/// counted the same state only one writes; the other reads and counts again. Deletes do not
/// move it: a count can only have fallen meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaClaim {
    org: String,
    kind: &'static str,
    seen: u64,
}

impl QuotaClaim {
    fn key(org: &str, kind: &str) -> super::ops::Item {
        item_key(org_pk(org), format!("QUOTA#{kind}"))
    }

    /// The transaction action that moves the version on, if it is still the one read.
    pub(crate) fn action(&self, table: &str) -> TransactWriteItem {
        let update = Update::builder()
            .table_name(table)
            .set_key(Some(Self::key(&self.org, self.kind)))
            .update_expression("SET v = :next")
            .expression_attribute_values(":next", AttributeValue::N((self.seen + 1).to_string()));
        let update = if self.seen == 0 {
            update.condition_expression("attribute_not_exists(v)")
        } else {
            update
                .condition_expression("v = :seen")
                .expression_attribute_values(":seen", AttributeValue::N(self.seen.to_string()))
        };
        TransactWriteItem::builder()
            .update(update.build().expect("key, table and expression are set"))
            .build()
    }
}

/// What an organization creates through settings, counted for its quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    AttributeDefinitions,
    Families,
    CompletenessProfiles,
    MetaobjectDefinitions,
}

impl Counted {
    /// Its quota's name (`QUOTA#<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Counted::AttributeDefinitions => "attributes",
            Counted::Families => "families",
            Counted::CompletenessProfiles => "profiles",
            Counted::MetaobjectDefinitions => "metaobject-definitions",
        }
    }
}

impl Store {
    /// Puts `item` (a `what`) only if no item has its key, and, under a quota, moves the
    /// version `claim` read in the same transaction: `ConditionFailed` when either changed.
    pub(crate) async fn put_new_counted<T: serde::Serialize>(
        &self,
        item: &T,
        what: &str,
        guard: Option<&super::idempotency::Guard>,
        claim: Option<&QuotaClaim>,
    ) -> Result<(), StoreError> {
        let also = claim.map(|c| c.action(&self.table));
        self.put_expecting(item, super::ops::Expect::Absent, what, guard, also)
            .await
    }

    /// The version of `org`'s creations of `kind`, read before they are counted (one
    /// strongly consistent GetItem; 0 before the first).
    pub async fn quota_claim(
        &self,
        org: &str,
        kind: &'static str,
    ) -> Result<QuotaClaim, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(QuotaClaim::key(org, kind)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("GetItem", e))?;
        let seen = out
            .item
            .as_ref()
            .and_then(|i| i.get("v"))
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(QuotaClaim {
            org: org.to_string(),
            kind,
            seen,
        })
    }

    /// How many of `what` the organization holds (see [`Store::count_partition`]).
    pub async fn count_of(&self, org: &str, what: Counted) -> Result<usize, StoreError> {
        let pk = match what {
            Counted::AttributeDefinitions => super::keys::attributes_pk(org),
            Counted::Families => super::keys::families_pk(org),
            Counted::CompletenessProfiles => super::keys::profiles_pk(org),
            Counted::MetaobjectDefinitions => super::keys::metaobject_defs_pk(org),
        };
        self.count_partition(pk).await
    }

    /// How many items partition `pk` holds: a COUNT Query (no item leaves the table; a
    /// request per 1 MB read, and the partitions counted are bounded by their quotas).
    pub(crate) async fn count_partition(&self, pk: String) -> Result<usize, StoreError> {
        let mut total = 0usize;
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                // strongly consistent: a create counted under a quota must see the last one
                .consistent_read(true)
                .key_condition_expression("PK = :pk")
                .expression_attribute_values(":pk", AttributeValue::S(pk.clone()))
                .select(Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query", e))?;
            total += out.count.max(0) as usize;
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(total),
            }
        }
    }

    /// Counts one more `what` in the organization's counter for the hour `hour` (unix
    /// seconds / 3600), unless it holds `max` already: `false` then, nothing counted.
    pub async fn count_in_hour(
        &self,
        org: &str,
        what: &str,
        hour: i64,
        max: usize,
    ) -> Result<bool, StoreError> {
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(org), format!("{what}#{hour}"))))
            .update_expression("ADD n :one SET #ttl = :ttl")
            .condition_expression("attribute_not_exists(n) OR n < :max")
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":max", AttributeValue::N(max.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(((hour + 2) * 3600).to_string()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e));
        match sent {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
