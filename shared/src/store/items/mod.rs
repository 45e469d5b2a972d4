//! Typed items of the single table, (de)serialized with serde_dynamo.

use crate::domain::entity_types::EntityType;
use crate::domain::time::Timestamp;
use crate::domain::values::StoredValues;
use serde::{Deserialize, Serialize};

/// The level of a catalog entity in its product tree, ordered from the root down (a
/// product before its variants, a variant before its SKUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntityKind {
    Product,
    Variant,
    Sku,
}

impl EntityKind {
    /// The entity type the kind is (its name on items, events and topics).
    pub fn entity_type(self) -> EntityType {
        match self {
            Self::Product => EntityType::Product,
            Self::Variant => EntityType::Variant,
            Self::Sku => EntityType::Sku,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.entity_type().as_str()
    }

    /// The kind `as_str` names.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Product, Self::Variant, Self::Sku]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// The attributes of a row that are its keys and index keys, not the entity's own (an
/// entity's tag leaves them out).
pub const KEY_ATTRIBUTES: [&str; 4] = ["PK", "SK", "GSI1PK", "GSI2SK"];

/// A product, variant or SKU item. Keys and index keys are derived from the other fields
/// by the store when it writes, never set by callers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityItem {
    #[serde(rename = "PK")]
    pub(in crate::store) pk: String,
    #[serde(rename = "SK")]
    pub(in crate::store) sk: String,
    #[serde(rename = "GSI1PK")]
    pub(in crate::store) gsi1pk: String,
    #[serde(rename = "GSI2SK")]
    pub(in crate::store) gsi2sk: String,
    pub kind: EntityKind,
    pub id: String,
    pub name: String,
    /// Parent product (variants and SKUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<String>,
    /// Parent variant (SKUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vid: Option<String>,
    #[serde(default)]
    #[serde(rename = "vals")]
    pub values: StoredValues,
    /// `selfUpdatedAt`: last change of the entity itself.
    #[serde(rename = "su")]
    pub self_updated_at: Timestamp,
    /// Last change of the entity or anything below it (children's writes and deletions).
    #[serde(rename = "tu")]
    pub updated_at: Timestamp,
    /// Optimistic-concurrency version, incremented by every write.
    pub ver: u64,
    #[serde(rename = "familyId", default, skip_serializing_if = "Option::is_none")]
    pub family_id: Option<i64>,
    /// Keys of the attributes that hold a value, projected into the indexes so that
    /// "does any entity use this attribute?" never reads whole items.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(rename = "ak")]
    pub attribute_keys: Vec<String>,
    /// A product's linked assets, in order (each asset lists the product in `linkedBy`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assets: Vec<String>,
    /// A product's categories, once set through PATCH /products (`None` before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Vec<String>>,
    /// The import line that created the product (`<import id>#<line>`), so that a line
    /// applied again after the import resumes reports the same 201.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// The metaobject references the counters hold for this item (`store/counters.rs`):
    /// set by every write, absent when none (and on items written before counting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mr: Option<Vec<String>>,
}

/// The bytes of a timestamp as stored (`2026-11-21T02:39:29.597Z`).
const TIMESTAMP_BYTES: usize = 24;

impl EntityItem {
    /// Its size as DynamoDB counts it (`limits::item_bytes` of the item it is stored as),
    /// from its fields, without encoding it: what an export's walk counts of what it holds.
    pub fn stored_bytes(&self) -> usize {
        fn digits(n: i128) -> usize {
            n.unsigned_abs()
                .checked_ilog10()
                .map_or(1, |d| d as usize + 1)
                + usize::from(n < 0)
        }
        let text = |name: &str, v: &str| name.len() + v.len();
        let maybe = |name: &str, v: &Option<String>| v.as_deref().map_or(0, |v| text(name, v));
        // a list: 3 bytes, and 1 per element besides its own
        let list = |name: &str, l: &[String]| {
            name.len() + 3 + l.iter().map(|e| 1 + e.len()).sum::<usize>()
        };
        let number = |name: &str, n: i128| name.len() + digits(n) + 1;
        // a list left out when empty
        let unless_empty = |name: &str, l: &[String]| match l.is_empty() {
            true => 0,
            false => list(name, l),
        };
        text("PK", &self.pk)
            + text("SK", &self.sk)
            + text("GSI1PK", &self.gsi1pk)
            + text("GSI2SK", &self.gsi2sk)
            + text("kind", self.kind.as_str())
            + text("id", &self.id)
            + text("name", &self.name)
            + maybe("pid", &self.pid)
            + maybe("vid", &self.vid)
            + "vals".len()
            + values_bytes(&self.values)
            + 2 * ("su".len() + TIMESTAMP_BYTES)
            + number("ver", i128::from(self.ver))
            + self
                .family_id
                .map_or(0, |f| number("familyId", i128::from(f)))
            + unless_empty("ak", &self.attribute_keys)
            + unless_empty("assets", &self.assets)
            + self
                .categories
                .as_deref()
                .map_or(0, |c| list("categories", c))
            + maybe("src", &self.src)
            + self.mr.as_deref().map_or(0, |m| list("mr", m))
    }
}

/// The bytes DynamoDB counts of stored values: a map (3 bytes, and 1 per entry besides its
/// key and value) of maps, each entry's list of maps.
fn values_bytes(values: &StoredValues) -> usize {
    let field = |name: &str, v: usize| 1 + name.len() + v;
    3 + values
        .iter()
        .map(|(key, a)| {
            let entries = a.entries.iter().map(|e| {
                let scope = |name: &str, v: &Option<String>| {
                    v.as_deref().map_or(0, |v| field(name, v.len()))
                };
                1 + 3 + scope("l", &e.locale) + scope("c", &e.channel) + field("v", e.value.len())
            });
            let attribute = 3
                + field("t", a.attr_type.as_str().len())
                + if a.is_multi { field("m", 1) } else { 0 }
                + a.metaobject_definition
                    .as_deref()
                    .map_or(0, |d| field("d", d.len()))
                + field("e", 3 + entries.sum::<usize>());
            field(key, attribute)
        })
        .sum::<usize>()
}

/// An organization's settings item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrgItem {
    #[serde(rename = "PK")]
    pub(in crate::store) pk: String,
    #[serde(rename = "SK")]
    pub(in crate::store) sk: String,
    pub id: String,
    pub name: String,
    #[serde(rename = "apiEnabled")]
    pub api_enabled: bool,
    #[serde(rename = "createdAt")]
    pub created_at: Timestamp,
    /// The organization's own rate limit, overriding the deployment's defaults.
    #[serde(rename = "rateLimit", default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Its live keys issued before tags (0 for every organization made since; absent:
    /// not counted yet). None is ever issued again, so the count only falls; the
    /// authenticator refuses an untagged secret without a read where it is 0.
    #[serde(
        rename = "untaggedKeys",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub untagged_keys: Option<u32>,
    /// How many days the change feed keeps the entries it writes of the organization's
    /// history (absent: the longest, `domain::limits::HISTORY_RETENTION_DAYS`).
    #[serde(
        rename = "historyRetentionDays",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub history_retention_days: Option<u32>,
}

