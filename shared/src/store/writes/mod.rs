//! Conditional writes to a product tree: every entity put or delete is conditioned on the
//! version it was read at (or on not existing yet), variant and SKU identity items are
//! created and removed with their entities, and the actions go out in as few
//! TransactWriteItems calls as the 100-action limit allows. Every item that holds values
//! keeps the metaobject reference counters (`counters.rs`) in its own transaction.

use super::counters::{self, Counts, Ref, COUNTED};
use super::items::{EntityItem, EntityKind};
use super::keys::{
    change_sk, deletions_pk, entity_change_pk, sku_ref_pk, tombstone_pk, variant_ref_pk, GSI1PK,
    GSI2SK, LAST_STATE, REF_SK, TOMBSTONE_SK, TTL,
};
use super::limits::{self, TRANSACTION_ACTIONS, TRANSACTION_BYTES};
use super::ops::{item_key, Item};
use super::resources::{resource_identifier, ResourceItem, Shelf};
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use crate::domain::values::StoredValues;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update,
};
use std::collections::{BTreeSet, HashMap};

/// TransactWriteItems takes at most 100 actions.
pub const TRANSACTION_LIMIT: usize = TRANSACTION_ACTIONS;

/// The bytes of whole items one transaction may put: DynamoDB's 4 MB less room for the
/// actions that are not whole items (identity items, link sets, version checks).
pub const TRANSACTION_PUT_BYTES: usize = TRANSACTION_BYTES - 512 * 1024;

pub use super::ops::Expect;

mod actions;
mod apply;
mod commit;
mod origin;
mod packed;

use actions::BUNDLES_SET;
use actions::{deletion_record, tombstone, tombstone_item, with_table, Deleted};
pub use actions::{DELETION_RETENTION_SECS, TOMBSTONE_RETENTION_SECS};
pub use apply::{Apply, Either, ResourcePut, ScopesPut, SubscriptionSave};
pub use commit::Identity;
pub use origin::{Origin, BY};
pub use packed::{Committed, PackedWrites};

#[cfg(test)]
mod tests;

/// What a transaction action stands for, to explain a cancellation.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Entity,
    /// The identity item (its partition key) of a new variant or SKU: taken means the
    /// identifier is used elsewhere in the organization.
    Identity(EntityKind, String, String),
    /// The identity item (its partition key) of a SKU being deleted: it fails while a
    /// bundle holds the SKU.
    InBundle(String, String),
    /// A reference counter of metaobject (definition, identifier); when guarded (the write
    /// adds a reference), it fails once the metaobject was deleted.
    Counter(String, String, bool),
    /// A reference counter of metaobject (definition, identifier) being deleted: it fails
    /// while a count is not 0.
    Referenced(String, String),
}

/// Actions that commit in one transaction, and the counter changes of the items they
/// write (merged with the other groups' of the same transaction when it is sent).
#[derive(Debug, Default)]
struct Group {
    actions: Vec<(TransactWriteItem, Target)>,
    counts: Counts,
}

impl Group {
    /// Its actions at most (merged counter changes may take fewer).
    fn len(&self) -> usize {
        self.actions.len() + self.counts.len()
    }

    fn put_bytes(&self) -> usize {
        self.actions.iter().map(|(a, _)| put_bytes(a)).sum()
    }
}

/// An ordered set of conditional writes to one organization's product trees. Actions come
/// in groups (an entity with its identity item and reference counters) that never straddle
/// two transactions.
#[derive(Debug, Default)]
pub struct TreeWrite {
    groups: Vec<Group>,
}

/// The counter changes of writing `item_id`'s values `vals`, whose counts held `counted`
/// (its `mr`); sets the `mr` of the item to put, `av` (absent when it holds no reference).
/// `read`: the references its values had as read (`None`: the values are as read, or the
/// item is new when `new`).
fn counted_write(
    av: &mut Item,
    org: &str,
    item_id: &str,
    vals: &StoredValues,
    counted: Option<&[String]>,
    read: Option<&BTreeSet<Ref>>,
    new: bool,
) -> Counts {
    let after = counters::refs_of(vals);
    let read = match read {
        Some(r) => r.clone(),
        None if new => BTreeSet::new(),
        None => after.clone(),
    };
    let counts = Counts::of(org, item_id, &counters::decode(counted), &after, &read);
    let mr: Vec<AttributeValue> = counters::encode(&after)
        .into_iter()
        .map(AttributeValue::S)
        .collect();
    av.remove(COUNTED);
    if !mr.is_empty() {
        av.insert(COUNTED.into(), AttributeValue::L(mr));
    }
    counts
}

