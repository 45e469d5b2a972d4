//! The `search` parameter: URL-decoded JSON `{"<entity>.<key>": [{operator, value}...]}` (and
//! `_`-prefixed system keys), checked in two steps: the JSON's shape first (no I/O), then each
//! filter against its attribute's definition. Every refusal names the key, the operator and
//! the problem.

use super::operators::{parse_duration, Category, OperandShape, Operator};
use crate::domain::attributes::{
    is_valid_key, AttributeDefinition, AttributeType, TargetEntity, KEY_RULE,
};
use crate::domain::invalid::excerpt;
use crate::domain::limits::{
    MAX_IN_VALUES, MAX_SEARCH_CONDITIONS, MAX_SEARCH_KEYS, MAX_SEARCH_TEXT_CHARS,
};
use crate::domain::time::Timestamp;
use crate::domain::values::{parse_price, parse_weight};
use crate::error::Failure;
use serde_json::Value;
use std::collections::HashMap;

/// What a filter is on.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    /// An attribute of the product, variant or SKU level.
    Attribute {
        entity: TargetEntity,
        key: String,
        attr_type: AttributeType,
    },
    /// `_updated_at`: the entity's hierarchy-aware `updatedAt`.
    UpdatedAt,
    /// `_family`: the product's family id.
    Family,
    /// `_identifier`: the entity's identifier.
    Identifier,
}

impl Field {
    pub fn category(&self) -> Category {
        match self {
            Self::Attribute { attr_type, .. } => Category::of(*attr_type),
            Self::UpdatedAt => Category::Datetime,
            Self::Family => Category::Preset,
            Self::Identifier => Category::Text,
        }
    }
}

/// A validated operand.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    None,
    /// Text and preset values, as stored (booleans as `true` / `false`).
    Text(String),
    Texts(Vec<String>),
    /// A number; prices in major units with the currency when given, weights in grams.
    Number {
        value: f64,
        currency: Option<String>,
    },
    Time(Timestamp),
    /// A duration in milliseconds.
    Duration(i64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub op: Operator,
    pub operand: Operand,
}

/// One top-level key of `search` with its conditions (all must hold).
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub key: String,
    pub field: Field,
    pub conditions: Vec<Condition>,
}

/// One `{operator, value}` of the JSON, before validation.
type RawCondition = (String, Option<Value>);

/// `search` after the JSON check: keys with their raw conditions.
#[derive(Debug, Clone, PartialEq)]
pub struct RawSearch(Vec<(String, Vec<RawCondition>)>);

fn bad(key: &str, problem: impl std::fmt::Display) -> Failure {
    Failure::invalid(format!("filter '{}': {problem}", excerpt(key)))
}

/// Checks the JSON shape of `search` (already URL-decoded).
pub fn parse_json(raw: &str) -> Result<RawSearch, Failure> {
    let value: Value = serde_json::from_str(raw).map_err(|e| {
        Failure::invalid(format!("query parameter 'search' is not valid JSON: {e}"))
    })?;
    let Value::Object(map) = value else {
        return Err(Failure::invalid(
            "query parameter 'search' must be a JSON object of filters",
        ));
    };
    if map.len() > MAX_SEARCH_KEYS {
        return Err(Failure::invalid(format!(
            "query parameter 'search': at most {MAX_SEARCH_KEYS} filter keys; this one has {}",
            map.len()
        )));
    }
    let mut out = Vec::new();
    for (key, conds) in map {
        // checked before anything is read: the key becomes part of a storage key
        if split_key(&key).is_some_and(|(_, k)| !is_valid_key(k)) {
            return Err(Failure::invalid(format!(
                "query parameter 'search': filter '{}': an attribute key is {KEY_RULE}",
                excerpt(&key)
            )));
        }
        let Value::Array(list) = conds else {
            return Err(bad(&key, "expected an array of {operator, value} objects"));
        };
        if list.is_empty() {
            return Err(bad(&key, "expected at least one {operator, value} object"));
        }
        if list.len() > MAX_SEARCH_CONDITIONS {
            return Err(bad(
                &key,
                format!(
                    "at most {MAX_SEARCH_CONDITIONS} conditions per key; this one has {}",
                    list.len()
                ),
            ));
        }
        let mut pairs = Vec::new();
        for c in list {
            let Value::Object(mut obj) = c else {
                return Err(bad(&key, "expected an array of {operator, value} objects"));
            };
            if let Some(extra) = obj.keys().find(|k| *k != "operator" && *k != "value") {
                return Err(bad(&key, format!("unknown field '{extra}'")));
            }
            let op = match obj.remove("operator") {
                Some(Value::String(s)) => s,
                _ => return Err(bad(&key, "each condition needs an 'operator' string")),
            };
            let value = obj.remove("value");
            if let Some(Value::Array(values)) = &value {
                if values.len() > MAX_IN_VALUES {
                    return Err(bad(
                        &key,
                        format!(
                            "{op} takes at most {MAX_IN_VALUES} values; this one has {}",
                            values.len()
                        ),
                    ));
                }
            }
            if let Some(chars) = longest_text(value.as_ref()) {
                return Err(bad(
                    &key,
                    format!(
                        "operator '{op}': a value is at most {MAX_SEARCH_TEXT_CHARS} characters; this one has {chars}"
                    ),
                ));
            }
            pairs.push((op, value));
        }
        out.push((key, pairs));
    }
    Ok(RawSearch(out))
}

