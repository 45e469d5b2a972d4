//! Every partition and sort key of the single table, built in one place.
//!
//! Every partition key starts with `O#<org>`: one organization's items can never be named
//! by another's request. Identifiers may contain `#`, so an identifier only ever ends a key
//! (a prefix-free position); inside sort keys the separator is `/`, which identifiers cannot
//! contain. See docs/design/table.md for the access patterns these keys serve.

/// Attribute names of the table's keys and index keys.
pub const PK: &str = "PK";
pub const SK: &str = "SK";
/// Entity-type partition of the index: `O#<org>#T#<type>`.
pub const GSI1PK: &str = "GSI1PK";
/// `<updatedAt>#<identifier>`, for changes since a time (index `byChange`).
pub const GSI2SK: &str = "GSI2SK";
/// Epoch seconds after which DynamoDB may delete the item (tombstones, delivery state).
pub const TTL: &str = "ttl";

pub const INDEX_BY_CHANGE: &str = "byChange";

/// The primary key of an item.
pub fn item_key(
    pk: String,
    sk: impl Into<String>,
) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
    use aws_sdk_dynamodb::types::AttributeValue;
    std::collections::HashMap::from([
        (PK.to_string(), AttributeValue::S(pk)),
        (SK.to_string(), AttributeValue::S(sk.into())),
    ])
}

/// The organization's own partition: its settings, API keys.
pub fn org_pk(org: &str) -> String {
    format!("O#{org}")
}
pub const ORG_SK: &str = "ORG";
pub fn key_sk(key_id: &str) -> String {
    format!("KEY#{key_id}")
}
pub const KEY_SK_PREFIX: &str = "KEY#";
/// A console sign-in link and a console session, beside the key that made them.
pub fn console_link_sk(id: &str) -> String {
    format!("CLINK#{id}")
}
pub fn console_session_sk(id: &str) -> String {
    format!("CSESSION#{id}")
}

/// One product's whole tree (product, variants, SKUs) is one item collection.
pub fn product_pk(org: &str, product: &str) -> String {
    format!("O#{org}#P#{product}")
}
/// Level prefixes sort product < variants < SKUs, so `SK < "L3"` reads product and
/// variants without SKUs and `begins_with(SK, "L3/<variant>/")` one variant's SKUs.
pub const PRODUCT_SK: &str = "L1";
pub fn variant_sk(variant: &str) -> String {
    format!("L2/{variant}")
}
pub const SKU_LEVEL: &str = "L3";
pub fn sku_sk(variant: &str, sku: &str) -> String {
    format!("L3/{variant}/{sku}")
}
pub fn variant_skus_prefix(variant: &str) -> String {
    format!("L3/{variant}/")
}
/// The sort keys of the product and the variant above the tree item at `sk`, in its
/// collection (none for a product; the product's for a variant).
pub fn ancestor_sks(sk: &str) -> Vec<(super::items::EntityKind, String)> {
    use super::items::EntityKind;
    let mut parts = sk.split('/');
    match (parts.next(), parts.next()) {
        (Some("L2"), Some(_)) => vec![(EntityKind::Product, PRODUCT_SK.to_string())],
        (Some(SKU_LEVEL), Some(variant)) => vec![
            (EntityKind::Product, PRODUCT_SK.to_string()),
            (EntityKind::Variant, variant_sk(variant)),
        ],
        _ => Vec::new(),
    }
}

/// Identity items: make variant and SKU identifiers unique in the organization (conditional
/// put) and find their product tree by identifier with one GetItem, no scan.
pub fn variant_ref_pk(org: &str, variant: &str) -> String {
    format!("O#{org}#V#{variant}")
}
pub fn sku_ref_pk(org: &str, sku: &str) -> String {
    format!("O#{org}#S#{sku}")
}
pub const REF_SK: &str = "REF";

/// Attribute definitions: one partition per organization, sort key `<entity>.<key>`.
pub fn attributes_pk(org: &str) -> String {
    format!("O#{org}#A")
}
pub fn attribute_sk(entity: &str, key: &str) -> String {
    format!("{entity}.{key}")
}

/// Languages and channels of the organization: one item in its own partition.
pub const SCOPES_SK: &str = "SCOPES";
/// The counter that hands out family ids.
pub const FAMILY_SEQ_SK: &str = "FAMSEQ";

/// Families: one partition per organization; the sort key is the id, zero-padded so that
/// the partition reads in id order.
pub fn families_pk(org: &str) -> String {
    format!("O#{org}#F")
}
pub fn family_sk(id: i64) -> String {
    format!("{id:020}")
}

/// Default number of `byChange` partitions per organization and entity type.
pub const DEFAULT_INDEX_SHARDS: u32 = 16;

