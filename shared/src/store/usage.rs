//! An organization's usage per UTC day (`O#<org>#U` / `YYYY-MM-DD`): processes add what
//! they counted with one UpdateItem `ADD` (commutative, so any number of them may add at
//! once), and `GET /usage` reads a month with one Query. Days expire after 400 days.

use super::keys::{usage_pk, SK, TTL};
use super::ops::{item_key, number as n};
use super::{Store, StoreError};
use crate::domain::usage::Tally;
use aws_sdk_dynamodb::types::AttributeValue;

/// How long a day's counts are kept, in seconds.
const KEEP_SECS: i64 = 400 * 86_400;

impl Store {
    /// Adds `tally` to `org`'s counts of `day` (`YYYY-MM-DD`).
    pub async fn add_usage(&self, org: &str, day: &str, tally: &Tally) -> Result<(), StoreError> {
        let fields = tally.attributes();
        if fields.is_empty() {
            return Ok(());
        }
        let adds: Vec<String> = fields.iter().map(|(a, _)| format!("{a} :{a}")).collect();
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(usage_pk(org), day)))
            .update_expression(format!("ADD {} SET #ttl = :ttl", adds.join(", ")))
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":ttl", n(chrono::Utc::now().timestamp() + KEEP_SECS));
        for (attr, value) in fields {
            update = update.expression_attribute_values(format!(":{attr}"), n(value));
        }
        update
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        Ok(())
    }

    /// `org`'s counts of the days from `first` to `last` (inclusive, `YYYY-MM-DD`), in order.
    pub async fn usage_days(
        &self,
        org: &str,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, Tally)>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk AND SK BETWEEN :first AND :last")
            .expression_attribute_values(":pk", AttributeValue::S(usage_pk(org)))
            .expression_attribute_values(":first", AttributeValue::S(first.into()))
            .expression_attribute_values(":last", AttributeValue::S(last.into()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        Ok(out
            .items()
            .iter()
            .filter_map(|item| {
                let day = item.get(SK)?.as_s().ok()?.clone();
                let tally = Tally::from_attributes(|a| {
                    item.get(a)
                        .and_then(|v| v.as_n().ok())
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0)
                });
                Some((day, tally))
            })
            .collect())
    }
}
