//! Metaobject definitions: one partition per organization, sort key the definition name.
//! Their fields validate a metaobject's values the way attribute definitions validate an
//! entity's.

use super::keys::metaobject_defs_pk;
use super::ops::item_key;
use super::{Store, StoreError};
use crate::domain::attributes::{AttributeDefinition, TargetEntity, ValueShape};
use crate::domain::time::Timestamp;
use crate::store::idempotency::Guard;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One field of a metaobject definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetaField {
    pub key: String,
    #[serde(flatten)]
    pub shape: ValueShape,
}

/// A metaobject definition, as stored and served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetaobjectDefinition {
    pub name: String,
    pub display_name: String,
    pub fields: Vec<MetaField>,
}

impl MetaobjectDefinition {
    /// The fields as attribute definitions, keyed by field key, for value validation.
    pub fn field_definitions(&self) -> HashMap<String, AttributeDefinition> {
        self.fields
            .iter()
            .map(|f| {
                let mut def =
                    AttributeDefinition::simple(TargetEntity::Product, &f.key, f.shape.attr_type);
                def.shape = f.shape.clone();
                (f.key.clone(), def)
            })
            .collect()
    }
}

#[derive(Serialize, Deserialize)]
pub(crate) struct DefinitionItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    #[serde(flatten)]
    pub(crate) def: MetaobjectDefinition,
    #[serde(rename = "createdAt")]
    created_at: Timestamp,
}

impl Store {
    /// Stores a new definition; `ConditionFailed` when the name exists.
    pub async fn create_metaobject_definition(
        &self,
        org: &str,
        def: &MetaobjectDefinition,
        guard: Option<&Guard>,
        claim: Option<&crate::store::quotas::QuotaClaim>,
    ) -> Result<(), StoreError> {
        let item = DefinitionItem {
            pk: metaobject_defs_pk(org),
            sk: def.name.clone(),
            def: def.clone(),
            created_at: Timestamp::now(),
        };
        self.put_new_counted(&item, "metaobject definition", guard, claim)
            .await
    }

    pub async fn get_metaobject_definition(
        &self,
        org: &str,
        name: &str,
    ) -> Result<Option<MetaobjectDefinition>, StoreError> {
        let item: Option<DefinitionItem> = self
            .get_item(
                item_key(metaobject_defs_pk(org), name),
                "metaobject definition",
            )
            .await?;
        Ok(item.map(|i| i.def))
    }

    /// Every definition in name order: one Query.
    pub async fn list_metaobject_definitions(
        &self,
        org: &str,
    ) -> Result<Vec<MetaobjectDefinition>, StoreError> {
        let query = self.partition_query(metaobject_defs_pk(org), None);
        let items: Vec<DefinitionItem> = serde_dynamo::from_items(self.query_all(query).await?)
            .map_err(|e| StoreError::serde("metaobject definition", e))?;
        Ok(items.into_iter().map(|i| i.def).collect())
    }
}
