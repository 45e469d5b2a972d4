//! Attribute values: the `values` input forms of decisions.md, validation per type, the
//! stored form, and the response entries (`value`, `data`, `type`, `locale`, ...).
//!
//! Each stored value keeps its type (and multi flag, metaobject definition), so reading an
//! entity renders its attributes without reading any definition.

use super::attributes::{AttributeDefinition, AttributeType};
use super::Invalid;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};

#[cfg(test)]
mod tests;

/// Longest accepted single value, in bytes (an item holds at most 400 KB in DynamoDB).
pub const MAX_VALUE_BYTES: usize = 100_000;
pub const WEIGHT_UNITS: [&str; 4] = ["g", "kg", "lb", "oz"];

/// One attribute's values on an entity, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredAttribute {
    #[serde(rename = "t")]
    pub attr_type: AttributeType,
    #[serde(rename = "m", default, skip_serializing_if = "std::ops::Not::not")]
    pub is_multi: bool,
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub metaobject_definition: Option<String>,
    #[serde(rename = "e")]
    pub entries: Vec<StoredEntry>,
}

impl StoredAttribute {
    /// One unscoped, single value of type `t`.
    pub fn single(t: AttributeType, value: &str) -> Self {
        Self {
            attr_type: t,
            is_multi: false,
            metaobject_definition: None,
            entries: vec![StoredEntry {
                locale: None,
                channel: None,
                value: value.to_string(),
            }],
        }
    }
}

/// One scoped value: `value` is the raw string served (a JSON array string when multi).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StoredEntry {
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(rename = "v")]
    pub value: String,
}

/// Values of one entity, keyed by the attribute key without prefix.
pub type StoredValues = BTreeMap<String, StoredAttribute>;

/// A scope: locale and channel, each absent for unscoped values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueScope {
    pub locale: Option<String>,
    pub channel: Option<String>,
}

/// One validated change to an entity's values.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueChange {
    /// `null`: remove every value of the attribute.
    ClearAll { key: String },
    /// Remove the value of one scope (`{"locale": "de-DE", "value": null}`).
    Clear { key: String, scope: ValueScope },
    /// Set the value of one scope; carries the shape the attribute is stored with.
    Set {
        key: String,
        scope: ValueScope,
        raw: String,
        shape: StorageShape,
    },
}

/// How an attribute's values are stored and rendered: its type, multi flag and metaobject
/// definition, copied from the definition when a value is set.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageShape {
    pub attr_type: AttributeType,
    pub is_multi: bool,
    pub metaobject_definition: Option<String>,
}

/// What the caller knows about the organization's languages and channels; `None` skips the
/// existence check.
#[derive(Debug, Clone, Default)]
pub struct ScopeRules<'a> {
    pub languages: Option<&'a [String]>,
    pub channels: Option<&'a [String]>,
}

/// Validates a `values` object against the definitions of the entity being written.
/// `defs` maps the unprefixed key to its definition; `entity` names the entity in errors.
pub fn parse_values(
    entity: &str,
    input: &Map<String, Value>,
    defs: &HashMap<String, AttributeDefinition>,
    rules: &ScopeRules<'_>,
) -> Result<Vec<ValueChange>, Invalid> {
    let mut changes = Vec::new();
    for (key, value) in input {
        if !super::attributes::is_valid_key(key) {
            return Err(Invalid::new(format!(
                "values: '{}' is not an attribute key: keys are {}",
                super::invalid::excerpt(key),
                super::attributes::KEY_RULE
            )));
        }
        let def = defs
            .get(key)
            .ok_or_else(|| Invalid::new(format!("values: unknown attribute '{entity}.{key}'")))?;
        let at = |problem: String| Invalid::new(format!("values.{key}: {problem}"));
        match value {
            Value::Null => changes.push(ValueChange::ClearAll { key: key.clone() }),
            Value::Object(obj) => changes.push(scoped(key, def, obj, rules).map_err(at)?),
            Value::Array(items) if items.iter().any(Value::is_object) => {
                if !items.iter().all(Value::is_object) {
                    return Err(at("an array of scoped values must hold only objects".into()));
                }
                for item in items {
                    let obj = item.as_object().expect("checked above");
                    changes.push(scoped(key, def, obj, rules).map_err(at)?);
                }
            }
            plain => {
                let scope = ValueScope {
                    locale: None,
                    channel: None,
                };
                check_scope(def, &scope, rules).map_err(at)?;
                changes.push(set_or_clear(key, def, scope, plain).map_err(at)?);
            }
        }
    }
    Ok(changes)
}

