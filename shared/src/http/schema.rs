//! The JSON Schema of the string formats and loose fields the API checks by hand (identifiers,
//! names, URLs, media types, language tags, keys, `values` maps): request types name them in
//! `#[schemars(schema_with = "...")]`, so the OpenAPI document derived from those types says
//! what the parsers accept.

use crate::domain::attributes::{AttributeType, TargetEntity};
use crate::domain::{identifier, names};
use schemars::generate::SchemaSettings;
use schemars::transform::{RecursiveTransform, Transform};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Value};

/// The schema of a request type `T`, as a reference into the document's components: what a
/// route's [`super::Doc`] names as its body.
pub fn request<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// A container transform: lists as required fields that a body must have but the parser
/// reads as optional, to refuse their absence in its own words.
pub struct Required(pub &'static [&'static str]);

impl Transform for Required {
    fn transform(&mut self, schema: &mut Schema) {
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        if let Some(list) = obj
            .entry("required")
            .or_insert_with(|| json!([]))
            .as_array_mut()
        {
            for field in self.0 {
                if !list.iter().any(|r| r == field) {
                    list.push(json!(field));
                }
            }
        }
    }
}

/// A container transform for a definition body (`type` and select `options`): the option
/// fields it names may hold options only when `type` is `select`, and at most one of them
/// may be given.
pub struct SelectOptions(pub &'static [&'static str]);

impl Transform for SelectOptions {
    fn transform(&mut self, schema: &mut Schema) {
        let empty: serde_json::Map<String, Value> = self
            .0
            .iter()
            .map(|f| (f.to_string(), json!({"maxItems": 0})))
            .collect();
        schema.insert(
            "if".into(),
            json!({"properties": {"type": {"not": {"const": "select"}}}, "required": ["type"]}),
        );
        schema.insert("then".into(), json!({"properties": empty}));
        if self.0.len() > 1 {
            schema.insert("not".into(), json!({"required": self.0}));
        }
    }
}

/// Declares `$name`, the schema of the body type `$base` with `$fields` required, for a route
/// whose handler parses `$base` (which reads them as optional, to refuse their absence in
/// its own words) and needs them. Its doc comment is the schema's description.
macro_rules! requiring {
    (#[doc = $doc:literal] $name:ident = $base:ty, [$($field:literal),*]) => {
        #[doc = $doc]
        pub struct $name;

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let mut schema = <$base as schemars::JsonSchema>::json_schema(g);
                schemars::transform::Transform::transform(
                    &mut $crate::http::schema::Required(&[$($field),*]),
                    &mut schema,
                );
                schema.insert("description".into(), $doc.trim().into());
                schema
            }
        }
    };
}
pub(crate) use requiring;

/// The generator of the OpenAPI document's request schemas (`for_answers`: of its answers):
/// components under `#/components/schemas`, and no `"default": null` for fields that are
/// merely optional (no default at all in answers, whose fields are always there).
pub fn generator(for_answers: bool) -> SchemaGenerator {
    let settings = SchemaSettings::draft2020_12();
    let settings = if for_answers {
        settings.for_serialize()
    } else {
        settings
    };
    settings
        .with(|s| s.definitions_path = "/components/schemas".into())
        .with_transform(RecursiveTransform(move |s: &mut Schema| {
            // an answer always has its fields; a request's default is worth saying unless null
            if for_answers || s.get("default") == Some(&Value::Null) {
                s.remove("default");
            }
        }))
        .into_generator()
}

/// The schema of an answer type `T` (serialized by its handler), as a reference into the
/// document's components.
pub fn answer<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// A string schema matching the whole of `body` (grouped, so that an alternation in it
/// is anchored as a whole). The `(?!\n)` keeps Python's `$` (schemathesis
/// generates with Python's `re`) from also matching before a final newline, which ECMA's never
/// does and the API refuses.
pub fn matching(body: &str) -> Schema {
    json_schema!({"type": "string", "pattern": format!("^(?:{body})(?!\\n)$")})
}

/// A comma-separated list of the alternatives `items` (a regular expression), or empty.
pub fn comma_list(items: &str) -> Schema {
    matching(&format!("(?:(?:{items})(?:,(?:{items}))*)?"))
}

/// `attributes` / `exclude_attributes` (`domain/selection.rs`): comma-separated
/// `<entity>.<key>` or `<entity>.<prefix>*`.
pub fn selectors() -> Schema {
    comma_list(&selector())
}

/// A key or name: a lowercase letter, then up to 63 lowercase letters, digits or `_`.
pub const KEY: &str = "[a-z][a-z0-9_]{0,63}";

/// An attribute key or a metaobject definition's name.
pub fn key(_: &mut SchemaGenerator) -> Schema {
    matching(KEY)
}

