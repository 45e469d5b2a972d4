//! Commits planned writes: transactions of at most 100 actions and 4 MB, limits checked before the first request, cancellations explained per item.

use super::*;

impl Store {
    /// Sends the writes in order, at most 100 actions (and 4 MB) per transaction. Everything
    /// storage could refuse (item and key sizes, [`TreeWrite::check_limits`]) is checked
    /// before the first request. A lost condition on an entity is `ConditionFailed` (re-read
    /// and retry); a taken identity alone is `Taken`. A write of several transactions first
    /// checks the identities it claims (one more BatchGetItem), so that a taken identifier
    /// is refused before anything is written.
    ///
    /// Transactions already committed stay committed: a failure after the first is
    /// [`StoreError::Partial`], which callers answer as partially applied (never as a plain
    /// 4xx). Callers write parents before children (creation) or children before parents
    /// (deletion), so every prefix is a valid tree, and repeating the request completes it.
    ///
    /// Every entity, resource and tombstone put carries the `origin`'s actor (`by`). With
    /// the `guard` of a request under an Idempotency-Key, the last transaction also moves
    /// the key's record to `written` (`store/idempotency.rs`).
    pub async fn commit(&self, write: &TreeWrite, origin: &Origin<'_>) -> Result<(), StoreError> {
        let guard = origin.guard;
        write.check_limits(origin)?;
        let transactions = write.transactions()?;
        if transactions.len() > 1 {
            // What a later transaction's conditions would refuse is refused before the first
            // one: a taken identifier, a SKU held by a bundle, a reference to a metaobject
            // deleted since the write checked it.
            let conditions = write.identity_conditions();
            let counters = write.guarded_counters();
            let keys = conditions
                .keys()
                .map(|pk| item_key(pk.to_string(), REF_SK))
                .chain(
                    counters
                        .keys()
                        .map(|(pk, sk)| item_key(pk.clone(), sk.clone())),
                )
                .collect();
            for found in self.batch_get(keys).await? {
                let text = |name: &str| found.get(name).and_then(|v| v.as_s().ok()).cloned();
                let key = (text(super::super::keys::PK), text(super::super::keys::SK));
                if let (Some(pk), Some(sk)) = key {
                    if let Some((def, id)) = counters.get(&(pk, sk)) {
                        if counters::is_closed(&found) {
                            return Err(StoreError::NoMetaobject(def.clone(), id.clone()));
                        }
                        continue;
                    }
                }
                let pk = found
                    .get(super::super::keys::PK)
                    .and_then(|v| v.as_s().ok());
                match pk.and_then(|pk| conditions.get(pk.as_str())) {
                    Some(Target::Identity(kind, id, _)) => return Err(taken(*kind, id)),
                    Some(Target::InBundle(id, _)) if found.contains_key(BUNDLES_SET) => {
                        return Err(in_bundle(id))
                    }
                    _ => {}
                }
            }
        }
        // The key's record moves in the last transaction (its own when the last is full).
        let action = guard.and_then(|g| g.take_action(&self.table));
        let last = transactions.len().saturating_sub(1);
        let total = transactions.len();
        let mut alone = None;
        for (n, chunk) in transactions.into_iter().enumerate() {
            let mut items: Vec<TransactWriteItem> = chunk
                .iter()
                .map(|(a, _)| {
                    let mut a = with_table(a, &self.table);
                    if let Some(p) = a.put.as_mut() {
                        origin.stamp(&mut p.item);
                    }
                    a
                })
                .collect();
            if n == last {
                if let Some(g) = action.clone() {
                    if items.len() < TRANSACTION_LIMIT {
                        items.push(g);
                    } else {
                        alone = Some(g);
                    }
                }
            }
            let result = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items))
                .send()
                .await;
            if let Err(err) = result {
                if n == last {
                    guard.inspect(|g| g.not_carried());
                }
                return Err(partial(n, total, explain(&chunk, err)));
            }
        }
        if let Some(g) = alone {
            let sent = self
                .client
                .transact_write_items()
                .transact_items(g)
                .send()
                .await;
            if let Err(e) = sent {
                guard.inspect(|g| g.not_carried());
                return Err(partial(
                    total,
                    total,
                    StoreError::from_sdk("TransactWriteItems", e),
                ));
            }
        }
        Ok(())
    }
}

