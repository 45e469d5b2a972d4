//! Pages of products, variants and SKUs: which entities a list returns comes from the warm
//! snapshots (`snapshot/`); this module reads the page's items, in one round trip.

use super::items::{EntityItem, EntityKind};
use super::keys::{product_pk, sku_sk, variant_sk, INDEX_BY_CHANGE, PRODUCT_SK};
use super::ops::{item_key, QueryBuilder};
use super::parallel::try_all;
use super::products::{ProductTree, TreeDepth};
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// What a page read needs of an entity: where its item is, and its timestamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub id: String,
    pub pid: Option<String>,
    pub vid: Option<String>,
    pub self_updated_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Store {
    /// A Query of one `byChange` partition (`GSI1PK = :t` names it; see `keys::change_pk`).
    pub(crate) fn change_query(&self, pk: String) -> QueryBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .index_name(INDEX_BY_CHANGE)
            .expression_attribute_values(":t", AttributeValue::S(pk))
    }

    /// The page's products with as much of their trees as `depth` asks: one BatchGetItem
    /// per 100 products, or one Query per product tree, all in parallel.
    pub async fn product_page(
        &self,
        org: &str,
        page: &[IndexEntry],
        depth: TreeDepth,
    ) -> Result<Vec<ProductTree>, StoreError> {
        let trees: Vec<ProductTree> = if depth == TreeDepth::Product {
            let keys = page
                .iter()
                .map(|e| item_key(product_pk(org, &e.id), PRODUCT_SK))
                .collect();
            self.get_entities(keys)
                .await?
                .into_iter()
                .map(|product| ProductTree {
                    product,
                    variants: Vec::new(),
                    skus: Vec::new(),
                })
                .collect()
        } else {
            try_all(
                page.iter()
                    .map(|e| self.get_product_tree(org, &e.id, depth)),
            )
            .await?
            .into_iter()
            .flatten()
            .collect()
        };
        Ok(in_page_order(page, trees, |t| &t.product.id))
    }

    /// The page's variants, each with its product (and its SKUs when `with_skus`): one
    /// BatchGetItem of variants and products, plus one Query per variant for SKUs, in
    /// parallel.
    pub async fn variant_page(
        &self,
        org: &str,
        page: &[IndexEntry],
        with_skus: bool,
    ) -> Result<Vec<ProductTree>, StoreError> {
        let mut keys = Vec::new();
        for e in page {
            let pid = e.pid.clone().unwrap_or_default();
            keys.push(item_key(product_pk(org, &pid), PRODUCT_SK));
            keys.push(item_key(product_pk(org, &pid), variant_sk(&e.id)));
        }
        let items = self.get_entities(keys);
        let skus = async {
            if !with_skus {
                return Ok(Vec::new());
            }
            try_all(page.iter().map(|e| {
                self.descendant_items(
                    org,
                    e.pid.as_deref().unwrap_or_default(),
                    super::keys::variant_skus_prefix(&e.id),
                )
            }))
            .await
        };
        let (items, skus) =
            super::metrics::in_parallel(async { futures_util::try_join!(items, skus) }).await?;
        let mut products: HashMap<String, EntityItem> = HashMap::new();
        let mut variants = Vec::new();
        for item in items {
            match item.kind {
                EntityKind::Product => {
                    products.insert(item.id.clone(), item);
                }
                _ => variants.push(item),
            }
        }
        let mut skus_by_variant: HashMap<String, Vec<EntityItem>> = HashMap::new();
        for s in skus.into_iter().flatten() {
            skus_by_variant
                .entry(s.vid.clone().unwrap_or_default())
                .or_default()
                .push(s);
        }
        let trees = variants
            .into_iter()
            .filter_map(|v| {
                let product = products.get(v.pid.as_deref()?)?.clone();
                let mut skus = skus_by_variant.remove(&v.id).unwrap_or_default();
                skus.sort_by(|a, b| a.id.cmp(&b.id));
                Some(ProductTree {
                    product,
                    variants: vec![v],
                    skus,
                })
            })
            .collect();
        Ok(in_page_order(page, trees, |t| &t.variants[0].id))
    }

    /// The page's SKUs, each with its variant and product: one BatchGetItem per 100 keys.
    pub async fn sku_page(
        &self,
        org: &str,
        page: &[IndexEntry],
    ) -> Result<Vec<ProductTree>, StoreError> {
        let mut keys = Vec::new();
        for e in page {
            let pk = product_pk(org, e.pid.as_deref().unwrap_or_default());
            let vid = e.vid.as_deref().unwrap_or_default();
            keys.push(item_key(pk.clone(), PRODUCT_SK));
            keys.push(item_key(pk.clone(), variant_sk(vid)));
            keys.push(item_key(pk, sku_sk(vid, &e.id)));
        }
        let mut products = HashMap::new();
        let mut variants = HashMap::new();
        let mut skus = Vec::new();
        for item in self.get_entities(keys).await? {
            match item.kind {
                EntityKind::Product => {
                    products.insert(item.id.clone(), item);
                }
                EntityKind::Variant => {
                    variants.insert(item.id.clone(), item);
                }
                EntityKind::Sku => skus.push(item),
            }
        }
        let trees = skus
            .into_iter()
            .filter_map(|s| {
                let variant = variants.get(s.vid.as_deref()?)?.clone();
                let product = products.get(s.pid.as_deref()?)?.clone();
                Some(ProductTree {
                    product,
                    variants: vec![variant],
                    skus: vec![s],
                })
            })
            .collect();
        Ok(in_page_order(page, trees, |t| &t.skus[0].id))
    }

    async fn descendant_items(
        &self,
        org: &str,
        pid: &str,
        sk_prefix: String,
    ) -> Result<Vec<EntityItem>, StoreError> {
        let query = self.partition_query(product_pk(org, pid), Some(sk_prefix));
        serde_dynamo::from_items(self.query_all(query).await?)
            .map_err(|e| StoreError::serde("entity", e))
    }
}