impl OrgItem {
    /// How many days the entries of the organization's history written now are kept.
    pub fn history_retention_days(&self) -> u32 {
        let days = crate::domain::limits::HISTORY_RETENTION_DAYS;
        self.history_retention_days
            .filter(|d| days.contains(d))
            .unwrap_or(*days.end())
    }
}

/// A rate limit as stored: tokens per second and burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimit {
    pub rate: u32,
    pub burst: u32,
}

impl From<RateLimit> for crate::domain::rate::Policy {
    fn from(l: RateLimit) -> Self {
        Self {
            rate: l.rate,
            burst: l.burst,
        }
    }
}

/// An API key item: only the SHA-256 of the secret is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyItem {
    #[serde(rename = "PK")]
    pub(in crate::store) pk: String,
    #[serde(rename = "SK")]
    pub(in crate::store) sk: String,
    #[serde(rename = "keyId")]
    pub key_id: String,
    pub org: String,
    pub name: String,
    #[serde(rename = "secretHash")]
    pub secret_hash: String,
    pub scopes: Vec<String>,
    #[serde(default)]
    pub revoked: bool,
    #[serde(rename = "createdAt")]
    pub created_at: Timestamp,
    /// When the key last authenticated a request, to the hour (see `auth/cache.rs`).
    #[serde(
        rename = "lastUsedAt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_used_at: Option<Timestamp>,
    /// Whether its secret carries its id's tag (`domain/credential_tags.rs`): every key
    /// issued since tags. Such a key is never matched by an untagged secret.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tagged: bool,
}

/// An attribute definition item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributeItem {
    #[serde(rename = "PK")]
    pub(in crate::store) pk: String,
    #[serde(rename = "SK")]
    pub(in crate::store) sk: String,
    #[serde(flatten)]
    pub def: crate::domain::attributes::AttributeDefinition,
    #[serde(rename = "createdAt")]
    pub created_at: Timestamp,
}

#[cfg(test)]
mod tests;
