//! The fields of a subscription's body that need more than their type: its topics (distinct,
//! valid, 1 to 50), its description (a bounded string, or null to clear it), its payload and
//! its filter.

use super::*;
use crate::domain::changes::PayloadKind;
use crate::domain::entity_types::EntityType;
use crate::store::webhooks::EventFilter;
use crate::webhooks::filters;

/// `topics`: 1 to [`MAX_TOPICS`] topics, as [`topics::validate`] checks each.
pub(super) fn topic_list(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let actions = Action::topic_names().join("|");
    let topic = schema::matching(&format!(
        "\\*|(?:{})\\.(?:{actions}|\\*)",
        EntityType::NAMES.join("|")
    ));
    schemars::json_schema!({"type": "array", "items": topic, "minItems": 1, "maxItems": MAX_TOPICS})
}

/// The `topics` field: a non-empty array of distinct valid topics, order kept.
pub(super) fn topics_field(items: Option<&[Value]>) -> Result<Option<Vec<String>>, ApiError> {
    let Some(items) = items else {
        return Ok(None);
    };
    if items.is_empty() || items.len() > MAX_TOPICS {
        return Err(ApiError::bad_request(format!(
            "field 'topics' must list 1 to {MAX_TOPICS} topics"
        )));
    }
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let topic = item
            .as_str()
            .ok_or_else(|| ApiError::bad_request("field 'topics' must be an array of strings"))?;
        topics::validate(topic).map_err(ApiError::bad_request)?;
        if !out.iter().any(|t| t == topic) {
            out.push(topic.to_string());
        }
    }
    Ok(Some(out))
}

/// The `description` field: `Some(None)` when it is `null` (cleared).
pub(super) fn description_field(value: Option<&Value>) -> Result<Option<Option<String>>, ApiError> {
    match value {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(s)) if s.chars().count() <= MAX_DESCRIPTION => Ok(Some(Some(s.clone()))),
        Some(_) => Err(ApiError::bad_request(format!(
            "field 'description' must be a string of at most {MAX_DESCRIPTION} characters, or null"
        ))),
    }
}

/// The `payload` field: `thin` or `changes`.
pub(super) fn payload_field(value: Option<&Value>) -> Result<Option<PayloadKind>, ApiError> {
    value
        .map(|v| PayloadKind::parse(v).map_err(ApiError::bad_request))
        .transpose()
}

/// The `payload` field's schema: the named `PayloadKind` (a generated client's type for the
/// field, which an inline enum would name after its object and clash with `WebhookPayload`).
pub(super) fn payload_kinds(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<PayloadKind>()
}

impl schemars::JsonSchema for PayloadKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PayloadKind".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "What a subscription's deliveries carry: `thin`, the notice alone; `changes`, with the old and new values of what changed",
            "enum": ["thin", "changes"]
        })
    }
}

/// The `filter` field (`webhooks/filters.rs`): `Some(None)` when it is `null` (cleared), else
/// the filter as kept, each key checked against its definition (one BatchGetItem, none when
/// it names no attribute). Its levels are checked against the topics by the caller.
pub(super) async fn filter_field(
    app: &App,
    call: &Call,
    value: Option<&Value>,
) -> Result<Option<Option<EventFilter>>, ApiError> {
    let Some(body) = filters::parse(value)? else {
        return Ok(None);
    };
    let Some(body) = body else {
        return Ok(Some(None));
    };
    let wanted = body.attribute_keys();
    let defs = match wanted.is_empty() {
        true => Default::default(),
        false => {
            let ctx = app.store.settings_context(call.org(), &wanted, &[], None);
            ctx.await?.defs
        }
    };
    Ok(Some(Some(body.kept(&defs)?)))
}

/// A filter's JSON Schema: the lists' search object and its mode.
pub(super) fn filter_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["object", "null"],
        "properties": {
            "search": {"type": "object", "minProperties": 1,
                "description": "The lists' search object (at most 8 KB as JSON text)", "additionalProperties": {
                "type": "array", "minItems": 1,
                "items": {"type": "object", "required": ["operator"], "properties": {"operator": {"type": "string"}, "value": {}}}
            }},
            "searchMode": {"enum": ["all", "any"]}
        },
        "required": ["search"],
        "additionalProperties": false
    })
}
