//! Subscriptions: one item each under the organization's webhooks partition, replaced at a version.

use super::*;
use crate::store::idempotency::Guard;

impl Store {
    /// Creates a subscription (its id is new, so only a clash of ids could fail).
    pub async fn create_subscription(
        &self,
        org: &str,
        sub: &Subscription,
        guard: Option<&Guard>,
        claim: Option<&crate::store::quotas::QuotaClaim>,
    ) -> Result<(), StoreError> {
        let item = SubscriptionItem {
            pk: webhooks_pk(org),
            sk: sub.id.clone(),
            sub: sub.clone(),
        };
        self.put_new_counted(&item, "webhook", guard, claim).await
    }

    pub async fn get_subscription(
        &self,
        org: &str,
        id: &str,
    ) -> Result<Option<Subscription>, StoreError> {
        let item: Option<SubscriptionItem> = self
            .get_item(item_key(webhooks_pk(org), id), "webhook")
            .await?;
        Ok(item.map(|i| i.sub))
    }

    /// A subscription and its endpoint's health (the default when it never failed): one
    /// BatchGetItem.
    pub async fn get_subscription_and_health(
        &self,
        org: &str,
        id: &str,
    ) -> Result<(Option<Subscription>, Health), StoreError> {
        let sub_key = item_key(webhooks_pk(org), id);
        let health_key = item_key(health_pk(org, id), HEALTH_SK);
        let mut found = (None, Health::default());
        for item in self.batch_get(vec![sub_key, health_key]).await? {
            let pk = item.get(PK).and_then(|v| v.as_s().ok()).cloned();
            if pk.as_deref() == Some(webhooks_pk(org).as_str()) {
                found.0 = Some(decode::<SubscriptionItem>(item, "webhook")?.sub);
            } else {
                found.1 = decode(item, "endpoint health")?;
            }
        }
        Ok(found)
    }

    /// Every subscription of the organization, oldest first: one Query.
    pub async fn list_subscriptions(&self, org: &str) -> Result<Vec<Subscription>, StoreError> {
        let items = self
            .query_all(self.partition_query(webhooks_pk(org), None))
            .await?;
        items
            .into_iter()
            .map(|i| decode::<SubscriptionItem>(i, "webhook").map(|i| i.sub))
            .collect()
    }

    /// Replaces a subscription read at version `sub.ver - 1`: `ConditionFailed` when another
    /// write moved it or it was deleted (or, with a quota `claim`, when another create or
    /// re-point of the organization's subscriptions came first: one transaction).
    pub async fn save_subscription(
        &self,
        org: &str,
        sub: &Subscription,
        claim: Option<&crate::store::quotas::QuotaClaim>,
    ) -> Result<(), StoreError> {
        let item = SubscriptionItem {
            pk: webhooks_pk(org),
            sk: sub.id.clone(),
            sub: sub.clone(),
        };
        let expect = crate::store::ops::Expect::Version(sub.ver - 1);
        let also = claim.map(|c| c.action(&self.table));
        self.put_expecting(&item, expect, "webhook", None, also)
            .await
    }

    /// Deletes a subscription; `false` when there was none. Its delivery log expires by TTL.
    pub async fn delete_subscription(
        &self,
        org: &str,
        id: &str,
        at_version: Option<u64>,
    ) -> Result<bool, StoreError> {
        let mut delete = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(webhooks_pk(org), id)))
            .condition_expression("attribute_exists(PK)");
        if let Some(v) = at_version {
            delete = delete
                .condition_expression("attribute_exists(PK) AND ver = :v")
                .expression_attribute_values(":v", AttributeValue::N(v.to_string()));
        }
        let out = delete
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("DeleteItem", e));
        match out {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }
    /// Disables an enabled subscription with `reason` (a new version, so a PATCH read before
    /// it fails its condition and reads again); `false` when it was no longer enabled.
    pub async fn disable_subscription(
        &self,
        org: &str,
        webhook: &str,
        reason: &str,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(webhooks_pk(org), webhook)))
            .update_expression(
                "SET enabled = :no, disabledReason = :why, updatedAt = :at, ver = ver + :one",
            )
            .condition_expression("enabled = :yes")
            .expression_attribute_values(":no", AttributeValue::Bool(false))
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .expression_attribute_values(":why", s(reason))
            .expression_attribute_values(":at", s(at.to_string()))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e));
        match out {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
