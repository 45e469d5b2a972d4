//! Attribute definitions: the types, the entities they target, and the definition record.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::named::named_enum;

// Declared from one list, so a type added here is accepted, listed in the OpenAPI enum and
// `x-operators` (which the console reads) and given a packed-values index (`ALL`'s order);
// the compiler then asks for its rules wherever a `match` over the types decides
// (validation, filter categories).
named_enum! {
    /// The value types of decisions.md: the spec's eleven plus `metaobject`.
    #[derive(JsonSchema)]
    pub enum AttributeType {
        Text => "text",
        Html => "html",
        Select => "select",
        Boolean => "boolean",
        Number => "number",
        Price => "price",
        Weight => "weight",
        Image => "image",
        Color => "color",
        Url => "url",
        Datetime => "datetime",
        Metaobject => "metaobject",
    }
}

named_enum! {
    /// The entities an attribute can target: the spec's four, plus `asset` (assets carry
    /// attributes of the same shape, validated against `asset.*` definitions).
    pub enum TargetEntity {
        Product => "product",
        Variant => "variant",
        Sku => "sku",
        Bundle => "bundle",
        Asset => "asset",
    }
}

/// What the values of an attribute, or of a metaobject field, look like: their type, and
/// whether they are per locale, multiple, or one of fixed options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValueShape {
    #[serde(rename = "type")]
    pub attr_type: AttributeType,
    #[serde(default)]
    pub is_localized: bool,
    #[serde(default)]
    pub is_multi: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl ValueShape {
    /// A single, unlocalized value of `attr_type`.
    pub fn plain(attr_type: AttributeType) -> Self {
        Self {
            attr_type,
            is_localized: false,
            is_multi: false,
            options: Vec::new(),
        }
    }
}

/// One attribute definition, as stored and as served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttributeDefinition {
    pub target_entity: TargetEntity,
    /// The key without the entity prefix (`color`).
    pub key: String,
    pub name: String,
    #[serde(flatten)]
    pub shape: ValueShape,
    #[serde(default)]
    pub is_channel_scoped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metaobject_definition: Option<String>,
}

impl AttributeDefinition {
    /// The fully qualified key, `<entity>.<key>`.
    pub fn qualified_key(&self) -> String {
        format!("{}.{}", self.target_entity.as_str(), self.key)
    }

    /// A plain single-value, unscoped definition; handy for tests and seeds.
    pub fn simple(target: TargetEntity, key: &str, attr_type: AttributeType) -> Self {
        Self {
            target_entity: target,
            key: key.to_string(),
            name: key.to_string(),
            shape: ValueShape::plain(attr_type),
            is_channel_scoped: false,
            metaobject_definition: None,
        }
    }
}

/// The attribute key rule with its limit, as error messages state it.
pub const KEY_RULE: &str = "at most 64 characters matching [a-z][a-z0-9_]{0,63}";

/// Attribute keys: `[a-z][a-z0-9_]{0,63}`.
pub fn is_valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some('a'..='z'))
        && key.len() <= 64
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_rule() {
        assert!(is_valid_key("color") && is_valid_key("price_eur_2") && is_valid_key("a"));
        assert!(!is_valid_key("") && !is_valid_key("Color") && !is_valid_key("1a"));
        assert!(!is_valid_key("a-b") && !is_valid_key(&"a".repeat(65)));
    }

    #[test]
    fn types_round_trip() {
        for t in AttributeType::ALL.iter().copied() {
            assert_eq!(AttributeType::parse(t.as_str()), Some(t));
            // the wire name serde writes is the one `as_str` gives
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        assert_eq!(AttributeType::parse("float"), None);
    }
}
