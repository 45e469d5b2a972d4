//! The document's component schemas, and the small builders of JSON Schema they are written with.

use super::*;
use crate::http::schema;

pub(super) fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub(super) fn string() -> Value {
    json!({"type": "string"})
}

pub(super) fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// An object schema: `fields` as (name, schema, required).
pub(super) fn object(fields: &[(&str, Value, bool)]) -> Value {
    let props: Map<String, Value> = fields
        .iter()
        .map(|(n, s, _)| (n.to_string(), s.clone()))
        .collect();
    let required: Vec<&str> = fields.iter().filter(|f| f.2).map(|f| f.0).collect();
    let mut o = json!({"type": "object", "properties": props});
    if !required.is_empty() {
        o["required"] = json!(required);
    }
    o
}

/// The answer of GET /openapi.json: the fields a client reads typed, the rest open (a bare
/// `{"type": "object"}` is an empty record to openapi-typescript, `Record<string, never>`).
pub(super) fn document_answer() -> Value {
    let info = object(&[("title", string(), true), ("version", string(), true)]);
    let open = json!({"type": "object", "additionalProperties": true});
    let mut doc = object(&[
        ("openapi", string(), true),
        ("info", info, true),
        ("paths", open.clone(), true),
        ("components", open, false),
    ]);
    doc["description"] = "An OpenAPI 3.1 document".into();
    doc["additionalProperties"] = true.into();
    doc
}

/// [`schema::matching`] as a value.
pub(super) fn matching(body: &str) -> Value {
    schema::matching(body).to_value()
}

/// [`schema::identifier`] as a value.
pub(super) fn identifier() -> Value {
    schema::identifier().to_value()
}

pub(super) use schema::KEY;

/// The answer schemas derived from the types their handlers serialize; the others are
/// written in [`schemas`].
pub(super) fn answers() -> Map<String, Value> {
    let mut g = schema::generator(true);
    for answer in [
        super::super::attributes::ANSWERS,
        super::super::api_keys::ANSWERS,
        super::super::console::ANSWERS,
        super::super::settings::ANSWERS,
        super::super::webhooks::ANSWERS,
        super::super::categories::ANSWERS,
        crate::http::render::ANSWERS,
        super::super::metaobjects::ANSWERS,
        super::super::assets::ANSWERS,
        super::super::bundles::ANSWERS,
        crate::usecases::references::ANSWERS,
        super::super::imports::ANSWERS,
        super::super::exports::ANSWERS,
        super::super::webhooks::DELIVERY_ANSWERS,
        crate::usecases::bulk::ANSWERS,
        crate::http::response::ANSWERS,
        super::super::deletions::ANSWERS,
        super::super::history::ANSWERS,
        super::super::usage::ANSWERS,
        crate::workers::deliver::ANSWERS,
    ] {
        for schema in answer {
            schema(&mut g);
        }
    }
    g.take_definitions(true)
}

/// The schemas no answer type derives: the error envelope and the scope names.
pub(super) fn schemas() -> Value {
    json!({
        "Error": object(&[("error", json!({"type": "string", "example": "product 'abc' not found"}), true)]),
        "Scope": {"enum": ["catalog:read", "catalog:write", "settings:manage"]},
    })
}
