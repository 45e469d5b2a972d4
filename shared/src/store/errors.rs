//! Maps AWS SDK errors to what a handler can act on, without leaking SDK names to clients.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use std::fmt::Debug;

/// A storage failure, classified.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A condition expression (or one inside a transaction) did not hold.
    #[error("condition failed")]
    ConditionFailed,
    /// An item would exceed DynamoDB's 400 KB limit: the request carries too much data (the
    /// message names the entity).
    #[error("item too large: {0}")]
    TooLarge(String),
    /// Storage would refuse the write for a limit of its own (a key's size): the message
    /// names what and why; answered 400.
    #[error("refused: {0}")]
    Refused(String),
    /// A write of several transactions failed after `committed` of its `total` transactions
    /// were committed: part of it is stored, and repeating the request completes it.
    #[error("partially applied ({committed} of {total} transactions): {cause}")]
    Partial {
        committed: usize,
        total: usize,
        cause: Box<StoreError>,
    },
    /// A key built from the request is over DynamoDB's key size limits. The handlers
    /// check every identifier and key before any read, so this is only the last guard.
    #[error("key too long: {0}")]
    KeyTooLong(String),
    /// A unique identifier is already used elsewhere (the message names it).
    #[error("taken: {0}")]
    Taken(String),
    /// The write adds a reference to metaobject (definition, identifier), deleted since
    /// the write checked that it exists (its reference counters are closed): a 400, which
    /// callers word with the field that names it.
    #[error("metaobject '{1}' of definition '{0}' does not exist")]
    NoMetaobject(String, String),
    /// Throttled, unavailable or unreachable after the SDK's retries.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The first full read of a list's index did not finish within the call's budget; it
    /// goes on from where it stopped in the next call.
    #[error("list index still loading ({read} entries read)")]
    Loading { read: usize },
    /// Anything else: a bug or a misconfiguration; logged, answered with 500.
    #[error("storage error: {0}")]
    Other(String),
}

/// How DynamoDB (and DynamoDB Local) word a key over its size limit (partition keys 2,048
/// bytes, sort keys 1,024), in a request's keys, key conditions or start key.
const KEY_SIZE_MESSAGES: &[&str] = &[
    "key values must be under",
    "exceeded the size limit",
    "exceeded the maximum size limit",
    "Size of hashkey",
    "Size of rangekey",
];

const UNAVAILABLE_CODES: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionInProgressException",
];

impl StoreError {
    /// Classifies any DynamoDB operation error.
    pub fn from_sdk<E, R>(op: &str, err: SdkError<E, R>) -> Self
    where
        E: ProvideErrorMetadata + Debug,
        R: Debug,
    {
        match &err {
            SdkError::ServiceError(service) => {
                let e = service.err();
                let code = e.code().unwrap_or_default();
                if code == "ConditionalCheckFailedException" {
                    return Self::ConditionFailed;
                }
                let msg = e.message().unwrap_or_default();
                if code == "ValidationException" && msg.contains("Item size") {
                    return Self::TooLarge(
                        "an item of the write would exceed the storage limit of 400 KB; store less data in its values".into(),
                    );
                }
                if code == "ValidationException"
                    && KEY_SIZE_MESSAGES.iter().any(|m| msg.contains(m))
                {
                    return Self::KeyTooLong(format!("{op}: {msg}"));
                }
                if code == "TransactionCanceledException" {
                    let msg = e.message().unwrap_or_default();
                    if msg.contains("ConditionalCheckFailed") || msg.contains("TransactionConflict")
                    {
                        return Self::ConditionFailed;
                    }
                    return Self::Unavailable(format!("{op}: {code}: {msg}"));
                }
                if UNAVAILABLE_CODES.contains(&code) {
                    return Self::Unavailable(format!("{op}: {code}"));
                }
                Self::Other(format!("{op}: {code}: {}", e.message().unwrap_or_default()))
            }
            SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => {
                Self::Unavailable(format!("{op}: {err:?}"))
            }
            _ => Self::Other(format!("{op}: {err:?}")),
        }
    }

    pub fn serde(op: &str, err: serde_dynamo::Error) -> Self {
        Self::Other(format!("{op}: item does not decode: {err}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ApiError, KEY_TOO_LONG_MESSAGE};
    use aws_sdk_dynamodb::error::ErrorMetadata;
    use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemError;

    fn classify(code: &str, message: &str) -> StoreError {
        let meta = ErrorMetadata::builder().code(code).message(message).build();
        StoreError::from_sdk(
            "BatchGetItem",
            SdkError::<_, ()>::service_error(BatchGetItemError::generic(meta), ()),
        )
    }

    /// The last guard: a key over DynamoDB's size limits is the client's 400, in words that
    /// name no AWS error; any other validation error stays a 500.
    #[test]
    fn a_key_too_long_is_a_400_without_aws_names() {
        for message in [
            "Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes",
            "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes",
            "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes",
        ] {
            let err = ApiError::from(classify("ValidationException", message));
            assert_eq!((err.status, err.message.as_str()), (400, KEY_TOO_LONG_MESSAGE));
            assert!(!err.message.contains("Exception") && !err.message.contains("Dynamo"));
        }
        let other = ApiError::from(classify(
            "ValidationException",
            "The provided key element does not match the schema",
        ));
        assert_eq!(other.status, 500);
        assert!(matches!(
            classify(
                "ValidationException",
                "Item size has exceeded the maximum allowed size"
            ),
            StoreError::TooLarge(_)
        ));
    }
}
