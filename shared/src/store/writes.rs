//! Conditional writes to a product tree: every entity put or delete is conditioned on the
//! version it was read at (or on not existing yet), variant and SKU identity items are
//! created and removed with their entities, and the actions go out in as few
//! TransactWriteItems calls as the 100-action limit allows.

use super::items::{EntityItem, EntityKind};
use super::keys::{sku_ref_pk, variant_ref_pk, REF_SK};
use super::ops::{item_key, Item};
use super::{Store, StoreError};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem};

/// TransactWriteItems takes at most 100 actions.
pub const TRANSACTION_LIMIT: usize = 100;

/// What an entity write expects to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// The entity must not exist (creation).
    Absent,
    /// The entity must still be at this version.
    Version(u64),
}

/// What a transaction action stands for, to explain a cancellation.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Entity,
    /// The identity item of a new variant or SKU: taken means the identifier is used
    /// elsewhere in the organization.
    Identity(EntityKind, String),
}

/// An ordered set of conditional writes to one organization's product trees.
#[derive(Debug, Default)]
pub struct TreeWrite {
    actions: Vec<(TransactWriteItem, Target)>,
}

fn identity_pk(org: &str, item: &EntityItem) -> Option<String> {
    match item.kind {
        EntityKind::Product => None,
        EntityKind::Variant => Some(variant_ref_pk(org, &item.id)),
        EntityKind::Sku => Some(sku_ref_pk(org, &item.id)),
    }
}

fn build_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Other(e.to_string())
}

impl TreeWrite {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.actions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Writes `item` as a whole; a new variant or SKU also claims its identity item.
    pub fn put(&mut self, org: &str, item: &EntityItem, expect: Expect) -> Result<(), StoreError> {
        let av = serde_dynamo::to_item(item).map_err(|e| StoreError::serde("entity", e))?;
        let put = Put::builder().table_name("").set_item(Some(av));
        let put = match expect {
            Expect::Absent => put.condition_expression("attribute_not_exists(PK)"),
            Expect::Version(v) => put
                .condition_expression("ver = :v")
                .expression_attribute_values(":v", AttributeValue::N(v.to_string())),
        };
        let action = TransactWriteItem::builder()
            .put(put.build().map_err(build_err)?)
            .build();
        self.actions.push((action, Target::Entity));
        if expect == Expect::Absent {
            if let Some(pk) = identity_pk(org, item) {
                let mut r = item_key(pk, REF_SK);
                r.insert(
                    "pid".into(),
                    AttributeValue::S(item.pid.clone().unwrap_or_default()),
                );
                if let Some(vid) = &item.vid {
                    r.insert("vid".into(), AttributeValue::S(vid.clone()));
                }
                let put = Put::builder()
                    .table_name("")
                    .set_item(Some(r))
                    .condition_expression("attribute_not_exists(PK)")
                    .build()
                    .map_err(build_err)?;
                let action = TransactWriteItem::builder().put(put).build();
                self.actions
                    .push((action, Target::Identity(item.kind, item.id.clone())));
            }
        }
        Ok(())
    }

    /// Deletes `item` if it is still at the version read, with its identity item.
    pub fn delete(&mut self, org: &str, item: &EntityItem) -> Result<(), StoreError> {
        let del = Delete::builder()
            .table_name("")
            .set_key(Some(item_key(item.pk.clone(), item.sk.clone())))
            .condition_expression("ver = :v")
            .expression_attribute_values(":v", AttributeValue::N(item.ver.to_string()))
            .build()
            .map_err(build_err)?;
        self.actions.push((
            TransactWriteItem::builder().delete(del).build(),
            Target::Entity,
        ));
        if let Some(pk) = identity_pk(org, item) {
            let del = Delete::builder()
                .table_name("")
                .set_key(Some(item_key(pk, REF_SK)))
                .build()
                .map_err(build_err)?;
            self.actions.push((
                TransactWriteItem::builder().delete(del).build(),
                Target::Entity,
            ));
        }
        Ok(())
    }
}

/// Sets the table on an action built without one (the plan does not know the table).
fn with_table(action: &TransactWriteItem, table: &str) -> TransactWriteItem {
    let mut a = action.clone();
    if let Some(p) = a.put.as_mut() {
        p.table_name = table.to_string();
    }
    if let Some(d) = a.delete.as_mut() {
        d.table_name = table.to_string();
    }
    a
}

impl Store {
    /// Sends the writes in order, 100 actions per transaction. A lost condition on an
    /// entity is `ConditionFailed` (re-read and retry); a taken identity alone is `Taken`.
    /// Transactions already committed stay committed: callers re-read and re-plan, which
    /// converges because a plan only writes what differs.
    pub async fn commit(&self, write: &TreeWrite) -> Result<(), StoreError> {
        for chunk in write.actions.chunks(TRANSACTION_LIMIT) {
            let items: Vec<TransactWriteItem> = chunk
                .iter()
                .map(|(a, _)| with_table(a, &self.table))
                .collect();
            let result = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items))
                .send()
                .await;
            if let Err(err) = result {
                return Err(explain(chunk, err));
            }
        }
        Ok(())
    }
}

fn explain<R: std::fmt::Debug>(
    chunk: &[(TransactWriteItem, Target)],
    err: SdkError<TransactWriteItemsError, R>,
) -> StoreError {
    if let SdkError::ServiceError(service) = &err {
        if let TransactWriteItemsError::TransactionCanceledException(tce) = service.err() {
            let failed: Vec<&Target> = tce
                .cancellation_reasons()
                .iter()
                .zip(chunk)
                .filter(|(r, _)| r.code() == Some("ConditionalCheckFailed"))
                .map(|(_, (_, t))| t)
                .collect();
            let taken = failed.iter().find_map(|t| match t {
                Target::Identity(kind, id) => Some((*kind, id.clone())),
                Target::Entity => None,
            });
            if let Some((kind, id)) = taken {
                if failed.iter().all(|t| matches!(t, Target::Identity(..))) {
                    return StoreError::Taken(format!(
                        "{} '{id}' already exists under another {}",
                        kind.as_str(),
                        if kind == EntityKind::Sku {
                            "variant"
                        } else {
                            "product"
                        }
                    ));
                }
            }
        }
    }
    StoreError::from_sdk("TransactWriteItems", err)
}

/// The identity item of a variant or SKU: the product (and variant) it lives under.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Identity {
    pub pid: String,
    #[serde(default)]
    pub vid: Option<String>,
}

impl Store {
    /// Where a variant or SKU lives: one strongly consistent GetItem of its identity item.
    pub async fn identity(
        &self,
        org: &str,
        kind: EntityKind,
        id: &str,
    ) -> Result<Option<Identity>, StoreError> {
        let pk = match kind {
            EntityKind::Variant => variant_ref_pk(org, id),
            EntityKind::Sku => sku_ref_pk(org, id),
            EntityKind::Product => return Ok(None),
        };
        self.get_item(item_key(pk, REF_SK), "identity").await
    }

    /// Reads entities by key with one BatchGetItem per 100 keys.
    pub async fn get_entities(&self, keys: Vec<Item>) -> Result<Vec<EntityItem>, StoreError> {
        let items = self.batch_get(keys).await?;
        serde_dynamo::from_items(items).map_err(|e| StoreError::serde("entity", e))
    }
}
