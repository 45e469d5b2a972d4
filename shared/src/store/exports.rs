//! Export jobs (`POST /exports`): one item per export in the organization's exports
//! partition, holding its request, state and the checkpoint the worker resumes from (the
//! multipart upload, its parts so far and the last identifier in them). Every save is
//! conditioned on the version read, so two workers on one export never both add a part.
//!
//! `GET /exports` reads only its page: a record holds its upload's part list (tens of KB
//! for a large file), so reading the partition whole would cost what the organization's week
//! of exports weighs. A page is one Query, newest first, `Limit`ed to the records the page
//! needs (a cursor's: `limit + 1`; a page number's: those up to the page's end). The total
//! comes from the organization's export counts, one small item beside the jobs
//! ([`EXPORT_COUNTS_SK`]): a number per UTC day of creation, added to in the create's own
//! transaction. Records do not need to be counted out as they expire:
//! every record created on one day expires at one instant, the start of the day
//! [`RECORD_DAYS`] later, so the live records are exactly those of the last `RECORD_DAYS`
//! days of counts, and the list shows only records before their `ttl` (DynamoDB deletes them
//! some time after). A COUNT Query would be exact too, but DynamoDB charges it the records'
//! whole size. An organization without counts (no export created since they began) is
//! counted by that COUNT Query; records created before the counts began are left out of the
//! counts of an organization that has them, until they expire (at most 8 days). A deleted
//! export (`DELETE /exports/{id}`) is taken from its day's count in its deletion's
//! transaction.

use super::keys::{exports_pk, EXPORT_COUNTS_SK, EXPORT_SK_PREFIX, TTL};
use super::ops::{item_key, Expect};
use super::slots::Slot;
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use crate::store::idempotency::Guard;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};

/// How long an export's file is kept (decisions.md); its record lives a day or more longer.
pub const EXPORT_FILE_DAYS: i64 = 7;

/// A record expires at the start of the UTC day this many days after the day it was
/// created on: 8 to 9 days after its creation, at least a day after its file, and with every
/// other record of its day.
const RECORD_DAYS: i64 = EXPORT_FILE_DAYS + 2;

const DAY_MS: i64 = 86_400_000;

/// Days before the oldest counted one that a create clears from the counts: a count older
/// than them (left by an organization idle for longer) is never read, only kept.
const PRUNED_DAYS: i64 = 32;

/// The UTC day (days since the epoch) of `t`.
fn day_of(t: Timestamp) -> i64 {
    t.millis().div_euclid(DAY_MS)
}

/// The oldest day of creation whose records are live at `now`.
fn first_live_day(now: Timestamp) -> i64 {
    day_of(now) - (RECORD_DAYS - 1)
}

/// Whether a record of `ttl` (epoch seconds) is live at `now`: listed and counted.
fn live(ttl: i64, now: Timestamp) -> bool {
    ttl.saturating_mul(1000) > now.millis()
}

/// The counts' attribute of a day of creation.
fn count_name(day: i64) -> String {
    format!("d{day}")
}

/// Where an export stands (decisions.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportStatus {
    Running,
    Succeeded,
    Failed,
}

/// A part still short of its size when a run's time was up: its gzip bytes are kept beside
/// the file (any size), and the next run goes on gathering from here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    pub after: Option<String>,
    pub written: u64,
}

/// One uploaded part of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportPart {
    pub number: i32,
    pub etag: String,
}

