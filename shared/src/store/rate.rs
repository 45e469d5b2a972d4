//! An organization's token bucket in the table (`O#<org>` / `RATE`, attribute `tat` in µs):
//! every function instance takes tokens from it with one conditional UpdateItem, so the
//! limit holds across the whole fleet. Two exclusive conditions cover the two cases of
//! GCRA without a read: a full bucket (`tat <= now`: set it) and a busy one (`tat > now`:
//! add to it atomically, as long as it stays within the burst).

use super::keys::{org_pk, TTL};
use super::ops::{item_key, number as n};
use super::{Store, StoreError};
use crate::domain::rate::{Policy, Take};
use aws_sdk_dynamodb::types::ReturnValue;

/// The sort key of an organization's bucket.
pub const RATE_SK: &str = "RATE";
/// The sort key of the bucket its failed authentications take from.
pub const FAILED_AUTH_SK: &str = "RATE#AUTHFAIL";

/// Which of an organization's two buckets: its calls', or its failed authentications'
/// (a wrong secret for one of its key ids). Apart, so that whoever knows a key id can never
/// spend the tokens the organization's valid callers need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bucket {
    Calls,
    FailedAuth,
}

impl Bucket {
    fn sort_key(self) -> &'static str {
        match self {
            Bucket::Calls => RATE_SK,
            Bucket::FailedAuth => FAILED_AUTH_SK,
        }
    }
}

/// How long an idle bucket item is kept (it is full again long before).
const IDLE_TTL_SECS: i64 = 86_400;

/// The outcome of taking tokens from the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Granted: the bucket's `tat` after it.
    Granted { tat: i64 },
    /// Not granted: how long until they would be (µs), and the bucket's `tat`.
    Refused { wait_us: i64, tat: i64 },
}

impl Store {
    /// Takes `tokens` from `org`'s bucket under `policy` at `now` (µs since the epoch),
    /// giving back in the same write `returned` tokens this process took earlier and did not
    /// use (a lapsed lease's): the bucket moves by the difference, back when it is negative
    /// (a bucket moved back past `now` is simply full). `hint` is the `tat` this process saw
    /// last: it picks which condition to try first.
    #[allow(clippy::too_many_arguments)]
    pub async fn take_tokens(
        &self,
        org: &str,
        bucket: Bucket,
        policy: Policy,
        tokens: u32,
        returned: u32,
        now: i64,
        hint: Option<i64>,
    ) -> Result<Taken, StoreError> {
        let step = policy.interval_us() * (i64::from(tokens) - i64::from(returned));
        // a full bucket holds nothing of this process's: nothing to give back to it
        let full_step = policy.interval_us() * i64::from(tokens);
        let mut busy = hint.is_some_and(|t| t > now);
        for _ in 0..4 {
            let key = item_key(org_pk(org), bucket.sort_key());
            let update = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key))
                .return_values(ReturnValue::UpdatedNew)
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":ttl", n(now / 1_000_000 + IDLE_TTL_SECS));
            let update = if busy {
                // tat + step - now <= tolerance
                update
                    .update_expression("SET tat = tat + :step, #ttl = :ttl")
                    .condition_expression("tat > :now AND tat <= :limit")
                    .expression_attribute_values(":step", n(step))
                    .expression_attribute_values(":limit", n(now + policy.tolerance_us() - step))
            } else {
                if full_step > policy.tolerance_us() {
                    return Ok(Taken::Refused {
                        wait_us: full_step - policy.tolerance_us(),
                        tat: now,
                    });
                }
                update
                    .update_expression("SET tat = :new, #ttl = :ttl")
                    .condition_expression("attribute_not_exists(tat) OR tat <= :now")
                    .expression_attribute_values(":new", n(now + full_step))
            }
            .expression_attribute_names("#ttl", TTL);
            match update.send().await {
                Ok(out) => {
                    let tat = out
                        .attributes
                        .as_ref()
                        .and_then(|a| a.get("tat"))
                        .and_then(|v| v.as_n().ok())
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(now + step);
                    return Ok(Taken::Granted { tat });
                }
                Err(e) => match StoreError::from_sdk("UpdateItem", e) {
                    StoreError::ConditionFailed => {}
                    other => return Err(other),
                },
            }
            // The guess was wrong, or the bucket is too busy: read it.
            let tat = self.bucket_tat(org, bucket).await?;
            match policy.take(tat, now, tokens.saturating_sub(returned)) {
                Take::Refused { wait_us } => {
                    return Ok(Taken::Refused {
                        wait_us,
                        tat: tat.unwrap_or(now),
                    })
                }
                Take::Allowed { .. } => busy = tat.is_some_and(|t| t > now),
            }
        }
        Err(StoreError::Unavailable(format!(
            "the rate bucket of {org} kept changing"
        )))
    }

    /// The bucket's `tat`, strongly consistent; `None` when it was never used (or expired).
    async fn bucket_tat(&self, org: &str, bucket: Bucket) -> Result<Option<i64>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(org), bucket.sort_key())))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("GetItem", e))?;
        Ok(out
            .item
            .as_ref()
            .and_then(|i| i.get("tat"))
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok()))
    }
}
