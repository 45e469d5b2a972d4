//! The fields of a subscription's body that need more than their type: its topics (distinct,
//! valid, 1 to 50), its description (a bounded string, or null to clear it) and its payload.

use super::*;
use crate::domain::changes::PayloadKind;

/// `topics`: 1 to [`MAX_TOPICS`] topics, as [`topics::validate`] checks each.
pub(super) fn topic_list(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let actions = Action::ALL.map(Action::as_str).join("|");
    let topic = schema::matching(&format!(
        "\\*|(?:{})\\.(?:{actions}|\\*)",
        topics::ENTITY_TYPES.join("|")
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

pub(super) fn payload_kinds(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"enum": ["thin", "changes"]})
}
