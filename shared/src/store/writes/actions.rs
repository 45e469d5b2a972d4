//! Single transaction actions beside tree writes: set members, version checks and bumps, tombstones and deletion records.

use super::*;

/// The string set on a SKU's identity item naming the bundles that hold the SKU.
pub const BUNDLES_SET: &str = "bundles";
/// The string set on an asset or category naming the products that link it.
pub const LINKED_BY_SET: &str = "linkedBy";

impl TreeWrite {
    /// Adds (`add`) or removes product `owner` in the `linkedBy` set of `shelf`'s item `id`
    /// (an asset or category it links), in a group of its own; the item's version moves.
    pub fn link(
        &mut self,
        org: &str,
        shelf: Shelf<'_>,
        id: &str,
        owner: &str,
        add: bool,
    ) -> Result<(), StoreError> {
        self.start_group();
        self.push(set_member(shelf.key(org, id), LINKED_BY_SET, owner, add)?);
        Ok(())
    }

    /// Adds (`add`) or removes bundle `bundle` in the `bundles` set of SKU `sku` (on its
    /// identity item), in the current group; the item's version moves.
    pub fn bundle_member(
        &mut self,
        org: &str,
        sku: &str,
        bundle: &str,
        add: bool,
    ) -> Result<(), StoreError> {
        self.push(set_member(
            item_key(sku_ref_pk(org, sku), REF_SK),
            BUNDLES_SET,
            bundle,
            add,
        )?);
        Ok(())
    }

    /// Moves an entity's version from the one read, in a group of its own: a concurrent
    /// write of it fails its condition and reads again.
    pub fn bump(&mut self, item: &EntityItem) -> Result<(), StoreError> {
        self.start_group();
        self.push(version_bump(
            item_key(item.pk.clone(), item.sk.clone()),
            item.ver,
        )?);
        Ok(())
    }

    /// In the current group: moves the resource's version from the one read (`bump`), or
    /// only holds if it is still that version.
    pub fn resource_version(&mut self, item: &ResourceItem, bump: bool) -> Result<(), StoreError> {
        let action = if bump {
            version_bump(item.key(), item.ver)?
        } else {
            version_check(item.key(), item.ver)?
        };
        self.push(action);
        Ok(())
    }
}

/// Adds (`add`) or removes `member` in the string set `set` of the item at `key`, which must
/// exist; the item's version moves, so a delete that read the set notices.
pub fn set_member(
    key: Item,
    set: &str,
    member: &str,
    add: bool,
) -> Result<TransactWriteItem, StoreError> {
    let expression = if add {
        "ADD #s :m, ver :one"
    } else {
        "DELETE #s :m ADD ver :one"
    };
    let update = Update::builder()
        .table_name("")
        .set_key(Some(key))
        .update_expression(expression)
        .condition_expression("attribute_exists(PK)")
        .expression_attribute_names("#s", set)
        .expression_attribute_values(":m", AttributeValue::Ss(vec![member.to_string()]))
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .build()
        .map_err(build_err)?;
    Ok(TransactWriteItem::builder().update(update).build())
}

/// Holds only if the item at `key` is still at version `ver`.
pub fn version_check(key: Item, ver: u64) -> Result<TransactWriteItem, StoreError> {
    let check = ConditionCheck::builder()
        .table_name("")
        .set_key(Some(key))
        .condition_expression("ver = :v")
        .expression_attribute_values(":v", AttributeValue::N(ver.to_string()))
        .build()
        .map_err(build_err)?;
    Ok(TransactWriteItem::builder().condition_check(check).build())
}

/// Moves the version of the item at `key`, if it is still at version `ver`: a write that read
/// the item at `ver` then fails its condition and reads again.
pub fn version_bump(key: Item, ver: u64) -> Result<TransactWriteItem, StoreError> {
    let update = Update::builder()
        .table_name("")
        .set_key(Some(key))
        .update_expression("ADD ver :one")
        .condition_expression("ver = :v")
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .expression_attribute_values(":v", AttributeValue::N(ver.to_string()))
        .build()
        .map_err(build_err)?;
    Ok(TransactWriteItem::builder().update(update).build())
}

/// How long a tombstone stays: list snapshots older than this reload in full.
pub const TOMBSTONE_RETENTION_SECS: i64 = 24 * 3600;

/// How long `GET /deletions` remembers a deletion.
pub const DELETION_RETENTION_SECS: i64 = 30 * 24 * 3600;

/// A deletion in its type's feed: `deletions_pk`, sort key `<at>#<identifier>`.
pub(super) fn deletion_record(
    org: &str,
    entity_type: &str,
    identifier: &str,
    at: Timestamp,
) -> Item {
    let s = |v: &str| AttributeValue::S(v.to_string());
    let mut d = item_key(
        deletions_pk(org, entity_type),
        change_sk(&at.to_string(), identifier),
    );
    d.insert("entityType".into(), s(entity_type));
    d.insert("identifier".into(), s(identifier));
    d.insert("deletedAt".into(), s(&at.to_string()));
    let expires = at.millis() / 1000 + DELETION_RETENTION_SECS;
    d.insert(TTL.into(), AttributeValue::N(expires.to_string()));
    d
}