/// An export job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportItem {
    #[serde(rename = "PK")]
    pub(in crate::store) pk: String,
    #[serde(rename = "SK")]
    pub(in crate::store) sk: String,
    pub id: String,
    pub status: ExportStatus,
    /// The request as accepted (JSON text of `POST /exports`'s body).
    pub request: String,
    /// Every line is the state of its entity at some instant at or after this time.
    #[serde(rename = "asOf")]
    pub as_of: Timestamp,
    /// Entities the selection held when the export started.
    pub total: u64,
    /// Lines in the uploaded parts.
    pub written: u64,
    #[serde(rename = "createdAt")]
    pub created_at: Timestamp,
    #[serde(rename = "finishedAt")]
    pub finished_at: Option<Timestamp>,
    pub error: Option<String>,
    /// The multipart upload, once started.
    #[serde(rename = "uploadId")]
    pub upload_id: Option<String>,
    #[serde(default)]
    pub parts: Vec<ExportPart>,
    /// The last identifier in the uploaded parts: the walk goes on after it.
    pub after: Option<String>,
    /// The highest part number a run has claimed (a claimed part may never have been
    /// uploaded: numbers may skip, S3 takes ascending ones).
    #[serde(default)]
    pub claimed: i32,
    /// The part gathered so far, when a run's time was up before it was full.
    #[serde(default)]
    pub pending: Option<Pending>,
    /// When a run last saved the export.
    #[serde(default, rename = "savedAt")]
    pub saved_at: Option<Timestamp>,
    /// The most bytes of entities the walk has held at once, read and not yet written
    /// (`usecases/export/pages.rs`): the largest of its runs'.
    #[serde(default, rename = "peakBytes")]
    pub peak_bytes: u64,
    /// The organization's export slot this export holds while it runs.
    pub slot: Option<Slot>,
    pub ver: u64,
    pub ttl: i64,
}

impl ExportItem {
    pub fn new(org: &str, id: &str, request: String, now: Timestamp, as_of: Timestamp) -> Self {
        Self {
            pk: exports_pk(org),
            sk: id.to_string(),
            id: id.to_string(),
            status: ExportStatus::Running,
            request,
            as_of,
            total: 0,
            written: 0,
            created_at: now,
            finished_at: None,
            error: None,
            upload_id: None,
            parts: Vec::new(),
            after: None,
            claimed: 0,
            pending: None,
            saved_at: None,
            peak_bytes: 0,
            slot: None,
            ver: 1,
            ttl: (day_of(now) + RECORD_DAYS) * (DAY_MS / 1000),
        }
    }

    /// Whether the file is still kept (its lifecycle rule removes it after
    /// [`EXPORT_FILE_DAYS`]).
    pub fn file_kept(&self, now: Timestamp) -> bool {
        self.status == ExportStatus::Succeeded
            && self
                .finished_at
                .is_some_and(|f| now.millis() < f.millis() + EXPORT_FILE_DAYS * 86_400_000)
    }
}

/// A page of an organization's live exports, newest first.
#[derive(Debug)]
pub struct ExportPage {
    pub jobs: Vec<ExportItem>,
    /// Whether the Query stopped before the partition's end: more may follow.
    pub more: bool,
}

/// The organization's export counts, as stored: how many exports it created on each UTC
/// day (`d<day>`).
#[derive(Debug, Clone, Default, PartialEq)]
struct ExportCounts(super::ops::Item);

impl ExportCounts {
    /// How many of the counted exports are live at `now`.
    fn live(&self, now: Timestamp) -> u64 {
        let first = first_live_day(now);
        self.0
            .iter()
            .filter_map(|(name, v)| {
                let day = name.strip_prefix('d')?.parse::<i64>().ok()?;
                let n = v.as_n().ok()?.parse::<u64>().ok()?;
                (day >= first).then_some(n)
            })
            .sum()
    }
}

impl Store {
    /// Creates the export and counts it, in one transaction (with the guard's action).
    pub async fn create_export(
        &self,
        item: &ExportItem,
        guard: Option<&Guard>,
    ) -> Result<(), StoreError> {
        let counted = self.count_action(item);
        self.put_expecting(item, Expect::Absent, "export", guard, Some(counted))
            .await
    }

