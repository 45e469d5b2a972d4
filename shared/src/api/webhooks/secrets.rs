//! Signing secrets: a new one at creation, and rotation with an optional overlap in which the
//! old one signs beside it.

use super::*;

/// Random characters of a signing secret after `whsec_`.
const WEBHOOK_SECRET_LEN: usize = 40;
/// Longest overlap of the old and new secret after a rotation.
const MAX_EXPIRE_CURRENT_SECS: u64 = 86_400;

/// The body of POST /webhooks/{id}/rotate-secret (optional).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "WebhookRotate")]
pub(super) struct Rotation {
    /// How long the old secret keeps signing beside the new one (default 0)
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "u32", range(min = 0, max = 86_400))]
    expire_current_in_seconds: Option<Value>,
}

/// A signing secret: `whsec_` and 40 random characters (~238 bits), like API key secrets.
pub(super) fn new_secret() -> String {
    format!(
        "whsec_{}",
        random_string(SECRET_ALPHABET, WEBHOOK_SECRET_LEN)
    )
}

/// POST /webhooks/{id}/rotate-secret `{"expireCurrentInSeconds"?: 0..86400}`: a new
/// secret, shown this once. The old one keeps signing beside it for that many seconds
/// (default 0: it stops at once); a secret older than the old one stops at once.
pub(super) async fn rotate(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: Rotation = call.body(app)?;
    reads_catalog(call, "changing a subscription to catalog topics")?;
    let overlap = match body.expire_current_in_seconds {
        None => 0,
        Some(v) => crate::http::body::whole_number(&v)
            .filter(|n| *n <= MAX_EXPIRE_CURRENT_SECS)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "field 'expireCurrentInSeconds' must be an integer from 0 to {MAX_EXPIRE_CURRENT_SECS}"
                ))
            })?,
    };
    let secret = new_secret();
    let sub = modify(app, call, None, |sub| {
        if sub.kind.is_aws() {
            return Err(Failure::conflict(format!(
                "webhook '{}' delivers to {}: IAM authenticates it, and it has no signing secret to rotate",
                sub.id,
                sub.kind.as_str()
            )));
        }
        let until = Timestamp::now().millis() + overlap as i64 * 1000;
        let old = std::mem::replace(&mut sub.secret, secret.clone());
        (sub.previous_secret, sub.previous_secret_expires_at) = if overlap > 0 {
            (Some(old), Some(Timestamp::from_millis(until)))
        } else {
            (None, None)
        };
        Ok(())
    })
    .await?;
    Ok(ApiResponse::shown(200, &view(&sub, true, None)).with_etag(etags::subscription(&sub)))
}
