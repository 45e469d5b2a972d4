//! A subscription's destination in requests (`url`, or `destination`: HTTPS, EventBridge or
//! SQS), and the proof of ownership an AWS destination gives before it gets any event: a
//! `webhook.verification` message with a token, confirmed by `POST /webhooks/{id}/verify`.

use super::*;
use crate::domain::destinations::{Destination, Kind};
use crate::http::doc::NO_QUERY;
use subtle::ConstantTimeEq;

/// How long a verification token is good for.
const TOKEN_TTL_MS: i64 = 24 * 3_600_000;
/// Random characters of a verification token.
const TOKEN_LEN: usize = 32;

pub(super) const VERIFY: Endpoint = Endpoint::new(
    Route::new(
        "POST",
        "/webhooks/{id}/verify",
        Scope::SettingsManage,
        Doc::new(
            "Confirm an AWS destination with the token of its latest `webhook.verification` message; it gets events from then on",
            NO_QUERY,
            Some(request::<WebhookVerify>),
            200,
            Body::Single("Webhook"),
        ),
    ),
    handler!(verify),
);

pub(super) const RESEND: Endpoint = Endpoint::new(
    Route::new(
        "POST",
        "/webhooks/{id}/verification",
        Scope::SettingsManage,
        Doc::new(
            "Send an AWS destination awaiting verification a new `webhook.verification` message (a new token; earlier ones stop working)",
            NO_QUERY,
            None,
            202,
            Body::Single("TestEvent"),
        ),
    ),
    handler!(resend),
);

/// The body of POST /webhooks/{id}/verify.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "WebhookVerify")]
struct VerifyBody {
    /// The `token` of the latest `webhook.verification` message the destination received
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String")]
    token: Option<Value>,
}

schema::requiring!(
    /// The body of POST /webhooks/{id}/verify: `token` required.
    WebhookVerify = VerifyBody, ["token"]
);

/// The body of POST /webhooks: `topics`, and `url` or `destination` (not both). The rule is
/// `if`/`then`/`else` in the object schema, not a top-level `oneOf`: generators make a
/// `oneOf` body a union of anonymous schemas (openapi-python-client: `Any`, and no
/// `WebhookCreate` model), while they type an object with `if` as its properties say.
pub(super) struct WebhookCreate;

impl JsonSchema for WebhookCreate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WebhookCreate".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = <WebhookFields as JsonSchema>::json_schema(g);
        schemars::transform::Transform::transform(&mut schema::Required(&["topics"]), &mut schema);
        // exactly one of the two: with `url`, no `destination`; without it, `destination`
        schema.insert("if".into(), serde_json::json!({"required": ["url"]}));
        schema.insert(
            "then".into(),
            serde_json::json!({"not": {"required": ["destination"]}}),
        );
        schema.insert(
            "else".into(),
            serde_json::json!({"required": ["destination"]}),
        );
        schema.insert(
            "description".into(),
            "The body of POST /webhooks: `topics`, and exactly one of `url` and `destination` (both or neither: 400).".into(),
        );
        schema
    }
}

/// `destination` in a request: one object per type, each address as the API checks it.
pub(super) fn destination_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
    destinations(schema::http_url(g))
}

/// `destination` in an answer: the address as stored (a local mode's URL may name an IP).
pub(super) fn destination_answer(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    destinations(schemars::json_schema!({"type": "string"}))
}

fn destinations(url: schemars::Schema) -> schemars::Schema {
    let one = |kind: Kind, address: schemars::Schema| {
        serde_json::json!({
            "type": "object",
            "properties": {"type": {"const": kind.as_str()}, kind.field(): address},
            "required": ["type", kind.field()],
            "additionalProperties": false,
        })
    };
    let bus = schemars::json_schema!({
        "type": "string",
        "pattern": "^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]+$"
    });
    let queue = schemars::json_schema!({
        "type": "string",
        "pattern": "^https?://[^/?#]+/[0-9]{12}/[A-Za-z0-9_-]+(?:\\.fifo)?$"
    });
    schemars::json_schema!({
        "description": "Where the subscription delivers, instead of `url`. AWS destinations get no signing secret (IAM authenticates them) and nothing but a `webhook.verification` message until verified",
        "oneOf": [one(Kind::Https, url), one(Kind::EventBridge, bus), one(Kind::Sqs, queue)]
    })
}

/// The destination a body names, checked (an HTTPS URL by the address guard, an AWS one
/// against the deployment's allow-list).
pub(super) async fn destination_field(
    app: &App,
    url: Option<&str>,
    destination: Option<&Value>,
) -> Result<Option<Destination>, ApiError> {
    let parsed = match (url, destination) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "give 'url' or 'destination', not both",
            ))
        }
        (None, None) => return Ok(None),
        (Some(url), None) => Destination::Https { url: url.into() },
        (None, Some(value)) => Destination::parse(value, &app.config.webhooks.allowed)
            .map_err(ApiError::bad_request)?,
    };
    Ok(Some(match parsed {
        Destination::Https { url } => Destination::Https {
            url: checked_url(app, &url).await?,
        },
        aws => aws,
    }))
}