/// decisions.md's identifier: 1 to 255 characters and at most 300 bytes of UTF-8, no control
/// character, no `/`, no leading or trailing space (`domain/identifier.rs`). JSON Schema
/// counts characters only: the byte limit is in the description.
pub fn identifier() -> Schema {
    let mut schema = matching("[^/\\s\\u0000-\\u001f\\u007f-\\u009f](?:[^/\\u0000-\\u001f\\u007f-\\u009f]*[^/\\s\\u0000-\\u001f\\u007f-\\u009f])?");
    schema.insert("minLength".into(), json!(1));
    schema.insert("maxLength".into(), json!(identifier::MAX_IDENTIFIER_CHARS));
    schema.insert(
        "description".into(),
        json!(format!(
            "1 to {} characters and at most {} bytes of UTF-8; no control character, no '/', no leading or trailing space",
            identifier::MAX_IDENTIFIER_CHARS,
            identifier::MAX_IDENTIFIER_BYTES
        )),
    );
    schema
}

/// [`identifier()`] for `schema_with`.
pub fn an_identifier(_: &mut SchemaGenerator) -> Schema {
    identifier()
}

/// An array of distinct identifiers, at most `max`.
pub fn identifiers(max: usize) -> Schema {
    json_schema!({"type": "array", "items": identifier(), "maxItems": max, "uniqueItems": true})
}

/// A display name (`domain/names.rs`): 1 to 255 characters, not blank, no control character.
pub fn name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "minLength": 1, "maxLength": names::MAX_NAME_CHARS, "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"})
}

/// A media type, as the asset parser checks it.
pub fn media_type(_: &mut SchemaGenerator) -> Schema {
    let token = "[A-Za-z0-9!#$&^_.+-]{1,127}";
    let mut schema = matching(&format!("{token}/{token}"));
    schema.insert("example".into(), json!("image/jpeg"));
    schema
}

/// An absolute http(s) URL with a host name (the parser also takes IP literals and user
/// info, which the document leaves out), at most 2048 characters.
pub fn http_url(_: &mut SchemaGenerator) -> Schema {
    let label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    let host = format!("(?:{label}\\.)*[A-Za-z](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?");
    let mut schema = matching(&format!(
        "https?://{host}(?::[0-9]{{1,4}})?(?:[/?#][!-~]*)?"
    ));
    schema.insert("maxLength".into(), json!(2048));
    schema.insert("description".into(), json!("An absolute http(s) URL"));
    schema
}

/// A BCP 47 language tag, as `domain/values.rs` checks it.
pub fn language_tag(_: &mut SchemaGenerator) -> Schema {
    let mut schema = matching("[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*");
    schema.insert("example".into(), json!("en-US"));
    schema
}

/// An array of BCP 47 language tags.
pub fn language_tags(g: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "array", "items": language_tag(g)})
}

/// An array of non-empty strings (an attribute's or field's select options).
pub fn options(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true})
}

/// The regular expression of one of `entities`.
pub fn one_of(entities: &[TargetEntity]) -> String {
    let names: Vec<&str> = entities.iter().map(|e| e.as_str()).collect();
    format!("(?:{})", names.join("|"))
}

/// The regular expression of one attribute selector (`domain/selection.rs`):
/// `<entity>.<key>` or `<entity>.<prefix>*`.
pub fn selector() -> String {
    format!(
        "{}\\.(?:{KEY}|[a-z0-9_]{{0,64}}\\*)",
        one_of(TargetEntity::ALL)
    )
}

/// An array of distinct attribute keys with their entity, `<entity>.<key>` (`product.color`),
/// the entity one of `entities`.
pub fn qualified_keys(entities: &[TargetEntity]) -> Schema {
    let key = matching(&format!("{}\\.{KEY}", one_of(entities)));
    json_schema!({"type": "array", "items": key, "uniqueItems": true})
}

/// An array of strings (checked one by one by the parser).
pub fn strings(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "array", "items": {"type": "string"}})
}

/// An attribute's target entity.
pub fn target_entities() -> Schema {
    json_schema!({"enum": TargetEntity::NAMES})
}

/// [`target_entities()`] for `schema_with`.
pub fn target_entity(_: &mut SchemaGenerator) -> Schema {
    target_entities()
}

/// An attribute type.
pub fn attribute_type(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"enum": AttributeType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>()})
}

/// An entity's `values`: attribute key to value, checked against the definitions.
pub fn values(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object", "description": "Keyed by attribute key without the entity prefix: a plain value sets the unscoped value, {locale?, channel?, value} objects (or an array of them) set scoped values, null removes.", "propertyNames": matching(KEY), "additionalProperties": true})
}
