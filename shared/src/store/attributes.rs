//! Attribute definitions: one partition per organization, sort key `<entity>.<key>`, so a
//! uniqueness check is one conditional put and validation reads one BatchGetItem.

use super::items::AttributeItem;
use super::keys::{attribute_sk, attributes_pk};
use super::ops::item_key;
use super::{Store, StoreError};
use crate::domain::attributes::{AttributeDefinition, TargetEntity};
use crate::domain::time::Timestamp;
use crate::store::idempotency::Guard;
use std::collections::HashMap;

impl Store {
    /// Stores a new definition; `ConditionFailed` when the key and target entity exist.
    pub async fn put_definition(
        &self,
        org: &str,
        def: &AttributeDefinition,
        guard: Option<&Guard>,
        claim: Option<&crate::store::quotas::QuotaClaim>,
    ) -> Result<(), StoreError> {
        let item = AttributeItem {
            pk: attributes_pk(org),
            sk: attribute_sk(def.target_entity.as_str(), &def.key),
            def: def.clone(),
            created_at: Timestamp::now(),
        };
        self.put_new_counted(&item, "attribute", guard, claim).await
    }

    /// Reads the definitions of `keys` (unprefixed) for one entity; missing keys are absent
    /// from the map. One BatchGetItem per 100 keys.
    pub async fn get_definitions(
        &self,
        org: &str,
        entity: TargetEntity,
        keys: impl IntoIterator<Item = &str>,
    ) -> Result<HashMap<String, AttributeDefinition>, StoreError> {
        let wanted = keys
            .into_iter()
            .map(|k| item_key(attributes_pk(org), attribute_sk(entity.as_str(), k)))
            .collect();
        let mut defs = HashMap::new();
        for item in self.batch_get(wanted).await? {
            let item: AttributeItem =
                serde_dynamo::from_item(item).map_err(|e| StoreError::serde("attribute", e))?;
            defs.insert(item.def.key.clone(), item.def);
        }
        Ok(defs)
    }
}

impl Store {
    /// One definition by entity and unprefixed key.
    pub async fn get_definition(
        &self,
        org: &str,
        entity: TargetEntity,
        key: &str,
    ) -> Result<Option<AttributeDefinition>, StoreError> {
        let item: Option<AttributeItem> = self
            .get_item(
                item_key(attributes_pk(org), attribute_sk(entity.as_str(), key)),
                "attribute",
            )
            .await?;
        Ok(item.map(|i| i.def))
    }

    /// Every definition of the organization (of one entity when given), in key order: one
    /// Query of the definitions partition (more pages only past 1 MB).
    pub async fn list_definitions(
        &self,
        org: &str,
        entity: Option<TargetEntity>,
    ) -> Result<Vec<AttributeDefinition>, StoreError> {
        let prefix = entity.map(|e| format!("{}.", e.as_str()));
        let query = self.partition_query(attributes_pk(org), prefix);
        let items = self.query_all(query).await?;
        let items: Vec<AttributeItem> =
            serde_dynamo::from_items(items).map_err(|e| StoreError::serde("attribute", e))?;
        Ok(items.into_iter().map(|i| i.def).collect())
    }
}

impl Store {
    /// Whether any entity of `entity` holds a value of attribute `key`: a Query of each of
    /// the entity type's `byChange` partitions, in parallel, filtered on the projected
    /// attribute keys, each stopping at its first page with a match.
    pub async fn attribute_in_use(
        &self,
        org: &str,
        entity: TargetEntity,
        key: &str,
    ) -> Result<bool, StoreError> {
        use super::keys::change_pks;
        use aws_sdk_dynamodb::types::{AttributeValue, Select};
        let shard_in_use = |pk: String| async move {
            let mut pages = self
                .change_query(pk)
                .key_condition_expression("GSI1PK = :t")
                .filter_expression("contains(ak, :k)")
                .expression_attribute_values(":k", AttributeValue::S(key.to_string()))
                .select(Select::Count)
                .into_paginator()
                .send();
            while let Some(page) = pages.next().await {
                let page = page.map_err(|e| StoreError::from_sdk("Query", e))?;
                if page.count > 0 {
                    return Ok::<bool, StoreError>(true);
                }
            }
            Ok(false)
        };
        let shards = super::parallel::try_all(
            change_pks(org, entity.as_str())
                .into_iter()
                .map(shard_in_use),
        )
        .await?;
        Ok(shards.into_iter().any(|used| used))
    }

    /// Deletes a definition; `ConditionFailed` when it does not exist.
    pub async fn delete_definition(
        &self,
        org: &str,
        entity: TargetEntity,
        key: &str,
    ) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(
                attributes_pk(org),
                attribute_sk(entity.as_str(), key),
            )))
            .condition_expression("attribute_exists(PK)")
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("DeleteItem", e))?;
        Ok(())
    }
}
