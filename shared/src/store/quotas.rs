//! What an organization holds of a kind it creates through settings (attribute
//! definitions, families, profiles, metaobject definitions), counted for its quota, and
//! the hourly counters of actions limited per hour (replays).

use super::keys::{org_pk, TTL};
use super::ops::item_key;
use super::{Store, StoreError};
use aws_sdk_dynamodb::types::{AttributeValue, Select};

/// What an organization creates through settings, counted for its quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    AttributeDefinitions,
    Families,
    CompletenessProfiles,
    MetaobjectDefinitions,
}

impl Store {
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