/// A PATCH changes a destination within its type (`by_url`: it was given as `url`).
pub(super) fn keeps_kind(current: Kind, new: &Destination, by_url: bool) -> Result<(), Failure> {
    if new.kind() == current {
        return Ok(());
    }
    Err(Failure::invalid(if by_url {
        format!(
            "field 'url' is for HTTPS destinations; this subscription delivers to {}: send 'destination'",
            current.as_str()
        )
    } else {
        format!(
            "field 'destination.type': a subscription keeps its destination type ({}); create another subscription to deliver to {}",
            current.as_str(),
            new.kind().as_str()
        )
    }))
}

/// A new verification: a random token, good for 24 hours.
pub(super) fn new_verification() -> Verification {
    Verification {
        token: random_string(SECRET_ALPHABET, TOKEN_LEN),
        expires_at: Timestamp::from_millis(Timestamp::now().millis() + TOKEN_TTL_MS),
    }
}

/// Logs and queues a `webhook.verification` delivery to `sub` (the worker puts the token
/// in, read from the subscription as it is then): its delivery id.
pub(super) async fn send_verification(
    app: &App,
    call: &Call,
    sub: &Subscription,
) -> Result<String, ApiError> {
    send_about(app, call, sub, Action::Verification).await
}

/// Sends a subscription just saved pending its verification message, counted as a
/// delivery sent by hand after the save (a refused request counts nothing). One that is not
/// sent (the hour's quota is used up, the queue unreachable) leaves it pending:
/// `POST /webhooks/{id}/verification` sends one later.
pub(super) async fn ask_for_token(app: &App, call: &Call, sub: &Subscription) {
    let sent = match count_by_hand(app, call).await {
        Ok(()) => send_verification(app, call, sub).await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        tracing::warn!(status = e.status, webhook = %sub.id, "verification message not sent");
    }
}

fn not_pending(sub: &Subscription) -> Failure {
    Failure::conflict(format!(
        "webhook '{}' is not awaiting verification (only a new AWS destination is)",
        sub.id
    ))
}

/// Why `token` does not confirm `sub`, if it does not.
fn refused_token(sub: &Subscription, token: &str) -> Option<Failure> {
    let Some(v) = &sub.verification else {
        return Some(not_pending(sub));
    };
    if !bool::from(v.token.as_bytes().ct_eq(token.as_bytes())) {
        return Some(Failure::invalid(
            "field 'token' does not match the latest verification message of this subscription",
        ));
    }
    if v.expires_at.millis() <= Timestamp::now().millis() {
        return Some(Failure::invalid(format!(
            "field 'token': the latest verification token expired at {}; POST /webhooks/{}/verification sends a new one",
            v.expires_at, sub.id
        )));
    }
    None
}

/// POST /webhooks/{id}/verify `{"token"}`: 200 with the subscription, now delivering. A
/// token that does not confirm it changes nothing.
async fn verify(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: VerifyBody = call.body(app)?;
    let token = match body.token {
        Some(Value::String(t)) => t,
        Some(_) => return Err(ApiError::bad_request("field 'token' must be a string")),
        None => return Err(ApiError::bad_request("field 'token' is required")),
    };
    reads_catalog(call, "changing a subscription to catalog topics")?;
    let sub = modify(app, call, None, |sub| match refused_token(sub, &token) {
        Some(e) => Err(e),
        None => {
            sub.verification = None;
            Ok(())
        }
    })
    .await?;
    Ok(ApiResponse::single(200, render(&sub)).with_etag(etags::subscription(&sub)))
}

/// POST /webhooks/{id}/verification: a new token, sent in a new verification message.
async fn resend(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    reads_catalog(call, "changing a subscription to catalog topics")?;
    // what would refuse it is checked before the hour's quota counts it
    let id = call.route.identifier(0, "webhook id")?;
    let current = etags::checked(
        call.request.if_match.as_deref(),
        find(app, call.org(), id).await,
        etags::subscription,
        "webhook",
    )?;
    if current.verification.is_none() {
        return Err(not_pending(&current).into());
    }
    count_by_hand(app, call).await?;
    let sub = modify(app, call, None, |sub| {
        if sub.verification.is_none() {
            return Err(not_pending(sub));
        }
        sub.verification = Some(new_verification());
        Ok(())
    })
    .await?;
    let delivery_id = send_verification(app, call, &sub).await?;
    Ok(answer_sent(&delivery_id))
}
