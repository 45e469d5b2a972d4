//! What a use case refuses or fails with, in the catalog's words: no status, no header.
//! `error/mod.rs` maps each kind to its HTTP answer, the one place that does; use cases
//! never see `ApiError` (the layer check seals it).

use super::{INTERNAL_MESSAGE, KEY_TOO_LONG_MESSAGE};
use crate::store::StoreError;
use std::fmt;

/// Why a use case did not do what it was asked. Every message is written for API clients:
/// it names the field, parameter, line or entity at fault and no storage internals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The input breaks a rule.
    Invalid(String),
    /// An entity the request names does not exist.
    NotFound(String),
    /// The write conflicts with what is stored: a reference, an identifier taken, a quota,
    /// or concurrent writers that won every retry.
    Conflict(String),
    /// `If-Match` names a version the entity no longer has, or it does not exist.
    Stale(String),
    /// The request is larger than one call may be.
    TooLarge(String),
    /// A write of several transactions stored part of them, then stopped
    /// ([`Failure::partial`] words it); repeating the same request completes it.
    Partial(String),
    /// Nothing was done and the service cannot do it now (storage throttled, a list index
    /// still loading, the call out of time): try again in a moment.
    Busy(String),
    /// A bug or a misconfiguration, logged where it was met.
    Internal,
}

/// The message of a [`Failure::Busy`] when storage is throttled or unreachable.
const UNAVAILABLE_MESSAGE: &str = "service temporarily unavailable, retry later";

impl Failure {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict(message.into())
    }

    /// `entity 'identifier' not found`, the shape of every missing entity.
    pub fn not_found(entity: &str, identifier: &str) -> Self {
        Self::NotFound(format!("{entity} '{identifier}' not found"))
    }

    /// Storage throttled or unreachable after the SDK's own retries.
    pub fn unavailable() -> Self {
        Self::Busy(UNAVAILABLE_MESSAGE.into())
    }

    /// Part of a write is stored, then it stopped for `cause`.
    pub fn partial(cause: &str) -> Self {
        Self::Partial(format!(
            "the request was partially applied: part of its writes are stored, then it \
             stopped ({cause}); repeat the same request to complete it"
        ))
    }

    /// This failure met after part of a write was stored: it says so, naming this cause.
    pub fn after_partial(self) -> Self {
        match self {
            Self::Partial(_) => self,
            other => Self::partial(other.message()),
        }
    }

    /// What the client reads.
    pub fn message(&self) -> &str {
        match self {
            Self::Invalid(m)
            | Self::NotFound(m)
            | Self::Conflict(m)
            | Self::Stale(m)
            | Self::TooLarge(m)
            | Self::Partial(m)
            | Self::Busy(m) => m,
            Self::Internal => INTERNAL_MESSAGE,
        }
    }

    /// Whether the request itself is at fault, so that repeating it fails again (not a
    /// partial write, a busy service or a bug).
    pub fn is_refusal(&self) -> bool {
        !matches!(self, Self::Partial(_) | Self::Busy(_) | Self::Internal)
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound(_))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Failure {}

/// A broken domain rule: the input is invalid, in the rule's words.
impl From<crate::domain::Invalid> for Failure {
    fn from(e: crate::domain::Invalid) -> Self {
        Self::Invalid(e.message)
    }
}

/// A storage failure in the catalog's words; what a client must not read is logged here.
impl From<StoreError> for Failure {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::ConditionFailed => {
                Self::conflict("a concurrent write changed this resource; retry the request")
            }
            StoreError::Taken(message) => Self::Conflict(message),
            StoreError::NoMetaobject(def, id) => Self::Invalid(format!(
                "metaobject '{id}' of definition '{def}' does not exist"
            )),
            StoreError::TooLarge(message) | StoreError::Refused(message) => Self::Invalid(message),
            StoreError::Partial {
                committed,
                total,
                cause,
            } => {
                tracing::warn!(committed, total, cause = %cause, "write partially applied");
                Self::from(*cause).after_partial()
            }
            StoreError::KeyTooLong(detail) => {
                tracing::warn!(%detail, "a key built from the request is too long");
                Self::invalid(KEY_TOO_LONG_MESSAGE)
            }
            StoreError::Unavailable(detail) => {
                tracing::warn!(%detail, "storage unavailable");
                Self::unavailable()
            }
            StoreError::Loading { read } => Self::Busy(format!(
                "the list index of this organization is still loading ({read} entries read \
                 so far); retry in a moment"
            )),
            StoreError::Other(detail) => {
                tracing::error!(%detail, "storage error");
                Self::Internal
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_after_part_of_a_write_names_its_first_cause_once() {
        let once = Failure::unavailable().after_partial();
        assert_eq!(once, Failure::partial(UNAVAILABLE_MESSAGE));
        assert_eq!(
            once.message(),
            "the request was partially applied: part of its writes are stored, then it stopped \
             (service temporarily unavailable, retry later); repeat the same request to complete it"
        );
        assert_eq!(once.clone().after_partial(), once);
        let cut = StoreError::Partial {
            committed: 1,
            total: 2,
            cause: Box::new(StoreError::ConditionFailed),
        };
        assert_eq!(
            Failure::from(cut),
            Failure::partial("a concurrent write changed this resource; retry the request")
        );
    }

    #[test]
    fn storage_internals_never_reach_the_message() {
        let f = Failure::from(StoreError::Other("ResourceNotFoundException: table".into()));
        assert_eq!(
            (f.clone(), f.message()),
            (Failure::Internal, INTERNAL_MESSAGE)
        );
    }
}