/// The length in characters of the longest text of a condition's value (itself, or an item
/// of its array) when it is over [`MAX_SEARCH_TEXT_CHARS`].
fn longest_text(value: Option<&Value>) -> Option<usize> {
    let texts: Vec<&str> = match value {
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    texts
        .into_iter()
        // bytes bound characters from above: most texts are counted without a walk
        .filter(|s| s.len() > MAX_SEARCH_TEXT_CHARS)
        .map(|s| s.chars().count())
        .filter(|n| *n > MAX_SEARCH_TEXT_CHARS)
        .max()
}

impl RawSearch {
    /// The top-level keys, as given.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    /// The attribute definitions the filters name, to read before `validate`.
    pub fn attribute_keys(&self) -> Vec<(TargetEntity, String)> {
        self.0
            .iter()
            .filter_map(|(k, _)| split_key(k))
            .filter(|(_, k)| is_valid_key(k))
            .map(|(e, k)| (e, k.to_string()))
            .collect()
    }

    /// Checks every filter against the definitions (by entity, unprefixed key).
    pub fn validate(
        &self,
        defs: &HashMap<TargetEntity, HashMap<String, AttributeDefinition>>,
    ) -> Result<Vec<Filter>, Failure> {
        self.0
            .iter()
            .map(|(key, pairs)| {
                let field = field_of(key, defs)?;
                let conditions = pairs
                    .iter()
                    .map(|(op, value)| condition(key, &field, op, value.as_ref()))
                    .collect::<Result<_, _>>()?;
                Ok(Filter {
                    key: key.clone(),
                    field,
                    conditions,
                })
            })
            .collect()
    }
}

fn split_key(key: &str) -> Option<(TargetEntity, &str)> {
    let (entity, k) = key.split_once('.')?;
    // the product tree's levels only: a target added later is not a list's filter key
    let entity = TargetEntity::parse(entity).filter(|e| {
        matches!(
            e,
            TargetEntity::Product | TargetEntity::Variant | TargetEntity::Sku
        )
    })?;
    Some((entity, k))
}

/// The system filters, by the key a filter names them with (the OpenAPI document lists
/// each with its category's operators, as the console reads them).
pub const SYSTEM_FILTERS: [(&str, Field); 3] = [
    ("_updated_at", Field::UpdatedAt),
    ("_family", Field::Family),
    ("_identifier", Field::Identifier),
];

fn field_of(
    key: &str,
    defs: &HashMap<TargetEntity, HashMap<String, AttributeDefinition>>,
) -> Result<Field, Failure> {
    if let Some((_, field)) = SYSTEM_FILTERS.iter().find(|(name, _)| *name == key) {
        return Ok(field.clone());
    }
    if key.starts_with('_') {
        let known: Vec<&str> = SYSTEM_FILTERS.iter().map(|(name, _)| *name).collect();
        return Err(bad(
            key,
            format!("unknown system filter (known: {})", known.join(", ")),
        ));
    }
    let (entity, k) = split_key(key).ok_or_else(|| {
        bad(
            key,
            "a key is '<entity>.<attribute>' with entity product, variant or sku",
        )
    })?;
    let def = defs
        .get(&entity)
        .and_then(|d| d.get(k))
        .ok_or_else(|| bad(key, "unknown attribute"))?;
    Ok(Field::Attribute {
        entity,
        key: k.to_string(),
        attr_type: def.shape.attr_type,
    })
}

fn condition(
    key: &str,
    field: &Field,
    op_name: &str,
    value: Option<&Value>,
) -> Result<Condition, Failure> {
    let category = field.category();
    let op = Operator::parse(op_name)
        .ok_or_else(|| bad(key, format!("unknown operator '{op_name}'")))?;
    if !category.operators().contains(&op) {
        return Err(bad(
            key,
            format!(
                "operator '{op_name}' is not valid for {} fields",
                category.name()
            ),
        ));
    }
    let at = |problem: String| bad(key, format!("operator '{op_name}': {problem}"));
    let value = value.filter(|v| !v.is_null());
    let operand = match (op.shape(), value) {
        (OperandShape::None, None) => Operand::None,
        (OperandShape::None, Some(_)) => return Err(at("takes no value".into())),
        (_, None) => return Err(at("needs a value".into())),
        (OperandShape::Duration, Some(v)) => v
            .as_str()
            .and_then(parse_duration)
            .map(Operand::Duration)
            .ok_or_else(|| at("expected a duration such as \"7d\", \"24h\" or \"30m\"".into()))?,
        (OperandShape::Many, Some(Value::Array(items))) if !items.is_empty() => Operand::Texts(
            items
                .iter()
                .map(|v| preset_text(field, v).ok_or_else(|| at(scalar_problem(field))))
                .collect::<Result<_, _>>()?,
        ),
        (OperandShape::Many, Some(_)) => return Err(at("expected a non-empty array".into())),
        (OperandShape::One, Some(v)) => {
            one(field, category, v).ok_or_else(|| at(scalar_problem(field)))?
        }
    };
    Ok(Condition { op, operand })
}

/// What a scalar of this field must look like, for the error message.
fn scalar_problem(field: &Field) -> String {
    match field {
        Field::Family => "expected a family id (integer)".into(),
        Field::UpdatedAt => "expected an RFC 3339 time".into(),
        Field::Attribute { attr_type, .. } => match attr_type {
            AttributeType::Price => "expected a number or a price like \"12.50 EUR\"".into(),
            AttributeType::Weight => {
                "expected a number of grams or a weight like \"1.5 kg\"".into()
            }
            AttributeType::Number => "expected a number".into(),
            AttributeType::Boolean => "expected true or false".into(),
            AttributeType::Datetime => "expected an RFC 3339 time".into(),
            _ => "expected a string".into(),
        },
        Field::Identifier => "expected a string".into(),
    }
}

/// A text or preset scalar as stored.
fn preset_text(field: &Field, v: &Value) -> Option<String> {
    let boolean = matches!(
        field,
        Field::Attribute {
            attr_type: AttributeType::Boolean,
            ..
        }
    );
    match (field, v) {
        (Field::Family, Value::Number(n)) => n.as_i64().map(|i| i.to_string()),
        (Field::Family, _) => None,
        (_, Value::Bool(b)) if boolean => Some(b.to_string()),
        (_, Value::String(s)) if !boolean || s == "true" || s == "false" => Some(s.clone()),
        _ => None,
    }
}

fn one(field: &Field, category: Category, v: &Value) -> Option<Operand> {
    match category {
        Category::Text | Category::Preset => preset_text(field, v).map(Operand::Text),
        Category::Datetime => v.as_str().and_then(Timestamp::parse).map(Operand::Time),
        Category::Numeric => {
            let t = match field {
                Field::Attribute { attr_type, .. } => *attr_type,
                _ => AttributeType::Number,
            };
            numeric(t, v)
        }
    }
}

/// Grams per unit of the weights decisions.md allows.
pub fn grams(value: f64, unit: &str) -> Option<f64> {
    let per = match unit {
        "g" => 1.0,
        "kg" => 1000.0,
        "lb" => 453.592_37,
        "oz" => 28.349_523_125,
        _ => return None,
    };
    Some(value * per)
}

fn numeric(t: AttributeType, v: &Value) -> Option<Operand> {
    let plain = |value: f64| Operand::Number {
        value,
        currency: None,
    };
    match v {
        Value::Number(n) => n.as_f64().map(plain),
        Value::String(s) => match t {
            AttributeType::Price => {
                let (amount, currency) = parse_price(s)?;
                Some(Operand::Number {
                    value: amount.as_f64()?,
                    currency: Some(currency.to_string()),
                })
            }
            AttributeType::Weight => {
                let (value, unit) = parse_weight(s)?;
                grams(value.as_f64()?, unit).map(plain)
            }
            _ => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .map(plain),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defs() -> HashMap<TargetEntity, HashMap<String, AttributeDefinition>> {
        let mut defs: HashMap<TargetEntity, HashMap<String, AttributeDefinition>> = HashMap::new();
        for (e, k, t) in [
            (TargetEntity::Product, "title", AttributeType::Text),
            (TargetEntity::Product, "price", AttributeType::Price),
            (TargetEntity::Sku, "weight", AttributeType::Weight),
            (TargetEntity::Variant, "active", AttributeType::Boolean),
            (TargetEntity::Product, "launch", AttributeType::Datetime),
        ] {
            defs.entry(e)
                .or_default()
                .insert(k.into(), AttributeDefinition::simple(e, k, t));
        }
        defs
    }

    fn check(search: Value) -> Result<Vec<Filter>, String> {
        parse_json(&search.to_string())
            .and_then(|r| r.validate(&defs()))
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn errors_name_key_operator_and_problem() {
        let cases = [
            (
                json!({"product.price": [{"operator": "CONTAINS", "value": "1"}]}),
                "filter 'product.price': operator 'CONTAINS' is not valid for numeric fields",
            ),
            (
                json!({"product.nope": [{"operator": "EQUALS", "value": "1"}]}),
                "filter 'product.nope': unknown attribute",
            ),
            (
                json!({"title": [{"operator": "EQUALS", "value": "1"}]}),
                "filter 'title': a key is '<entity>.<attribute>' with entity product, variant or sku",
            ),
            (
                json!({"_color": [{"operator": "EQUALS", "value": "1"}]}),
                "filter '_color': unknown system filter (known: _updated_at, _family, _identifier)",
            ),
            (
                json!({"product.title": [{"operator": "LIKE", "value": "1"}]}),
                "filter 'product.title': unknown operator 'LIKE'",
            ),
            (
                json!({"product.title": [{"operator": "IN", "value": "a"}]}),
                "filter 'product.title': operator 'IN': expected a non-empty array",
            ),
            (
                json!({"product.title": [{"operator": "EMPTY", "value": "a"}]}),
                "filter 'product.title': operator 'EMPTY': takes no value",
            ),
            (
                json!({"product.price": [{"operator": "GREATER_THAN", "value": "cheap"}]}),
                "filter 'product.price': operator 'GREATER_THAN': expected a number or a price like \"12.50 EUR\"",
            ),
            (
                json!({"_updated_at": [{"operator": "IN_THE_LAST", "value": "7 days"}]}),
                "filter '_updated_at': operator 'IN_THE_LAST': expected a duration such as \"7d\", \"24h\" or \"30m\"",
            ),
            (
                json!({"product.title": {"operator": "EQUALS"}}),
                "filter 'product.title': expected an array of {operator, value} objects",
            ),
            (json!([1]), "query parameter 'search' must be a JSON object of filters"),
            (
                json!({"product.title": [{"operator": "CONTAINS", "value": format!("{}b", "a".repeat(6_014))}]}),
                "filter 'product.title': operator 'CONTAINS': a value is at most 1000 characters; this one has 6015",
            ),
            (
                json!({"_identifier": [{"operator": "IN", "value": ["a", "ä".repeat(1_001)]}]}),
                "filter '_identifier': operator 'IN': a value is at most 1000 characters; this one has 1001",
            ),
        ];
        for (search, error) in cases {
            assert_eq!(check(search.clone()).unwrap_err(), error, "{search}");
        }
        assert!(parse_json("{nope")
            .unwrap_err()
            .message()
            .starts_with("query parameter 'search' is not valid JSON"));
    }

    #[test]
    fn a_value_of_the_longest_length_is_taken() {
        let longest = "ä".repeat(MAX_SEARCH_TEXT_CHARS);
        let f = check(json!({"product.title": [{"operator": "CONTAINS", "value": longest}]}));
        assert_eq!(
            f.unwrap()[0].conditions[0].operand,
            Operand::Text("ä".repeat(MAX_SEARCH_TEXT_CHARS))
        );
    }

    #[test]
    fn operands_are_normalized() {
        let f = check(json!({
            "product.price": [{"operator": "GREATER_THAN", "value": "10 EUR"}, {"operator": "LESS_THAN", "value": 20}],
            "sku.weight": [{"operator": "LESS_THAN", "value": "1.5 kg"}],
            "variant.active": [{"operator": "EQUALS", "value": true}],
            "_family": [{"operator": "IN", "value": [1, 2]}]
        }))
        .unwrap();
        let by_key = |k: &str| f.iter().find(|x| x.key == k).unwrap().conditions.clone();
        assert_eq!(
            by_key("product.price")[0].operand,
            Operand::Number {
                value: 10.0,
                currency: Some("EUR".into())
            }
        );
        assert_eq!(
            by_key("sku.weight")[0].operand,
            Operand::Number {
                value: 1500.0,
                currency: None
            }
        );
        assert_eq!(
            by_key("variant.active")[0].operand,
            Operand::Text("true".into())
        );
        assert_eq!(
            by_key("_family")[0].operand,
            Operand::Texts(vec!["1".into(), "2".into()])
        );
        let raw = parse_json(&json!({"sku.weight": [{"operator": "EMPTY"}], "_identifier": [{"operator": "CONTAINS", "value": "a"}]}).to_string()).unwrap();
        assert_eq!(
            raw.attribute_keys(),
            vec![(TargetEntity::Sku, "weight".to_string())]
        );
    }
}
