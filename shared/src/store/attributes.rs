//! Attribute definitions: one partition per organization, sort key `<entity>.<key>`, so a
//! uniqueness check is one conditional put and validation reads one BatchGetItem.

use super::items::AttributeItem;
use super::keys::{attribute_sk, attributes_pk, PK, SK};
use super::{Store, StoreError};
use crate::domain::attributes::{AttributeDefinition, TargetEntity};
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use std::collections::HashMap;

/// BatchGetItem reads at most 100 keys per request.
const BATCH_GET_LIMIT: usize = 100;

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
        let wanted: Vec<HashMap<String, AttributeValue>> = keys
            .into_iter()
            .map(|k| {
                HashMap::from([
                    (PK.to_string(), AttributeValue::S(attributes_pk(org))),
                    (
                        SK.to_string(),
                        AttributeValue::S(attribute_sk(entity.as_str(), k)),
                    ),
                ])
            })
            .collect();
        let mut defs = HashMap::new();
        for chunk in wanted.chunks(BATCH_GET_LIMIT) {
            let mut pending = Some(
                KeysAndAttributes::builder()
                    .set_keys(Some(chunk.to_vec()))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| StoreError::Other(e.to_string()))?,
            );
            while let Some(keys) = pending.take() {
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, keys)
                    .send()
                    .await
                    .map_err(|e| StoreError::from_sdk("BatchGetItem", e))?;
                for item in out
                    .responses
                    .and_then(|mut r| r.remove(&self.table))
                    .unwrap_or_default()
                {
                    let item: AttributeItem = serde_dynamo::from_item(item)
                        .map_err(|e| StoreError::serde("attribute", e))?;
                    defs.insert(item.def.key.clone(), item.def);
                }
                pending = out.unprocessed_keys.and_then(|mut u| u.remove(&self.table));
            }
        }
        Ok(defs)
    }
}
