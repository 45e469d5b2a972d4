//! Assets, categories, bundles and metaobjects: flat resources, one partition per type (per
//! definition for metaobjects) with the identifier as sort key, so a list is one Query in
//! identifier order and a uniqueness check is one conditional put. Each item also sits in
//! its type's `byChange` partition, so the change feed sees it like any entity.

use super::keys::{change_sk, entity_change_pk, metaobjects_pk, reshard, resource_pk};
use super::ops::Expect;
use super::ops::{item_key, Item};
use super::{Store, StoreError};
use crate::domain::entity_types::EntityType;
use crate::domain::time::Timestamp;
use crate::domain::values::StoredValues;
use crate::store::idempotency::Guard;
use serde::{Deserialize, Serialize};

/// The flat resource types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceKind {
    Asset,
    Category,
    Bundle,
    Metaobject,
}

impl ResourceKind {
    /// The entity type the kind is (its name on items, events and topics).
    pub fn entity_type(self) -> EntityType {
        match self {
            Self::Asset => EntityType::Asset,
            Self::Category => EntityType::Category,
            Self::Bundle => EntityType::Bundle,
            Self::Metaobject => EntityType::Metaobject,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.entity_type().as_str()
    }
}

/// Where resources of a type live: metaobjects have one partition per definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shelf<'a> {
    pub kind: ResourceKind,
    pub definition: Option<&'a str>,
}

impl<'a> Shelf<'a> {
    pub const ASSETS: Shelf<'static> = Shelf::of(ResourceKind::Asset);
    pub const CATEGORIES: Shelf<'static> = Shelf::of(ResourceKind::Category);
    pub const BUNDLES: Shelf<'static> = Shelf::of(ResourceKind::Bundle);

    pub const fn of(kind: ResourceKind) -> Self {
        Self {
            kind,
            definition: None,
        }
    }

    pub fn metaobjects(definition: &'a str) -> Self {
        Self {
            kind: ResourceKind::Metaobject,
            definition: Some(definition),
        }
    }

    pub fn pk(&self, org: &str) -> String {
        match self.definition {
            Some(d) => metaobjects_pk(org, d),
            None => resource_pk(org, self.kind.as_str()),
        }
    }

    /// The primary key of the resource `id` on this shelf.
    pub fn key(&self, org: &str, id: &str) -> Item {
        item_key(self.pk(org), id)
    }
}

/// The identifier a resource's tombstone and deletion record name it by: a metaobject's
/// is `<definition>/<identifier>`.
pub fn resource_identifier(definition: Option<&str>, id: &str) -> String {
    match definition {
        Some(def) => format!("{def}/{id}"),
        None => id.to_string(),
    }
}

/// One line of a bundle: a SKU and how many of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleLine {
    pub sku: String,
    pub quantity: u32,
}

/// An asset, category, bundle or metaobject item. Fields a type does not use stay absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceItem {
    #[serde(rename = "PK")]
    pub(in crate::store) pk: String,
    #[serde(rename = "SK")]
    pub(in crate::store) sk: String,
    #[serde(rename = "GSI1PK")]
    pub(in crate::store) gsi1pk: String,
    #[serde(rename = "GSI2SK")]
    pub(in crate::store) gsi2sk: String,
    pub kind: String,
    pub id: String,
    /// The metaobject's definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub def: Option<String>,
    pub name: String,
    #[serde(default)]
    #[serde(rename = "vals")]
    pub values: StoredValues,
    #[serde(rename = "su")]
    pub self_updated_at: Timestamp,
    #[serde(rename = "tu")]
    pub updated_at: Timestamp,
    /// Optimistic-concurrency version: every write of the item, link changes included.
    pub ver: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// A category's parent category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// A category's child version: moves whenever a category is put under it, so that a
    /// delete that found no children fails if one arrived since.
    #[serde(default)]
    pub cver: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<BundleLine>,
    /// Keys of the attributes that hold a value (as on entities, for `attribute_in_use`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(rename = "ak")]
    pub attribute_keys: Vec<String>,
    /// Products that link this asset or category: maintained with set `ADD`/`DELETE` in the
    /// same transactions as the links, so a delete knows whom to unlink.
    #[serde(
        rename = "linkedBy",
        with = "serde_dynamo::string_set",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub linked_by: Vec<String>,
    /// The metaobject references the counters hold for this item, as on entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mr: Option<Vec<String>>,
}