/// An item collection an export reads of one entity: a product's tree, or a variant's SKUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collection {
    /// The product and as much of its tree as `depth` asks (not `TreeDepth::Product`).
    Tree {
        product: String,
        depth: TreeDepth,
    },
    Skus {
        product: String,
        variant: String,
    },
}

/// What an export holds of a collection before it knows the collection's size: its first
/// Query response (DynamoDB ends one at 1 MB of items), and where the Query stopped when the
/// collection goes on past it ([`Store::finish_head`] reads the rest).
#[derive(Debug)]
pub struct Head {
    pub items: Vec<EntityItem>,
    rest: Option<super::ops::Item>,
}

impl Head {
    /// Whether the response held the whole collection.
    pub fn is_whole(&self) -> bool {
        self.rest.is_none()
    }
}

impl Store {
    fn collection_query(&self, org: &str, c: &Collection) -> QueryBuilder {
        match c {
            Collection::Tree { product, depth } => {
                let query = self.partition_query(product_pk(org, product), None);
                match depth {
                    TreeDepth::Variants => query
                        .key_condition_expression("PK = :pk AND SK < :skus")
                        .expression_attribute_values(
                            ":skus",
                            AttributeValue::S(super::keys::SKU_LEVEL.into()),
                        ),
                    _ => query,
                }
            }
            Collection::Skus { product, variant } => self.partition_query(
                product_pk(org, product),
                Some(super::keys::variant_skus_prefix(variant)),
            ),
        }
    }

    /// One Query response of collection `c`, from `start` (its beginning with `None`).
    async fn head(
        &self,
        org: &str,
        c: &Collection,
        start: Option<super::ops::Item>,
    ) -> Result<Head, StoreError> {
        let out = self
            .collection_query(org, c)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        let items = serde_dynamo::from_items(out.items.unwrap_or_default())
            .map_err(|e| StoreError::serde("entity", e))?;
        Ok(Head {
            items,
            rest: out.last_evaluated_key.filter(|k| !k.is_empty()),
        })
    }

    /// The first response of each of `collections`, in parallel: one round trip, each at
    /// most 1 MB of items however large its collection (an absent one is empty).
    pub async fn heads(
        &self,
        org: &str,
        collections: &[Collection],
    ) -> Result<Vec<Head>, StoreError> {
        try_all(collections.iter().map(|c| self.head(org, c, None))).await
    }

    /// The rest of `head`'s collection `c`, read into it: one request per further 1 MB.
    pub async fn finish_head(
        &self,
        org: &str,
        c: &Collection,
        head: &mut Head,
    ) -> Result<(), StoreError> {
        while let Some(start) = head.rest.take() {
            let next = self.head(org, c, Some(start)).await?;
            head.items.extend(next.items);
            head.rest = next.rest;
        }
        Ok(())
    }
}

/// Keeps the index's order; entities deleted since the index was read are left out.
fn in_page_order<T>(page: &[IndexEntry], found: Vec<T>, id: impl Fn(&T) -> &String) -> Vec<T> {
    let mut by_id: HashMap<String, T> = found.into_iter().map(|t| (id(&t).clone(), t)).collect();
    page.iter().filter_map(|e| by_id.remove(&e.id)).collect()
}
