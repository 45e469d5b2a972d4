//! Attribute definitions: one partition per organization, sort key `<entity>.<key>`, so a
//! uniqueness check is one conditional put and validation reads one BatchGetItem.

use super::items::AttributeItem;
use super::keys::{attribute_sk, attributes_pk};
use super::ops::item_key;
use super::{Store, StoreError};
use crate::domain::attributes::{AttributeDefinition, TargetEntity};
use crate::domain::time::Timestamp;
use std::collections::HashMap;

impl Store {
    /// Stores a new definition; `ConditionFailed` when the key and target entity exist.
    pub async fn put_definition(
        &self,
        org: &str,
        def: &AttributeDefinition,
    ) -> Result<(), StoreError> {
        let item = AttributeItem {
            pk: attributes_pk(org),
            sk: attribute_sk(def.target_entity.as_str(), &def.key),
            def: def.clone(),
            created_at: Timestamp::now(),
        };
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(
                serde_dynamo::to_item(&item).map_err(|e| StoreError::serde("attribute", e))?,
            ))
            .condition_expression("attribute_not_exists(PK)")
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("PutItem", e))?;
        Ok(())
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
        use aws_sdk_dynamodb::types::AttributeValue;
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .expression_attribute_values(":pk", AttributeValue::S(attributes_pk(org)))
            .consistent_read(true);
        query = match entity {
            None => query.key_condition_expression("PK = :pk"),
            Some(e) => query
                .key_condition_expression("PK = :pk AND begins_with(SK, :p)")
                .expression_attribute_values(":p", AttributeValue::S(format!("{}.", e.as_str()))),
        };
        let items = self.query_all(query).await?;
        let items: Vec<AttributeItem> =
            serde_dynamo::from_items(items).map_err(|e| StoreError::serde("attribute", e))?;
        Ok(items.into_iter().map(|i| i.def).collect())
    }
}
