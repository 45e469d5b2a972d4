//! Opaque list cursors: where the next page starts, tied to the organization and to the
//! list's selection (its filters), sealed with an HMAC so that an edited or transplanted
//! cursor is a 400, not another page. The key is `CATALOG_CURSOR_KEY`, a deployment secret
//! the template generates (Secrets Manager); a process outside local mode refuses to start
//! without one (`App::from_env`). Only local mode falls back to a key derived from the table
//! name, which detects edits but not forgeries by someone who knows the table name.

use crate::error::ApiError;
use crate::http::query::{Cursor, Limit, PageNumber};
use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = hmac::Hmac<Sha256>;

/// The MAC bytes a cursor carries.
const MAC_LEN: usize = 16;

/// The longest position a cursor holds: a deletion of a metaobject,
/// `<time>#<definition>/<identifier>` (24 + 1 + 64 + 1 + 300 bytes), rounded up.
pub const MAX_POSITION_BYTES: usize = 400;

/// The key cursors are sealed with.
#[derive(Clone)]
pub struct CursorKey(Vec<u8>);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

impl CursorKey {
    /// The shortest `CATALOG_CURSOR_KEY` accepted outside local mode.
    pub const MIN_SECRET_BYTES: usize = 32;

    /// Whether `secret` is a deployment secret long enough to seal cursors with.
    pub fn is_secret(secret: Option<&str>) -> bool {
        secret.is_some_and(|s| s.len() >= Self::MIN_SECRET_BYTES)
    }

    /// `secret` when set, else a key derived from `table` (local mode only).
    pub fn new(secret: Option<&str>, table: &str) -> Self {
        match secret.filter(|s| !s.is_empty()) {
            Some(s) => Self(s.as_bytes().to_vec()),
            None => Self(Sha256::digest(format!("catalog-cursor:{table}")).to_vec()),
        }
    }

    /// A key for another purpose, derived from this deployment secret (HMAC of
    /// `purpose`): what only this deployment can make, never the secret itself.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    fn mac(&self, payload: &[u8]) -> Vec<u8> {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(payload);
        mac.finalize().into_bytes()[..MAC_LEN].to_vec()
    }

    /// The cursor of the page after `position` in the list `scope` of `org`.
    pub fn seal(&self, org: &str, scope: &str, position: &str) -> String {
        let payload = format!("{org}\n{}\n{position}", scope_hash(scope));
        format!(
            "{}.{}",
            hex(payload.as_bytes()),
            hex(&self.mac(payload.as_bytes()))
        )
    }

    /// The position a cursor of list `scope` of `org` holds; 400 for anything else.
    pub fn open(&self, org: &str, scope: &str, cursor: &str) -> Result<String, ApiError> {
        let invalid = || {
            ApiError::bad_request(
                "query parameter 'cursor': not a cursor of this list (edited, or made for other filters)",
            )
        };
        let (payload, mac) = cursor.split_once('.').ok_or_else(invalid)?;
        let (payload, mac) = (
            unhex(payload).ok_or_else(invalid)?,
            unhex(mac).ok_or_else(invalid)?,
        );
        let expected = self.mac(&payload);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(
            expected.as_slice(),
            mac.as_slice(),
        )) {
            return Err(invalid());
        }
        let text = String::from_utf8(payload).map_err(|_| invalid())?;
        let mut parts = text.splitn(3, '\n');
        let (Some(o), Some(s), Some(position)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(invalid());
        };
        if o != org || s != scope_hash(scope) {
            return Err(invalid());
        }
        // A position can become part of a storage key (`/deletions` starts its Query after
        // it): one longer than any this API hands out is refused before any read, even
        // sealed with a key someone guessed.
        if position.len() > MAX_POSITION_BYTES {
            return Err(ApiError::bad_request(format!(
                "query parameter 'cursor': a cursor's position is at most {MAX_POSITION_BYTES} \
                 bytes; this is not a cursor of this list"
            )));
        }
        Ok(position.to_string())
    }
}

/// Where a page of a cursor-capable list starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// A 1-based page number (`page`, default 1).
    Page(u32),
    /// Just after a position taken from a `cursor`.
    After(String),
}

/// The paging part of the query of a list that hands out cursors.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct CursorPageParams {
    #[serde(default)]
    pub limit: Limit,
    pub page: Option<PageNumber>,
    pub cursor: Option<Cursor>,
}

/// `limit` and `page` or `cursor` of a list that hands out cursors, checked and opened.
#[derive(Debug, Clone)]
pub struct CursorPaging {
    pub limit: u32,
    pub start: Start,
    key: CursorKey,
    org: String,
    scope: String,
}

impl CursorPaging {
    /// `scope` names the list and its selection: a cursor opens only for the same one.
    pub fn open(
        params: &CursorPageParams,
        key: &CursorKey,
        org: &str,
        scope: String,
    ) -> Result<Self, ApiError> {
        let limit = params.limit.0;
        let start = match (&params.cursor, params.page) {
            (Some(_), Some(_)) => {
                return Err(ApiError::bad_request(
                    "query parameters 'cursor' and 'page' cannot be used together",
                ))
            }
            (Some(c), None) => Start::After(key.open(org, &scope, &c.0)?),
            (None, page) => Start::Page(page.unwrap_or_default().0),
        };
        Ok(Self {
            limit,
            start,
            key: key.clone(),
            org: org.to_string(),
            scope,
        })
    }