/// How many `byChange` partitions one organization's entities of one type spread over
/// (`CATALOG_INDEX_SHARDS`, 1 to 64, default 16), so that neither writes nor a cold list
/// read are bound to one partition's throughput. Read once per process. Fixed for a table's
/// life: after a change, entries written under another count stay out of lists until they
/// are written again (every write moves an entry to its current shard, `reshard`).
pub fn index_shards() -> u32 {
    static SHARDS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *SHARDS.get_or_init(|| {
        std::env::var("CATALOG_INDEX_SHARDS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|n| (1..=64).contains(n))
            .unwrap_or(DEFAULT_INDEX_SHARDS)
    })
}

/// An entity's shard: the first bytes of its identifier's SHA-256, modulo the shard count
/// (stable across processes and releases, and even for similar identifiers).
pub fn shard_of(identifier: &str, shards: u32) -> u32 {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(identifier.as_bytes());
    let head = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    head % shards.max(1)
}

/// One `byChange` partition of an entity type: `O#<org>#T#<type>#<shard>`.
pub fn change_pk(org: &str, entity_type: &str, shard: u32) -> String {
    format!("O#{org}#T#{entity_type}#{shard}")
}

/// The `byChange` partition of the entity `identifier` of `entity_type`.
pub fn entity_change_pk(org: &str, entity_type: &str, identifier: &str) -> String {
    change_pk(org, entity_type, shard_of(identifier, index_shards()))
}

/// `pk` (an entity's `byChange` partition, sharded or from before sharding) pointed at the
/// shard `identifier` belongs to under the current count: every write refreshes it, so an
/// entry written under another count moves to its shard when it is next written.
pub fn reshard(pk: &str, identifier: &str) -> String {
    match pk.split_once("#T#") {
        Some((org, rest)) => {
            let entity_type = rest.split('#').next().unwrap_or(rest);
            format!(
                "{org}#T#{entity_type}#{}",
                shard_of(identifier, index_shards())
            )
        }
        None => pk.to_string(),
    }
}

/// Every `byChange` partition of an entity type, in shard order.
pub fn change_pks(org: &str, entity_type: &str) -> Vec<String> {
    (0..index_shards())
        .map(|shard| change_pk(org, entity_type, shard))
        .collect()
}

/// Whether `pk` is a `byChange` partition of `entity_type` in `org`.
fn is_change_pk(pk: &str, org: &str, entity_type: &str) -> bool {
    pk.strip_prefix(&format!("O#{org}#T#{entity_type}#"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The organization of the entity of `entity_type` whose item has the keys `pk` and
/// `gsi1pk`: its partition's organization, when the item sits in that organization's change
/// index of the type (so it is the entity itself, not a tombstone, an identity item or
/// other state).
pub fn entity_org<'a>(pk: &'a str, gsi1pk: Option<&str>, entity_type: &str) -> Option<&'a str> {
    let org = pk.strip_prefix("O#")?.split('#').next()?;
    gsi1pk
        .is_some_and(|g| is_change_pk(g, org, entity_type))
        .then_some(org)
}
pub fn change_sk(updated_at: &str, identifier: &str) -> String {
    format!("{updated_at}#{identifier}")
}

/// A deleted entity's (or resource's) tombstone: it sits in the `byChange` partition of its
/// type until its TTL, so that warm list snapshots and indexes learn of deletions from the
/// same delta Query as of changes. A metaobject's `identifier` is `<definition>/<id>`.
pub fn tombstone_pk(org: &str, entity_type: &str, identifier: &str) -> String {
    format!("O#{org}#X#{entity_type}#{identifier}")
}
pub const TOMBSTONE_SK: &str = "DEL";
/// A deleted product's or variant's tombstone attribute holding the state it ended.
pub const LAST_STATE: &str = "last";

/// The tombstone of the product or variant at (`pk`, `sk`) of a product tree (`None` for
/// a SKU or any other item).
pub fn tree_tombstone_pk(pk: &str, sk: &str) -> Option<String> {
    use super::items::EntityKind;
    let (org, product) = pk.strip_prefix("O#")?.split_once("#P#")?;
    let (kind, identifier) = match sk.strip_prefix("L2/") {
        Some(variant) => (EntityKind::Variant, variant),
        None if sk == PRODUCT_SK => (EntityKind::Product, product),
        None => return None,
    };
    Some(tombstone_pk(org, kind.as_str(), identifier))
}

/// One entity's change history (`store/history.rs`): a partition per product, variant, SKU
/// or asset, sort key [`history_sk`], kept 90 days, outside every index.
pub fn history_pk(org: &str, entity_type: &str, identifier: &str) -> String {
    format!("O#{org}#H#{entity_type}#{identifier}")
}
/// `<state>#<rank>`: the `su` of the state a change made (a deletion: the state it ended),
/// then creation (2), update (3), deletion (4): time order, a deletion right after the
/// change that made the state it ended.
pub fn history_sk(at: &str, rank: u8) -> String {
    format!("{at}#{rank}")
}
/// The sort key of a history's head item: after every entry's position (a time, digits
/// first), so a range `SK < HISTORY_HEAD_SK` holds the entries alone.
pub const HISTORY_HEAD_SK: &str = "~head";

/// The deletions feed of one organization and entity type (`GET /deletions`): sort key
/// `<deletedAt>#<identifier>`, kept 30 days. Outside every index, so list snapshots never
/// read it.
pub fn deletions_pk(org: &str, entity_type: &str) -> String {
    format!("O#{org}#D#{entity_type}")
}

/// Import jobs: one partition per organization, sort key the import id (a ULID: time order).
pub fn imports_pk(org: &str) -> String {
    format!("O#{org}#I")
}

/// Export jobs: one partition per organization, sort key the export id (`exp_<ulid>`: time
/// order), and beside them the organization's export counts (`store/exports.rs`).
pub fn exports_pk(org: &str) -> String {
    format!("O#{org}#E")
}
/// Every export id starts so: a Query of the jobs alone, never the counts beside them.
pub const EXPORT_SK_PREFIX: &str = "exp_";
/// The item of an organization's export counts, in its exports partition.
pub const EXPORT_COUNTS_SK: &str = "counts";

/// Completeness profiles: one partition per organization, sort key the profile identifier.
pub fn profiles_pk(org: &str) -> String {
    format!("O#{org}#C")
}

/// Webhook subscriptions: one partition per organization, sort key the subscription id
/// (a ULID, so the partition reads in creation order).
pub fn webhooks_pk(org: &str) -> String {
    format!("O#{org}#W")
}
/// One subscription's delivery log: sort key the delivery id (a ULID: time order).
pub fn deliveries_pk(org: &str, webhook: &str) -> String {
    format!("O#{org}#W#{webhook}#D")
}
/// The `byChange` partition of one subscription's delivery log: every log entry carries it,
/// with `delivery_log_sk`, so that a warm index of the log learns of new entries with one
/// Query (`store/flat_lists.rs`).
pub fn delivery_log_change_pk(org: &str, webhook: &str) -> String {
    format!("O#{org}#W#{webhook}#L")
}
/// `<createdAt>#<expires>#<deliveryId>`: entries written since a time, with their expiry
/// (epoch seconds) so that the index drops each at its TTL.
pub fn delivery_log_sk(created_at: &str, expires: i64, delivery_id: &str) -> String {
    format!("{created_at}#{expires}#{delivery_id}")
}
/// One subscription's open coalescing windows, one item per (entity, event).
pub fn pending_pk(org: &str, webhook: &str) -> String {
    format!("O#{org}#W#{webhook}#Q")
}
/// One subscription's endpoint health: a single item (sort key [`HEALTH_SK`]) while its
/// deliveries fail.
pub fn health_pk(org: &str, webhook: &str) -> String {
    format!("O#{org}#W#{webhook}#H")
}
pub const HEALTH_SK: &str = "health";
/// Deliveries waiting for a failing endpoint's probe, out of the queue: sort key the
/// delivery id.
pub fn parked_pk(org: &str, webhook: &str) -> String {
    format!("O#{org}#W#{webhook}#P")
}
pub fn pending_sk(entity_type: &str, action: &str, identifier: &str) -> String {
    format!("{entity_type}/{action}/{identifier}")
}

/// Assets, categories and bundles: one partition per organization and type, sort key the
/// identifier, so a list reads in identifier order and a uniqueness check is a conditional put.
pub fn resource_pk(org: &str, kind: &str) -> String {
    format!("O#{org}#R#{kind}")
}
/// Metaobjects: one partition per definition (identifiers are unique only within it).
pub fn metaobjects_pk(org: &str, definition: &str) -> String {
    format!("O#{org}#R#metaobject#{definition}")
}
/// Metaobject reference counters (`store/counters.rs`): one partition per definition and
/// shard, sort key the metaobject's identifier, so one metaobject's shards are as many
/// partitions.
pub fn ref_counter_pk(org: &str, definition: &str, shard: u32) -> String {
    format!("O#{org}#MR#{definition}#{shard}")
}
/// Usage: one partition per organization, sort key the UTC day (`YYYY-MM-DD`), so a month
/// is one Query of at most 31 small items (`store/usage.rs`).
pub fn usage_pk(org: &str) -> String {
    format!("O#{org}#U")
}
/// Work slots (`store/slots.rs`): one partition per organization, sort key `<kind>#<i>`.
pub fn slots_pk(org: &str) -> String {
    format!("O#{org}#S")
}
/// Metaobject definitions: one partition per organization, sort key the name.
pub fn metaobject_defs_pk(org: &str) -> String {
    format!("O#{org}#MD")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_partition_key_starts_with_the_org() {
        for pk in [
            org_pk("abc123"),
            product_pk("abc123", "p#1"),
            variant_ref_pk("abc123", "v"),
            sku_ref_pk("abc123", "s"),
            attributes_pk("abc123"),
            families_pk("abc123"),
            change_pk("abc123", "product", 3),
            tombstone_pk("abc123", "sku", "s#1"),
            profiles_pk("abc123"),
            imports_pk("abc123"),
            webhooks_pk("abc123"),
            deliveries_pk("abc123", "wh_1"),
            delivery_log_change_pk("abc123", "wh_1"),
            pending_pk("abc123", "wh_1"),
            resource_pk("abc123", "asset"),
            metaobjects_pk("abc123", "color"),
            ref_counter_pk("abc123", "color", 15),
            metaobject_defs_pk("abc123"),
        ] {
            assert!(pk == "O#abc123" || pk.starts_with("O#abc123#"), "{pk}");
        }
    }

    #[test]
    fn shards_spread_identifiers_and_name_their_partitions() {
        let mut counts = [0u32; 16];
        for i in 0..16_000 {
            counts[shard_of(&format!("p{i}"), 16) as usize] += 1;
        }
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
        assert_eq!(shard_of("chair", 1), 0);
        assert_eq!(shard_of("chair", 16), shard_of("chair", 16));
        assert!(is_change_pk(
            &change_pk("abc123", "sku", 15),
            "abc123",
            "sku"
        ));
        assert!(!is_change_pk("O#abc123#T#sku", "abc123", "sku"));
        assert!(!is_change_pk(
            &change_pk("abc123", "sku", 1),
            "abc123",
            "skus"
        ));
        assert!(!is_change_pk(
            &change_pk("other1", "sku", 1),
            "abc123",
            "sku"
        ));
        assert!(!is_change_pk("O#abc123#T#sku#1x", "abc123", "sku"));
        let index = change_pk("abc123", "sku", 3);
        assert_eq!(
            entity_org("O#abc123#S#s1", Some(&index), "sku"),
            Some("abc123")
        );
        // another organization's index, another type's, none: not the entity's item
        assert_eq!(entity_org("O#other1#S#s1", Some(&index), "sku"), None);
        assert_eq!(entity_org("O#abc123#S#s1", Some(&index), "product"), None);
        assert_eq!(entity_org("O#abc123#S#s1", None, "sku"), None);
        assert_eq!(entity_org("X#abc123", Some(&index), "sku"), None);
        let moved = reshard("O#abc123#T#sku", "s1");
        assert_eq!(moved, entity_change_pk("abc123", "sku", "s1"));
        assert_eq!(reshard(&moved, "s1"), moved);
    }

    #[test]
    fn tree_items_name_their_ancestors() {
        use crate::store::items::EntityKind;
        assert_eq!(ancestor_sks(PRODUCT_SK), vec![]);
        assert_eq!(
            ancestor_sks(&variant_sk("v1")),
            vec![(EntityKind::Product, "L1".to_string())]
        );
        assert_eq!(
            ancestor_sks(&sku_sk("v1", "s1")),
            vec![
                (EntityKind::Product, "L1".to_string()),
                (EntityKind::Variant, "L2/v1".to_string())
            ]
        );
    }

    #[test]
    fn tree_sort_keys_order_by_level() {
        let mut keys = [
            sku_sk("a b", "s1"),
            variant_sk("a b"),
            PRODUCT_SK.to_string(),
            sku_sk("a", "s2"),
            variant_sk("a"),
        ];
        keys.sort();
        assert_eq!(keys[0], PRODUCT_SK);
        assert!(keys[1].starts_with("L2/") && keys[2].starts_with("L2/"));
        assert!(keys[3].starts_with(SKU_LEVEL) && keys[4].starts_with(SKU_LEVEL));
        // a variant's SKU prefix never matches a variant whose identifier extends it
        assert!(!sku_sk("ab", "s").starts_with(&variant_skus_prefix("a")));
    }

    #[test]
    fn a_tree_item_names_its_tombstone() {
        let pk = product_pk("abc123", "p#1");
        assert_eq!(
            tree_tombstone_pk(&pk, PRODUCT_SK),
            Some(tombstone_pk("abc123", "product", "p#1"))
        );
        assert_eq!(
            tree_tombstone_pk(&pk, &variant_sk("v#1")),
            Some(tombstone_pk("abc123", "variant", "v#1"))
        );
        assert_eq!(tree_tombstone_pk(&pk, &sku_sk("v#1", "s")), None);
        assert_eq!(tree_tombstone_pk(&org_pk("abc123"), PRODUCT_SK), None);
    }
}
