//! The document's component schemas, and the small builders of JSON Schema they are written with.

use super::*;
use crate::http::schema;

pub(super) fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub(super) fn string() -> Value {
    json!({"type": "string"})
}

pub(super) fn time() -> Value {
    json!({"type": "string", "format": "date-time", "example": "2026-11-21T02:39:29.597Z"})
}

pub(super) fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

pub(super) fn nullable(t: &str) -> Value {
    json!({"type": [t, "null"]})
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

/// [`schema::matching`] as a value.
pub(super) fn matching(body: &str) -> Value {
    schema::matching(body).to_value()
}

/// [`schema::identifier`] as a value.
pub(super) fn identifier() -> Value {
    schema::identifier().to_value()
}

pub(super) use schema::KEY;

/// An attribute's target entity.
pub(super) fn target_entity() -> Value {
    schema::target_entities().to_value()
}

pub(super) fn entity(extra: &[(&str, Value, bool)]) -> Value {
    let mut fields = vec![
        ("identifier", string(), true),
        ("name", string(), true),
        ("attributes", r("Attributes"), true),
    ];
    fields.extend(extra.iter().cloned());
    fields.push(("selfUpdatedAt", time(), true));
    fields.push(("updatedAt", time(), true));
    object(&fields)
}

/// The answer schemas derived from the types their handlers serialize; the others are
/// written in [`schemas`].
pub(super) fn answers() -> Map<String, Value> {
    let mut g = schema::generator(true);
    for answer in [
        super::super::attributes::ANSWERS,
        super::super::api_keys::ANSWERS,
        super::super::settings::ANSWERS,
        super::super::webhooks::ANSWERS,
        super::super::categories::ANSWERS,
        crate::http::render::ANSWERS,
        super::super::metaobjects::ANSWERS,
    ] {
        for schema in answer {
            schema(&mut g);
        }
    }
    g.take_definitions(true)
}

pub(super) fn schemas() -> Value {
    let import = object(&[
        ("id", string(), true),
        (
            "status",
            json!({"enum": ["awaiting_upload", "running", "succeeded", "completed_with_errors", "failed"]}),
            true,
        ),
        (
            "total",
            json!({"type": ["integer", "null"], "description": "Lines in the file, once counted"}),
            true,
        ),
        ("processed", json!({"type": "integer"}), true),
        ("created", json!({"type": "integer"}), true),
        ("updated", json!({"type": "integer"}), true),
        ("failed", json!({"type": "integer"}), true),
        (
            "errors",
            array(object(&[
                ("line", json!({"type": "integer"}), true),
                ("identifier", nullable("string"), true),
                ("status", json!({"type": "integer"}), true),
                ("error", string(), true),
            ])),
            true,
        ),
        ("createdAt", time(), true),
        (
            "startedAt",
            json!({"type": ["string", "null"], "format": "date-time"}),
            true,
        ),
        (
            "finishedAt",
            json!({"type": ["string", "null"], "format": "date-time"}),
            true,
        ),
    ]);
    let mut all = json!({
        "Error": object(&[("error", json!({"type": "string", "example": "product 'abc' not found"}), true)]),
        "Pagination": object(&[
            ("limit", json!({"type": "integer", "minimum": 1, "maximum": 200}), true),
            ("page", json!({"type": ["integer", "null"], "minimum": 1, "description": "null on a page reached by cursor"}), true),
            ("totalPages", json!({"type": "integer", "minimum": 0}), true),
            ("totalResults", json!({"type": "integer", "minimum": 0}), true),
            ("nextCursor", json!({"type": ["string", "null"], "description": "Lists of products, variants, SKUs, assets and deletions: the cursor of the next page; null on the last"}), false)]),
        "AttributeEntry": object(&[
            ("value", json!({"type": "string", "description": "The raw stored string; a JSON-encoded array for multi-value attributes. Read `data`."}), true),
            ("data", json!({"description": "The typed value: number, boolean, {amount, currency}, {value, unit}, string, or an array of those."}), true),
            ("type", string(), true),
            ("locale", nullable("string"), true),
            ("channel", string(), false),
            ("isMulti", json!({"type": "boolean", "const": true}), false),
            ("metaobjectDefinition", string(), false),
        ]),
        "Attributes": {"type": "object", "description": "Fully qualified `<entity>.<key>` to the entries that hold a value.",
            "additionalProperties": array(r("AttributeEntry"))},
        "Reference": object(&[("identifier", string(), true), ("name", string(), true)]),
        "Sku": entity(&[("product", r("Reference"), false), ("variant", r("Reference"), false)]),
        "Variant": entity(&[("product", r("Reference"), false), ("skus", array(r("Sku")), false)]),
        "Product": entity(&[
            ("familyId", nullable("integer"), true),
            ("categories", array(string()), false),
            ("variants", array(r("Variant")), false),
        ]),
        "Deletion": object(&[("entity_type", json!({"enum": super::super::deletions::ENTITY_TYPES}), true),
            ("identifier", string(), true), ("deletedAt", time(), true)]),
        "Import": import.clone(),
        "ImportCreated": {"allOf": [import, object(&[("uploadUrl", json!({"type": "string", "description": "Presigned S3 URL: PUT the file here"}), true),
            ("expiresAt", time(), true)])]},
        "BulkLine": object(&[("line", json!({"type": "integer", "minimum": 1}), true),
            ("identifier", nullable("string"), true),
            ("status", json!({"type": "integer", "description": "What PATCH /products/{identifier} would have answered: 201, 200 or an error status"}), true),
            ("error", string(), false)]),
        "Asset": object(&[("identifier", string(), true), ("name", string(), true),
            ("url", string(), true), ("mimeType", string(), true),
            ("attributes", r("Attributes"), true), ("updatedAt", time(), true)]),
        "Metaobject": object(&[("type", json!({"const": "metaobject"}), true),
            ("definition", string(), true), ("identifier", string(), true), ("name", string(), true),
            ("attributes", r("Attributes"), true), ("updatedAt", time(), true)]),
    });
    let more = json!({
        "Bundle": entity(&[("items", array(r("BundleLine")), true)]),
        "BundleLine": object(&[("sku", identifier(), true),
            ("quantity", json!({"type": "integer", "minimum": 1, "maximum": 1000000}), true)]),
        "Scope": {"enum": ["catalog:read", "catalog:write", "settings:manage"]},
        "UsageCounts": object(&[("requests", json!({"type": "integer", "description": "Authenticated calls answered, refused ones included"}), true),
            ("refused", json!({"type": "integer", "description": "Calls refused by the rate limit (429)"}), true),
            ("clientErrors", json!({"type": "integer", "description": "Other 4xx answers"}), true),
            ("serverErrors", json!({"type": "integer", "description": "5xx answers"}), true),
            ("capacityUnits", json!({"type": "number", "description": "DynamoDB read and write capacity units the calls consumed"}), true),
            ("deliveryAttempts", json!({"type": "integer", "description": "Webhook delivery attempts"}), true),
            ("failedAttempts", json!({"type": "integer", "description": "Delivery attempts that failed"}), true)]),
        "Usage": object(&[("today", json!({"allOf": [r("UsageCounts"), object(&[("date", json!({"type": "string", "format": "date"}), true)])]}), true),
            ("month", json!({"allOf": [r("UsageCounts"), object(&[("month", json!({"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"}), true)])]}), true),
            ("updatedEverySeconds", json!({"type": "integer", "description": "Each function adds its counts at least this often; 0: after every call"}), true)]),
        "Delivery": object(&[("id", string(), true), ("event", string(), true), ("identifier", string(), true),
            ("entityType", string(), true), ("occurredAt", time(), true),
            ("status", json!({"enum": ["pending", "retrying", "succeeded", "failed", "cancelled"]}), true),
            ("attempts", json!({"type": "integer"}), true), ("lastStatusCode", nullable("integer"), false),
            ("lastError", nullable("string"), false), ("nextAttemptAt", json!({"type": ["string", "null"]}), false),
            ("replayOf", nullable("string"), false), ("createdAt", time(), true), ("updatedAt", time(), true),
            ("attemptLog", array(json!({"type": "object"})), false)]),
    });
    let payload = json!({
        "WebhookPayload": object(&[
            ("id", json!({"type": "string", "description": "Delivery id: the idempotency key, the same on every retry."}), true),
            ("event", json!({"type": "string", "example": "product.updated"}), true),
            ("identifier", json!({"type": "string", "description": "The entity's REST identifier (`<definition>/<identifier>` for metaobjects)."}), true),
            ("entity_type", json!({"enum": ["product", "variant", "sku", "bundle", "metaobject", "category", "asset", "webhook"], "description": "`webhook` only in a test event (`webhook.test`, the subscription's id as identifier)"}), true),
            ("occurred_at", time(), true)]),
        "TestEvent": object(&[("deliveryId", json!({"type": "string", "description": "The test delivery's id, as in the delivery log and the payload"}), true)]),
    });
    for part in [more, payload] {
        if let (Value::Object(a), Value::Object(b)) = (&mut all, part) {
            a.extend(b);
        }
    }
    all
}