    /// The first index of a page-numbered start.
    pub fn offset(&self) -> usize {
        match self.start {
            Start::Page(p) => (p as usize - 1).saturating_mul(self.limit as usize),
            Start::After(_) => 0,
        }
    }

    /// The list envelope of `entries` (each with its position, what a cursor after it
    /// holds): `pagination` has `nextCursor`, the cursor after `next_after` (the position of
    /// the page's last entry when more follow), else `null`; and `page` is `null` on a page
    /// reached by cursor.
    ///
    /// The entries take at most [`PAGE_ENTRY_BYTES`] of the answer (`answer_size.rs`): a
    /// page reached by cursor that would take more ends at the last entry within them, its
    /// `nextCursor` going on from there; a numbered page is refused (400) with the `limit`
    /// that fits, since its entries are counted from the start by `limit`; so is an entry
    /// that alone would take more.
    pub fn respond(
        &self,
        entries: Vec<(serde_json::Value, String)>,
        total: usize,
        next_after: Option<&str>,
    ) -> Result<crate::http::ApiResponse, ApiError> {
        use crate::http::answer_size::{answer_bytes, fitting, PAGE_ENTRY_BYTES};
        let mut entries = entries;
        let mut next_after = next_after.map(str::to_string);
        let sizes: Vec<usize> = entries.iter().map(|(e, _)| answer_bytes(e)).collect();
        let fit = fitting(&sizes, PAGE_ENTRY_BYTES);
        if fit < entries.len() {
            let page_bytes: usize = sizes.iter().sum();
            match self.start {
                _ if fit == 0 => {
                    return Err(ApiError::bad_request(format!(
                        "the list's entry '{}' alone would take {} bytes of the answer, more than the {PAGE_ENTRY_BYTES} a page holds: ask for fewer 'attributes' or without 'include'",
                        entries[0].1, sizes[0]
                    )))
                }
                Start::Page(p) => {
                    return Err(ApiError::bad_request(format!(
                        "query parameter 'limit': page {p} would take {page_bytes} bytes of the answer, more than the {PAGE_ENTRY_BYTES} a page holds; ask with 'limit' at most {fit}, or go on by 'cursor'"
                    )))
                }
                Start::After(_) => {
                    entries.truncate(fit);
                    next_after = entries.last().map(|(_, p)| p.clone());
                }
            }
        }
        let mut pagination = crate::http::response::pagination(
            self.limit,
            match self.start {
                Start::Page(p) => p,
                Start::After(_) => 0,
            },
            total as u64,
        );
        if let Start::After(_) = self.start {
            pagination.page = None;
        }
        pagination.next_cursor =
            Some(next_after.map(|p| self.key.seal(&self.org, &self.scope, &p)));
        let result: Vec<serde_json::Value> = entries.into_iter().map(|(e, _)| e).collect();
        Ok(crate::http::ApiResponse::json(
            200,
            serde_json::json!({"result": result, "pagination": pagination}),
        ))
    }
}

fn scope_hash(scope: &str) -> String {
    hex(&Sha256::digest(scope.as_bytes())[..8])
}

fn hex(bytes: &[u8]) -> String {
    crate::auth::apikey::to_hex(bytes)
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (s.len() <= 4096)
        .then(|| crate::auth::apikey::from_hex(s))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_opens_only_for_its_organization_and_list() {
        let key = CursorKey::new(None, "t");
        let c = key.seal("org1", "products?search=x", "p 9/é");
        assert_eq!(key.open("org1", "products?search=x", &c).unwrap(), "p 9/é");
        for (org, scope) in [("org2", "products?search=x"), ("org1", "products?search=y")] {
            assert_eq!(key.open(org, scope, &c).unwrap_err().status, 400);
        }
        assert!(CursorKey::new(Some("s"), "t")
            .open("org1", "products?search=x", &c)
            .is_err());
        // any edit of any character is refused
        for i in 0..c.len() {
            let mut edited = c.clone().into_bytes();
            edited[i] = if edited[i] == b'0' { b'1' } else { b'0' };
            let edited = String::from_utf8(edited).unwrap();
            if edited != c {
                assert!(
                    key.open("org1", "products?search=x", &edited).is_err(),
                    "{i}"
                );
            }
        }
        let long = key.seal("org1", "products", &"p".repeat(MAX_POSITION_BYTES + 1));
        assert_eq!(
            key.open("org1", "products", &long).unwrap_err().message,
            "query parameter 'cursor': a cursor's position is at most 400 bytes; this is not a cursor of this list"
        );
        let longest = key.seal("org1", "products", &"p".repeat(MAX_POSITION_BYTES));
        assert!(key.open("org1", "products", &longest).is_ok());
        for junk in ["", ".", "zz.zz", "abc", &"0".repeat(5000)] {
            assert!(key.open("org1", "products?search=x", junk).is_err());
        }
    }
}
