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
