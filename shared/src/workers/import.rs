//! The import worker (function `import-worker`, on the import queue): runs one import from
//! its checkpoint. It reads the uploaded file from the checkpoint's byte offset, applies it in
//! batches through the bulk write path (`api::bulk::write_items`), and after each batch saves
//! the counters, the first errors and the new checkpoint in one conditional write. Before its
//! invocation runs out of time it queues a continuation of itself; if it dies instead, the
//! queue hands the message out again and the next invocation resumes at the last checkpoint.
//! A line applied again after a crash leaves the same state and reports the same status (the
//! product it created carries the line's mark), so the counts match an uninterrupted run.

use crate::context::Context;
use crate::domain::limits::MAX_RUNNING_IMPORTS;
use crate::domain::time::Timestamp;
use crate::imports::lines::{Line, Splitter};
use crate::imports::{object_key, parse_object_key, ImportConfig};
use crate::json_text::{ndjson_line, BulkItem};
use crate::store::imports::{ImportItem, ImportStatus};
use crate::store::StoreError;
use crate::usecases::bulk::write_items;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The longest line an import accepts (the bulk route's body limit).
pub const MAX_LINE_BYTES: usize = 6 * 1024 * 1024;
/// A batch holds at most this much text, whatever its line count.
const MAX_BATCH_BYTES: usize = 5 * 1024 * 1024;

/// Why a run stopped short.
#[derive(Debug)]
enum Stop {
    /// Another worker saved the job since this one read it: it owns the job now.
    Lost,
    /// Storage or S3 failed: the message comes back and the run resumes.
    Failed(String),
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::ConditionFailed => Stop::Lost,
            other => Stop::Failed(other.to_string()),
        }
    }
}

pub struct Importer {
    cx: &'static Context,
    s3: aws_sdk_s3::Client,
    sqs: aws_sdk_sqs::Client,
    config: ImportConfig,
}

/// What one queue message asks.
fn targets(body: &str) -> Vec<(String, String)> {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return Vec::new();
    };
    if let (Some(org), Some(id)) = (v["import"]["org"].as_str(), v["import"]["id"].as_str()) {
        return vec![(org.to_string(), id.to_string())];
    }
    // An S3 event notification (its test event has no records).
    v["Records"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| {
            r["eventName"]
                .as_str()
                .is_some_and(|n| n.starts_with("ObjectCreated"))
        })
        .filter_map(|r| parse_object_key(r["s3"]["object"]["key"].as_str()?))
        .collect()
}

impl Importer {
    pub async fn from_env(cx: &'static Context) -> Self {
        let shared = aws_config::load_from_env().await;
        Self {
            cx,
            s3: crate::imports::s3_client(&shared),
            sqs: aws_sdk_sqs::Client::new(&shared),
            config: ImportConfig::from_lookup(&|n: &str| std::env::var(n).ok()),
        }
    }

    /// Handles a batch of queue messages; a message whose run failed is reported for retry.
    /// `deadline` is the invocation's (Lambda's `deadline_ms`).
    pub async fn handle(&self, event: SqsEvent, deadline: Instant) -> SqsBatchResponse {
        let mut response = SqsBatchResponse::default();
        for m in &event.records {
            let body = m.body.as_deref().unwrap_or_default();
            for (org, id) in targets(body) {
                if let Err(e) = self.run(&org, &id, deadline).await {
                    tracing::warn!(%org, import = %id, error = %e, "import deferred");
                    response.add_failure(m.message_id.clone().unwrap_or_default());
                }
            }
        }
        response
    }

    /// Runs import `id` of `org` from its checkpoint until it finishes or time runs short.
    pub async fn run(&self, org: &str, id: &str, deadline: Instant) -> Result<(), String> {
        let started = Instant::now();
        let reserved = deadline.checked_sub(self.config.reserve).unwrap_or(started);
        let stop_at = self
            .config
            .slice
            .map_or(reserved, |s| (started + s).min(reserved));
        // One run at a time per organization (fleet-wide): an organization's imports take
        // turns, and the worker's few instances stay free for the other organizations'.
        let hold = deadline.saturating_duration_since(started) + Duration::from_secs(10);
        let slot = self
            .cx
            .store
            .take_slot(org, "import", MAX_RUNNING_IMPORTS, hold)
            .await
            .map_err(|e| e.to_string())?;
        let Some(slot) = slot else {
            tracing::info!(%org, import = %id, "another import of the organization is running: waiting");
            return self
                .continue_later(org, id, self.config.wait.as_secs() as i32)
                .await;
        };
        let advanced = self.advance(org, id, stop_at).await;
        self.cx.store.give_back_slot(&slot).await;
        match advanced {
            Ok(true) => self.continue_later(org, id, 0).await,
            Ok(false) => Ok(()),
            // Another worker saved the job since this one read it. It carries on; should it
            // stop (or should this save have been an SDK retry of one that did commit), a
            // continuation a minute later finds the job where it is and goes on.
            Err(Stop::Lost) => self.continue_later(org, id, 60).await,
            Err(Stop::Failed(e)) => Err(e),
        }
    }