    /// The transaction action that counts `item` on the day of its creation (and clears
    /// the counts of the days before the oldest live one).
    fn count_action(&self, item: &ExportItem) -> TransactWriteItem {
        let day = day_of(item.created_at);
        let oldest = day - (RECORD_DAYS - 1);
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(item_key(item.pk.clone(), EXPORT_COUNTS_SK)))
            .expression_attribute_names("#day", count_name(day))
            .expression_attribute_values(":one", AttributeValue::N("1".into()));
        let mut cleared = Vec::new();
        for i in 1..=PRUNED_DAYS {
            update = update.expression_attribute_names(format!("#o{i}"), count_name(oldest - i));
            cleared.push(format!("#o{i}"));
        }
        let update = update
            .update_expression(format!("ADD #day :one REMOVE {}", cleared.join(", ")))
            .build()
            .expect("key, table and expression are set");
        TransactWriteItem::builder().update(update).build()
    }

    pub async fn get_export(&self, org: &str, id: &str) -> Result<Option<ExportItem>, StoreError> {
        self.get_item(item_key(exports_pk(org), id), "export").await
    }

    /// The first `want` live exports of the organization, newest first, after the export
    /// `after` (a previous page's last): one Query `Limit`ed to them (one more per 1 MB,
    /// and per expired record still kept among them).
    pub async fn list_exports(
        &self,
        org: &str,
        after: Option<&str>,
        want: usize,
        now: Timestamp,
    ) -> Result<ExportPage, StoreError> {
        let pk = exports_pk(org);
        let want = want.clamp(1, i32::MAX as usize);
        let mut start = after.map(|id| item_key(pk.clone(), id));
        let mut jobs: Vec<ExportItem> = Vec::new();
        loop {
            let page = self
                .jobs_query(&pk)
                .scan_index_forward(false)
                .limit((want - jobs.len()) as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query", e))?;
            let found: Vec<ExportItem> = serde_dynamo::from_items(page.items.unwrap_or_default())
                .map_err(|e| StoreError::serde("export", e))?;
            jobs.extend(found.into_iter().filter(|j| live(j.ttl, now)));
            start = page.last_evaluated_key.filter(|k| !k.is_empty());
            if jobs.len() >= want || start.is_none() {
                break;
            }
        }
        Ok(ExportPage {
            jobs,
            more: start.is_some(),
        })
    }

    /// How many exports of the organization are live at `now`, from its counts (one
    /// GetItem of a small item); `None` when it has none (no export created since the
    /// counts began).
    pub async fn export_total(&self, org: &str, now: Timestamp) -> Result<Option<u64>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(item_key(exports_pk(org), EXPORT_COUNTS_SK)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("GetItem", e))?;
        Ok(out
            .item
            .filter(|i| !i.is_empty())
            .map(|i| ExportCounts(i).live(now)))
    }

    /// How many exports of the organization are live at `now`, counted by reading them: a
    /// COUNT Query (one request per 1 MB of records), for an organization without counts.
    pub async fn count_live_exports(&self, org: &str, now: Timestamp) -> Result<u64, StoreError> {
        let query = self
            .jobs_query(&exports_pk(org))
            .filter_expression("#ttl > :now")
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(
                ":now",
                AttributeValue::N(now.millis().div_euclid(1000).to_string()),
            );
        self.count_all(query).await
    }

    /// A Query of the organization's export jobs (not the counts beside them).
    fn jobs_query(
        &self,
        pk: &str,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk AND begins_with(SK, :jobs)")
            .expression_attribute_values(":pk", AttributeValue::S(pk.to_string()))
            .expression_attribute_values(":jobs", AttributeValue::S(EXPORT_SK_PREFIX.into()))
    }

    /// Deletes a finished export's record (still at the version read) and takes it out of
    /// the count of its day, in one transaction; a record the counts left out (created
    /// before they began) is deleted alone. `ConditionFailed` when it moved or went meanwhile.
    pub async fn delete_export(&self, item: &ExportItem) -> Result<(), StoreError> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(item_key(item.pk.clone(), &item.sk)))
            .condition_expression("ver = :v")
            .expression_attribute_values(":v", AttributeValue::N(item.ver.to_string()))
            .build()
            .expect("key, table and condition are set");
        let uncount = Update::builder()
            .table_name(&self.table)
            .set_key(Some(item_key(item.pk.clone(), EXPORT_COUNTS_SK)))
            .update_expression("ADD #day :minus")
            .condition_expression("#day >= :one")
            .expression_attribute_names("#day", count_name(day_of(item.created_at)))
            .expression_attribute_values(":minus", AttributeValue::N("-1".into()))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .build()
            .expect("key, table and expression are set");
        let both = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().delete(delete.clone()).build())
            .transact_items(TransactWriteItem::builder().update(uncount).build())
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("TransactWriteItems", e));
        match both {
            // the record moved or went, or its day holds no count of it: alone, if still there
            Err(StoreError::ConditionFailed) => {
                self.client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(delete.key))
                    .condition_expression("ver = :v")
                    .set_expression_attribute_values(delete.expression_attribute_values)
                    .send()
                    .await
                    .map_err(|e| StoreError::from_sdk("DeleteItem", e))?;
                Ok(())
            }
            other => other.map(|_| ()),
        }
    }

    /// Saves `item` with its version moved on, if nobody saved it since it was read:
    /// `ConditionFailed` otherwise.
    pub async fn save_export(&self, item: &mut ExportItem) -> Result<(), StoreError> {
        self.save_next_version(item, |i| &mut i.ver, "export").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_kept_a_week_after_it_was_written() {
        let t = Timestamp::from_millis(1_000);
        let mut job = ExportItem::new("abc123", "exp_1", "{}".into(), t, t);
        assert!(!job.file_kept(t));
        job.status = ExportStatus::Succeeded;
        job.finished_at = Some(t);
        assert!(job.file_kept(Timestamp::from_millis(1_000 + 7 * 86_400_000 - 1)));
        assert!(!job.file_kept(Timestamp::from_millis(1_000 + 7 * 86_400_000)));
        assert_eq!(job.pk, "O#abc123#E");
        assert_eq!(job.ttl, 9 * 86_400);
    }

    /// The counts of the last `RECORD_DAYS` days are exactly the records the list shows:
    /// a record is live until the start of the 9th day after its own, with its whole day.
    #[test]
    fn the_live_days_counted_are_the_live_records_listed() {
        let day = 20_000 * DAY_MS;
        let at = |ms: i64| Timestamp::from_millis(ms);
        for created in [day, day + 1, day + DAY_MS / 2, day + DAY_MS - 1] {
            let job = ExportItem::new("o", "exp_1", "{}".into(), at(created), at(created));
            // 8 to 9 days after its creation, at the start of a day
            assert_eq!(job.ttl * 1000, day + 9 * DAY_MS);
            assert!(job.ttl * 1000 - created > 8 * DAY_MS);
            for now in [
                created,
                day + 9 * DAY_MS - 1,
                day + 9 * DAY_MS,
                day + 9 * DAY_MS + 1,
                day + 30 * DAY_MS,
            ] {
                let counted = day_of(job.created_at) >= first_live_day(at(now));
                assert_eq!(live(job.ttl, at(now)), counted, "{created} {now}");
                assert_eq!(counted, now < day + 9 * DAY_MS, "{created} {now}");
            }
        }
        // the counts read only the live days' numbers
        let n = |v: u64| AttributeValue::N(v.to_string());
        let counts = ExportCounts(
            [
                (count_name(20_000), n(4)),
                (count_name(20_008), n(2)),
                (count_name(19_999), n(100)),
                ("PK".to_string(), AttributeValue::S("O#o#E".into())),
            ]
            .into_iter()
            .collect(),
        );
        assert_eq!(counts.live(at(20_008 * DAY_MS)), 6);
        assert_eq!(counts.live(at(20_009 * DAY_MS - 1)), 6);
        assert_eq!(counts.live(at(20_009 * DAY_MS)), 2);
        assert_eq!(counts.live(at(20_017 * DAY_MS)), 0);
    }
}
