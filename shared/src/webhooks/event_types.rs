//! The event catalog (`GET /event-types`, decisions.md "Console, test events, event
//! catalog"): every topic a subscription can name, what it means and an example payload,
//! built from the same entity and action lists the topic check uses, so the two never
//! disagree.

use super::topics::{event_name, Action};
use crate::domain::entity_types::EntityType;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

/// One event type: its name (the topic), a description and an example payload.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EventType {
    /// The topic
    #[schemars(example = "product.created")]
    pub name: String,
    pub description: String,
    #[schemars(schema_with = "payload")]
    pub example: Value,
}

fn payload(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"$ref": "#/components/schemas/WebhookPayload"})
}

/// What an entity type is, for the descriptions.
fn noun(entity_type: &str) -> &'static str {
    match entity_type {
        "product" => "A product",
        "variant" => "A variant",
        "sku" => "A SKU",
        "bundle" => "A bundle",
        "metaobject" => "A metaobject",
        "category" => "A category",
        "asset" => "An asset",
        _ => "An entity",
    }
}

fn happened(entity_type: &str, action: Action) -> String {
    let what = noun(entity_type);
    match action {
        Action::Created => format!("{what} was created."),
        Action::Updated => format!(
            "{what} was changed (its own fields, or, for products and variants, a descendant's); fetch it by `identifier` for its state."
        ),
        Action::Deleted => format!(
            "{what} was deleted (fetching it now answers 404; `GET /deletions` lists it)."
        ),
        Action::Test => "Sent only by `POST /webhooks/{id}/test`.".into(),
        Action::Verification => "Sent only to an AWS destination awaiting verification; its `token` goes to `POST /webhooks/{id}/verify`.".into(),
    }
}

/// The payload a delivery of `event` carries, with example values.
pub fn example(entity_type: &str, action: Action, identifier: &str) -> Value {
    json!({
        "id": "dlv_01JD7Q3W8Y5K2M4N6P8R0T2V4X",
        "event": event_name(entity_type, action),
        "identifier": identifier,
        "entity_type": entity_type,
        "occurred_at": "2026-11-25T10:15:30.123Z",
    })
}

/// Every event type, in topic order (entity types as listed, then created, updated,
/// deleted).
pub fn catalog() -> Vec<EventType> {
    EntityType::NAMES
        .iter()
        .flat_map(|entity| {
            Action::topics().map(move |action| EventType {
                name: event_name(entity, action),
                description: happened(entity, action),
                example: example(entity, action, &format!("{entity}-1")),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::topics::validate;

    #[test]
    fn every_event_type_is_a_valid_topic_with_its_own_example() {
        let all = catalog();
        assert_eq!(all.len(), EntityType::ALL.len() * 3);
        for t in &all {
            assert_eq!(validate(&t.name), Ok(()), "{}", t.name);
            assert_eq!(t.example["event"], json!(t.name));
        }
        assert_eq!(all[0].name, "product.created");
        assert_eq!(all[0].example["entity_type"], "product");
        assert_eq!(all[0].example["identifier"], "product-1");
    }

    #[test]
    fn the_test_event_is_no_topic() {
        assert!(validate("webhook.test").is_err());
        assert!(validate("product.test").is_err());
        assert_eq!(event_name("webhook", Action::Test), "webhook.test");
    }
}
