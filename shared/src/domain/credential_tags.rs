//! Credential tags: every secret the API issues (API keys, console sign-in links and
//! sessions) ends in a tag, a keyed MAC of the credential's kind and id, so that a process
//! refuses a credential that was never issued before it reads anything from storage.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Characters a tag adds to an issued secret.
pub const TAG_LEN: usize = 6;
/// Characters of the random part of an issued secret (and of a whole secret issued before
/// tags, which had none).
pub const RANDOM_LEN: usize = 40;

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// The key credentials are tagged with: a deployment's, derived from its secret
/// (`Config::credential_tags`), or a local stack's, derived from its table name.
#[derive(Clone)]
pub struct CredentialTags([u8; 32]);

impl std::fmt::Debug for CredentialTags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CredentialTags(..)")
    }
}

/// What a presented secret is, before anything is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presented {
    /// It carries the tag of its id: it may have been issued; storage decides.
    Tagged,
    /// It has the length of a secret issued before tags (API keys only are still accepted
    /// so; their reads are bounded instead).
    Untagged,
    /// It was never issued: refused without a read.
    Forged,
}

impl Presented {
    /// Whether a secret presented so could be the secret of a key issued with a tag
    /// (`tagged`) or before tags: a forged one never is, nor an untagged one of a tagged key.
    pub fn may_be_of(self, tagged: bool) -> bool {
        match self {
            Self::Tagged => true,
            Self::Untagged => !tagged,
            Self::Forged => false,
        }
    }
}

impl CredentialTags {
    pub fn new(key: [u8; 32]) -> Self {
        Self(key)
    }

    /// A local stack's key, from its table name (anyone who knows the name can tag; a
    /// deployment derives its key from its secret instead).
    pub fn for_table(table: &str) -> Self {
        Self(Sha256::digest(format!("catalog-credentials:{table}")).into())
    }

    /// The tag of the credential `id` of `kind` (`key`, `csl_`, `css_`).
    fn tag(&self, kind: &str, id: &str) -> [u8; TAG_LEN] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(kind.as_bytes());
        mac.update(b"\n");
        mac.update(id.as_bytes());
        let digest = mac.finalize().into_bytes();
        std::array::from_fn(|i| ALPHABET[digest[i] as usize % ALPHABET.len()])
    }

    /// The secret to issue for `id`: its random part, then the tag.
    pub fn issue(&self, kind: &str, id: &str, random: &str) -> String {
        let tag = self.tag(kind, id);
        format!("{random}{}", std::str::from_utf8(&tag).expect("ASCII"))
    }

    /// What the presented `secret` of `id` is, compared in constant time.
    pub fn check(&self, kind: &str, id: &str, secret: &str) -> Presented {
        match secret.len() {
            RANDOM_LEN => Presented::Untagged,
            n if n == RANDOM_LEN + TAG_LEN => {
                let tag = self.tag(kind, id);
                if bool::from(secret.as_bytes()[RANDOM_LEN..].ct_eq(&tag)) {
                    Presented::Tagged
                } else {
                    Presented::Forged
                }
            }
            _ => Presented::Forged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_issuing_key_tags_a_secret_for_its_id_and_kind() {
        let tags = CredentialTags::new([1; 32]);
        let random = "a".repeat(RANDOM_LEN);
        let secret = tags.issue("key", "abc123xyz789", &random);
        assert_eq!(secret.len(), RANDOM_LEN + TAG_LEN);
        assert!(secret.bytes().all(|b| ALPHABET.contains(&b)));
        let other = CredentialTags::new([2; 32]);
        for (tags, kind, id, secret, presented) in [
            (&tags, "key", "abc123xyz789", &secret, Presented::Tagged),
            (&tags, "key", "abc123xyz780", &secret, Presented::Forged),
            (&tags, "css_", "abc123xyz789", &secret, Presented::Forged),
            (&other, "key", "abc123xyz789", &secret, Presented::Forged),
            (&tags, "key", "abc123xyz789", &random, Presented::Untagged),
        ] {
            assert_eq!(tags.check(kind, id, secret), presented, "{kind} {id}");
        }
        for len in [32, 39, 41, 45, 47, 128] {
            let s = "b".repeat(len);
            assert_eq!(tags.check("key", "abc123xyz789", &s), Presented::Forged);
        }
    }

    #[test]
    fn a_local_stack_tags_by_its_table() {
        let random = "a".repeat(RANDOM_LEN);
        let secret = CredentialTags::for_table("t1").issue("key", "id", &random);
        let check = |table| CredentialTags::for_table(table).check("key", "id", &secret);
        assert_eq!(check("t1"), Presented::Tagged);
        assert_eq!(check("t2"), Presented::Forged);
    }
}
