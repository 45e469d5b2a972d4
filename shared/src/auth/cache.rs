//! Resolves a bearer key to a `Principal`, caching the stored key and organization state for
//! `auth_cache_ttl` (negative results too, so unknown keys cannot hammer the table).
//! Revoking a key or disabling API access takes effect within that TTL (at once in the
//! process that revoked it, which forgets the key). A key's `lastUsedAt` is written, off the
//! request's path, when a lookup finds it unset or more than an hour old: at most one write
//! per key, process and hour.
//!
//! Two bounded LRU caches, never emptied whole: keys that exist (only a holder of a real key
//! id can add one) and ids that do not. A stream of random key ids churns only the second,
//! so it cannot evict the organizations' real keys and turn every request into a read.
//!
//! A key whose secret lacks its id's tag (`domain/credential_tags.rs`) was never issued and
//! is refused before any read. Keys issued before tags (40-character secrets) are still
//! read, at most [`UNTAGGED_READS_PER_SECOND`] per organization, process and second.

use super::apikey::{self, ParsedKey};
use super::{Principal, Scope};
use crate::domain::credential_tags::Presented;
use crate::error::ApiError;
use crate::store::Store;
use lru::LruCache;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys that exist, per process.
const MAX_KEYS: usize = 10_000;
/// Key ids that do not (negative answers), per process.
const MAX_UNKNOWN: usize = 1_000;

/// Reads of keys issued before tags, per organization, process and second: every such real
/// key is read once per cache TTL, so this leaves them room, while made-up ids of that
/// shape cost an organization's partition no more than this.
pub const UNTAGGED_READS_PER_SECOND: u32 = 20;

/// How stale a key's `lastUsedAt` may get before a lookup writes it again.
const LAST_USED_GRANULARITY_MS: i64 = 3_600_000;

/// What the table said about a key id.
#[derive(Debug, Clone)]
enum Resolved {
    Unknown,
    Key {
        secret_hash: String,
        scopes: Vec<Scope>,
        revoked: bool,
        api_enabled: bool,
        limit: Option<crate::domain::rate::Policy>,
        /// Issued with a tag: an untagged secret never matches it.
        tagged: bool,
    },
}

type Entries = LruCache<String, (Instant, Resolved)>;

pub struct Authenticator {
    ttl: Duration,
    /// (keys that exist, ids that do not)
    cache: Mutex<(Entries, Entries)>,
    /// Reads of untagged keys this second, per organization (since the `Instant`).
    untagged: Mutex<(Instant, HashMap<String, u32>)>,
    /// Organizations whose item said, when read (the `Instant`), that they hold no key
    /// issued before tags: an untagged secret of theirs is refused without a read.
    untagged_free: Mutex<LruCache<String, Instant>>,
}

fn lru(n: usize) -> Entries {
    LruCache::new(NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN))
}

impl Authenticator {
    pub fn new(ttl: Duration) -> Self {
        Self::with_capacity(ttl, MAX_KEYS, MAX_UNKNOWN)
    }

