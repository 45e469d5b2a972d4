//! The one error type every handler returns, mapped to the statuses of decisions.md.
//!
//! Messages are written for API clients: they name the parameter, field or key at fault and
//! never carry SDK error names, stack traces or internal ids (those go to the logs only).

use crate::store::StoreError;
use std::fmt;

/// An error that becomes an HTTP response `{"error": message}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    /// Extra response headers (`WWW-Authenticate`, `Allow`, `Retry-After`).
    pub headers: Vec<(&'static str, String)>,
}

/// The text of every 401, exactly as decided.
pub const UNAUTHORIZED_MESSAGE: &str = "Unauthorized - missing or invalid authentication";
/// The header that marks the answer of a partially applied write (`true`).
pub const PARTIALLY_APPLIED_HEADER: &str = "catalog-partially-applied";

/// The text of every 500.
pub const INTERNAL_MESSAGE: &str = "Internal server error";

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            headers: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, message)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, UNAUTHORIZED_MESSAGE).with_header("www-authenticate", "Bearer")
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(404, message)
    }

    /// `entity 'identifier' not found`, the shape of every missing-entity 404.
    pub fn entity_not_found(entity: &str, identifier: &str) -> Self {
        Self::not_found(format!("{entity} '{identifier}' not found"))
    }

    pub fn method_not_allowed(method: &str, allow: &[&str]) -> Self {
        Self::new(405, format!("method {method} is not allowed on this path"))
            .with_header("allow", allow.join(", "))
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(409, message)
    }

    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(413, format!("request body is larger than {limit} bytes"))
    }

    pub fn unsupported_media_type() -> Self {
        Self::new(
            415,
            "request body must be sent with Content-Type: application/json",
        )
    }

    /// A write of several storage transactions stopped after committing some of them
    /// (storage failed, or concurrent writers won every retry): 503 with `Retry-After` and
    /// [`PARTIALLY_APPLIED_HEADER`], never a plain 4xx or 503, since part of it is stored;
    /// repeating the same request completes it. `cause` is what stopped it.
    pub fn partially_applied(cause: &str) -> Self {
        Self::new(
            503,
            format!(
                "the request was partially applied: part of its writes are stored, then it stopped ({cause}); repeat the same request to complete it"
            ),
        )
        .with_header("retry-after", "1")
        .with_header(PARTIALLY_APPLIED_HEADER, "true")
    }

    /// Whether this is the answer of a partially applied write.
    pub fn is_partially_applied(&self) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| *n == PARTIALLY_APPLIED_HEADER)
    }

    /// Storage throttled or unreachable after the SDK's own retries.
    pub fn unavailable() -> Self {
        Self::new(503, "service temporarily unavailable, retry later")
            .with_header("retry-after", "1")
    }

    pub fn internal() -> Self {
        Self::new(500, INTERNAL_MESSAGE)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status, self.message)
    }
}

impl std::error::Error for ApiError {}

/// A broken domain rule is the client's error: 400 with the rule's message.
impl From<crate::domain::Invalid> for ApiError {
    fn from(e: crate::domain::Invalid) -> Self {
        Self::bad_request(e.message)
    }
}

/// The answer when a key built from the request is too long: the limits of what keys are
/// built from, no storage names.
pub const KEY_TOO_LONG_MESSAGE: &str = "a value in the request is too long to look up: \
     identifiers are at most 255 characters and 300 bytes of UTF-8, attribute keys at most 64 \
     characters";

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::ConditionFailed => {
                ApiError::conflict("a concurrent write changed this resource; retry the request")
            }
            StoreError::Taken(message) => ApiError::conflict(message),
            StoreError::NoMetaobject(def, id) => ApiError::bad_request(format!(
                "metaobject '{id}' of definition '{def}' does not exist"
            )),
            StoreError::TooLarge(message) | StoreError::Refused(message) => {
                ApiError::bad_request(message)
            }
            StoreError::Partial {
                committed,
                total,
                cause,
            } => {
                tracing::warn!(committed, total, cause = %cause, "write partially applied");
                ApiError::partially_applied(&ApiError::from(*cause).message)
            }
            StoreError::KeyTooLong(detail) => {
                tracing::warn!(%detail, "a key built from the request is too long");
                ApiError::bad_request(KEY_TOO_LONG_MESSAGE)
            }
            StoreError::Unavailable(detail) => {
                tracing::warn!(%detail, "storage unavailable");
                ApiError::unavailable()
            }
            StoreError::Loading { read } => ApiError::new(
                503,
                format!(
                    "the list index of this organization is still loading ({read} entries \
                     read so far); retry in a moment"
                ),
            )
            .with_header("retry-after", "1"),
            StoreError::Other(detail) => {
                tracing::error!(%detail, "storage error");
                ApiError::internal()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unauthorized_is_exactly_as_decided() {
        let e = ApiError::unauthorized();
        assert_eq!(e.status, 401);
        assert_eq!(
            e.message,
            "Unauthorized - missing or invalid authentication"
        );
        assert_eq!(e.headers, vec![("www-authenticate", "Bearer".to_string())]);
    }

    #[test]
    fn method_not_allowed_lists_methods() {
        let e = ApiError::method_not_allowed("POST", &["GET", "PATCH"]);
        assert_eq!(e.status, 405);
        assert_eq!(e.headers, vec![("allow", "GET, PATCH".to_string())]);
    }

    #[test]
    fn a_broken_domain_rule_is_a_400_with_its_message() {
        let e: ApiError = crate::domain::Invalid::new("field 'name' is blank").into();
        assert_eq!(
            (e.status, e.message.as_str()),
            (400, "field 'name' is blank")
        );
    }
}