/// The failure of a write's transaction `n` (0-based) of `total`: as it is when nothing was
/// committed before it, else [`StoreError::Partial`].
fn partial(n: usize, total: usize, cause: StoreError) -> StoreError {
    if n == 0 {
        return cause;
    }
    StoreError::Partial {
        committed: n,
        total,
        cause: Box::new(cause),
    }
}

fn still_referenced(def: &str, id: &str) -> StoreError {
    StoreError::Taken(format!(
        "metaobject '{id}' of definition '{def}' is still referenced; remove the references first"
    ))
}

fn in_bundle(id: &str) -> StoreError {
    StoreError::Taken(format!(
        "sku '{id}' is part of a bundle; remove it from its bundles before deleting it"
    ))
}

fn taken(kind: EntityKind, id: &str) -> StoreError {
    let parent = if kind == EntityKind::Sku {
        "variant"
    } else {
        "product"
    };
    StoreError::Taken(format!(
        "{} '{id}' already exists under another {parent}",
        kind.as_str()
    ))
}

fn explain<R: std::fmt::Debug>(
    chunk: &[(TransactWriteItem, Target)],
    err: SdkError<TransactWriteItemsError, R>,
) -> StoreError {
    if let SdkError::ServiceError(service) = &err {
        if let TransactWriteItemsError::TransactionCanceledException(tce) = service.err() {
            if tce.cancellation_reasons().iter().any(|r| {
                r.code() == Some("ValidationError")
                    && r.message().is_some_and(|m| m.contains("size"))
            }) {
                return StoreError::TooLarge(
                    "an entity of the write would exceed the storage limit of 400 KB; store less data in its values".into(),
                );
            }
            let failed: Vec<&Target> = tce
                .cancellation_reasons()
                .iter()
                .zip(chunk)
                .filter(|(r, _)| r.code() == Some("ConditionalCheckFailed"))
                .map(|(_, (_, t))| t)
                .collect();
            if let Some(Target::InBundle(id, _)) =
                failed.iter().find(|t| matches!(t, Target::InBundle(..)))
            {
                return in_bundle(id);
            }
            // only counters failed (an entity's lost condition is re-read first)
            if !failed.iter().any(|t| matches!(t, Target::Entity)) {
                for t in &failed {
                    match t {
                        Target::Referenced(def, id) => return still_referenced(def, id),
                        Target::Counter(def, id, true) => {
                            return StoreError::NoMetaobject(def.clone(), id.clone())
                        }
                        _ => {}
                    }
                }
            }
            let taken = failed.iter().find_map(|t| match t {
                Target::Identity(kind, id, _) => Some((*kind, id.clone())),
                _ => None,
            });
            if let Some((kind, id)) = taken {
                if failed.iter().all(|t| matches!(t, Target::Identity(..))) {
                    return self::taken(kind, &id);
                }
            }
        }
    }
    StoreError::from_sdk("TransactWriteItems", err)
}

/// The identity item of a variant or SKU: the product (and variant) it lives under.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Identity {
    pub pid: String,
    #[serde(default)]
    pub vid: Option<String>,
}

impl Store {
    /// Where a variant or SKU lives: one strongly consistent GetItem of its identity item.
    pub async fn identity(
        &self,
        org: &str,
        kind: EntityKind,
        id: &str,
    ) -> Result<Option<Identity>, StoreError> {
        let pk = match kind {
            EntityKind::Variant => variant_ref_pk(org, id),
            EntityKind::Sku => sku_ref_pk(org, id),
            EntityKind::Product => return Ok(None),
        };
        self.get_item(item_key(pk, REF_SK), "identity").await
    }

    /// Reads entities by key with one BatchGetItem per 100 keys.
    pub(crate) async fn get_entities(
        &self,
        keys: Vec<Item>,
    ) -> Result<Vec<EntityItem>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let items = self.batch_get(keys).await?;
        serde_dynamo::from_items(items).map_err(|e| StoreError::serde("entity", e))
    }
}