impl ResourceItem {
    /// A new resource on `shelf`, created at `at`.
    pub fn new(org: &str, shelf: Shelf<'_>, id: &str, name: &str, at: Timestamp) -> Self {
        Self {
            pk: shelf.pk(org),
            sk: id.to_string(),
            gsi1pk: entity_change_pk(org, shelf.kind.as_str(), id),
            gsi2sk: change_sk(&at.to_string(), id),
            kind: shelf.kind.as_str().to_string(),
            id: id.to_string(),
            def: shelf.definition.map(str::to_string),
            name: name.to_string(),
            values: StoredValues::new(),
            self_updated_at: at,
            updated_at: at,
            ver: 0,
            url: None,
            mime_type: None,
            parent: None,
            cver: 0,
            items: Vec::new(),
            attribute_keys: Vec::new(),
            linked_by: Vec::new(),
            mr: None,
        }
    }

    /// Records a change of the resource at `at` (never backwards) and refreshes the derived
    /// index fields and the version.
    pub fn touch(&mut self, at: Timestamp) {
        self.self_updated_at = self.self_updated_at.max(at);
        self.updated_at = self.updated_at.max(at);
        self.gsi1pk = reshard(&self.gsi1pk, &self.id);
        self.gsi2sk = change_sk(&self.updated_at.to_string(), &self.id);
        self.attribute_keys = self.values.keys().cloned().collect();
        self.ver += 1;
    }

    pub fn key(&self) -> Item {
        item_key(self.pk.clone(), self.sk.clone())
    }
}

fn decode(items: Vec<Item>) -> Result<Vec<ResourceItem>, StoreError> {
    serde_dynamo::from_items(items).map_err(|e| StoreError::serde("resource", e))
}

impl Store {
    /// One resource, strongly consistent.
    pub async fn get_resource(
        &self,
        org: &str,
        shelf: Shelf<'_>,
        id: &str,
    ) -> Result<Option<ResourceItem>, StoreError> {
        self.get_item(shelf.key(org, id), "resource").await
    }

    /// Resources by key: one BatchGetItem per 100 keys, in parallel; missing ones absent.
    pub async fn get_resources(&self, keys: Vec<Item>) -> Result<Vec<ResourceItem>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        decode(self.batch_get(keys).await?)
    }

    /// Writes one resource alone (one PutItem): created when `expect` is `Absent`, else only
    /// if its version is still the one read; `ConditionFailed` otherwise.
    pub async fn put_resource(
        &self,
        item: &ResourceItem,
        expect: Expect,
        guard: Option<&Guard>,
    ) -> Result<(), StoreError> {
        self.put_expecting(item, expect, "resource", guard, None)
            .await
    }

    /// Every resource on `shelf`, in identifier order: one Query (a request per 1 MB).
    pub async fn list_resources(
        &self,
        org: &str,
        shelf: Shelf<'_>,
    ) -> Result<Vec<ResourceItem>, StoreError> {
        decode(
            self.query_all(self.partition_query(shelf.pk(org), None))
                .await?,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::items::EntityKind;

    #[test]
    fn every_entity_type_is_one_kind_of_item() {
        let trees = [EntityKind::Product, EntityKind::Variant, EntityKind::Sku];
        let flat = [
            ResourceKind::Asset,
            ResourceKind::Category,
            ResourceKind::Bundle,
            ResourceKind::Metaobject,
        ];
        let mut types: Vec<EntityType> = trees.map(EntityKind::entity_type).to_vec();
        types.extend(flat.map(ResourceKind::entity_type));
        types.sort();
        assert_eq!(types, EntityType::ALL);
        assert_eq!(Shelf::BUNDLES.pk("o1"), "O#o1#R#bundle");
    }

    #[test]
    fn links_round_trip_as_a_string_set() {
        let mut item = ResourceItem::new(
            "o1",
            Shelf::ASSETS,
            "logo",
            "Logo",
            Timestamp::from_millis(0),
        );
        item.linked_by = vec!["p1".into(), "p2".into()];
        let av: Item = serde_dynamo::to_item(&item).unwrap();
        assert!(matches!(
            av.get("linkedBy"),
            Some(aws_sdk_dynamodb::types::AttributeValue::Ss(_))
        ));
        assert_eq!(av["PK"].as_s().unwrap(), "O#o1#R#asset");
        let back: ResourceItem = serde_dynamo::from_item(av).unwrap();
        assert_eq!(back, item);
        let empty = ResourceItem::new(
            "o1",
            Shelf::metaobjects("color"),
            "red",
            "Red",
            Timestamp::from_millis(0),
        );
        let av: Item = serde_dynamo::to_item(&empty).unwrap();
        assert!(!av.contains_key("linkedBy"));
        assert_eq!(av["PK"].as_s().unwrap(), "O#o1#R#metaobject#color");
    }
}
