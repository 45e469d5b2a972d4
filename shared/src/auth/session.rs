//! Console sessions: a sign-in link's token is exchanged once for a session token kept in an
//! `HttpOnly`, `SameSite=Strict` cookie; the session acts as the API key that made the link
//! (its scopes, its organization's API access, read on every call), and its state-changing
//! calls carry the session's CSRF token. Tokens name their organization and key, so a
//! session is checked with one BatchGetItem (`store/console.rs`).

use super::apikey::{self, random_string, SECRET_ALPHABET};
use super::{Principal, Scope};
use crate::domain::credential_tags::{CredentialTags, Presented, RANDOM_LEN, TAG_LEN};
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::store::console::ConsoleItem;
use crate::store::{Store, StoreError};
use subtle::ConstantTimeEq;

/// How long a sign-in link may be used.
pub const LINK_SECONDS: i64 = 10 * 60;
/// How long a session lasts (absolute, from sign-in).
pub const SESSION_SECONDS: i64 = 8 * 60 * 60;

/// The session cookie's name: with the `__Host-` prefix (`Secure`, `Path=/`, no `Domain`,
/// so no sibling host can set or read it) outside local mode, where plain HTTP has no
/// `Secure` cookies.
pub fn cookie_name(secure: bool) -> &'static str {
    if secure {
        "__Host-catalog_console"
    } else {
        "catalog_console"
    }
}

const ID_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const ID_RANDOM: usize = 8;

/// What a token is for: its text starts with the kind's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Link,
    Session,
}

impl Kind {
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Link => "csl_",
            Self::Session => "css_",
        }
    }
}

/// `<prefix><id>_<secret>`: the id is the key id (whose first 6 characters are the
/// organization) and 8 random characters; the secret is 40 random characters (~238 bits)
/// and the id's tag of the token's kind (`domain/credential_tags.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub id: String,
    pub secret: String,
}

impl Token {
    /// A new token of the key `key_id`, and its text (shown once, never stored).
    pub fn generate(kind: Kind, key_id: &str, tags: &CredentialTags) -> (Self, String) {
        let id = format!("{key_id}{}", random_string(ID_ALPHABET, ID_RANDOM));
        let random = random_string(SECRET_ALPHABET, RANDOM_LEN);
        let token = Self {
            secret: tags.issue(kind.prefix(), &id, &random),
            id,
        };
        let text = format!("{}{}_{}", kind.prefix(), token.id, token.secret);
        (token, text)
    }

    pub fn parse(kind: Kind, text: &str) -> Option<Self> {
        let (id, secret) = text.strip_prefix(kind.prefix())?.split_once('_')?;
        let ok = id.len() == apikey::KEY_ID_LEN + ID_RANDOM
            && id.bytes().all(|b| ID_ALPHABET.contains(&b))
            && secret.len() == RANDOM_LEN + TAG_LEN
            && secret.bytes().all(|b| SECRET_ALPHABET.contains(&b));
        ok.then(|| Self {
            id: id.into(),
            secret: secret.into(),
        })
    }

    pub fn org(&self) -> &str {
        &self.id[..apikey::ORG_ID_LEN]
    }

    pub fn key_id(&self) -> &str {
        &self.id[..apikey::KEY_ID_LEN]
    }

    pub fn secret_hash(&self) -> String {
        apikey::hash_secret(&self.secret)
    }

    /// Whether this token carries the tag `tags` gives its id: one that does not was never
    /// issued, and is refused without a read.
    pub fn tagged(&self, kind: Kind, tags: &CredentialTags) -> bool {
        tags.check(kind.prefix(), &self.id, &self.secret) == Presented::Tagged
    }
}

/// A new sign-in link for the key `key_id` (holding `scopes`) of `org`: its token, for the
/// fragment of the console's address, and its expiry.
pub async fn new_link(
    store: &Store,
    org: &str,
    key_id: &str,
    scopes: &[Scope],
) -> Result<(String, Timestamp), StoreError> {
    let (token, text) = Token::generate(Kind::Link, key_id, store.credential_tags());
    let expires_at = Timestamp::from_millis(Timestamp::now().millis() + LINK_SECONDS * 1000);
    let scopes = scopes.iter().map(|s| s.as_str().to_string()).collect();
    let item = ConsoleItem::new(
        org,
        &token.id,
        key_id,
        token.secret_hash(),
        scopes,
        expires_at,
        None,
    );
    store.put_console_item(&item).await?;
    Ok((text, expires_at))
}

/// A new CSRF token for a session.
pub fn new_csrf() -> String {
    random_string(SECRET_ALPHABET, 32)
}