/// The tombstone of a deleted entity, in its type's `byChange` partition, timed no earlier
/// than the entity's last change.
pub(super) fn tombstone(org: &str, item: &EntityItem, at: Timestamp) -> Item {
    let kind = item.kind.as_str();
    let change_pk = entity_change_pk(org, kind, &item.id);
    let deleted = Deleted {
        identifier: &item.id,
        id: &item.id,
        was: item.self_updated_at,
    };
    let mut t = tombstone_item(org, kind, deleted, change_pk, at);
    if item.kind != EntityKind::Sku {
        keep_last_state(&mut t, item);
    }
    t
}

/// The state a deleted ancestor ended, as the change feed's filters test it (the
/// attributes of [`LAST_STATE`]).
#[derive(serde::Serialize)]
struct LastState<'a> {
    id: &'a str,
    vals: &'a StoredValues,
    #[serde(rename = "familyId", skip_serializing_if = "Option::is_none")]
    family_id: Option<i64>,
    su: Timestamp,
    tu: Timestamp,
}

/// Keeps the state a deleted product or variant ended on its tombstone, under
/// [`LAST_STATE`] (outside the `byChange` projection): a descendant's deletion that the
/// change feed reads in a later batch of stream records than its ancestor's is judged
/// against it (`workers/feed/filtering.rs`). Left out when it would take the tombstone past
/// DynamoDB's item size: those descendants are judged without the ancestor, as before.
fn keep_last_state(tombstone: &mut Item, item: &EntityItem) {
    let last = LastState {
        id: &item.id,
        vals: &item.values,
        family_id: item.family_id,
        su: item.self_updated_at,
        tu: item.updated_at,
    };
    let Ok(last) = serde_dynamo::to_attribute_value::<_, AttributeValue>(&last) else {
        return;
    };
    tombstone.insert(LAST_STATE.to_string(), last);
    if limits::item_bytes(tombstone) > limits::ITEM_BYTES - STAMP_ROOM {
        tombstone.remove(LAST_STATE);
    }
}

/// Room a tombstone keeps below DynamoDB's item size for the writer's stamp (`by`), which
/// the commit adds after the plan (an actor's encoding is well under it).
const STAMP_ROOM: usize = 1024;

/// What a tombstone names: the deleted item's identifier in its type (a metaobject's is
/// `<definition>/<id>`), its `id`, and the `su` of its last state.
pub(super) struct Deleted<'a> {
    pub identifier: &'a str,
    pub id: &'a str,
    pub was: Timestamp,
}

/// The tombstone of `deleted` of type `kind`, in the `byChange` partition `change_pk`. It
/// keeps the `su` of the state it ends (`was`): the change feed's history takes a
/// deletion's time and actor (`by`, stamped as the write is sent) from the tombstone whose
/// `was` is the state the stream's REMOVE shows (`workers/feed/history.rs`).
pub(super) fn tombstone_item(
    org: &str,
    kind: &str,
    deleted: Deleted<'_>,
    change_pk: String,
    at: Timestamp,
) -> Item {
    let Deleted {
        identifier,
        id,
        was,
    } = deleted;
    let s = |v: &str| AttributeValue::S(v.to_string());
    let mut t = item_key(tombstone_pk(org, kind, identifier), TOMBSTONE_SK);
    t.insert("was".into(), s(&was.to_string()));
    t.insert(GSI1PK.into(), AttributeValue::S(change_pk));
    t.insert(GSI2SK.into(), s(&change_sk(&at.to_string(), id)));
    t.insert("id".into(), s(id));
    t.insert("su".into(), s(&at.to_string()));
    t.insert("tu".into(), s(&at.to_string()));
    t.insert("del".into(), AttributeValue::Bool(true));
    let expires = at.millis() / 1000 + TOMBSTONE_RETENTION_SECS;
    t.insert(TTL.into(), AttributeValue::N(expires.to_string()));
    t
}

/// Sets the table on an action built without one (the plan does not know the table).
pub(super) fn with_table(action: &TransactWriteItem, table: &str) -> TransactWriteItem {
    let mut a = action.clone();
    if let Some(p) = a.put.as_mut() {
        p.table_name = table.to_string();
    }
    if let Some(d) = a.delete.as_mut() {
        d.table_name = table.to_string();
    }
    if let Some(u) = a.update.as_mut() {
        u.table_name = table.to_string();
    }
    if let Some(c) = a.condition_check.as_mut() {
        c.table_name = table.to_string();
    }
    a
}