    fn with_capacity(ttl: Duration, keys: usize, unknown: usize) -> Self {
        Self {
            ttl,
            cache: Mutex::new((lru(keys), lru(unknown))),
            untagged: Mutex::new((Instant::now(), HashMap::new())),
            untagged_free: Mutex::new(LruCache::new(
                NonZeroUsize::new(MAX_KEYS).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }

    /// Authenticates an `Authorization` header value: 401 for a missing, malformed, unknown
    /// or revoked key or a wrong secret; 403 when the organization's API access is disabled.
    pub async fn authenticate(
        &self,
        store: &Store,
        header: Option<&str>,
    ) -> Result<Principal, ApiError> {
        let parsed = header
            .and_then(apikey::from_authorization)
            .ok_or_else(ApiError::unauthorized)?;
        let presented =
            store
                .credential_tags()
                .check(apikey::TAG_KIND, &parsed.key_id, &parsed.secret);
        if presented == Presented::Forged {
            return Err(ApiError::unauthorized());
        }
        let resolved = match self.cached(&parsed.key_id) {
            Some(r) => r,
            None => {
                if presented == Presented::Untagged {
                    if self.untagged_free(&parsed.org) {
                        // no key of its could match: refused without a read
                        return Err(ApiError::unauthorized());
                    }
                    self.admit_untagged(&parsed.org)?;
                }
                let (r, untagged_keys) = resolve(store, &parsed).await?;
                self.remember(&parsed.key_id, r.clone());
                self.remember_org(store, &parsed.org, untagged_keys);
                r
            }
        };
        match resolved {
            Resolved::Key {
                secret_hash,
                scopes,
                revoked,
                api_enabled,
                limit,
                tagged,
            } if !revoked
                && presented.may_be_of(tagged)
                && apikey::verify(&parsed.secret, &secret_hash) =>
            {
                if !api_enabled {
                    return Err(ApiError::forbidden(
                        "API access is disabled for this organization",
                    ));
                }
                Ok(Principal {
                    org: parsed.org,
                    key_id: parsed.key_id,
                    scopes,
                    limit,
                    session: None,
                })
            }
            _ => Err(ApiError::unauthorized()),
        }
    }

    /// Whether this process knows `key_id` to exist (from its cache, no request) and a
    /// secret presented as `presented` could be its own (one with its tag, or an untagged
    /// one for a key issued before tags), and its organization's own rate limit: such a
    /// failed authentication counts against that organization's lockout bucket.
    pub fn known(
        &self,
        key_id: &str,
        presented: Presented,
    ) -> Option<Option<crate::domain::rate::Policy>> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        match cache.0.get(key_id) {
            Some((_, Resolved::Key { limit, tagged, .. })) if presented.may_be_of(*tagged) => {
                Some(*limit)
            }
            _ => None,
        }
    }

    /// Counts a read of an untagged key of `org`; 429 beyond [`UNTAGGED_READS_PER_SECOND`].
    fn admit_untagged(&self, org: &str) -> Result<(), ApiError> {
        let mut window = self.untagged.lock().unwrap_or_else(|p| p.into_inner());
        if window.0.elapsed() >= Duration::from_secs(1) {
            *window = (Instant::now(), HashMap::new());
        }
        let reads = window.1.entry(org.to_string()).or_insert(0);
        if *reads >= UNTAGGED_READS_PER_SECOND {
            return Err(ApiError::new(
                429,
                format!("too many authentications with untagged API keys of this organization (at most {UNTAGGED_READS_PER_SECOND} a second): retry in a second, or replace the key with a new one (POST /api-keys)"),
            )
            .with_header("retry-after", "1"));
        }
        *reads += 1;
        Ok(())
    }

    /// Forgets what this process knows of a key (after revoking it here).
    pub fn forget(&self, key_id: &str) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.0.pop(key_id);
        cache.1.pop(key_id);
    }

    fn cached(&self, key_id: &str) -> Option<Resolved> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let (keys, unknown) = &mut *cache;
        keys.get(key_id)
            .or_else(|| unknown.get(key_id))
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, r)| r.clone())
    }

    /// Whether `org` is known, within the cache's TTL, to hold no key issued before tags.
    fn untagged_free(&self, org: &str) -> bool {
        let mut free = self.untagged_free.lock().unwrap_or_else(|p| p.into_inner());
        free.get(org).is_some_and(|at| at.elapsed() < self.ttl)
    }

    /// Keeps what `org`'s item said of its keys issued before tags (`None`: no item;
    /// `Some(None)`: not counted yet, which is counted off the request's path).
    fn remember_org(&self, store: &Store, org: &str, untagged_keys: Option<Option<u32>>) {
        let mut free = self.untagged_free.lock().unwrap_or_else(|p| p.into_inner());
        match untagged_keys {
            Some(Some(0)) => {
                free.put(org.to_string(), Instant::now());
            }
            Some(None) => {
                free.pop(org);
                let (store, org) = (store.clone(), org.to_string());
                tokio::spawn(async move {
                    if let Err(e) = store.count_untagged_keys(&org).await {
                        tracing::warn!(%org, error = %e, "untagged keys not counted");
                    }
                });
            }
            _ => {
                free.pop(org);
            }
        }
    }

    fn remember(&self, key_id: &str, resolved: Resolved) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let (keys, unknown) = &mut *cache;
        let entry = (Instant::now(), resolved);
        match entry.1 {
            Resolved::Unknown => {
                keys.pop(key_id);
                unknown.put(key_id.to_string(), entry);
            }
            Resolved::Key { .. } => {
                unknown.pop(key_id);
                keys.put(key_id.to_string(), entry);
            }
        }
    }
}

