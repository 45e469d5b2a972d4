//! Operator tasks behind the `catalog-admin` CLI: they write straight to the table, against
//! DynamoDB Local and AWS alike (the SDK's standard configuration picks the endpoint).

use crate::auth::apikey::{new_org_id, ApiKey};
use crate::auth::{apikey, Scope};
use crate::domain::time::Timestamp;
use crate::store::items::{KeyItem, OrgItem};
use crate::store::{Store, StoreError};

/// A key as shown once at creation.
#[derive(Debug, Clone)]
pub struct CreatedKey {
    pub key_id: String,
    pub plain: String,
    pub scopes: Vec<Scope>,
    pub created_at: Timestamp,
}

/// Creates an organization with a fresh id (retrying on the rare id collision).
pub async fn create_org(store: &Store, name: &str) -> Result<OrgItem, StoreError> {
    for _ in 0..5 {
        match store.create_org(&new_org_id(), name).await {
            Err(StoreError::ConditionFailed) => continue,
            other => return other,
        }
    }
    Err(StoreError::Other(
        "could not find a free organization id".into(),
    ))
}

/// Creates an API key for `org` with `scopes`; the plain key is returned once.
pub async fn create_key(
    store: &Store,
    org: &str,
    name: &str,
    scopes: &[Scope],
) -> Result<CreatedKey, StoreError> {
    create_key_within(store, org, (name, scopes), None).await
}

/// [`create_key`] counted under the organization's key quota: the key's put and the quota
/// version's move in one transaction (`api/quotas.rs`); `ConditionFailed` when another
/// create came first.
pub async fn create_key_within(
    store: &Store,
    org: &str,
    (name, scopes): (&str, &[Scope]),
    claim: Option<&crate::store::quotas::QuotaClaim>,
) -> Result<CreatedKey, StoreError> {
    if store.get_org(org).await?.is_none() {
        return Err(StoreError::Other(format!(
            "organization '{org}' does not exist"
        )));
    }
    for _ in 0..5 {
        let key = ApiKey::generate(org, store.credential_tags());
        let scopes_named = scopes.iter().map(|s| s.as_str().to_string()).collect();
        let item = KeyItem::issued(org, &key.key_id, &key.secret_hash, name, scopes_named);
        match store.put_key(&item, None, claim).await {
            // a taken key id (one in 36^6): another; under a claim, the caller reads again
            Err(StoreError::ConditionFailed) if claim.is_none() => continue,
            Err(e) => return Err(e),
            Ok(()) => {
                return Ok(CreatedKey {
                    key_id: key.key_id,
                    plain: key.plain,
                    scopes: scopes.to_vec(),
                    created_at: item.created_at,
                })
            }
        }
    }
    Err(StoreError::Other("could not find a free key id".into()))
}

/// Whether `plain` is a live key of an organization with API access (used by the local
/// stack to reuse the key it wrote to `.local/env`).
pub async fn key_is_live(store: &Store, plain: &str) -> Result<bool, StoreError> {
    let Some(parsed) = apikey::parse(plain) else {
        return Ok(false);
    };
    let (org, key) = store.get_org_and_key(&parsed.org, &parsed.key_id).await?;
    Ok(match (org, key) {
        (Some(org), Some(key)) => {
            org.api_enabled && !key.revoked && apikey::verify(&parsed.secret, &key.secret_hash)
        }
        _ => false,
    })
}

/// A sign-in link to the console at `console_url` (ending in `/console`) acting as the live
/// key `key_id` of `org`, which must hold `settings:manage` (and, when `secret` is given,
/// have that secret); its URL and expiry.
pub async fn console_link(
    store: &Store,
    org: &str,
    key_id: &str,
    secret: Option<&str>,
    console_url: &str,
) -> Result<(String, Timestamp), String> {
    let (org_item, key) = store
        .get_org_and_key(org, key_id)
        .await
        .map_err(|e| e.to_string())?;
    let key = match (org_item, key) {
        (Some(o), Some(key))
            if o.api_enabled
                && !key.revoked
                && secret.is_none_or(|s| apikey::verify(s, &key.secret_hash)) =>
        {
            key
        }
        _ => return Err(format!("key {key_id} of organization {org} is not live (unknown, revoked, or API access is off)")),
    };
    let scopes: Vec<Scope> = key.scopes.iter().filter_map(|s| Scope::parse(s)).collect();
    if !scopes.contains(&Scope::SettingsManage) {
        return Err("a console link needs a key with settings:manage".into());
    }
    let (token, expires_at) = crate::auth::session::new_link(store, org, key_id, &scopes)
        .await
        .map_err(|e| e.to_string())?;
    Ok((format!("{console_url}#token={token}"), expires_at))
}

/// Parses a comma-separated scope list; `all` means every scope.
pub fn parse_scopes(list: &str) -> Result<Vec<Scope>, String> {
    if list.trim() == "all" {
        return Ok(Scope::ALL.to_vec());
    }
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            Scope::parse(s).ok_or_else(|| {
                format!("unknown scope '{s}' (catalog:read, catalog:write, settings:manage, all)")
            })
        })
        .collect()
}

/// Sets (`rate` > 0, `burst` default twice the rate) or removes (`rate` 0) an
/// organization's own rate limit: the CLI's and the admin function's `set-limits`. Takes
/// effect as the functions' auth caches renew (60 s as deployed).
pub async fn set_limits(
    store: &Store,
    org: &str,
    rate: u32,
    burst: Option<u32>,
) -> Result<Option<crate::store::items::RateLimit>, String> {
    let limit = match (rate, burst) {
        (0, _) => None,
        (rate, Some(0)) => return Err(format!("--burst must be at least 1 (rate {rate})")),
        (rate, burst) => Some(crate::store::items::RateLimit {
            rate,
            burst: burst.unwrap_or(rate.saturating_mul(2)),
        }),
    };
    store
        .set_rate_limit(org, limit)
        .await
        .map_err(|e| match e {
            crate::store::StoreError::ConditionFailed => format!("organization '{org}' not found"),
            other => other.to_string(),
        })?;
    Ok(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse() {
        assert_eq!(parse_scopes("all").unwrap().len(), 3);
        assert_eq!(
            parse_scopes("catalog:read").unwrap(),
            vec![Scope::CatalogRead]
        );
        assert!(parse_scopes("admin").is_err());
    }
}