/// The session token of a `Cookie` header: the cookie of this deployment's name. A
/// malformed one counts as none.
pub fn from_cookie(header: &str, secure: bool) -> Option<Token> {
    let name = cookie_name(secure);
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| Token::parse(Kind::Session, v.trim()))
}

/// The `Set-Cookie` value that keeps `token` for `max_age` seconds (0 clears it).
pub fn set_cookie(token: &str, max_age: i64, secure: bool) -> String {
    let secure_attr = if secure { "; Secure" } else { "" };
    format!(
        "{}={token}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure_attr}",
        cookie_name(secure)
    )
}

/// The session a call runs under, when it came with a console cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: String,
    pub csrf: String,
    pub expires_at: Timestamp,
}

/// Whether a method changes state (and so needs the CSRF token).
fn changes_state(method: &str) -> bool {
    !matches!(
        method.to_ascii_uppercase().as_str(),
        "GET" | "HEAD" | "OPTIONS"
    )
}

/// Authenticates a call made with a console session: 401 for an unknown, expired or
/// signed-out session, or one whose key was revoked; 403 when the organization's API
/// access is disabled or a state-changing call lacks the session's CSRF token.
pub async fn authenticate(
    store: &Store,
    token: &Token,
    method: &str,
    csrf: Option<&str>,
) -> Result<Principal, ApiError> {
    if !token.tagged(Kind::Session, store.credential_tags()) {
        return Err(ApiError::unauthorized());
    }
    let read = store
        .get_console_session(token.org(), token.key_id(), &token.id)
        .await?;
    let (Some(org), Some(key), Some(session)) = (read.org, read.key, read.session) else {
        return Err(ApiError::unauthorized());
    };
    let valid = apikey::verify(&token.secret, &session.secret_hash)
        && session.key_id == key.key_id
        && key.org == org.id
        && !key.revoked
        && session.expires_at > Timestamp::now();
    let Some(session_csrf) = session.csrf.filter(|_| valid) else {
        return Err(ApiError::unauthorized());
    };
    if !org.api_enabled {
        return Err(ApiError::forbidden(
            "API access is disabled for this organization",
        ));
    }
    if changes_state(method)
        && !csrf.is_some_and(|c| bool::from(c.as_bytes().ct_eq(session_csrf.as_bytes())))
    {
        return Err(ApiError::forbidden(
            "a state-changing call of a console session needs the session's X-CSRF-Token header",
        ));
    }
    Ok(Principal {
        org: org.id,
        key_id: key.key_id,
        scopes: key.scopes.iter().filter_map(|s| Scope::parse(s)).collect(),
        limit: org.rate_limit.map(Into::into),
        session: Some(Session {
            id: token.id.clone(),
            csrf: session_csrf,
            expires_at: session.expires_at,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_key_and_parse_only_as_their_kind() {
        let (token, text) = Token::generate(
            Kind::Session,
            "abc123xyz789",
            &CredentialTags::for_table("t"),
        );
        assert!(text.starts_with("css_abc123xyz789"));
        assert_eq!(Token::parse(Kind::Session, &text), Some(token.clone()));
        assert_eq!(Token::parse(Kind::Link, &text), None);
        assert_eq!(token.org(), "abc123");
        assert_eq!(token.key_id(), "abc123xyz789");
        for bad in ["", "css_", &text[..text.len() - 1], &text.replace('_', "-")] {
            assert_eq!(Token::parse(Kind::Session, bad), None, "{bad}");
        }
    }

    #[test]
    fn the_cookie_is_found_by_its_name_only() {
        let (token, text) = Token::generate(
            Kind::Session,
            "abc123xyz789",
            &CredentialTags::for_table("t"),
        );
        let header = format!("other=1; catalog_console={text}; x=y");
        assert_eq!(from_cookie(&header, false), Some(token.clone()));
        assert_eq!(from_cookie(&header, true), None);
        let secure = format!("__Host-catalog_console={text}");
        assert_eq!(from_cookie(&secure, true), Some(token));
        assert_eq!(from_cookie("catalog_console=nonsense", false), None);
    }

    #[test]
    fn cookies_are_http_only_strict_and_secure_outside_local_mode() {
        assert_eq!(
            set_cookie("t", 60, true),
            "__Host-catalog_console=t; Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure"
        );
        assert_eq!(
            set_cookie("t", 0, false),
            "catalog_console=t; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
        );
    }

    #[test]
    fn only_reads_skip_the_csrf_check() {
        assert!(!changes_state("GET") && !changes_state("head"));
        assert!(changes_state("POST") && changes_state("DELETE") && changes_state("PATCH"));
    }
}
