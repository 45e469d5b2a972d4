//! The one error type every handler returns, mapped to the statuses of decisions.md.
//!
//! Messages are written for API clients: they name the parameter, field or key at fault and
//! never carry SDK error names, stack traces or internal ids (those go to the logs only).

mod failure;

pub use failure::Failure;

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
        Failure::partial(cause).into()
    }

    /// Whether this is the answer of a partially applied write.
    pub fn is_partially_applied(&self) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| *n == PARTIALLY_APPLIED_HEADER)
    }

    /// Storage throttled or unreachable after the SDK's own retries.
    pub fn unavailable() -> Self {
        Failure::unavailable().into()
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

/// A storage failure answered as what it means (`Failure::from`).
impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        Failure::from(err).into()
    }
}

impl Failure {
    /// The status of each kind (decisions.md), also a bulk or import line's `status`.
    pub fn status(&self) -> u16 {
        match self {
            Failure::Invalid(_) => 400,
            Failure::NotFound(_) => 404,
            Failure::Conflict(_) => 409,
            Failure::Stale(_) => 412,
            Failure::TooLarge(_) => 413,
            Failure::Partial(_) | Failure::Busy(_) => 503,
            Failure::Internal => 500,
        }
    }
}

/// The one mapping of what a use case says to its HTTP answer: the status of its kind, its
/// message, and `Retry-After` (with [`PARTIALLY_APPLIED_HEADER`] for a partial write) on
/// every 503.
impl From<Failure> for ApiError {
    fn from(f: Failure) -> Self {
        let e = ApiError::new(f.status(), f.message());
        match f {
            Failure::Partial(_) => e
                .with_header("retry-after", "1")
                .with_header(PARTIALLY_APPLIED_HEADER, "true"),
            Failure::Busy(_) => e.with_header("retry-after", "1"),
            _ => e,
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
