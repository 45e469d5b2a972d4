//! The few raw DynamoDB operations every capability shares: key maps, a strongly consistent
//! GetItem, and BatchGetItem with chunking and unprocessed-key retries.

use super::idempotency::Guard;
use super::keys::{PK, SK};
use super::{Store, StoreError};
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, Put, TransactWriteItem};
use serde::de::DeserializeOwned;
use std::collections::HashMap;

pub type Item = HashMap<String, AttributeValue>;
pub(crate) type QueryBuilder = aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;

/// What a conditional write expects to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// The item must not exist (creation).
    Absent,
    /// The item must still be at this version.
    Version(u64),
}

/// BatchGetItem reads at most 100 keys per request.
const BATCH_GET_LIMIT: usize = 100;
/// BatchWriteItem writes at most 25 items per request.
const BATCH_WRITE_LIMIT: usize = 25;
/// Rounds of unprocessed-key retries before giving up as unavailable.
const BATCH_RETRIES: usize = 8;

pub use super::keys::item_key;

/// A number attribute.
pub fn number(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

impl Expect {
    /// The put of `av` into `table` under this expectation, for a transaction.
    pub(crate) fn put(self, table: &str, av: Item) -> Result<Put, StoreError> {
        let (condition, values) = self.condition();
        Put::builder()
            .table_name(table)
            .set_item(Some(av))
            .condition_expression(condition)
            .set_expression_attribute_values(values)
            .build()
            .map_err(|e| StoreError::Other(e.to_string()))
    }

    /// The condition expression, and its values when it has any.
    fn condition(self) -> (&'static str, Option<Item>) {
        match self {
            Expect::Absent => ("attribute_not_exists(PK)", None),
            Expect::Version(v) => (
                "ver = :v",
                Some(HashMap::from([(
                    ":v".to_string(),
                    AttributeValue::N(v.to_string()),
                )])),
            ),
        }
    }
}

impl Store {
    /// A strongly consistent Query of one partition (`PK = :pk`), and of the sort keys that
    /// start with `prefix` when given.
    pub(crate) fn partition_query(&self, pk: String, prefix: Option<String>) -> QueryBuilder {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .expression_attribute_values(":pk", AttributeValue::S(pk));
        match prefix {
            None => query.key_condition_expression("PK = :pk"),
            Some(p) => query
                .key_condition_expression("PK = :pk AND begins_with(SK, :prefix)")
                .expression_attribute_values(":prefix", AttributeValue::S(p)),
        }
    }

    /// Every item a Query matches, following pages (one request per 1 MB).
    pub(crate) async fn query_all(&self, query: QueryBuilder) -> Result<Vec<Item>, StoreError> {
        query
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))
    }

    /// How many items a Query matches (after its filter): a COUNT Query, following pages
    /// (one request per 1 MB of the items it reads).
    pub(crate) async fn count_all(&self, query: QueryBuilder) -> Result<u64, StoreError> {
        let mut start = None;
        let mut total = 0u64;
        loop {
            let page = query
                .clone()
                .select(aws_sdk_dynamodb::types::Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query", e))?;
            total += page.count.max(0) as u64;
            start = page.last_evaluated_key.filter(|k| !k.is_empty());
            if start.is_none() {
                return Ok(total);
            }
        }
    }

    /// Puts `item` (a `what`) only if no item has its key: `ConditionFailed` otherwise.
    pub(crate) async fn put_new<T: serde::Serialize>(
        &self,
        item: &T,
        what: &str,
        guard: Option<&Guard>,
    ) -> Result<(), StoreError> {
        self.put_expecting(item, Expect::Absent, what, guard, None)
            .await
    }

    /// Puts `item` (a `what`) whole, if it does not exist yet (`Absent`) or is still at the
    /// version read: one conditional PutItem, `ConditionFailed` otherwise. With the `guard`
    /// of a request under an Idempotency-Key (the key's move to `written`,
    /// `store/idempotency.rs`) or an action `also` (a quota's version move,
    /// `store/quotas.rs`), the put and they are one transaction.
    pub(crate) async fn put_expecting<T: serde::Serialize>(
        &self,
        item: &T,
        expect: Expect,
        what: &str,
        guard: Option<&Guard>,
        also: Option<TransactWriteItem>,
    ) -> Result<(), StoreError> {
        let av = serde_dynamo::to_item(item).map_err(|e| StoreError::serde(what, e))?;
        let guarded = guard.and_then(|g| Some((g, g.take_action(&self.table)?)));
        if guarded.is_some() || also.is_some() {
            let put = expect.put(&self.table, av)?;
            let (guard, carried) = guarded.unzip();
            let put = TransactWriteItem::builder().put(put).build();
            let actions = std::iter::once(put).chain(also).chain(carried).collect();
            let sent = self
                .client
                .transact_write_items()
                .set_transact_items(Some(actions))
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("TransactWriteItems", e));
            if let (Err(_), Some(guard)) = (&sent, guard) {
                guard.not_carried();
            }
            return sent.map(|_| ());
        }
        let (condition, values) = expect.condition();
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(av))
            .condition_expression(condition)
            .set_expression_attribute_values(values)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("PutItem", e))?;
        Ok(())
    }

    /// One item, strongly consistent, decoded as `T`.
    /// Deletes the item at `key`, whether or not it exists: one DeleteItem.
    pub(crate) async fn delete_key(&self, key: Item) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("DeleteItem", e))?;
        Ok(())
    }

    /// Saves `item` with its version (`ver` of it) moved on, if nobody saved it since it
    /// was read: `ConditionFailed` otherwise, the version left as read.
    pub(crate) async fn save_next_version<T: serde::Serialize>(
        &self,
        item: &mut T,
        ver: fn(&mut T) -> &mut u64,
        what: &str,
    ) -> Result<(), StoreError> {
        let read = *ver(item);
        *ver(item) += 1;
        let result = self
            .put_expecting(&*item, Expect::Version(read), what, None, None)
            .await;
        if result.is_err() {
            *ver(item) = read;
        }
        result
    }

    pub(crate) async fn get_item<T: DeserializeOwned>(
        &self,
        key: Item,
        what: &str,
    ) -> Result<Option<T>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("GetItem", e))?;
        out.item
            .map(|i| serde_dynamo::from_item(i).map_err(|e| StoreError::serde(what, e)))
            .transpose()
    }

    /// Reads `keys` with strongly consistent BatchGetItem requests, one per 100 keys, sent in
    /// parallel (plus retries of unprocessed keys). Keys named twice are read once; missing
    /// items are simply absent; order is not kept.
    pub(crate) async fn batch_get(&self, mut keys: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        // BatchGetItem refuses a request that names a key twice.
        let mut seen = std::collections::HashSet::new();
        let text = |k: &Item, name: &str| k.get(name).and_then(|v| v.as_s().ok()).cloned();
        keys.retain(|k| seen.insert((text(k, PK), text(k, SK))));
        let chunks = keys
            .chunks(BATCH_GET_LIMIT)
            .map(|chunk| self.batch_get_chunk(chunk.to_vec()));
        Ok(super::parallel::try_all(chunks)
            .await?
            .into_iter()
            .flatten()
            .collect())
    }

    /// The partition keys of those of `keys` whose items exist.
    /// Which of SKUs `skus` exist (by their identity items): one BatchGetItem per 100.
    pub async fn existing_skus(
        &self,
        org: &str,
        skus: &[&str],
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        let pks: Vec<String> = skus
            .iter()
            .map(|s| super::keys::sku_ref_pk(org, s))
            .collect();
        let keys = pks
            .iter()
            .map(|pk| item_key(pk.clone(), super::keys::REF_SK))
            .collect();
        let found = self.existing_keys(keys).await?;
        Ok(skus
            .iter()
            .zip(&pks)
            .filter(|(_, pk)| found.contains(*pk))
            .map(|(s, _)| s.to_string())
            .collect())
    }

    pub(crate) async fn existing_keys(
        &self,
        keys: Vec<Item>,
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        if keys.is_empty() {
            return Ok(Default::default());
        }
        Ok(self
            .batch_get(keys)
            .await?
            .into_iter()
            .filter_map(|i| i.get(PK).and_then(|v| v.as_s().ok()).cloned())
            .collect())
    }

    /// Puts `items` whole, unconditionally, with BatchWriteItem requests of 25 sent in
    /// parallel (unprocessed items are sent again after a short pause, as throttled).
    /// Items must be distinct by key; writing the same items again leaves the same table.
    pub(crate) async fn batch_put(&self, items: Vec<Item>) -> Result<(), StoreError> {
        self.batch_write(items, Vec::new()).await
    }

    /// Puts `items` whole and deletes the items of `keys`, unconditionally, together in
    /// BatchWriteItem requests of 25 sent in parallel (unprocessed ones are sent again after
    /// a short pause, as throttled). Every key must be named once, by a put or a delete;
    /// the same writes again leave the same table.
    pub(crate) async fn batch_write(
        &self,
        items: Vec<Item>,
        keys: Vec<Item>,
    ) -> Result<(), StoreError> {
        use aws_sdk_dynamodb::types::{DeleteRequest, PutRequest, WriteRequest};
        let built = |e: aws_sdk_dynamodb::error::BuildError| StoreError::Other(e.to_string());
        let mut requests = Vec::with_capacity(items.len() + keys.len());
        for item in items {
            let put = PutRequest::builder().set_item(Some(item)).build();
            requests.push(
                WriteRequest::builder()
                    .put_request(put.map_err(built)?)
                    .build(),
            );
        }
        for key in keys {
            let delete = DeleteRequest::builder().set_key(Some(key)).build();
            requests.push(
                WriteRequest::builder()
                    .delete_request(delete.map_err(built)?)
                    .build(),
            );
        }
        let chunks = requests.chunks(BATCH_WRITE_LIMIT).map(|chunk| async move {
            let mut pending = chunk.to_vec();
            for round in 0..BATCH_RETRIES {
                if round > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(25 << round)).await;
                }
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, pending)
                    .send()
                    .await
                    .map_err(|e| StoreError::from_sdk("BatchWriteItem", e))?;
                pending = out
                    .unprocessed_items
                    .and_then(|mut u| u.remove(&self.table))
                    .unwrap_or_default();
                if pending.is_empty() {
                    return Ok(());
                }
            }
            Err(StoreError::Unavailable(
                "BatchWriteItem: items left unprocessed".into(),
            ))
        });
        super::parallel::try_all(chunks).await?;
        Ok(())
    }

    async fn batch_get_chunk(&self, chunk: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        let mut found = Vec::with_capacity(chunk.len());
        let mut pending = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(chunk))
                .consistent_read(true)
                .build()
                .map_err(|e| StoreError::Other(e.to_string()))?,
        );
        let mut rounds = 0;
        while let Some(request) = pending.take() {
            rounds += 1;
            if rounds > BATCH_RETRIES {
                return Err(StoreError::Unavailable(
                    "BatchGetItem: keys left unprocessed".into(),
                ));
            }
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("BatchGetItem", e))?;
            found.extend(
                out.responses
                    .and_then(|mut r| r.remove(&self.table))
                    .unwrap_or_default(),
            );
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .filter(|k| !k.keys().is_empty());
        }
        Ok(found)
    }
}
