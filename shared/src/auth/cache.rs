//! Resolves a bearer key to a `Principal`, caching the stored key and organization state for
//! `auth_cache_ttl` (negative results too, so unknown keys cannot hammer the table).
//! Revoking a key or disabling API access takes effect within that TTL (at once in the
//! process that revoked it, which forgets the key). A key's `lastUsedAt` is written, off the
//! request's path, when a lookup finds it unset or more than an hour old: at most one write
//! per key, process and hour.

use super::apikey::{self, ParsedKey};
use super::{Principal, Scope};
use crate::error::ApiError;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const MAX_ENTRIES: usize = 10_000;

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
    },
}

pub struct Authenticator {
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Resolved)>>,
}

impl Authenticator {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            cache: Mutex::new(HashMap::new()),
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
                })
            }
            _ => Err(ApiError::unauthorized()),
        }
    }

    /// Forgets what this process knows of a key (after revoking it here).
    pub fn forget(&self, key_id: &str) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.remove(key_id);
    }

    fn cached(&self, key_id: &str) -> Option<Resolved> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .get(key_id)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, r)| r.clone())
    }

    fn remember(&self, key_id: &str, resolved: Resolved) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_ENTRIES {
            cache.retain(|_, (at, _)| at.elapsed() < self.ttl);
            if cache.len() >= MAX_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(key_id.to_string(), (Instant::now(), resolved));
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
            resolved(key, org.api_enabled)
        }
        _ => Resolved::Unknown,
    })
}

fn resolved(key: crate::store::items::KeyItem, api_enabled: bool) -> Resolved {
    Resolved::Key {
        secret_hash: key.secret_hash,
        scopes: key.scopes.iter().filter_map(|s| Scope::parse(s)).collect(),
        revoked: key.revoked,
        api_enabled,
    }
}