/// The counter changes of deleting `item_id`, whose counts held `counted`.
fn counted_delete(org: &str, item_id: &str, counted: Option<&[String]>) -> Counts {
    let none = BTreeSet::new();
    Counts::of(org, item_id, &counters::decode(counted), &none, &none)
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

    /// The number of actions (counter changes counted per item: at most).
    pub fn len(&self) -> usize {
        self.groups.iter().map(Group::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of the whole items this write puts, as DynamoDB counts them.
    pub fn put_bytes(&self) -> usize {
        self.groups.iter().map(Group::put_bytes).sum()
    }

    /// Starts a new group: actions pushed until the next group commit in one transaction.
    pub fn start_group(&mut self) {
        self.groups.push(Group::default());
    }

    /// Appends `action` to the current group (a group of its own when there is none).
    pub(in crate::store) fn push(&mut self, action: TransactWriteItem) {
        if self.groups.is_empty() {
            self.start_group();
        }
        let group = self.groups.last_mut().expect("a group exists");
        group.actions.push((action, Target::Entity));
    }

    /// The items this write puts, whole, in order: what the same write would store without
    /// conditions or transactions (the benchmark's raw floor).
    pub fn put_items(&self) -> Vec<Item> {
        self.groups
            .iter()
            .flat_map(|g| &g.actions)
            .filter_map(|(action, _)| action.put().map(|p| p.item().clone()))
            .collect()
    }

    /// Appends the groups of `other`, in order.
    pub fn append(&mut self, other: TreeWrite) {
        self.groups.extend(other.groups);
    }

    /// Writes a resource of `org` as a whole in a new group: created when `expect` is
    /// `Absent`, else only if its version is still the one read. Its values are new or as
    /// read; [`Self::put_resource_read`] when they changed.
    pub fn put_resource(
        &mut self,
        org: &str,
        item: &ResourceItem,
        expect: Expect,
    ) -> Result<(), StoreError> {
        self.put_resource_read(org, item, expect, None)
    }

    /// [`Self::put_resource`] of a resource whose values referenced `read` when read (the
    /// references it adds must still exist when it commits).
    pub fn put_resource_read(
        &mut self,
        org: &str,
        item: &ResourceItem,
        expect: Expect,
        read: Option<&BTreeSet<Ref>>,
    ) -> Result<(), StoreError> {
        let mut av: Item =
            serde_dynamo::to_item(item).map_err(|e| StoreError::serde("resource", e))?;
        let counts = counted_write(
            &mut av,
            org,
            &item.id,
            &item.values,
            item.mr.as_deref(),
            read,
            expect == Expect::Absent,
        );
        self.start_group();
        self.push(put_action(av, expect)?);
        self.counts_mut().merge(&counts);
        Ok(())
    }

    /// The counter changes of the current group.
    fn counts_mut(&mut self) -> &mut Counts {
        if self.groups.is_empty() {
            self.start_group();
        }
        &mut self.groups.last_mut().expect("a group exists").counts
    }

    /// Opens the reference counters of metaobject `item`, in its group: the creation of a
    /// metaobject whose identifier a deleted one had.
    pub fn open_counters(&mut self, org: &str, item: &ResourceItem) -> Result<(), StoreError> {
        let def = item.def.as_deref().unwrap_or_default();
        for action in counters::open_all(org, def, &item.id)? {
            self.push(action);
        }
        Ok(())
    }

    /// Deletes metaobject `item` (as [`Self::delete_resource`]) and closes its reference
    /// counters, each only while its count is 0, in the same transaction: refused while
    /// anything counted references it, and no reference can be added after it.
    pub fn delete_metaobject(&mut self, org: &str, item: &ResourceItem) -> Result<(), StoreError> {
        self.delete_resource(org, item)?;
        let def = item.def.clone().unwrap_or_default();
        let group = self.groups.last_mut().expect("a group exists");
        for action in counters::close_all(org, &def, &item.id)? {
            group
                .actions
                .push((action, Target::Referenced(def.clone(), item.id.clone())));
        }
        Ok(())
    }

    /// Deletes a resource in a new group, if it is still at the version read, leaves its
    /// tombstone (warm list indexes learn of the delete from it) and records the deletion in
    /// its type's feed (a metaobject as `<definition>/<identifier>`). The references it held
    /// are taken back from their counters.
    pub fn delete_resource(&mut self, org: &str, item: &ResourceItem) -> Result<(), StoreError> {
        let del = Delete::builder()
            .table_name("")
            .set_key(Some(item.key()))
            .condition_expression("ver = :v")
            .expression_attribute_values(":v", AttributeValue::N(item.ver.to_string()))
            .build()
            .map_err(build_err)?;
        self.start_group();
        self.push(TransactWriteItem::builder().delete(del).build());
        let identifier = resource_identifier(item.def.as_deref(), &item.id);
        let at = Timestamp::next_after([item.updated_at]);
        let change_pk = entity_change_pk(org, &item.kind, &item.id);
        for record in [
            tombstone_item(
                org,
                &item.kind,
                Deleted {
                    identifier: &identifier,
                    id: &item.id,
                    was: item.self_updated_at,
                },
                change_pk,
                at,
            ),
            deletion_record(org, &item.kind, &identifier, at),
        ] {
            let put = Put::builder()
                .table_name("")
                .set_item(Some(record))
                .build()
                .map_err(build_err)?;
            self.push(TransactWriteItem::builder().put(put).build());
        }
        let counts = counted_delete(org, &item.id, item.mr.as_deref());
        self.counts_mut().merge(&counts);
        Ok(())
    }

    /// The groups packed into transactions of at most 100 actions and 3.5 MB of whole
    /// items, in order, each with its groups' counter changes merged.
    fn packed(&self) -> Vec<(Vec<&Group>, Counts)> {
        let mut out: Vec<(Vec<&Group>, usize, usize)> = Vec::new();
        for group in self.groups.iter().filter(|g| g.len() > 0) {
            let bytes = group.put_bytes();
            match out.last_mut() {
                Some((last, last_len, last_bytes))
                    if *last_len + group.len() <= TRANSACTION_LIMIT
                        && *last_bytes + bytes <= TRANSACTION_PUT_BYTES =>
                {
                    last.push(group);
                    *last_len += group.len();
                    *last_bytes += bytes;
                }
                _ => out.push((vec![group], group.len(), bytes)),
            }
        }
        out.into_iter()
            .map(|(groups, _, _)| {
                let mut counts = Counts::default();
                for g in &groups {
                    counts.merge(&g.counts);
                }
                (groups, counts)
            })
            .collect()
    }

    /// The transactions of this write, in order: each group's actions, then one counter
    /// change per counter item.
    fn transactions(&self) -> Result<Vec<Vec<(TransactWriteItem, Target)>>, StoreError> {
        self.packed()
            .into_iter()
            .map(|(groups, counts)| {
                let mut actions: Vec<(TransactWriteItem, Target)> = groups
                    .iter()
                    .flat_map(|g| g.actions.iter().cloned())
                    .collect();
                for (action, (def, id), guarded) in counts.actions()? {
                    actions.push((action, Target::Counter(def, id, guarded)));
                }
                Ok(actions)
            })
            .collect()
    }

    /// Everything storage would refuse in this write, found before its first request: an
    /// item over 400 KB (with the stamp of `origin`'s actor it will carry), a key over
    /// DynamoDB's key limits. Names the entity.
    pub fn check_limits(&self, origin: &Origin<'_>) -> Result<(), StoreError> {
        for (action, _) in self.groups.iter().flat_map(|g| &g.actions) {
            let Some(item) = action.put().map(Put::item) else {
                continue;
            };
            if let Some(problem) = limits::key_problem(item) {
                return Err(StoreError::Refused(format!(
                    "{} is refused: {problem}",
                    describe(item)
                )));
            }
            // the writer's stamp is set when the write is sent: counted here
            let bytes = limits::item_bytes(item) + origin.stamp_bytes(item);
            if bytes > limits::ITEM_BYTES {
                return Err(StoreError::TooLarge(format!(
                    "{} would take {bytes} bytes, over the storage limit of 400 KB ({} bytes); store less data in its values",
                    describe(item),
                    limits::ITEM_BYTES
                )));
            }
        }
        Ok(())
    }

    /// How many actions each transaction of this write holds, in order (groups are never
    /// split between two).
    pub fn transaction_sizes(&self) -> Vec<usize> {
        self.packed()
            .iter()
            .map(|(groups, counts)| {
                groups.iter().map(|g| g.actions.len()).sum::<usize>() + counts.len()
            })
            .collect()
    }

    /// Identity items whose conditions this write depends on, by partition key: those it
    /// claims (they must not exist) and those of SKUs it deletes (no bundle may hold them).
    fn identity_conditions(&self) -> HashMap<&str, &Target> {
        self.groups
            .iter()
            .flat_map(|g| &g.actions)
            .filter_map(|(_, t)| match t {
                Target::Identity(_, _, pk) | Target::InBundle(_, pk) => Some((pk.as_str(), t)),
                _ => None,
            })
            .collect()
    }

    /// The counter items this write adds references to (they must not be closed), by
    /// partition and sort key, with their metaobject.
    fn guarded_counters(&self) -> HashMap<(String, String), Ref> {
        let text = |k: &Item, name: &str| {
            k.get(name)
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default()
        };
        self.groups
            .iter()
            .flat_map(|g| g.counts.guarded())
            .map(|(key, r)| {
                (
                    (text(&key, super::keys::PK), text(&key, super::keys::SK)),
                    r,
                )
            })
            .collect()
    }

    /// Writes `item` as a whole; a new variant or SKU also claims its identity item. Its
    /// values are new or as read; [`Self::put_read`] when they changed.
    pub fn put(&mut self, org: &str, item: &EntityItem, expect: Expect) -> Result<(), StoreError> {
        self.put_read(org, item, expect, None)
    }

    /// [`Self::put`] of an entity whose values referenced `read` when read (the references
    /// it adds must still exist when it commits).
    pub fn put_read(
        &mut self,
        org: &str,
        item: &EntityItem,
        expect: Expect,
        read: Option<&BTreeSet<Ref>>,
    ) -> Result<(), StoreError> {
        let mut av: Item =
            serde_dynamo::to_item(item).map_err(|e| StoreError::serde("entity", e))?;
        let counts = counted_write(
            &mut av,
            org,
            &item.id,
            &item.values,
            item.mr.as_deref(),
            read,
            expect == Expect::Absent,
        );
        let mut group = vec![(put_action(av, expect)?, Target::Entity)];
        if expect == Expect::Absent {
            if let Some(pk) = identity_pk(org, item) {
                let mut r = item_key(pk.clone(), REF_SK);
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
                group.push((action, Target::Identity(item.kind, item.id.clone(), pk)));
            }
        }
        self.groups.push(Group {
            actions: group,
            counts,
        });
        Ok(())
    }

    /// Deletes `item` if it is still at the version read, with its identity item, and
    /// leaves its tombstone.
    pub fn delete(&mut self, org: &str, item: &EntityItem) -> Result<(), StoreError> {
        let del = Delete::builder()
            .table_name("")
            .set_key(Some(item_key(item.pk.clone(), item.sk.clone())))
            .condition_expression("ver = :v")
            .expression_attribute_values(":v", AttributeValue::N(item.ver.to_string()))
            .build()
            .map_err(build_err)?;
        let mut group = vec![(
            TransactWriteItem::builder().delete(del).build(),
            Target::Entity,
        )];
        if let Some(pk) = identity_pk(org, item) {
            let mut del = Delete::builder()
                .table_name("")
                .set_key(Some(item_key(pk.clone(), REF_SK)));
            let mut target = Target::Entity;
            if item.kind == EntityKind::Sku {
                // a SKU leaves no bundle pointing at nothing: bundles hold it by this item
                del = del.condition_expression("attribute_not_exists(#b)");
                del = del.expression_attribute_names("#b", BUNDLES_SET);
                target = Target::InBundle(item.id.clone(), pk);
            }
            group.push((
                TransactWriteItem::builder()
                    .delete(del.build().map_err(build_err)?)
                    .build(),
                target,
            ));
        }
        let at = Timestamp::next_after([item.updated_at]);
        for record in [
            tombstone(org, item, at),
            deletion_record(org, item.kind.as_str(), &item.id, at),
        ] {
            let put = Put::builder()
                .table_name("")
                .set_item(Some(record))
                .build()
                .map_err(build_err)?;
            group.push((
                TransactWriteItem::builder().put(put).build(),
                Target::Entity,
            ));
        }
        self.groups.push(Group {
            actions: group,
            counts: counted_delete(org, &item.id, item.mr.as_deref()),
        });
        Ok(())
    }
}

/// The bytes of the whole item an action puts (0 for other actions).
fn put_bytes(action: &TransactWriteItem) -> usize {
    action.put().map_or(0, |p| limits::item_bytes(p.item()))
}

/// An item as a client knows it: `variant 'v1'`, or `an item` when it is not an entity.
fn describe(item: &Item) -> String {
    let s = |name: &str| item.get(name).and_then(|v| v.as_s().ok());
    match (s("kind"), s("id")) {
        (Some(kind), Some(id)) => format!("{kind} '{id}'"),
        _ => "an item of the write".to_string(),
    }
}

/// A conditional put of a whole item: it must not exist yet, or still be at the version read.
fn put_action(av: Item, expect: Expect) -> Result<TransactWriteItem, StoreError> {
    Ok(TransactWriteItem::builder()
        .put(expect.put("", av)?)
        .build())
}
