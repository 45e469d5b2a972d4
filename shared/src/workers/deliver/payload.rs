//! The body of a delivery: the notice the spec lists, and what a subscription or the
//! delivery adds to it (a verification token, the changes), with its OpenAPI schema.

use crate::domain::time::Timestamp;
use crate::store::webhooks::Delivery;
use crate::webhooks::topics;
use serde::Serialize;

/// The body of every delivery, exactly as the spec lists it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(rename = "WebhookPayload")]
pub struct Payload<'a> {
    /// Delivery id: the idempotency key, the same on every retry.
    pub id: &'a str,
    #[schemars(example = "product.updated")]
    pub event: &'a str,
    /// The entity's REST identifier (`<definition>/<identifier>` for metaobjects).
    pub identifier: &'a str,
    /// `webhook` only in a test event (`webhook.test`, the subscription's id as identifier)
    #[schemars(schema_with = "entity_types")]
    pub entity_type: &'a str,
    #[schemars(with = "Timestamp")]
    pub occurred_at: String,
    /// Only in `webhook.verification`: what `POST /webhooks/{id}/verify` takes
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<&'a str>,
    /// Only with `payload: "changes"`: the old and new values of what changed between the
    /// state before the first change the delivery coalesces and after the last
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "change_set")]
    pub changes: Option<serde_json::Value>,
    /// Only with `payload: "changes"`, instead of `changes`: they would make the body pass
    /// 200 KB
    #[serde(rename = "changesOmitted", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "always_true")]
    pub changes_omitted: Option<bool>,
    /// Only for a subscription with a `filter`: the entity matches only after the changes
    /// (`entered`), before and after (`stayed`) or only before (`left`)
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "set_matches")]
    pub matched: Option<&'static str>,
}

fn set_matches(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"enum": ["entered", "stayed", "left"]})
}

fn change_set(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let side = schemars::json_schema!({"type": ["array", "null"], "items": {"type": "object"}});
    schemars::json_schema!({
        "type": "object",
        "properties": {
            "name": {"type": "object", "properties": {"old": {"type": ["string", "null"]}, "new": {"type": ["string", "null"]}}},
            "attributes": {"type": "object", "additionalProperties": {
                "type": "object", "properties": {"old": side, "new": side}
            }}
        }
    })
}

fn always_true(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "boolean", "const": true})
}

fn entity_types(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut all = crate::domain::entity_types::EntityType::NAMES.to_vec();
    all.push(topics::TEST_ENTITY_TYPE);
    schemars::json_schema!({"enum": all})
}

/// The answer types of this module (the payload), for the OpenAPI document.
pub(crate) const ANSWERS: &[fn(&mut schemars::SchemaGenerator) -> schemars::Schema] =
    &[|g| g.subschema_for::<Payload>()];

impl<'a> Payload<'a> {
    pub fn of(d: &'a Delivery) -> Self {
        Self {
            id: &d.id,
            event: &d.event,
            identifier: &d.identifier,
            entity_type: &d.entity_type,
            occurred_at: d.occurred_at.to_string(),
            token: None,
            changes: d
                .delta
                .as_deref()
                .and_then(|t| serde_json::from_str(t).ok()),
            changes_omitted: d.changes_omitted.then_some(true),
            matched: d.matched.map(|m| m.as_str()),
        }
    }
}
