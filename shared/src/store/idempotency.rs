//! `Idempotency-Key` records: one item per organization and key (partition
//! `O#<org>#IK`, kept 24 h by TTL) holding the request's fingerprint, its state and, once
//! complete, the response to replay.
//!
//! A request claims its key (`pending`, with a lease and a token) before it runs, and its
//! handler gets the claim as a [`Guard`] (`Call::guard`). A write given the guard
//! (`Store::commit`, or a store method's conditional put) carries the record's move to
//! `written` in its last transaction, conditioned on the claim still being this request's:
//! the write and the record can never disagree, whatever crashes between them, and a
//! request whose lease expired cannot write after another took over. The response is saved
//! (`done`) after.

use super::keys::{item_key, TTL};
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use std::collections::HashMap;

/// How long a key and its answer are kept.
pub const RETENTION_SECS: i64 = 24 * 3600;

/// How long a claim holds before another request with the key may run in its place (more
/// than a function's whole timeout).
pub const LEASE_MS: i64 = 60_000;

pub fn idempotency_pk(org: &str) -> String {
    format!("O#{org}#IK")
}

/// What a key's record says when a request could not claim it.
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    /// This request holds the key now: run it.
    Mine,
    /// Another request with this key runs (its lease holds).
    InFlight { fingerprint: String },
    /// A request with this key wrote, and its answer was lost (it crashed before saving it).
    Written { fingerprint: String },
    /// A request with this key completed: its answer.
    Done {
        fingerprint: String,
        status: u16,
        body: String,
        etag: Option<String>,
    },
}

/// The claim a running request holds, for the write that carries it.
#[derive(Debug, Clone)]
pub struct Guard {
    pub org: String,
    pub key: String,
    pub token: String,
    /// Whether a write of the request has carried the record's move already: only the
    /// first does (a bulk write's concurrent commits would otherwise contend on the record).
    pub carried: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Guard {
    pub fn new(org: &str, key: &str, token: &str) -> Self {
        Self {
            org: org.to_string(),
            key: key.to_string(),
            token: token.to_string(),
            carried: Default::default(),
        }
    }
}

impl Guard {
    /// The action that moves this guard's record to `written`, conditioned on the claim
    /// still being this request's; `None` once a write of the request has carried it. A
    /// write that took it and failed calls [`Guard::not_carried`].
    pub(crate) fn take_action(&self, table: &str) -> Option<TransactWriteItem> {
        if self.carried.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        let update = Update::builder()
            .table_name(table)
            .set_key(Some(item_key(idempotency_pk(&self.org), &self.key)))
            .update_expression("SET st = :w")
            .condition_expression("tok = :t")
            .expression_attribute_values(":w", AttributeValue::S("written".into()))
            .expression_attribute_values(":t", AttributeValue::S(self.token.clone()))
            .build()
            .ok()?;
        Some(TransactWriteItem::builder().update(update).build())
    }

    /// A write that took the guard's action failed: the next write carries it.
    pub(crate) fn not_carried(&self) {
        self.carried
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

fn s(item: &HashMap<String, AttributeValue>, name: &str) -> Option<String> {
    item.get(name).and_then(|v| v.as_s().ok()).cloned()
}

impl Store {
    /// Claims `key` for a request with `fingerprint`: one conditional PutItem, and on a
    /// refusal one GetItem to say why.
    pub async fn claim_idempotency_key(
        &self,
        guard: &Guard,
        fingerprint: &str,
    ) -> Result<Claimed, StoreError> {
        let now = Timestamp::now().millis();
        for _ in 0..2 {
            let mut item = item_key(idempotency_pk(&guard.org), &guard.key);
            item.insert("fp".into(), AttributeValue::S(fingerprint.into()));
            item.insert("st".into(), AttributeValue::S("pending".into()));
            item.insert("tok".into(), AttributeValue::S(guard.token.clone()));
            item.insert(
                "lease".into(),
                AttributeValue::N((now + LEASE_MS).to_string()),
            );
            item.insert(
                TTL.into(),
                AttributeValue::N((now / 1000 + RETENTION_SECS).to_string()),
            );
            let put = self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(PK) OR (st = :p AND lease < :now)")
                .expression_attribute_values(":p", AttributeValue::S("pending".into()))
                .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("PutItem", e));
            match put {
                Ok(_) => return Ok(Claimed::Mine),
                Err(StoreError::ConditionFailed) => {}
                Err(e) => return Err(e),
            }
            let found = self
                .client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(item_key(idempotency_pk(&guard.org), &guard.key)))
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("GetItem", e))?;
            let Some(item) = &found.item else {
                continue; // expired meanwhile: claim again
            };
            let fingerprint = s(item, "fp").unwrap_or_default();
            return Ok(match s(item, "st").as_deref() {
                Some("done") => Claimed::Done {
                    fingerprint,
                    status: item
                        .get("status")
                        .and_then(|v| v.as_n().ok())
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(200),
                    body: s(item, "body").unwrap_or_default(),
                    etag: s(item, "etag"),
                },
                Some("written") => Claimed::Written { fingerprint },
                _ => Claimed::InFlight { fingerprint },
            });
        }
        Err(StoreError::Other(
            "idempotency key record vanished twice".into(),
        ))
    }

    /// Saves the answer of the request holding `guard` (its claim must still be its own).
    pub async fn finish_idempotency_key(
        &self,
        guard: &Guard,
        status: u16,
        body: &str,
        etag: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(idempotency_pk(&guard.org), &guard.key)))
            .update_expression(if etag.is_some() {
                "SET st = :d, #status = :s, body = :b, etag = :e REMOVE lease"
            } else {
                "SET st = :d, #status = :s, body = :b REMOVE lease"
            })
            .condition_expression("tok = :t")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":d", AttributeValue::S("done".into()))
            .expression_attribute_values(":s", AttributeValue::N(status.to_string()))
            .expression_attribute_values(":b", AttributeValue::S(body.into()))
            .expression_attribute_values(":t", AttributeValue::S(guard.token.clone()));
        if let Some(tag) = etag {
            update = update.expression_attribute_values(":e", AttributeValue::S(tag.into()));
        }
        match update
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))
        {
            Ok(_) | Err(StoreError::ConditionFailed) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Gives up the claim of a request that failed without writing (a 5xx): a retry runs.
    pub async fn release_idempotency_key(&self, guard: &Guard) -> Result<(), StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(idempotency_pk(&guard.org), &guard.key)))
            .condition_expression("st = :p AND tok = :t")
            .expression_attribute_values(":p", AttributeValue::S("pending".into()))
            .expression_attribute_values(":t", AttributeValue::S(guard.token.clone()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("DeleteItem", e));
        match out {
            Ok(_) | Err(StoreError::ConditionFailed) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
