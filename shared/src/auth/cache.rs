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

use super::apikey::{self, ParsedKey};
use super::{Principal, Scope};
use crate::error::ApiError;
use crate::store::Store;
use lru::LruCache;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys that exist, per process.
const MAX_KEYS: usize = 10_000;
/// Key ids that do not (negative answers), per process.
const MAX_UNKNOWN: usize = 1_000;

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
    },
}

type Entries = LruCache<String, (Instant, Resolved)>;

pub struct Authenticator {
    ttl: Duration,
    /// (keys that exist, ids that do not)
    cache: Mutex<(Entries, Entries)>,
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
        let resolved = match self.cached(&parsed.key_id) {
            Some(r) => r,
            None => {
                let r = resolve(store, &parsed).await?;
                self.remember(&parsed.key_id, r.clone());
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
            } if !revoked && apikey::verify(&parsed.secret, &secret_hash) => {
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

    /// Whether this process knows `key_id` to exist (from its cache, no request), and its
    /// organization's own rate limit: a failed authentication with it counts against that
    /// organization's rate limit.
    pub fn known(&self, key_id: &str) -> Option<Option<crate::domain::rate::Policy>> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        match cache.0.get(key_id) {
            Some((_, Resolved::Key { limit, .. })) => Some(*limit),
            _ => None,
        }
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

async fn resolve(store: &Store, parsed: &ParsedKey) -> Result<Resolved, ApiError> {
    let (org, key) = store.get_org_and_key(&parsed.org, &parsed.key_id).await?;
    Ok(match (org, key) {
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
    })
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
        }
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
