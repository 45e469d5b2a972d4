//! Entity tags: `ETag` on single-entity reads and writes, `If-Match` on writes (checked by
//! the use cases: `usecases/etags.rs`). A tag is a
//! digest of the entity's own stored state (not its descendants', not bookkeeping such as
//! versions and index keys), so it changes exactly when the entity itself changes; a write
//! compares `If-Match` with the state it read, inside the same optimistic loop whose
//! conditional write already guards concurrency, so a check costs no extra read.

use crate::error::ApiError;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The tag of `item`'s serialized fields, leaving out `bookkeeping` (top-level names).
pub fn tag_of<T: Serialize>(item: &T, bookkeeping: &[&str]) -> String {
    let mut value = serde_json::to_value(item).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        for name in bookkeeping {
            fields.remove(*name);
        }
    }
    let digest = Sha256::digest(value.to_string().as_bytes());
    format!("\"{}\"", crate::auth::apikey::to_hex(&digest[..12]))
}

/// Refuses an `If-Match` that is not printable ASCII (decisions.md: a header the server
/// cannot read is 400, never ignored); every method, before any handler reads it.
pub fn readable(if_match: Option<&str>) -> Result<(), ApiError> {
    match if_match {
        Some(v) if !v.bytes().all(|b| (0x20..=0x7e).contains(&b)) => Err(ApiError::bad_request(
            "header 'If-Match' must be printable ASCII characters",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tags_follow_the_entity_not_its_bookkeeping() {
        let a = tag_of(&json!({"id": "p", "name": "A", "ver": 1}), &["ver"]);
        assert_eq!(
            a,
            tag_of(&json!({"id": "p", "name": "A", "ver": 9}), &["ver"])
        );
        assert_ne!(
            a,
            tag_of(&json!({"id": "p", "name": "B", "ver": 1}), &["ver"])
        );
        assert!(a.starts_with('"') && a.ends_with('"') && a.len() == 26);
    }

    #[test]
    fn an_unreadable_if_match_is_400() {
        assert!(readable(None).is_ok());
        assert!(readable(Some("\"abc\", *")).is_ok());
        for sent in ["\"é\"", "\"a\u{1}\"", "\"\u{fffd}\"", "\"a\tb\""] {
            let e = readable(Some(sent)).unwrap_err();
            assert_eq!(
                (e.status, e.message.as_str()),
                (400, "header 'If-Match' must be printable ASCII characters")
            );
        }
    }
}
