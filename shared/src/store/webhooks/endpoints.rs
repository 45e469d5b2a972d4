//! Each endpoint's health (its failing streak, probes and lease) and its parked deliveries.

use super::*;

impl Store {
    /// Takes the endpoint's next attempt for one delivery (the probe), holding it until
    /// `lease_until`: allowed when nothing is known of the endpoint, or it is not known good
    /// and its probe time has come by `now`. `Err(health)` with the endpoint as it stands when
    /// another delivery holds it or it is not due (`None` if the store did not return it).
    pub async fn claim_probe(
        &self,
        org: &str,
        webhook: &str,
        now: Timestamp,
        lease_until: Timestamp,
    ) -> Result<Result<(), Option<Health>>, StoreError> {
        let ttl = now.millis() / 1000 + HEALTH_TTL_SECS;
        let out = self.update_health(org, webhook)
            .update_expression("SET probeAt = :lease, probeStartedAt = :now, #ttl = :ttl")
            .condition_expression(
                "attribute_not_exists(PK) OR ((attribute_not_exists(goodUntil) OR goodUntil < :now) \
                 AND (attribute_not_exists(probeAt) OR probeAt <= :now))",
            )
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":lease", s(lease_until.to_string()))
            .expression_attribute_values(":now", s(now.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string()))
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .send()
            .await;
        match out {
            Ok(_) => Ok(Ok(())),
            Err(e) => {
                use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
                if let Some(UpdateItemError::ConditionalCheckFailedException(c)) =
                    e.as_service_error()
                {
                    let current = c
                        .item
                        .clone()
                        .and_then(|i| decode(i, "endpoint health").ok());
                    return Ok(Err(current));
                }
                Err(StoreError::from_sdk("UpdateItem", e))
            }
        }
    }

    /// Counts a failed attempt against the endpoint: starts its streak at `now` unless one
    /// runs, and gives it no attempt before `probe_at`. One UpdateItem; the endpoint as it
    /// now stands.
    pub async fn record_endpoint_failure(
        &self,
        org: &str,
        webhook: &str,
        delivery_id: &str,
        now: Timestamp,
        probe_at: Timestamp,
    ) -> Result<Health, StoreError> {
        let ttl = now.millis() / 1000 + HEALTH_TTL_SECS;
        let out = self
            .update_health(org, webhook)
            .update_expression(
                "SET failures = if_not_exists(failures, :zero) + :one, \
                 failingSince = if_not_exists(failingSince, :now), probeAt = :probe, \
                 carrier = :carrier, #ttl = :ttl REMOVE goodUntil, probeStartedAt",
            )
            .expression_attribute_values(":carrier", s(delivery_id))
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":zero", AttributeValue::N("0".into()))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":now", s(now.to_string()))
            .expression_attribute_values(":probe", s(probe_at.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string()))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        decode(out.attributes.unwrap_or_default(), "endpoint health")
    }

    /// The endpoint's state (strongly consistent), `None` when nothing is known of it.
    pub async fn endpoint_health(
        &self,
        org: &str,
        webhook: &str,
    ) -> Result<Option<Health>, StoreError> {
        self.get_item(
            item_key(health_pk(org, webhook), HEALTH_SK),
            "endpoint health",
        )
        .await
    }

    /// Records that the endpoint answered: known good until `good_until`, any streak ended.
    pub async fn record_endpoint_success(
        &self,
        org: &str,
        webhook: &str,
        good_until: Timestamp,
    ) -> Result<(), StoreError> {
        let ttl = good_until.millis() / 1000 + HEALTH_TTL_SECS;
        self.update_health(org, webhook)
            .update_expression(
                "SET goodUntil = :good, #ttl = :ttl \
                 REMOVE failingSince, failures, probeAt, probeStartedAt, carrier",
            )
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":good", s(good_until.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(ttl.to_string()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        Ok(())
    }

    /// An UpdateItem of the endpoint's health item.
    fn update_health(&self, org: &str, webhook: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(health_pk(org, webhook), HEALTH_SK)))
    }

    /// Forgets what is known of the endpoint (it was enabled again: try it at once), but
    /// not its parked deliveries: they are released by its next answer.
    pub async fn clear_endpoint_health(&self, org: &str, webhook: &str) -> Result<(), StoreError> {
        let out = self
            .update_health(org, webhook)
            .update_expression(
                "REMOVE failingSince, failures, probeAt, probeStartedAt, goodUntil, carrier",
            )
            .condition_expression("attribute_exists(PK)")
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e));
        match out {
            Ok(_) | Err(StoreError::ConditionFailed) => Ok(()),
            Err(e) => Err(e),
        }
    }
    /// Parks a delivery (its queue message `body`) until its failing endpoint answers (the
    /// caller flags the endpoint with [`Store::flag_parked`] unless it is flagged): a PutItem.
    pub async fn park_delivery(
        &self,
        org: &str,
        webhook: &str,
        delivery_id: &str,
        body: &str,
        expires: i64,
    ) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(parked_pk(org, webhook)))
            .item(SK, s(delivery_id))
            .item("body", s(body))
            .item(TTL, AttributeValue::N(expires.to_string()))
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("PutItem", e))?;
        Ok(())
    }

    /// Notes that the endpoint has parked deliveries.
    pub async fn flag_parked(&self, org: &str, webhook: &str) -> Result<(), StoreError> {
        self.set_health(org, webhook, "parked", AttributeValue::Bool(true))
            .await
    }

    /// Sets one attribute of the endpoint's health item: one UpdateItem.
    async fn set_health(
        &self,
        org: &str,
        webhook: &str,
        attribute: &str,
        value: AttributeValue,
    ) -> Result<(), StoreError> {
        self.update_health(org, webhook)
            .update_expression("SET #a = :v")
            .expression_attribute_names("#a", attribute)
            .expression_attribute_values(":v", value)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        Ok(())
    }

    /// Takes the flag of parked deliveries (so one worker releases them), then reads up to
    /// `limit` of them: `(delivery id, queue message body)`. Empty when another worker took
    /// the flag. A delivery parked meanwhile flags the endpoint again itself.
    pub async fn take_parked(
        &self,
        org: &str,
        webhook: &str,
        limit: i32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let out = self
            .update_health(org, webhook)
            .update_expression("REMOVE parked")
            .condition_expression("attribute_exists(parked)")
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e));
        match out {
            Ok(_) => {}
            Err(StoreError::ConditionFailed) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        }
        self.first_parked(org, webhook, limit).await
    }

    /// Up to `limit` parked deliveries, oldest first, without taking the flag.
    pub async fn first_parked(
        &self,
        org: &str,
        webhook: &str,
        limit: i32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let out = self
            .partition_query(parked_pk(org, webhook), None)
            .limit(limit)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        Ok(out
            .items
            .unwrap_or_default()
            .into_iter()
            .filter_map(|i| {
                let id = i.get(SK)?.as_s().ok()?.clone();
                let body = i.get("body")?.as_s().ok()?.clone();
                Some((id, body))
            })
            .collect())
    }

    /// Removes released parked deliveries (they are on the queue again).
    pub async fn delete_parked(
        &self,
        org: &str,
        webhook: &str,
        ids: &[String],
    ) -> Result<(), StoreError> {
        let pk = parked_pk(org, webhook);
        let deletes = ids
            .iter()
            .map(|id| self.delete_key(item_key(pk.clone(), id)));
        futures_util::future::try_join_all(deletes).await?;
        Ok(())
    }

    /// Makes `delivery_id` the delivery that carries the endpoint's next probe.
    pub async fn set_carrier(
        &self,
        org: &str,
        webhook: &str,
        delivery_id: &str,
    ) -> Result<(), StoreError> {
        self.set_health(org, webhook, "carrier", s(delivery_id))
            .await
    }
}
