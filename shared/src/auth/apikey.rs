//! API keys: `cat_<key id>_<secret>`. The 12-character key id is the 6-character
//! organization id followed by 6 random characters, so the key's item lives in its
//! organization's partition and is found with no global lookup. The secret is 40 random
//! characters (~238 bits, so a fast hash is the right tool) and the key id's tag
//! (`domain/credential_tags.rs`). Only SHA-256 of the secret is stored, and hashes are
//! compared in constant time.

use crate::domain::credential_tags::{CredentialTags, RANDOM_LEN};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const PREFIX: &str = "cat_";
pub const ORG_ID_LEN: usize = 6;
pub const KEY_ID_LEN: usize = 12;
/// The kind API keys are tagged as.
pub const TAG_KIND: &str = "key";

const ID_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
pub const SECRET_ALPHABET: &[u8] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Random characters from `alphabet`, by rejection sampling (no modulo bias).
pub fn random_string(alphabet: &[u8], len: usize) -> String {
    let limit = 256 - (256 % alphabet.len());
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        getrandom::fill(&mut buf).expect("the OS random source is available");
        for &b in &buf {
            if (b as usize) < limit && out.len() < len {
                out.push(alphabet[b as usize % alphabet.len()] as char);
            }
        }
    }
    out
}

/// A new organization id: 6 characters of `[a-z0-9]`.
pub fn new_org_id() -> String {
    random_string(ID_ALPHABET, ORG_ID_LEN)
}

pub fn is_org_id(s: &str) -> bool {
    s.len() == ORG_ID_LEN && s.bytes().all(|b| ID_ALPHABET.contains(&b))
}

/// A freshly generated key: `plain` is shown once and never stored.
#[derive(Debug, Clone)]
pub struct ApiKey {
    pub key_id: String,
    pub plain: String,
    pub secret_hash: String,
}

impl ApiKey {
    pub fn generate(org: &str, tags: &CredentialTags) -> Self {
        assert!(
            is_org_id(org),
            "organization ids are 6 characters of [a-z0-9]"
        );
        let key_id = format!(
            "{org}{}",
            random_string(ID_ALPHABET, KEY_ID_LEN - ORG_ID_LEN)
        );
        let secret = tags.issue(
            TAG_KIND,
            &key_id,
            &random_string(SECRET_ALPHABET, RANDOM_LEN),
        );
        Self {
            plain: format!("{PREFIX}{key_id}_{secret}"),
            secret_hash: hash_secret(&secret),
            key_id,
        }
    }
}

/// The parts of a presented key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedKey {
    pub org: String,
    pub key_id: String,
    pub secret: String,
}

/// Parses `cat_<12 char id>_<secret>`; `None` for anything else.
pub fn parse(key: &str) -> Option<ParsedKey> {
    let rest = key.strip_prefix(PREFIX)?;
    let (key_id, secret) = rest.split_once('_')?;
    let ok = key_id.len() == KEY_ID_LEN
        && key_id.bytes().all(|b| ID_ALPHABET.contains(&b))
        && secret.len() >= 32
        && secret.len() <= 128
        && secret.bytes().all(|b| SECRET_ALPHABET.contains(&b));
    ok.then(|| ParsedKey {
        org: key_id[..ORG_ID_LEN].to_string(),
        key_id: key_id.to_string(),
        secret: secret.to_string(),
    })
}

/// Extracts the key from an `Authorization: Bearer <key>` header value.
pub fn from_authorization(header: &str) -> Option<ParsedKey> {
    let (scheme, token) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    parse(token.trim())
}

pub fn hash_secret(secret: &str) -> String {
    to_hex(&Sha256::digest(secret.as_bytes()))
}

/// Lowercase hexadecimal of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of an even-length hexadecimal string; `None` for anything else.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A new time-ordered id: `prefix` and a lowercase ULID (`wh_01m7…`, `dlv_01m7…`).
pub fn prefixed_ulid(prefix: &str) -> String {
    format!(
        "{prefix}{}",
        ulid::Ulid::new().to_string().to_ascii_lowercase()
    )
}

/// Whether `secret` hashes to `stored_hash`, compared in constant time.
pub fn verify(secret: &str, stored_hash: &str) -> bool {
    let presented = hash_secret(secret);
    presented.len() == stored_hash.len()
        && bool::from(presented.as_bytes().ct_eq(stored_hash.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_parse_and_verify() {
        let key = ApiKey::generate("abc123", &CredentialTags::for_table("t"));
        let parsed = from_authorization(&format!("Bearer {}", key.plain)).unwrap();
        assert_eq!(parsed.org, "abc123");
        assert_eq!(parsed.key_id, key.key_id);
        assert!(verify(&parsed.secret, &key.secret_hash));
        assert!(!verify(
            &format!("{}x", &parsed.secret[1..]),
            &key.secret_hash
        ));
        // only the secret's SHA-256 is kept: not the secret, nothing of it in clear
        assert_eq!(key.secret_hash, hash_secret(&parsed.secret));
        assert_eq!(key.secret_hash.len(), 64);
        assert_ne!(key.secret_hash, parsed.secret);
        assert!(!key.secret_hash.contains(&parsed.secret[..8]));
    }

    #[test]
    fn malformed_keys_do_not_parse() {
        let good = ApiKey::generate("abc123", &CredentialTags::for_table("t")).plain;
        for bad in [
            "",
            "Bearer",
            &format!("Basic {good}"),
            &format!("Bearer {}", good.replace("cat_", "cak_")),
            &format!("Bearer {}", &good[..good.len() - 20]),
            "Bearer cat_ABC123456789_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "Bearer cat_abc123456789_",
        ] {
            assert!(from_authorization(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn random_strings_use_the_alphabet() {
        let s = random_string(ID_ALPHABET, 500);
        assert_eq!(s.len(), 500);
        assert!(s.bytes().all(|b| ID_ALPHABET.contains(&b)));
        assert!(is_org_id(&new_org_id()));
    }
}
