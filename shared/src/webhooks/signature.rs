//! Webhook signatures (decisions.md): `X-Catalog-Signature: t=<unix seconds>,v1=<hex>` where
//! `v1 = HMAC-SHA256(secret, "<t>.<raw body>")`, and the Standard Webhooks headers
//! (`webhook-id`, `webhook-timestamp`, `webhook-signature`), signed by the official
//! `standardwebhooks` crate. Signing for the delivery function, with every live secret
//! during a rotation's overlap, and [`verify`], the helper consumers can copy: timestamp
//! tolerance, constant-time comparison.

use hmac::{KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

/// The header that carries the signature.
pub const HEADER: &str = "X-Catalog-Signature";
/// The header that carries the delivery id.
pub const ID_HEADER: &str = "X-Catalog-Webhook-Id";
/// How far a signature's timestamp may be from the receiver's clock by default.
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

/// Why a signature does not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("signature header is missing or malformed")]
    Malformed,
    #[error("signature timestamp is outside the tolerance")]
    Expired,
    #[error("signature does not match")]
    Mismatch,
}

fn mac(secret: &str, timestamp: i64, body: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The header value for `body` signed at `timestamp` (unix seconds).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    sign_with(&[secret], timestamp, body)
}

/// The header value with one `v1` per secret, in order (two during a rotation's overlap).
pub fn sign_with(secrets: &[&str], timestamp: i64, body: &[u8]) -> String {
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        let digest = mac(secret, timestamp, body).finalize().into_bytes();
        header.push_str(",v1=");
        header.push_str(&crate::auth::apikey::to_hex(&digest));
    }
    header
}

/// The Standard Webhooks header names.
pub use standardwebhooks::{
    HEADER_WEBHOOK_ID as STANDARD_ID, HEADER_WEBHOOK_SIGNATURE as STANDARD_SIGNATURE,
    HEADER_WEBHOOK_TIMESTAMP as STANDARD_TIMESTAMP,
};

