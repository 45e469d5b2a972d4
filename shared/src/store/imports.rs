//! Import jobs (`POST /imports`): one item per import in the organization's imports
//! partition, holding its state, counters, first errors and the checkpoint the worker
//! resumes from. Every save is conditioned on the version read, so two workers on one
//! import (a redelivered message) can never both count a batch.

use super::keys::imports_pk;
use super::ops::item_key;
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use crate::store::idempotency::Guard;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

/// How long an import's record is kept after it was created.
pub const IMPORT_RETENTION_DAYS: i64 = 30;

/// The first failed lines an import keeps.
pub const MAX_IMPORT_ERRORS: usize = 100;

/// Where an import stands (decisions.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportStatus {
    AwaitingUpload,
    Running,
    Succeeded,
    CompletedWithErrors,
    Failed,
}

impl ImportStatus {
    pub fn finished(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::CompletedWithErrors | Self::Failed
        )
    }
}

/// One failed line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "ImportFailure")]
pub struct ImportError {
    pub line: u64,
    pub identifier: Option<String>,
    pub status: u16,
    pub error: String,
}

/// An import job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportItem {
    #[serde(rename = "PK")]
    pub(in crate::store) pk: String,
    #[serde(rename = "SK")]
    pub(in crate::store) sk: String,
    pub id: String,
    pub status: ImportStatus,
    pub format: String,
    /// Lines in the file (blank lines not counted), once the worker has counted them.
    pub total: Option<u64>,
    pub processed: u64,
    pub created: u64,
    pub updated: u64,
    pub failed: u64,
    pub errors: Vec<ImportError>,
    #[serde(rename = "createdAt")]
    pub created_at: Timestamp,
    /// When the upload URL stops working.
    #[serde(rename = "expiresAt")]
    pub expires_at: Timestamp,
    #[serde(rename = "startedAt")]
    pub started_at: Option<Timestamp>,
    #[serde(rename = "finishedAt")]
    pub finished_at: Option<Timestamp>,
    /// Bytes of the file applied and counted: the worker resumes reading here.
    pub offset: u64,
    /// The physical line number of the last line applied (blank lines count).
    pub line: u64,
    /// While the file is being counted: the bytes counted so far (the count resumes here)
    /// and the lines (not blank) in them.
    #[serde(default, rename = "countedTo")]
    pub counted_to: u64,
    #[serde(default)]
    pub counted: u64,
    pub ver: u64,
    pub ttl: i64,
}

/// An error kept in an import holds at most this many characters (the record stays far
/// below DynamoDB's item limit whatever the lines say).
pub const MAX_ERROR_CHARS: usize = 300;

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

impl ImportItem {
    pub fn new(org: &str, id: &str, now: Timestamp, expires_at: Timestamp) -> Self {
        Self {
            pk: imports_pk(org),
            sk: id.to_string(),
            id: id.to_string(),
            status: ImportStatus::AwaitingUpload,
            format: "ndjson".into(),
            total: None,
            processed: 0,
            created: 0,
            updated: 0,
            failed: 0,
            errors: Vec::new(),
            created_at: now,
            expires_at,
            started_at: None,
            finished_at: None,
            offset: 0,
            line: 0,
            counted_to: 0,
            counted: 0,
            ver: 1,
            ttl: now.millis() / 1000 + IMPORT_RETENTION_DAYS * 86_400,
        }
    }

    /// Counts one line's outcome: 201 created, 200 updated, anything else failed (the
    /// first [`MAX_IMPORT_ERRORS`] kept).
    pub fn count(&mut self, line: u64, identifier: Option<&str>, status: u16, error: Option<&str>) {
        self.processed += 1;
        match status {
            201 => self.created += 1,
            200 => self.updated += 1,
            _ => {
                self.failed += 1;
                if self.errors.len() < MAX_IMPORT_ERRORS {
                    self.errors.push(ImportError {
                        line,
                        identifier: identifier.map(str::to_string),
                        status,
                        error: clip(error.unwrap_or_default(), MAX_ERROR_CHARS),
                    });
                }
            }
        }
    }
}

impl Store {
    pub async fn create_import(
        &self,
        item: &ImportItem,
        guard: Option<&Guard>,
    ) -> Result<(), StoreError> {
        self.put_new(item, "import", guard).await
    }

    pub async fn get_import(&self, org: &str, id: &str) -> Result<Option<ImportItem>, StoreError> {
        self.get_item(item_key(imports_pk(org), id), "import").await
    }

    /// The organization's imports, newest first.
    pub async fn list_imports(&self, org: &str) -> Result<Vec<ImportItem>, StoreError> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(imports_pk(org)))
            .scan_index_forward(false);
        serde_dynamo::from_items(self.query_all(query).await?)
            .map_err(|e| StoreError::serde("import", e))
    }

    /// Saves `item` with its version moved on, if nobody saved it since it was read:
    /// `ConditionFailed` otherwise.
    pub async fn save_import(&self, item: &mut ImportItem) -> Result<(), StoreError> {
        self.save_next_version(item, |i| &mut i.ver, "import").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_outcomes_and_keeps_the_first_hundred_errors() {
        let t = Timestamp::from_millis(1_000);
        let mut job = ImportItem::new("abc123", "imp_1", t, t);
        job.count(1, Some("a"), 201, None);
        job.count(2, Some("b"), 200, None);
        for line in 3..=120 {
            job.count(line, None, 400, Some("bad"));
        }
        assert_eq!(
            (job.processed, job.created, job.updated, job.failed),
            (120, 1, 1, 118)
        );
        assert_eq!(job.errors.len(), MAX_IMPORT_ERRORS);
        assert_eq!(job.errors[0].line, 3);
        assert!(!job.status.finished());
        assert!(ImportStatus::CompletedWithErrors.finished());
        assert_eq!(job.ttl, 1 + IMPORT_RETENTION_DAYS * 86_400);
        job.count(121, None, 400, Some(&"é".repeat(10_000)));
        assert_eq!(clip(&"é".repeat(10_000), 300).chars().count(), 301);
        assert_eq!(clip("short", 300), "short");
    }
}