fn scoped(
    key: &str,
    def: &AttributeDefinition,
    obj: &Map<String, Value>,
    rules: &ScopeRules<'_>,
) -> Result<ValueChange, String> {
    if let Some(extra) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "locale" | "channel" | "value"))
    {
        return Err(format!(
            "unknown field '{extra}' (a scoped value has locale, channel and value)"
        ));
    }
    let text = |field: &str| -> Result<Option<String>, String> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("'{field}' must be a string")),
        }
    };
    let scope = ValueScope {
        locale: text("locale")?,
        channel: text("channel")?,
    };
    check_scope(def, &scope, rules)?;
    let value = obj
        .get("value")
        .ok_or_else(|| "a scoped value needs a 'value' field".to_string())?;
    set_or_clear(key, def, scope, value)
}

fn check_scope(
    def: &AttributeDefinition,
    scope: &ValueScope,
    rules: &ScopeRules<'_>,
) -> Result<(), String> {
    match (&scope.locale, def.shape.is_localized) {
        (None, true) => return Err("the attribute is localized: a 'locale' is required".into()),
        (Some(_), false) => {
            return Err("the attribute is not localized: 'locale' is not allowed".into())
        }
        (Some(l), true) => {
            if !is_language_tag(l) {
                return Err(format!("locale '{l}' is not a valid language tag"));
            }
            if rules
                .languages
                .is_some_and(|known| !known.iter().any(|k| k == l))
            {
                return Err(format!("locale '{l}' is not a language of this workspace"));
            }
        }
        (None, false) => {}
    }
    match (&scope.channel, def.is_channel_scoped) {
        (None, true) => Err("the attribute is channel-scoped: a 'channel' is required".into()),
        (Some(_), false) => {
            Err("the attribute is not channel-scoped: 'channel' is not allowed".into())
        }
        (Some(c), true)
            if rules
                .channels
                .is_some_and(|known| !known.iter().any(|k| k == c)) =>
        {
            Err(format!("channel '{c}' does not exist"))
        }
        _ => Ok(()),
    }
}

fn set_or_clear(
    key: &str,
    def: &AttributeDefinition,
    scope: ValueScope,
    value: &Value,
) -> Result<ValueChange, String> {
    let key = key.to_string();
    if value.is_null() {
        return Ok(ValueChange::Clear { key, scope });
    }
    let raw = if def.shape.is_multi {
        let Value::Array(items) = value else {
            return Err("the attribute is multi-value: expected an array".into());
        };
        if items.is_empty() {
            return Ok(ValueChange::Clear { key, scope });
        }
        let raws = items
            .iter()
            .enumerate()
            .map(|(i, v)| normalize(def, v).map_err(|p| format!("[{i}]: {p}")))
            .collect::<Result<Vec<_>, _>>()?;
        serde_json::to_string(&raws).expect("strings serialize")
    } else {
        if value.is_array() {
            return Err("the attribute is single-value: an array is not allowed".into());
        }
        normalize(def, value)?
    };
    if raw.len() > MAX_VALUE_BYTES {
        return Err(format!("value is longer than {MAX_VALUE_BYTES} bytes"));
    }
    let shape = StorageShape {
        attr_type: def.shape.attr_type,
        is_multi: def.shape.is_multi,
        metaobject_definition: def.metaobject_definition.clone(),
    };
    Ok(ValueChange::Set {
        key,
        scope,
        raw,
        shape,
    })
}

