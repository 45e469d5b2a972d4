//! Organizations and API keys: the operator CLI writes them, the authenticator reads them.

use super::items::{KeyItem, OrgItem};
use super::keys::{key_sk, org_pk, KEY_SK_PREFIX, ORG_SK, SK};
use super::ops::item_key;
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use crate::store::idempotency::Guard;
use aws_sdk_dynamodb::types::AttributeValue;

impl Store {
    /// Creates an organization with API access enabled; fails if the id is taken.
    pub async fn create_org(&self, id: &str, name: &str) -> Result<OrgItem, StoreError> {
        let org = OrgItem {
            pk: org_pk(id),
            sk: ORG_SK.into(),
            id: id.into(),
            name: name.into(),
            api_enabled: true,
            created_at: Timestamp::now(),
            rate_limit: None,
            // keys are issued tagged: it never has an untagged one
            untagged_keys: Some(0),
            history_retention_days: None,
        };
        self.put_new(&org, "org", None).await?;
        Ok(org)
    }

    pub async fn get_org(&self, id: &str) -> Result<Option<OrgItem>, StoreError> {
        self.get_item(item_key(org_pk(id), ORG_SK), "org").await
    }

    /// Turns API access on or off; `ConditionFailed` when the organization does not exist.
    pub async fn set_api_enabled(&self, id: &str, enabled: bool) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(id), ORG_SK)))
            .update_expression("SET apiEnabled = :e")
            .condition_expression("attribute_exists(PK)")
            .expression_attribute_values(":e", AttributeValue::Bool(enabled))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        Ok(())
    }

    /// Sets the organization's own rate limit (`None` removes it: the deployment's defaults
    /// apply); `ConditionFailed` when the organization does not exist.
    pub async fn set_rate_limit(
        &self,
        id: &str,
        limit: Option<super::items::RateLimit>,
    ) -> Result<(), StoreError> {
        let update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(id), ORG_SK)))
            .condition_expression("attribute_exists(PK)");
        let update = match limit {
            Some(l) => update
                .update_expression("SET rateLimit = :l")
                .expression_attribute_values(
                    ":l",
                    AttributeValue::M(
                        [
                            ("rate".to_string(), AttributeValue::N(l.rate.to_string())),
                            ("burst".to_string(), AttributeValue::N(l.burst.to_string())),
                        ]
                        .into(),
                    ),
                ),
            None => update.update_expression("REMOVE rateLimit"),
        };
        update
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        Ok(())
    }

    /// Counts the organization's live keys issued before tags (a COUNT Query of its keys,
    /// consistent) and keeps the count on its item. Keys are never issued untagged, so a
    /// count read at any time is at least the one of every later time: a late writer leaves
    /// a count too high (more bounded reads), never too low.
    pub async fn count_untagged_keys(&self, org: &str) -> Result<u32, StoreError> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk AND begins_with(SK, :p)")
            .filter_expression(
                "(attribute_not_exists(tagged) OR tagged = :f) AND (attribute_not_exists(revoked) OR revoked = :f)",
            )
            .expression_attribute_values(":pk", AttributeValue::S(org_pk(org)))
            .expression_attribute_values(":p", AttributeValue::S(KEY_SK_PREFIX.into()))
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .consistent_read(true);
        let count = u32::try_from(self.count_all(query).await?).unwrap_or(u32::MAX);
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(org), ORG_SK)))
            .update_expression("SET untaggedKeys = :n")
            .condition_expression("attribute_exists(PK)")
            .expression_attribute_values(":n", AttributeValue::N(count.to_string()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        Ok(count)
    }

    /// Sets how many days the organization's history entries written from now on are kept
    /// (`HISTORY_RETENTION_DAYS`; the change feed reads it with each batch's history heads):
    /// one UpdateItem, answering the organization's item as it is now; `ConditionFailed`
    /// when the organization does not exist.
    pub async fn set_history_retention(&self, id: &str, days: u32) -> Result<OrgItem, StoreError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(id), ORG_SK)))
            .update_expression("SET historyRetentionDays = :d")
            .condition_expression("attribute_exists(PK)")
            .expression_attribute_values(":d", AttributeValue::N(days.to_string()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        serde_dynamo::from_item(out.attributes.unwrap_or_default())
            .map_err(|e| StoreError::serde("org", e))
    }

    /// Stores a new key; fails if its id is taken.
    pub async fn put_key(
        &self,
        key: &KeyItem,
        guard: Option<&Guard>,
        claim: Option<&super::quotas::QuotaClaim>,
    ) -> Result<(), StoreError> {
        self.put_new_counted(key, "key", guard, claim).await
    }

    pub async fn list_keys(&self, org: &str) -> Result<Vec<KeyItem>, StoreError> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk AND begins_with(SK, :p)")
            .expression_attribute_values(":pk", AttributeValue::S(org_pk(org)))
            .expression_attribute_values(":p", AttributeValue::S(KEY_SK_PREFIX.into()))
            .consistent_read(true);
        let items = self.query_all(query).await?;
        serde_dynamo::from_items(items).map_err(|e| StoreError::serde("key", e))
    }

    /// Marks a key revoked; `ConditionFailed` when it does not exist.
    pub async fn revoke_key(&self, org: &str, key_id: &str) -> Result<(), StoreError> {
        self.revoke_key_where(org, key_id, "attribute_exists(PK)")
            .await
    }

    /// Revokes a live key; `false` when there is no such key or it is already revoked.
    pub async fn revoke_live_key(&self, org: &str, key_id: &str) -> Result<bool, StoreError> {
        match self
            .revoke_key_where(org, key_id, "attribute_exists(PK) AND revoked = :f")
            .await
        {
            Err(StoreError::ConditionFailed) => Ok(false),
            other => other.map(|()| true),
        }
    }

    /// Revokes a key under `condition`; a key issued before tags has the organization's
    /// count of them taken again (best effort: a count left high costs bounded reads).
    async fn revoke_key_where(
        &self,
        org: &str,
        key_id: &str,
        condition: &str,
    ) -> Result<(), StoreError> {
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(org), key_sk(key_id))))
            .update_expression("SET revoked = :t")
            .condition_expression(condition)
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld);
        if condition.contains(":f") {
            update = update.expression_attribute_values(":f", AttributeValue::Bool(false));
        }
        let old = update
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?
            .attributes
            .unwrap_or_default();
        let untagged = !matches!(old.get("tagged"), Some(AttributeValue::Bool(true)));
        if untagged {
            if let Err(e) = self.count_untagged_keys(org).await {
                tracing::warn!(%org, error = %e, "untagged keys not counted again");
            }
        }
        Ok(())
    }

    /// Records that a key authenticated a request at `at` (best effort, at most hourly).
    pub async fn touch_key(
        &self,
        org: &str,
        key_id: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(org), key_sk(key_id))))
            .update_expression("SET lastUsedAt = :at")
            .condition_expression("attribute_exists(PK)")
            .expression_attribute_values(
                ":at",
                serde_dynamo::to_attribute_value(at).map_err(|e| StoreError::serde("key", e))?,
            )
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        Ok(())
    }

    /// Reads an organization and one of its keys in one request (BatchGetItem, strongly
    /// consistent): the whole cost of authenticating a request on a cache miss.
    pub async fn get_org_and_key(
        &self,
        org: &str,
        key_id: &str,
    ) -> Result<(Option<OrgItem>, Option<KeyItem>), StoreError> {
        let found = self
            .batch_get(vec![
                item_key(org_pk(org), ORG_SK),
                item_key(org_pk(org), key_sk(key_id)),
            ])
            .await?;
        let mut org_item = None;
        let mut key_item = None;
        for item in found {
            match item.get(SK).and_then(|v| v.as_s().ok()).map(String::as_str) {
                Some(ORG_SK) => {
                    org_item = Some(
                        serde_dynamo::from_item(item).map_err(|e| StoreError::serde("org", e))?,
                    )
                }
                Some(_) => {
                    key_item = Some(
                        serde_dynamo::from_item(item).map_err(|e| StoreError::serde("key", e))?,
                    )
                }
                None => {}
            }
        }
        Ok((org_item, key_item))
    }
}

impl KeyItem {
    /// A key issued now (live, tagged), at its place in its organization's partition.
    pub fn issued(
        org: &str,
        key_id: &str,
        secret_hash: &str,
        name: &str,
        scopes: Vec<String>,
    ) -> Self {
        Self {
            pk: org_pk(org),
            sk: key_sk(key_id),
            key_id: key_id.to_string(),
            org: org.to_string(),
            name: name.to_string(),
            secret_hash: secret_hash.to_string(),
            scopes,
            revoked: false,
            created_at: Timestamp::now(),
            last_used_at: None,
            tagged: true,
        }
    }
}
