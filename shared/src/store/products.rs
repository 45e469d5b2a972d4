//! The product tree: a product, its variants and SKUs are one item collection
//! (`PK = O#<org>#P#<product>`), so any read of a product's hierarchy is one Query.

use super::items::{EntityItem, EntityKind};
use super::keys::{
    change_sk, product_pk, sku_ref_pk, sku_sk, type_pk, variant_ref_pk, variant_sk, PRODUCT_SK,
    REF_SK, SKU_LEVEL,
};
use super::ops::item_key;
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use crate::domain::values::StoredValues;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use std::collections::HashMap;

/// A product with the descendants a read asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ProductTree {
    pub product: EntityItem,
    pub variants: Vec<EntityItem>,
    pub skus: Vec<EntityItem>,
}

/// How much of the tree a read needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeDepth {
    Product,
    Variants,
    Skus,
}

impl EntityItem {
    /// A new entity with keys derived from `org`, its kind and parents.
    pub fn new(
        org: &str,
        kind: EntityKind,
        id: &str,
        parents: (Option<&str>, Option<&str>),
        name: &str,
        vals: StoredValues,
        at: Timestamp,
    ) -> Self {
        let (pid, vid) = parents;
        let product = match kind {
            EntityKind::Product => id,
            _ => pid.expect("variants and SKUs have a product"),
        };
        let sk = match kind {
            EntityKind::Product => PRODUCT_SK.to_string(),
            EntityKind::Variant => variant_sk(id),
            EntityKind::Sku => sku_sk(vid.expect("SKUs have a variant"), id),
        };
        Self {
            pk: product_pk(org, product),
            sk,
            gsi1pk: type_pk(org, kind.as_str()),
            gsi1sk: id.to_string(),
            gsi2sk: change_sk(&at.to_string(), id),
            kind,
            id: id.to_string(),
            name: name.to_string(),
            pid: pid.map(str::to_string),
            vid: vid.map(str::to_string),
            vals,
            su: at,
            tu: at,
            ver: 0,
            family_id: None,
        }
    }

    /// Records a write at `at`: own and tree timestamps, change-index key, version.
    pub fn touch(&mut self, at: Timestamp) {
        self.su = self.su.max(at);
        self.tu = self.tu.max(at);
        self.gsi2sk = change_sk(&self.tu.to_string(), &self.id);
        self.ver += 1;
    }
}

fn decode(items: Vec<HashMap<String, AttributeValue>>) -> Result<Vec<EntityItem>, StoreError> {
    serde_dynamo::from_items(items).map_err(|e| StoreError::serde("entity", e))
}

impl Store {
    /// The product item alone (one GetItem, strongly consistent).
    pub async fn get_product(&self, org: &str, id: &str) -> Result<Option<EntityItem>, StoreError> {
        self.get_item(item_key(product_pk(org, id), PRODUCT_SK), "entity")
            .await
    }

    /// The product and as much of its tree as `depth` asks, in one Query (more pages only
    /// when the collection exceeds 1 MB). `None` when the product does not exist.
    pub async fn get_product_tree(
        &self,
        org: &str,
        id: &str,
        depth: TreeDepth,
    ) -> Result<Option<ProductTree>, StoreError> {
        if depth == TreeDepth::Product {
            return Ok(self.get_product(org, id).await?.map(|product| ProductTree {
                product,
                variants: Vec::new(),
                skus: Vec::new(),
            }));
        }
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .expression_attribute_values(":pk", AttributeValue::S(product_pk(org, id)));
        query = if depth == TreeDepth::Variants {
            query
                .key_condition_expression("PK = :pk AND SK < :skus")
                .expression_attribute_values(":skus", AttributeValue::S(SKU_LEVEL.into()))
        } else {
            query.key_condition_expression("PK = :pk")
        };
        let items = self.query_all(query).await?;
        let mut product = None;
        let mut variants = Vec::new();
        let mut skus = Vec::new();
        for item in decode(items)? {
            match item.kind {
                EntityKind::Product => product = Some(item),
                EntityKind::Variant => variants.push(item),
                EntityKind::Sku => skus.push(item),
            }
        }
        variants.sort_by(|a, b| a.id.cmp(&b.id));
        skus.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(product.map(|product| ProductTree {
            product,
            variants,
            skus,
        }))
    }

    /// Writes a product item: created when `expected_ver` is `None` (the product must not
    /// exist), else replaced only if its version is still `expected_ver`.
    pub async fn put_product(
        &self,
        item: &EntityItem,
        expected_ver: Option<u64>,
    ) -> Result<(), StoreError> {
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(
                serde_dynamo::to_item(item).map_err(|e| StoreError::serde("entity", e))?,
            ));
        put = match expected_ver {
            None => put.condition_expression("attribute_not_exists(PK)"),
            Some(v) => put
                .condition_expression("ver = :v")
                .expression_attribute_values(":v", AttributeValue::N(v.to_string())),
        };
        put.send()
            .await
            .map_err(|e| StoreError::from_sdk("PutItem", e))?;
        Ok(())
    }

    /// Creates entities that must not exist yet, with the identity items of variants and
    /// SKUs, in one transaction (at most 50 entities: two actions each). Used by seeds and
    /// tests; the PATCH write path builds on the same actions.
    pub async fn create_entities(&self, org: &str, items: &[EntityItem]) -> Result<(), StoreError> {
        let mut actions = Vec::new();
        for item in items {
            let av = serde_dynamo::to_item(item).map_err(|e| StoreError::serde("entity", e))?;
            actions.push(new_item_put(&self.table, av)?);
            let ref_pk = match item.kind {
                EntityKind::Product => None,
                EntityKind::Variant => Some(variant_ref_pk(org, &item.id)),
                EntityKind::Sku => Some(sku_ref_pk(org, &item.id)),
            };
            if let Some(ref_pk) = ref_pk {
                let mut r = item_key(ref_pk, REF_SK);
                r.insert(
                    "pid".into(),
                    AttributeValue::S(item.pid.clone().unwrap_or_default()),
                );
                if let Some(vid) = &item.vid {
                    r.insert("vid".into(), AttributeValue::S(vid.clone()));
                }
                actions.push(new_item_put(&self.table, r)?);
            }
        }
        for chunk in actions.chunks(100) {
            self.client
                .transact_write_items()
                .set_transact_items(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("TransactWriteItems", e))?;
        }
        Ok(())
    }
}

fn new_item_put(
    table: &str,
    item: HashMap<String, AttributeValue>,
) -> Result<TransactWriteItem, StoreError> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(PK)")
        .build()
        .map_err(|e| StoreError::Other(e.to_string()))?;
    Ok(TransactWriteItem::builder().put(put).build())
}