/// Checks one scalar against the attribute's type and returns its raw stored string.
pub fn normalize(def: &AttributeDefinition, value: &Value) -> Result<String, String> {
    let t = def.shape.attr_type;
    let want_string = || {
        value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("expected a string for a {} attribute", t.as_str()))
    };
    match t {
        AttributeType::Text | AttributeType::Html => want_string(),
        AttributeType::Select => {
            let s = want_string()?;
            if def.shape.options.contains(&s) {
                Ok(s)
            } else {
                Err(format!(
                    "'{s}' is not one of the options ({})",
                    def.shape.options.join(", ")
                ))
            }
        }
        AttributeType::Boolean => value
            .as_bool()
            .map(|b| b.to_string())
            .ok_or_else(|| "expected true or false".into()),
        AttributeType::Number => {
            let n = match value {
                Value::Number(n) => Some(n.clone()),
                Value::String(s) => s.trim().parse::<serde_json::Number>().ok(),
                _ => None,
            };
            match n {
                Some(n) if n.as_f64().is_some_and(f64::is_finite) => Ok(n.to_string()),
                _ => Err("expected a number".into()),
            }
        }
        AttributeType::Price => {
            let s = want_string()?;
            parse_price(&s)
                .map(|_| s.trim().to_string())
                .ok_or_else(|| format!("'{s}' is not a price like \"12.50 EUR\""))
        }
        AttributeType::Weight => {
            let s = want_string()?;
            parse_weight(&s)
                .map(|_| s.trim().to_string())
                .ok_or_else(|| {
                    format!("'{s}' is not a weight like \"1.5 kg\" (units g, kg, lb, oz)")
                })
        }
        AttributeType::Image | AttributeType::Url => {
            let s = want_string()?;
            if is_http_url(&s) {
                Ok(s)
            } else {
                Err(format!("'{s}' is not an absolute http(s) URL"))
            }
        }
        AttributeType::Color => {
            let s = want_string()?;
            let ok =
                s.len() == 7 && s.starts_with('#') && s[1..].chars().all(|c| c.is_ascii_hexdigit());
            if ok {
                Ok(s)
            } else {
                Err(format!("'{s}' is not a color like \"#1A2B3C\""))
            }
        }
        AttributeType::Datetime => {
            let s = want_string()?;
            if chrono::DateTime::parse_from_rfc3339(s.trim()).is_ok() {
                Ok(s.trim().to_string())
            } else {
                Err(format!("'{s}' is not an RFC 3339 date-time"))
            }
        }
        AttributeType::Metaobject => {
            let s = want_string()?;
            super::identifier::validate("metaobject", &s).map_err(|e| e.message)?;
            Ok(s)
        }
    }
}