/// What the table says of a key id, and of its organization's keys issued before tags
/// (`None`: the organization has no item).
async fn resolve(
    store: &Store,
    parsed: &ParsedKey,
) -> Result<(Resolved, Option<Option<u32>>), ApiError> {
    let (org, key) = store.get_org_and_key(&parsed.org, &parsed.key_id).await?;
    let untagged_keys = org.as_ref().map(|o| o.untagged_keys);
    let resolved = match (org, key) {
        (Some(org), Some(key)) if key.org == org.id => {
            let now = crate::domain::time::Timestamp::now();
            let stale = key
                .last_used_at
                .is_none_or(|t| now.millis() - t.millis() > LAST_USED_GRANULARITY_MS);
            if stale && !key.revoked && apikey::verify(&parsed.secret, &key.secret_hash) {
                // Off the request's path: a failed write only leaves the time older.
                let (store, org, key_id) = (store.clone(), org.id.clone(), key.key_id.clone());
                tokio::spawn(async move {
                    if let Err(e) = store.touch_key(&org, &key_id, now).await {
                        tracing::warn!(error = %e, "recording a key's last use failed");
                    }
                });
            }
            resolved(key, org.api_enabled, org.rate_limit.map(Into::into))
        }
        _ => Resolved::Unknown,
    };
    Ok((resolved, untagged_keys))
}

fn resolved(
    key: crate::store::items::KeyItem,
    api_enabled: bool,
    limit: Option<crate::domain::rate::Policy>,
) -> Resolved {
    Resolved::Key {
        secret_hash: key.secret_hash,
        scopes: key.scopes.iter().filter_map(|s| Scope::parse(s)).collect(),
        revoked: key.revoked,
        api_enabled,
        limit,
        tagged: key.tagged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Resolved {
        Resolved::Key {
            secret_hash: String::new(),
            scopes: Vec::new(),
            revoked: false,
            api_enabled: true,
            limit: None,
            tagged: true,
        }
    }

    #[test]
    fn a_known_key_counts_only_secrets_that_could_be_its_own() {
        let auth = Authenticator::new(Duration::from_secs(60));
        auth.remember("abc123key001", key());
        assert_eq!(auth.known("abc123key001", Presented::Tagged), Some(None));
        assert_eq!(auth.known("abc123key001", Presented::Untagged), None);
        assert_eq!(auth.known("abc123key001", Presented::Forged), None);
        assert_eq!(auth.known("abc123key002", Presented::Tagged), None);
    }

    #[test]
    fn untagged_keys_are_read_at_most_twenty_times_a_second_per_organization() {
        let auth = Authenticator::new(Duration::from_secs(60));
        for _ in 0..UNTAGGED_READS_PER_SECOND {
            auth.admit_untagged("abc123").unwrap();
        }
        let refused = auth.admit_untagged("abc123").unwrap_err();
        assert_eq!(refused.status, 429);
        assert_eq!(refused.headers, vec![("retry-after", "1".to_string())]);
        auth.admit_untagged("xyz789").unwrap();
        auth.untagged.lock().unwrap().0 -= Duration::from_secs(1);
        auth.admit_untagged("abc123").unwrap();
    }

    #[test]
    fn unknown_ids_never_evict_real_keys() {
        let auth = Authenticator::with_capacity(Duration::from_secs(60), 3, 2);
        for id in ["k1", "k2", "k3"] {
            auth.remember(id, key());
        }
        for i in 0..1_000 {
            auth.remember(&format!("random{i}"), Resolved::Unknown);
        }
        for id in ["k1", "k2", "k3"] {
            assert!(
                matches!(auth.cached(id), Some(Resolved::Key { .. })),
                "{id}"
            );
        }
        assert!(matches!(auth.cached("random999"), Some(Resolved::Unknown)));
        assert!(
            auth.cached("random0").is_none(),
            "the oldest unknown ids go first"
        );
    }

    #[test]
    fn a_full_cache_drops_the_least_recently_used_key_only() {
        let auth = Authenticator::with_capacity(Duration::from_secs(60), 2, 2);
        auth.remember("a", key());
        auth.remember("b", key());
        assert!(auth.cached("a").is_some()); // a is now the most recent
        auth.remember("c", key());
        assert!(auth.cached("b").is_none());
        assert!(auth.cached("a").is_some() && auth.cached("c").is_some());
        auth.forget("a");
        assert!(auth.cached("a").is_none());
    }
}
