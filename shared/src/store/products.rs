//! The product tree: a product, its variants and SKUs are one item collection
//! (`PK = O#<org>#P#<product>`), so any read of a product's hierarchy is one Query.

use super::items::{EntityItem, EntityKind};
use super::keys::{
    change_sk, entity_change_pk, product_pk, reshard, sku_sk, tree_tombstone_pk, variant_sk,
    LAST_STATE, PRODUCT_SK, SKU_LEVEL, TOMBSTONE_SK,
};
use super::ops::item_key;
use super::ops::Expect;
use super::writes::{Origin, TreeWrite};
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use crate::domain::values::StoredValues;
use aws_sdk_dynamodb::types::AttributeValue;
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
        values: StoredValues,
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
        let attribute_keys = values.keys().cloned().collect();
        Self {
            pk: product_pk(org, product),
            sk,
            gsi1pk: entity_change_pk(org, kind.as_str(), id),
            gsi2sk: change_sk(&at.to_string(), id),
            kind,
            id: id.to_string(),
            name: name.to_string(),
            pid: pid.map(str::to_string),
            vid: vid.map(str::to_string),
            values,
            self_updated_at: at,
            updated_at: at,
            ver: 1,
            family_id: None,
            attribute_keys,
            assets: Vec::new(),
            categories: None,
            src: None,
            mr: None,
        }
    }

    /// Records a change of the entity itself at `at`: own and tree timestamps.
    pub fn touch(&mut self, at: Timestamp) {
        self.self_updated_at = self.self_updated_at.max(at);
        self.touch_tree(at);
    }

    /// Records a change below the entity (a descendant written or deleted) at `at`: only
    /// the tree timestamp moves. Also refreshes the derived index fields and the version.
    pub fn touch_tree(&mut self, at: Timestamp) {
        self.updated_at = self.updated_at.max(at);
        self.gsi1pk = reshard(&self.gsi1pk, &self.id);
        self.gsi2sk = change_sk(&self.updated_at.to_string(), &self.id);
        self.attribute_keys = self.values.keys().cloned().collect();
        self.ver += 1;
    }
}

fn decode(items: Vec<HashMap<String, AttributeValue>>) -> Result<Vec<EntityItem>, StoreError> {
    serde_dynamo::from_items(items).map_err(|e| StoreError::serde("entity", e))
}

impl Store {
    /// The product items of `ids` that exist (no variant or SKU), with one BatchGetItem per
    /// 100 identifiers; none when `ids` is empty.
    pub async fn get_products(
        &self,
        org: &str,
        ids: &[impl AsRef<str>],
    ) -> Result<Vec<EntityItem>, StoreError> {
        let keys = ids
            .iter()
            .map(|id| item_key(product_pk(org, id.as_ref()), PRODUCT_SK))
            .collect();
        self.get_entities(keys).await
    }

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
        let mut query = self.partition_query(product_pk(org, id), None);
        if depth == TreeDepth::Variants {
            query = query
                .key_condition_expression("PK = :pk AND SK < :skus")
                .expression_attribute_values(":skus", AttributeValue::S(SKU_LEVEL.into()));
        }
        let items = self.query_all(query).await?;
        Ok(assemble(decode(items)?))
    }

    /// Creates entities that must not exist yet, with the identity items of variants and
    /// SKUs (seeds and tests; the PATCH path plans its own writes).
    pub async fn create_entities(&self, org: &str, items: &[EntityItem]) -> Result<(), StoreError> {
        let mut write = TreeWrite::new();
        for item in items {
            write.put(org, item, Expect::Absent)?;
        }
        self.commit(&write, &Origin::none()).await
    }
}

impl Store {
    /// A product with one variant (and, when `with_skus`, that variant's SKUs), in one
    /// request: BatchGetItem of the two items, or one Query of the tree filtered to them.
    /// `None` when the product or the variant is missing.
    pub async fn get_variant_path(
        &self,
        org: &str,
        pid: &str,
        vid: &str,
        with_skus: bool,
    ) -> Result<Option<ProductTree>, StoreError> {
        let items = if with_skus {
            let query = self
                .partition_query(product_pk(org, pid), None)
                // Key attributes cannot be filtered on: select by level and parent instead.
                .filter_expression("#k = :p OR (#k = :v AND #id = :vid) OR #vid = :vid")
                .expression_attribute_names("#k", "kind")
                .expression_attribute_names("#id", "id")
                .expression_attribute_names("#vid", "vid")
                .expression_attribute_values(":p", AttributeValue::S("product".into()))
                .expression_attribute_values(":v", AttributeValue::S("variant".into()))
                .expression_attribute_values(":vid", AttributeValue::S(vid.into()));
            decode(self.query_all(query).await?)?
        } else {
            self.get_entities(vec![
                item_key(product_pk(org, pid), PRODUCT_SK),
                item_key(product_pk(org, pid), variant_sk(vid)),
            ])
            .await?
        };
        Ok(assemble(items).filter(|t| t.variants.iter().any(|v| v.id == vid)))
    }