    /// Queues the import's continuation on the import queue, `delay` seconds from now.
    async fn continue_later(&self, org: &str, id: &str, delay: i32) -> Result<(), String> {
        let url = self
            .config
            .queue_url
            .as_deref()
            .ok_or("no import queue is configured for the continuation")?;
        self.sqs
            .send_message()
            .queue_url(url)
            .message_body(json!({"import": {"org": org, "id": id}}).to_string())
            .delay_seconds(delay)
            .send()
            .await
            .map_err(|e| format!("SendMessage: {e:?}"))?;
        Ok(())
    }

    /// Works on the job until it is finished (`false`) or `stop_at` has passed (`true`: to be
    /// continued).
    async fn advance(&self, org: &str, id: &str, stop_at: Instant) -> Result<bool, Stop> {
        let store = &self.cx.store;
        let Some(mut job) = store.get_import(org, id).await? else {
            return Ok(false);
        };
        if job.status.finished() {
            return Ok(false);
        }
        let key = object_key(org, id);
        if job.status == ImportStatus::AwaitingUpload {
            job.status = ImportStatus::Running;
            job.started_at = Some(Timestamp::now());
            store.save_import(&mut job).await?;
        }
        if job.total.is_none() {
            match self.count_lines(&key).await? {
                Some(n) => job.total = Some(n),
                None => {
                    return self
                        .fail(&mut job, "the uploaded file cannot be read")
                        .await
                }
            }
            store.save_import(&mut job).await?;
        }
        let Some(mut body) = self.read_from(&key, job.offset).await? else {
            // Past the end of the file, or the file is gone (expired, deleted).
            if !self.exists(&key).await? {
                return self.fail(&mut job, "the uploaded file is gone").await;
            }
            return self.finish(&mut job).await;
        };
        let mut splitter = Splitter::new(job.offset, job.line, MAX_LINE_BYTES);
        let mut batch: Vec<Line> = Vec::new();
        let mut batch_bytes = 0;
        loop {
            let (lines, eof) = match body.next().await {
                Some(Ok(chunk)) => (splitter.push(&chunk), false),
                Some(Err(e)) => return Err(Stop::Failed(format!("reading the file: {e}"))),
                None => (
                    std::mem::replace(&mut splitter, Splitter::new(0, 0, 0))
                        .finish()
                        .into_iter()
                        .collect(),
                    true,
                ),
            };
            for line in lines {
                batch_bytes += line.text.as_ref().map_or(0, String::len);
                batch.push(line);
                let items = batch.iter().filter(|l| !l.is_blank()).count();
                if items >= self.config.batch_lines || batch_bytes >= MAX_BATCH_BYTES {
                    self.apply(org, &mut job, std::mem::take(&mut batch))
                        .await?;
                    batch_bytes = 0;
                    if Instant::now() >= stop_at {
                        return Ok(true);
                    }
                }
            }
            if eof {
                break;
            }
        }
        if !batch.is_empty() {
            self.apply(org, &mut job, batch).await?;
        }
        self.finish(&mut job).await
    }

    /// Applies one batch of lines and saves the counts with the checkpoint after it.
    async fn apply(&self, org: &str, job: &mut ImportItem, batch: Vec<Line>) -> Result<(), Stop> {
        let Some(last) = batch.last() else {
            return Ok(());
        };
        let (end, number) = (last.end, last.number);
        let items: Vec<BulkItem> = batch
            .iter()
            .filter(|l| !l.is_blank())
            .map(|l| BulkItem {
                line: l.number as usize,
                body: match &l.text {
                    Some(t) => ndjson_line(t),
                    None => Err(crate::error::ApiError::new(
                        413,
                        format!("line is longer than {MAX_LINE_BYTES} bytes or not UTF-8"),
                    )),
                },
            })
            .collect();
        let lines: Vec<usize> = items.iter().map(|i| i.line).collect();
        let outcomes = match write_items(self.cx, org, items, Some(&job.id), None).await {
            Ok(outcomes) => outcomes,
            // A batch refused whole (a limit over all its lines) fails each of its lines:
            // applying it again would be refused again.
            Err(e) if e.status < 500 => lines
                .into_iter()
                .map(|line| crate::usecases::bulk::LineOutcome {
                    line,
                    identifier: None,
                    status: e.status,
                    error: Some(e.message.clone()),
                })
                .collect(),
            Err(e) => return Err(Stop::Failed(e.message)),
        };
        // Storage throttled or unavailable for a line is not the line's fault: the batch is
        // applied again later (re-applying is safe), nothing of it is counted now.
        if let Some(o) = outcomes.iter().find(|o| o.status == 503) {
            return Err(Stop::Failed(format!(
                "line {}: {}",
                o.line,
                o.error.as_deref().unwrap_or_default()
            )));
        }
        for o in &outcomes {
            job.count(
                o.line as u64,
                o.identifier.as_deref(),
                o.status,
                o.error.as_deref(),
            );
        }
        job.offset = end;
        job.line = number;
        self.cx.store.save_import(job).await?;
        Ok(())
    }