pub fn is_language_tag(tag: &str) -> bool {
    let mut parts = tag.split('-');
    let first = parts.next().unwrap_or_default();
    (2..=3).contains(&first.len())
        && first.chars().all(|c| c.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

fn is_http_url(s: &str) -> bool {
    url::Url::parse(s).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

fn number(s: &str) -> Option<serde_json::Number> {
    let n: serde_json::Number = s.parse().ok()?;
    n.as_f64().filter(|f| f.is_finite())?;
    Some(n)
}

/// `"12.50 EUR"` → (12.5, "EUR").
pub fn parse_price(s: &str) -> Option<(serde_json::Number, &str)> {
    let (amount, currency) = s.trim().split_once(' ')?;
    let ok_currency = currency.len() == 3 && currency.chars().all(|c| c.is_ascii_uppercase());
    let ok_amount = amount
        .trim_start_matches('-')
        .chars()
        .all(|c| c.is_ascii_digit() || c == '.');
    (ok_currency && ok_amount).then_some(())?;
    Some((number(amount)?, currency))
}

/// `"1.5 kg"` → (1.5, "kg").
pub fn parse_weight(s: &str) -> Option<(serde_json::Number, &str)> {
    let (value, unit) = s.trim().split_once(' ')?;
    WEIGHT_UNITS.contains(&unit).then_some(())?;
    Some((number(value)?, unit))
}

/// Applies validated changes; returns whether anything changed.
pub fn apply(values: &mut StoredValues, changes: &[ValueChange]) -> bool {
    let before = values.clone();
    for change in changes {
        match change {
            ValueChange::ClearAll { key } => {
                values.remove(key);
            }
            ValueChange::Clear { key, scope } => {
                if let Some(attr) = values.get_mut(key) {
                    attr.entries
                        .retain(|e| e.locale != scope.locale || e.channel != scope.channel);
                    if attr.entries.is_empty() {
                        values.remove(key);
                    }
                }
            }
            ValueChange::Set {
                key,
                scope,
                raw,
                shape,
            } => {
                let attr = values
                    .entry(key.clone())
                    .or_insert_with(|| StoredAttribute {
                        attr_type: shape.attr_type,
                        is_multi: shape.is_multi,
                        metaobject_definition: shape.metaobject_definition.clone(),
                        entries: Vec::new(),
                    });
                attr.attr_type = shape.attr_type;
                attr.is_multi = shape.is_multi;
                attr.metaobject_definition = shape.metaobject_definition.clone();
                attr.entries
                    .retain(|e| e.locale != scope.locale || e.channel != scope.channel);
                attr.entries.push(StoredEntry {
                    locale: scope.locale.clone(),
                    channel: scope.channel.clone(),
                    value: raw.clone(),
                });
                attr.entries.sort();
            }
        }
    }
    *values != before
}

/// The identifiers a stored metaobject attribute references (none for other types).
pub fn referenced_identifiers(attr: &StoredAttribute) -> Vec<String> {
    identifiers_in(
        attr.attr_type,
        attr.is_multi,
        attr.entries.iter().map(|e| e.value.as_str()),
    )
}

/// The identifiers the raw values of an attribute of type `t` reference (none unless a
/// metaobject).
pub fn identifiers_in<'a>(
    t: AttributeType,
    is_multi: bool,
    raws: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    if t != AttributeType::Metaobject {
        return Vec::new();
    }
    raws.into_iter()
        .flat_map(|raw| raw_scalars(is_multi, raw))
        .collect()
}

/// The scalars of one raw stored value: a multi value's JSON array unpacked.
pub fn raw_scalars(is_multi: bool, raw: &str) -> Vec<String> {
    if is_multi {
        serde_json::from_str(raw).unwrap_or_default()
    } else {
        vec![raw.to_string()]
    }
}

impl ValueChange {
    /// For a change that sets a metaobject value: the attribute key, the definition and the
    /// identifiers it names.
    pub fn metaobject_refs(&self) -> Option<(&str, &str, Vec<String>)> {
        match self {
            ValueChange::Set {
                key, raw, shape, ..
            } if shape.attr_type == AttributeType::Metaobject => Some((
                key.as_str(),
                shape.metaobject_definition.as_deref()?,
                raw_scalars(shape.is_multi, raw),
            )),
            _ => None,
        }
    }
}

/// The typed `data` of one raw scalar.
fn data_of(t: AttributeType, raw: &str) -> Value {
    match t {
        AttributeType::Number => number(raw).map(Value::Number).unwrap_or_else(|| json!(raw)),
        AttributeType::Boolean => json!(raw == "true"),
        AttributeType::Price => parse_price(raw)
            .map(|(amount, currency)| json!({"amount": amount, "currency": currency}))
            .unwrap_or_else(|| json!(raw)),
        AttributeType::Weight => parse_weight(raw)
            .map(|(value, unit)| json!({"value": value, "unit": unit}))
            .unwrap_or_else(|| json!(raw)),
        _ => json!(raw),
    }
}

/// One entry of an attribute as answers show it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttributeEntry<'a> {
    /// The raw stored string; a JSON-encoded array for multi-value attributes. Read `data`.
    pub value: &'a str,
    /// The typed value: number, boolean, {amount, currency}, {value, unit}, string, or an array of those.
    #[schemars(schema_with = "any_value")]
    pub data: Value,
    #[serde(rename = "type")]
    pub attr_type: AttributeType,
    pub locale: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub channel: Option<&'a str>,
    /// Present (true) on multi-value attributes only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[schemars(schema_with = "always")]
    pub is_multi: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub metaobject_definition: Option<&'a str>,
}

fn any_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({})
}

fn always(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "boolean", "const": true})
}

/// The response entries of one stored attribute.
pub fn render_entries(attr: &StoredAttribute) -> Vec<AttributeEntry<'_>> {
    attr.entries
        .iter()
        .map(|e| {
            let data = if attr.is_multi {
                let raws: Vec<String> = serde_json::from_str(&e.value).unwrap_or_default();
                Value::Array(raws.iter().map(|r| data_of(attr.attr_type, r)).collect())
            } else {
                data_of(attr.attr_type, &e.value)
            };
            AttributeEntry {
                value: &e.value,
                data,
                attr_type: attr.attr_type,
                locale: e.locale.as_deref(),
                channel: e.channel.as_deref(),
                is_multi: attr.is_multi,
                metaobject_definition: attr.metaobject_definition.as_deref(),
            }
        })
        .collect()
}
