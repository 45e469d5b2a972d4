//! Export jobs (`POST /exports`): one item per export in the organization's exports
//! partition, holding its request, state and the checkpoint the worker resumes from (the
//! multipart upload, its parts so far and the last identifier in them). Every save is
//! conditioned on the version read, so two workers on one export never both add a part.

use super::keys::exports_pk;
use super::ops::item_key;
use super::slots::Slot;
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use crate::store::idempotency::Guard;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

/// How long an export's file is kept (decisions.md); its record lives a day longer.
pub const EXPORT_FILE_DAYS: i64 = 7;

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
            slot: None,
            ver: 1,
            ttl: now.millis() / 1000 + (EXPORT_FILE_DAYS + 1) * 86_400,
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

impl Store {
    pub async fn create_export(
        &self,
        item: &ExportItem,
        guard: Option<&Guard>,
    ) -> Result<(), StoreError> {
        self.put_new(item, "export", guard).await
    }

    pub async fn get_export(&self, org: &str, id: &str) -> Result<Option<ExportItem>, StoreError> {
        self.get_item(item_key(exports_pk(org), id), "export").await
    }

    /// The organization's exports, newest first (a week of them: the records expire).
    pub async fn list_exports(&self, org: &str) -> Result<Vec<ExportItem>, StoreError> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(exports_pk(org)))
            .scan_index_forward(false);
        serde_dynamo::from_items(self.query_all(query).await?)
            .map_err(|e| StoreError::serde("export", e))
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
        assert_eq!(job.ttl, 1 + 8 * 86_400);
    }
}