    async fn finish(&self, job: &mut ImportItem) -> Result<bool, Stop> {
        job.status = if job.failed > 0 {
            ImportStatus::CompletedWithErrors
        } else {
            ImportStatus::Succeeded
        };
        job.finished_at = Some(Timestamp::now());
        self.cx.store.save_import(job).await?;
        Ok(false)
    }

    async fn fail(&self, job: &mut ImportItem, why: &str) -> Result<bool, Stop> {
        job.status = ImportStatus::Failed;
        job.finished_at = Some(Timestamp::now());
        job.errors.push(crate::store::imports::ImportError {
            line: 0,
            identifier: None,
            status: 400,
            error: why.to_string(),
        });
        self.cx.store.save_import(job).await?;
        Ok(false)
    }

    /// The file's non-blank lines (one pass over it); `None` when there is no file.
    async fn count_lines(&self, key: &str) -> Result<Option<u64>, Stop> {
        let Some(mut body) = self.read_from(key, 0).await? else {
            return Ok(self.exists(key).await?.then_some(0));
        };
        let mut splitter = Splitter::new(0, 0, MAX_LINE_BYTES);
        let mut n = 0u64;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| Stop::Failed(format!("reading the file: {e}")))?;
            n += splitter
                .push(&chunk)
                .iter()
                .filter(|l| !l.is_blank())
                .count() as u64;
        }
        n += splitter.finish().filter(|l| !l.is_blank()).map_or(0, |_| 1);
        Ok(Some(n))
    }

    async fn exists(&self, key: &str) -> Result<bool, Stop> {
        let bucket = self.bucket()?;
        match self.s3.head_object().bucket(bucket).key(key).send().await {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(false),
            Err(e) => Err(Stop::Failed(format!("HeadObject: {e:?}"))),
        }
    }

    fn bucket(&self) -> Result<&str, Stop> {
        self.config
            .bucket
            .as_deref()
            .ok_or_else(|| Stop::Failed("no import bucket is configured".into()))
    }

    /// The file from byte `offset` on; `None` past its end or when it does not exist.
    async fn read_from(
        &self,
        key: &str,
        offset: u64,
    ) -> Result<Option<aws_sdk_s3::primitives::ByteStream>, Stop> {
        let bucket = self.bucket()?;
        let mut get = self.s3.get_object().bucket(bucket).key(key);
        if offset > 0 {
            get = get.range(format!("bytes={offset}-"));
        }
        match get.send().await {
            Ok(out) => Ok(Some(out.body)),
            Err(e) => {
                use aws_sdk_s3::error::ProvideErrorMetadata;
                let code = e
                    .as_service_error()
                    .and_then(|s| s.code())
                    .unwrap_or_default();
                if code == "InvalidRange" || code == "NoSuchKey" {
                    Ok(None)
                } else {
                    Err(Stop::Failed(format!("GetObject: {e:?}")))
                }
            }
        }
    }
}

/// The invocation's deadline as an `Instant`, from Lambda's `deadline_ms` (epoch millis).
pub fn deadline_from(deadline_ms: u64) -> Instant {
    let now_ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
    Instant::now() + Duration::from_millis(deadline_ms.saturating_sub(now_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_imports_from_s3_events_and_continuations() {
        let s3 = json!({"Records": [
            {"eventName": "ObjectCreated:Put", "s3": {"object": {"key": "imports%2Fabc123%2Fimp_01x.ndjson"}}},
            {"eventName": "ObjectRemoved:Delete", "s3": {"object": {"key": "imports/abc123/imp_02.ndjson"}}},
            {"eventName": "ObjectCreated:Put", "s3": {"object": {"key": "elsewhere/x"}}}
        ]});
        assert_eq!(
            targets(&s3.to_string()),
            vec![("abc123".to_string(), "imp_01x".to_string())]
        );
        let again = json!({"import": {"org": "abc123", "id": "imp_9"}});
        assert_eq!(
            targets(&again.to_string()),
            vec![("abc123".to_string(), "imp_9".to_string())]
        );
        let test_event = json!({"Service": "Amazon S3", "Event": "s3:TestEvent"});
        assert!(targets(&test_event.to_string()).is_empty());
        assert!(targets("not json").is_empty());
    }
}
