//! The operator tasks of `catalog-admin` as a Lambda event, so that a deployed stack bootstraps
//! and manages organizations and keys with `aws lambda invoke` alone (function `admin`, not
//! behind API Gateway): no Rust toolchain and no table credentials on the operator's machine.
//! An event names its operation (`{"op": "create-org", "name": "Acme"}`); the answer is a
//! JSON object, or `{"error": "..."}` when the event or the table refused it.

use crate::admin;
use crate::store::{Store, StoreError};
use serde::Deserialize;
use serde_json::{json, Value};

/// One operation, as the event names it.
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Op {
    /// A new organization (API access enabled).
    CreateOrg {
        name: String,
    },
    /// A new organization and its first key (every scope unless `scopes` says otherwise):
    /// what `make deploy ORG=...` runs after the first deploy.
    Bootstrap {
        name: String,
        #[serde(default, rename = "keyName")]
        key_name: Option<String>,
        #[serde(default)]
        scopes: Option<String>,
    },
    /// A new key of `org`; `scopes` as the CLI takes them (`all`, or a comma-separated list).
    CreateKey {
        org: String,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        scopes: Option<String>,
    },
    ListKeys {
        org: String,
    },
    RevokeKey {
        org: String,
        key: String,
    },
    EnableApi {
        org: String,
    },
    DisableApi {
        org: String,
    },
    /// A single-use sign-in link (10 minutes) to the console at `url` (ending in
    /// `/console`), acting as the live key `keyId` of `org` (which holds `settings:manage`).
    ConsoleLink {
        org: String,
        #[serde(rename = "keyId")]
        key_id: String,
        url: String,
    },
    /// The organization's own rate limit (`rate` 0 removes it).
    SetLimits {
        org: String,
        rate: u32,
        #[serde(default)]
        burst: Option<u32>,
    },
}

/// Runs the operation `event` names against `store`; never fails outward.
pub async fn handle(store: &Store, event: Value) -> Value {
    let op = match Op::deserialize(&event) {
        Ok(op) => op,
        Err(e) => return json!({ "error": format!("invalid event: {e}") }),
    };
    // Boxed: the operations' futures are deep, and the binary's main need not lay them out.
    Box::pin(run(store, op))
        .await
        .unwrap_or_else(|error| json!({ "error": error }))
}

fn store_err(e: StoreError) -> String {
    match e {
        StoreError::ConditionFailed => "not found, or already exists".to_string(),
        other => other.to_string(),
    }
}

async fn new_key(
    store: &Store,
    org: &str,
    name: Option<&str>,
    scopes: Option<&str>,
) -> Result<Value, String> {
    let scopes = admin::parse_scopes(scopes.unwrap_or("all"))?;
    let key = admin::create_key(store, org, name.unwrap_or("default"), &scopes)
        .await
        .map_err(store_err)?;
    let scopes: Vec<&str> = key.scopes.iter().map(|s| s.as_str()).collect();
    Ok(json!({ "keyId": key.key_id, "key": key.plain, "scopes": scopes }))
}

async fn run(store: &Store, op: Op) -> Result<Value, String> {
    tracing::info!(?op, "admin operation");
    Ok(match op {
        Op::CreateOrg { name } => {
            let org = admin::create_org(store, &name).await.map_err(store_err)?;
            json!({ "org": org.id, "name": org.name, "apiEnabled": org.api_enabled })
        }
        Op::Bootstrap {
            name,
            key_name,
            scopes,
        } => {
            // Scopes are checked before anything is written.
            admin::parse_scopes(scopes.as_deref().unwrap_or("all"))?;
            let org = admin::create_org(store, &name).await.map_err(store_err)?;
            let mut key = new_key(store, &org.id, key_name.as_deref(), scopes.as_deref()).await?;
            key["org"] = json!(org.id);
            key["name"] = json!(org.name);
            key
        }
        Op::CreateKey { org, name, scopes } => {
            new_key(store, &org, name.as_deref(), scopes.as_deref()).await?
        }
        Op::ListKeys { org } => {
            let keys: Vec<Value> = store
                .list_keys(&org)
                .await
                .map_err(store_err)?
                .into_iter()
                .map(|k| {
                    json!({ "keyId": k.key_id, "name": k.name, "scopes": k.scopes,
                            "revoked": k.revoked, "createdAt": k.created_at.to_string() })
                })
                .collect();
            json!({ "keys": keys })
        }
        Op::RevokeKey { org, key } => {
            store.revoke_key(&org, &key).await.map_err(store_err)?;
            json!({ "keyId": key, "revoked": true })
        }
        Op::EnableApi { org } => api_access(store, &org, true).await?,
        Op::DisableApi { org } => api_access(store, &org, false).await?,
        Op::ConsoleLink { org, key_id, url } => {
            let (link, expires_at) = admin::console_link(store, &org, &key_id, None, &url).await?;
            json!({ "url": link, "expiresAt": expires_at.to_string() })
        }
        Op::SetLimits { org, rate, burst } => {
            let limit = crate::admin::set_limits(store, &org, rate, burst).await?;
            json!({ "org": org, "rateLimit": limit.map(|l| json!({"rate": l.rate, "burst": l.burst})) })
        }
    })
}

async fn api_access(store: &Store, org: &str, enabled: bool) -> Result<Value, String> {
    store
        .set_api_enabled(org, enabled)
        .await
        .map_err(store_err)?;
    Ok(json!({ "org": org, "apiEnabled": enabled }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_name_their_operation() {
        let op = |v: Value| Op::deserialize(&v).map_err(|e| e.to_string());
        assert_eq!(
            op(json!({"op": "create-org", "name": "Acme"})),
            Ok(Op::CreateOrg {
                name: "Acme".into()
            })
        );
        assert_eq!(
            op(json!({"op": "bootstrap", "name": "Acme", "keyName": "first"})),
            Ok(Op::Bootstrap {
                name: "Acme".into(),
                key_name: Some("first".into()),
                scopes: None
            })
        );
        assert_eq!(
            op(json!({"op": "revoke-key", "org": "o1", "key": "k1"})),
            Ok(Op::RevokeKey {
                org: "o1".into(),
                key: "k1".into()
            })
        );
        assert!(op(json!({"op": "drop-table"}))
            .unwrap_err()
            .starts_with("unknown variant `drop-table`"));
        assert_eq!(
            op(json!({"op": "create-key"})),
            Err("missing field `org`".into())
        );
    }
}
