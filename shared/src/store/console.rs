//! Console sign-in links and sessions: items in the organization's own partition beside the
//! API key that made them, so that one BatchGetItem reads a session, its key and its
//! organization. Both expire by time (checked on read) and by DynamoDB's TTL (clean-up).

use super::items::{KeyItem, OrgItem};
use super::keys::{console_link_sk, console_session_sk, key_sk, org_pk, ORG_SK, SK};
use super::ops::item_key;
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use serde::{Deserialize, Serialize};

/// A sign-in link (`CLINK#`) or a session (`CSESSION#`). Only the SHA-256 of its secret is
/// kept; a session also keeps the CSRF token its state-changing calls carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleItem {
    #[serde(rename = "PK")]
    pub(in crate::store) pk: String,
    #[serde(rename = "SK")]
    pub(in crate::store) sk: String,
    #[serde(rename = "keyId")]
    pub key_id: String,
    #[serde(rename = "secretHash")]
    pub secret_hash: String,
    /// The scopes of the key when the link was made (the session's answer shows them; each
    /// call is authorized with the key's own).
    pub scopes: Vec<String>,
    #[serde(rename = "expiresAt")]
    pub expires_at: Timestamp,
    /// `expiresAt` in epoch seconds, for DynamoDB's TTL.
    pub ttl: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csrf: Option<String>,
}

impl ConsoleItem {
    /// A link (`csrf` none) or a session of the key `key_id`, with id `id`.
    pub fn new(
        org: &str,
        id: &str,
        key_id: &str,
        secret_hash: String,
        scopes: Vec<String>,
        expires_at: Timestamp,
        csrf: Option<String>,
    ) -> Self {
        let sk = match csrf {
            Some(_) => console_session_sk(id),
            None => console_link_sk(id),
        };
        Self {
            pk: org_pk(org),
            sk,
            key_id: key_id.into(),
            secret_hash,
            scopes,
            expires_at,
            ttl: expires_at.millis().div_euclid(1000) + 1,
            csrf,
        }
    }
}

/// A session with its key and organization, as one read found them.
pub struct SessionRead {
    pub org: Option<OrgItem>,
    pub key: Option<KeyItem>,
    pub session: Option<ConsoleItem>,
}

impl Store {
    /// Stores a new link or session; `ConditionFailed` if its id is taken.
    pub async fn put_console_item(&self, item: &ConsoleItem) -> Result<(), StoreError> {
        self.put_new(item, "console item", None).await
    }

    /// Takes (deletes) the link `id` if its secret hashes to `secret_hash` and it has not
    /// expired at `now`: one conditional DeleteItem, so a link signs in once. `None` for an
    /// unknown, used or expired link, or a wrong secret (which leaves the link as it was).
    pub async fn take_console_link(
        &self,
        org: &str,
        id: &str,
        secret_hash: &str,
        now: Timestamp,
    ) -> Result<Option<ConsoleItem>, StoreError> {
        let taken = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(org), console_link_sk(id))))
            .condition_expression("secretHash = :h AND expiresAt > :now")
            .expression_attribute_values(":h", AttributeValue::S(secret_hash.into()))
            .expression_attribute_values(":now", AttributeValue::S(now.to_string()))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("DeleteItem", e));
        match taken {
            Err(StoreError::ConditionFailed) => Ok(None),
            Err(e) => Err(e),
            Ok(out) => out
                .attributes
                .map(|i| serde_dynamo::from_item(i).map_err(|e| StoreError::serde("link", e)))
                .transpose(),
        }
    }

    /// The session `id` of key `key_id`, the key and the organization: one BatchGetItem.
    pub async fn get_console_session(
        &self,
        org: &str,
        key_id: &str,
        id: &str,
    ) -> Result<SessionRead, StoreError> {
        let found = self
            .batch_get(vec![
                item_key(org_pk(org), ORG_SK),
                item_key(org_pk(org), key_sk(key_id)),
                item_key(org_pk(org), console_session_sk(id)),
            ])
            .await?;
        let mut read = SessionRead {
            org: None,
            key: None,
            session: None,
        };
        for item in found {
            let sk = item.get(SK).and_then(|v| v.as_s().ok()).cloned();
            let err = |what: &'static str| move |e| StoreError::serde(what, e);
            match sk.as_deref() {
                Some(ORG_SK) => read.org = Some(serde_dynamo::from_item(item).map_err(err("org"))?),
                Some(s) if s.starts_with("KEY#") => {
                    read.key = Some(serde_dynamo::from_item(item).map_err(err("key"))?)
                }
                Some(_) => {
                    read.session = Some(serde_dynamo::from_item(item).map_err(err("session"))?)
                }
                None => {}
            }
        }
        Ok(read)
    }

    /// Ends the session `id` (signing out), whether or not it still exists.
    pub async fn delete_console_session(&self, org: &str, id: &str) -> Result<(), StoreError> {
        self.delete_key(item_key(org_pk(org), console_session_sk(id)))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_expire_by_ttl_after_their_time() {
        let at = Timestamp::from_millis(1_800_000_000_500);
        let link = ConsoleItem::new(
            "abc123",
            "abc123xyz789aaaabbbb",
            "abc123xyz789",
            "h".into(),
            vec![],
            at,
            None,
        );
        assert_eq!(link.sk, "CLINK#abc123xyz789aaaabbbb");
        assert_eq!(link.ttl, 1_800_000_001);
        let session =
            ConsoleItem::new("abc123", "s", "k", "h".into(), vec![], at, Some("c".into()));
        assert_eq!(session.sk, "CSESSION#s");
        assert_eq!(session.pk, "O#abc123");
    }
}
