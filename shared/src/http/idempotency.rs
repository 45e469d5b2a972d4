//! `Idempotency-Key` at the edge: which requests take one, what a key may look like, and
//! the fingerprint that tells a repeat from another request under the same key.

use super::ApiRequest;
use crate::error::ApiError;
use sha2::{Digest, Sha256};

/// The key of a request that takes one (POST, PATCH, PUT), checked: 1 to 255 printable
/// ASCII characters. `None` when not sent or the method takes none.
pub fn key(request: &ApiRequest) -> Result<Option<&str>, ApiError> {
    if !matches!(request.method.as_str(), "POST" | "PATCH" | "PUT") {
        return Ok(None);
    }
    match request.idempotency_key.as_deref() {
        None => Ok(None),
        Some(k)
            if (1..=255).contains(&k.len()) && k.bytes().all(|b| (0x20..=0x7e).contains(&b)) =>
        {
            Ok(Some(k))
        }
        Some(_) => Err(ApiError::bad_request(
            "header 'Idempotency-Key' must be 1 to 255 printable ASCII characters",
        )),
    }
}

/// The API key (its id) that sent the request, and the request's method, path, query and
/// body, digested: a stored answer is replayed only to the key that made it.
pub fn fingerprint(key_id: &str, request: &ApiRequest) -> String {
    let mut h = Sha256::new();
    h.update(key_id.as_bytes());
    h.update(b"\n");
    h.update(request.method.as_bytes());
    h.update(b"\n");
    h.update(request.path.as_bytes());
    for (k, v) in &request.query {
        h.update(format!("\n{k}={v}").as_bytes());
    }
    h.update(b"\n\n");
    h.update(&request.body);
    crate::auth::apikey::to_hex(&h.finalize())
}

/// An answer that says "not now" rather than what the request did: too many requests, or
/// the service failing or unavailable. Never kept under an `Idempotency-Key`: the key is
/// given back, so the retry `Retry-After` asks for runs the request.
pub fn is_transient(status: u16) -> bool {
    status == 429 || status >= 500
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_final_answers_are_kept_for_replay() {
        for status in [429, 500, 503, 504] {
            assert!(is_transient(status), "{status}");
        }
        for status in [200, 201, 400, 404, 409, 412, 422] {
            assert!(!is_transient(status), "{status}");
        }
    }
}