/// The `webhook-signature` value: one `v1,<base64>` per secret, space-separated, each the
/// HMAC-SHA256 of `"<id>.<timestamp>.<body>"` keyed by the base64-decoded part of the secret
/// after `whsec_` (our secrets are 40 base64 characters; a key that is not base64 would be
/// used as its bytes).
pub fn standard_signature(secrets: &[&str], id: &str, timestamp: i64, body: &str) -> String {
    secrets
        .iter()
        .filter_map(|secret| {
            standardwebhooks::Webhook::new(secret)
                .or_else(|_| standardwebhooks::Webhook::from_bytes(secret.as_bytes().to_vec()))
                .and_then(|w| w.sign(id, timestamp, body.as_bytes()))
                .ok()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Verifies `header` (the `X-Catalog-Signature` value) for the raw `body` with `secret`:
/// the timestamp must be within `tolerance_secs` of `now` (unix seconds) and one `v1`
/// must equal the HMAC, compared in constant time. Unknown `key=value` parts are ignored,
/// so new signature schemes can be added without breaking receivers.
///
/// The receiver side, as in docs/webhooks.md:
///
/// ```
/// use catalog::webhooks::signature::{self, VerifyError, DEFAULT_TOLERANCE_SECS};
/// use std::time::{SystemTime, UNIX_EPOCH};
///
/// /// `header` is the X-Catalog-Signature value, `body` the raw request body.
/// fn verify_request(secret: &str, header: Option<&str>, body: &[u8]) -> Result<(), VerifyError> {
///     let header = header.ok_or(VerifyError::Malformed)?;
///     let now = SystemTime::now()
///         .duration_since(UNIX_EPOCH)
///         .map_err(|_| VerifyError::Expired)?
///         .as_secs() as i64;
///     // Err(Malformed | Expired | Mismatch): answer 400 and drop the request.
///     signature::verify(secret, header, body, now, DEFAULT_TOLERANCE_SECS)
/// }
///
/// let body = br#"{"id":"d1","event":"product.updated"}"#;
/// let header = "t=1700000000,v1=0133333033ad765cce6f241881b63d8f6835b3fa28d62257c87fef69feb87b87";
/// assert_eq!(signature::verify("whsec_test", header, body, 1_700_000_000, 300), Ok(()));
/// assert_eq!(verify_request("whsec_test", Some(header), body), Err(VerifyError::Expired));
/// assert_eq!(verify_request("whsec_test", None, body), Err(VerifyError::Malformed));
/// ```
pub fn verify(
    secret: &str,
    header: &str,
    body: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<(), VerifyError> {
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        let (key, value) = part.trim().split_once('=').ok_or(VerifyError::Malformed)?;
        match key {
            "t" => {
                let valid = !value.is_empty() && value.len() <= 12;
                if !valid || !value.bytes().all(|b| b.is_ascii_digit()) || timestamp.is_some() {
                    return Err(VerifyError::Malformed);
                }
                timestamp = value.parse::<i64>().ok();
            }
            "v1" => candidates.push(decode_hex(value).ok_or(VerifyError::Malformed)?),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(VerifyError::Malformed)?;
    if candidates.is_empty() {
        return Err(VerifyError::Malformed);
    }
    if (now - timestamp).abs() > tolerance_secs {
        return Err(VerifyError::Expired);
    }
    let expected = mac(secret, timestamp, body);
    if candidates
        .iter()
        .any(|c| expected.clone().verify_slice(c).is_ok())
    {
        Ok(())
    } else {
        Err(VerifyError::Mismatch)
    }
}

/// A 32-byte digest from 64 hex digits.
fn decode_hex(s: &str) -> Option<Vec<u8>> {
    (s.len() == 64)
        .then(|| crate::auth::apikey::from_hex(s))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test";
    const BODY: &[u8] = br#"{"id":"d1","event":"product.updated"}"#;

    #[test]
    fn known_vector() {
        // python3 -c 'import hmac,hashlib;print(hmac.new(b"whsec_test",
        //   b"1700000000.{\"id\":\"d1\",\"event\":\"product.updated\"}",hashlib.sha256).hexdigest())'
        assert_eq!(
            sign(SECRET, 1_700_000_000, BODY),
            "t=1700000000,v1=0133333033ad765cce6f241881b63d8f6835b3fa28d62257c87fef69feb87b87"
        );
    }

    #[test]
    fn standard_webhooks_signatures_verify_with_the_official_crate() {
        // a secret as the API issues it: whsec_ and 40 base64 characters
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwABCDEFGH";
        let old = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let body = r#"{"id":"d1","event":"product.updated"}"#;
        // the published crate verifies against its own clock
        let now = crate::domain::time::Timestamp::now().millis() / 1000;
        let headers = |signature: &str| {
            let mut h = lambda_http::http::HeaderMap::new();
            h.insert(STANDARD_ID, "d1".parse().unwrap());
            h.insert(STANDARD_TIMESTAMP, now.to_string().parse().unwrap());
            h.insert(STANDARD_SIGNATURE, signature.parse().unwrap());
            h
        };
        let one = standard_signature(&[secret], "d1", now, body);
        assert!(one.starts_with("v1,") && !one.contains(' '), "{one}");
        let verifier = standardwebhooks::Webhook::new(secret).unwrap();
        assert!(verifier.verify(body.as_bytes(), &headers(&one)).is_ok());
        assert!(verifier.verify(b"{}", &headers(&one)).is_err());
        let wrong = standardwebhooks::Webhook::new(old).unwrap();
        assert!(wrong.verify(body.as_bytes(), &headers(&one)).is_err());
        // two secrets: two entries, each verifying with its own secret
        let both = standard_signature(&[secret, old], "d1", now, body);
        assert_eq!(both.split(' ').count(), 2);
        for w in [&verifier, &wrong] {
            assert!(w.verify(body.as_bytes(), &headers(&both)).is_ok());
        }
        let catalog = sign_with(&[secret, old], now, body.as_bytes());
        assert_eq!(catalog.matches(",v1=").count(), 2);
        assert_eq!(verify(old, &catalog, body.as_bytes(), now, 300), Ok(()));
        assert_eq!(verify(secret, &catalog, body.as_bytes(), now, 300), Ok(()));
    }

    #[test]
    fn a_signature_verifies_within_tolerance() {
        let header = sign(SECRET, 1_700_000_000, BODY);
        assert_eq!(verify(SECRET, &header, BODY, 1_700_000_100, 300), Ok(()));
        assert_eq!(verify(SECRET, &header, BODY, 1_699_999_900, 300), Ok(()));
        // extra parts and a second v1 (as during a secret rotation) are fine
        let two = format!("{header},v1={},v0=abc", "0".repeat(64));
        assert_eq!(verify(SECRET, &two, BODY, 1_700_000_000, 300), Ok(()));
    }

    #[test]
    fn tampering_old_timestamps_and_wrong_secrets_fail() {
        let header = sign(SECRET, 1_700_000_000, BODY);
        let tampered = br#"{"id":"d1","event":"product.deleted"}"#;
        assert_eq!(
            verify(SECRET, &header, tampered, 1_700_000_000, 300),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify("whsec_other", &header, BODY, 1_700_000_000, 300),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(SECRET, &header, BODY, 1_700_000_301, 300),
            Err(VerifyError::Expired)
        );
        // the timestamp is signed: moving it breaks the signature
        let moved = header.replace("t=1700000000", "t=1700000100");
        assert_eq!(
            verify(SECRET, &moved, BODY, 1_700_000_100, 300),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn empty_truncated_and_malformed_headers_never_verify() {
        let header = sign(SECRET, 1_700_000_000, BODY);
        let now = 1_700_000_000;
        for bad in [
            "".to_string(),
            "t=1700000000".to_string(),
            header[..header.len() - 1].to_string(),
            header[..20].to_string(),
            "v1=".to_string(),
            format!("t=,{}", &header[13..]),
            format!("t=-5,{}", &header[13..]),
            format!("t=1700000000,t=1700000000,{}", &header[13..]),
            header.replace("v1=", "v1=zz"),
            format!("t=1700000000,v1=+{}", &header[17..header.len() - 1]),
            "garbage".to_string(),
        ] {
            assert_eq!(
                verify(SECRET, &bad, BODY, now, 300),
                Err(VerifyError::Malformed),
                "{bad:?}"
            );
        }
    }
}
