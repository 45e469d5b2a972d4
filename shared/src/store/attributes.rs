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