    /// A product, one variant and one SKU: one BatchGetItem. `None` when any is missing.
    pub async fn get_sku_path(
        &self,
        org: &str,
        pid: &str,
        vid: &str,
        sid: &str,
    ) -> Result<Option<ProductTree>, StoreError> {
        let pk = product_pk(org, pid);
        let items = self
            .get_entities(vec![
                item_key(pk.clone(), PRODUCT_SK),
                item_key(pk.clone(), variant_sk(vid)),
                item_key(pk, sku_sk(vid, sid)),
            ])
            .await?;
        Ok(assemble(items).filter(|t| t.variants.len() == 1 && t.skus.len() == 1))
    }
}

/// Sorts items of one tree into product, variants and SKUs (each in identifier order).
pub fn assemble(items: Vec<EntityItem>) -> Option<ProductTree> {
    let mut product = None;
    let mut variants = Vec::new();
    let mut skus = Vec::new();
    for item in items {
        match item.kind {
            EntityKind::Product => product = Some(item),
            EntityKind::Variant => variants.push(item),
            EntityKind::Sku => skus.push(item),
        }
    }
    variants.sort_by(|a, b| a.id.cmp(&b.id));
    skus.sort_by(|a, b| a.id.cmp(&b.id));
    product.map(|product| ProductTree {
        product,
        variants,
        skus,
    })
}

/// The keys (PK, SK) of the product and the variant above the tree item at `pk`/`sk`, in
/// its collection (none for a product; the product's for a variant).
pub fn ancestor_keys(pk: &str, sk: &str) -> Vec<(EntityKind, (String, String))> {
    super::keys::ancestor_sks(sk)
        .into_iter()
        .map(|(level, sk)| (level, (pk.to_string(), sk)))
        .collect()
}

impl Store {
    /// The items at `keys` ((PK, SK) as a stream record names them), by key: one
    /// BatchGetItem per 100; missing items are absent. The change feed reads the ancestors
    /// its filters test with it.
    pub async fn items_at(
        &self,
        keys: &[(String, String)],
    ) -> Result<HashMap<(String, String), serde_dynamo::Item>, StoreError> {
        let wanted = keys
            .iter()
            .map(|(pk, sk)| item_key(pk.clone(), sk.clone()))
            .collect();
        let text = |item: &super::ops::Item, name: &str| {
            item.get(name)
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default()
        };
        Ok(self
            .batch_get(wanted)
            .await?
            .into_iter()
            .map(|item| {
                (
                    (text(&item, super::keys::PK), text(&item, super::keys::SK)),
                    serde_dynamo::Item::from(item),
                )
            })
            .collect())
    }

    /// The states the deleted products and variants at `keys` ((PK, SK) of their tree
    /// items) ended, from their tombstones' [`LAST_STATE`], by key: one BatchGetItem per
    /// 100; keys of other items, and entities without a kept state, are absent. The change
    /// feed judges a descendant's change against its ancestor's last state with it when the
    /// ancestor is gone.
    pub async fn last_states_at(
        &self,
        keys: &[(String, String)],
    ) -> Result<HashMap<(String, String), serde_dynamo::Item>, StoreError> {
        let by_tombstone: HashMap<String, &(String, String)> = keys
            .iter()
            .filter_map(|key| Some((tree_tombstone_pk(&key.0, &key.1)?, key)))
            .collect();
        if by_tombstone.is_empty() {
            return Ok(HashMap::new());
        }
        let wanted = by_tombstone
            .keys()
            .map(|pk| item_key(pk.clone(), TOMBSTONE_SK))
            .collect();
        let mut out = HashMap::new();
        for mut item in self.batch_get(wanted).await? {
            let pk = item.get(super::keys::PK).and_then(|v| v.as_s().ok());
            let Some(&key) = pk.and_then(|pk| by_tombstone.get(pk)) else {
                continue;
            };
            if let Some(AttributeValue::M(last)) = item.remove(LAST_STATE) {
                out.insert(key.clone(), serde_dynamo::Item::from(last));
            }
        }
        Ok(out)
    }
}
