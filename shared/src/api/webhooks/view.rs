//! A subscription as the API serves it, with its endpoint's health in the single read.

use super::*;

/// A subscription as served.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Webhook")]
pub(super) struct WebhookView<'a> {
    id: &'a str,
    /// Only for HTTPS destinations (the same as `destination.url`)
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    url: Option<&'a str>,
    #[schemars(schema_with = "destination_answer")]
    destination: Value,
    topics: &'a [String],
    /// An `*.updated` event is delivered only when one of these changed (null: every update)
    changed_fields: Option<&'a [String]>,
    /// `thin`: the notice alone; `changes`: with the old and new values of what changed
    #[schemars(schema_with = "super::fields::payload_kinds")]
    payload: &'static str,
    /// Only changes of entities matching it before or after are delivered (null: every change)
    #[schemars(schema_with = "super::fields::filter_schema")]
    filter: Option<Value>,
    description: Option<&'a str>,
    enabled: bool,
    /// `pending_verification` while an AWS destination has not confirmed its token
    /// (nothing but the verification message is sent to it)
    #[schemars(schema_with = "status")]
    status: &'static str,
    /// Only while disabled: by a request (PATCH enabled: false), or automatically after every
    /// delivery failed for the configured period (5 days)
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    disabled_reason: Option<&'a str>,
    /// While the secret before the last rotation still signs beside the current one
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Timestamp")]
    previous_secret_expires_at: Option<Timestamp>,
    created_at: Timestamp,
    updated_at: Timestamp,
    /// Shown only on creation and rotation (null in an idempotent replay of that answer: no
    /// credential is kept). The part after whsec_ is base64 (the Standard Webhooks key).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "secret")]
    secret: Option<Credential<'a>>,
    /// Only in `GET /webhooks/{id}`: how the endpoint answers lately
    #[serde(skip_serializing_if = "Option::is_none")]
    health: Option<HealthView>,
}

/// An endpoint's health.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "WebhookHealth")]
struct HealthView {
    /// `failing` while every attempt since `failingSince` failed, else `healthy`
    #[schemars(schema_with = "health_status")]
    status: &'static str,
    /// When the current streak of failed attempts began
    failing_since: Option<Timestamp>,
    /// Failed attempts in the current streak
    consecutive_failures: u32,
}

fn health_status(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"enum": ["healthy", "failing"]})
}

fn status(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"enum": ["enabled", "disabled", "pending_verification"]})
}

fn secret(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["string", "null"], "pattern": "^whsec_[A-Za-z0-9+/]+={0,2}$"})
}

/// A subscription as served (no secret).
pub fn render(sub: &Subscription) -> Value {
    to_json(view(sub, false, None))
}

/// A subscription as served, with its endpoint's health when given; `secret` only right
/// after creation or rotation (answered with [`ApiResponse::shown`]).
pub(super) fn view<'a>(
    sub: &'a Subscription,
    with_secret: bool,
    health: Option<&crate::store::webhooks::Health>,
) -> WebhookView<'a> {
    let now = Timestamp::now().millis();
    WebhookView {
        id: &sub.id,
        url: (!sub.kind.is_aws()).then_some(sub.url.as_str()),
        destination: serde_json::json!({"type": sub.kind.as_str(), sub.kind.field(): sub.url}),
        topics: &sub.topics,
        changed_fields: sub.changed_fields.as_deref(),
        payload: sub.payload.as_str(),
        filter: sub.filter.as_ref().map(|f| {
            let search: Value = serde_json::from_str(&f.search).unwrap_or_default();
            let mode = if f.any { "any" } else { "all" };
            serde_json::json!({"search": search, "searchMode": mode})
        }),
        description: sub.description.as_deref(),
        enabled: sub.enabled,
        status: match (sub.verification.is_some(), sub.enabled) {
            (true, _) => "pending_verification",
            (false, true) => "enabled",
            (false, false) => "disabled",
        },
        disabled_reason: (!sub.enabled).then(|| {
            sub.disabled_reason
                .as_deref()
                .unwrap_or(DISABLED_BY_REQUEST)
        }),
        previous_secret_expires_at: sub
            .previous_secret_expires_at
            .filter(|until| until.millis() > now),
        created_at: sub.created_at,
        updated_at: sub.updated_at,
        secret: (with_secret && !sub.kind.is_aws()).then_some(Credential(&sub.secret)),
        health: health.map(|h| HealthView {
            status: if h.failing() { "failing" } else { "healthy" },
            failing_since: h.failing_since,
            consecutive_failures: if h.failing() { h.failures } else { 0 },
        }),
    }
}
