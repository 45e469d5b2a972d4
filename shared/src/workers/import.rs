//! The import worker (function `import-worker`, on the import queue): runs one import from
//! its checkpoint. It reads the uploaded file from the checkpoint's byte offset, applies it in
//! batches through the bulk write path (`api::bulk::write_items`), and after each batch saves
//! the counters, the first errors and the new checkpoint in one conditional write. Before its
//! invocation runs out of time it queues a continuation of itself; if it dies instead, the
//! queue hands the message out again and the next invocation resumes at the last checkpoint.
//! A line applied again after a crash leaves the same state and reports the same status (the
//! product it created carries the line's mark), so the counts match an uninterrupted run.

use crate::context::Context;
use crate::domain::actor::Actor;
use crate::domain::limits::MAX_RUNNING_IMPORTS;
use crate::domain::time::Timestamp;
use crate::imports::exported::as_patch;
use crate::imports::lines::{Line, Splitter};
use crate::imports::{object_key, parse_object_key, ImportConfig};
use crate::json_text::{ndjson_line, BulkItem};
use crate::store::imports::{ImportItem, ImportStatus};
use crate::store::writes::Origin;
use crate::store::StoreError;
use crate::usecases::bulk::write_items;
use crate::workers::export::{export_target, Exporter, Target, Times};
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The longest line an import accepts (the bulk route's body limit).
pub const MAX_LINE_BYTES: usize = 6 * 1024 * 1024;
/// A batch holds at most this much text, whatever its line count.
const MAX_BATCH_BYTES: usize = 5 * 1024 * 1024;
/// A batch spans at most this many times its item count in physical lines, so a stretch
/// of blank lines is checkpointed like any other (before, it grew one batch without end).
const MAX_LINES_PER_ITEM: usize = 4;
/// While counting, the count is saved at least every this many bytes (and when the run's
/// time is up), so a count that outlives its invocation goes on where it stopped.
const COUNT_CHECKPOINT_BYTES: u64 = 256 * 1024 * 1024;

/// The lines of the batch being gathered, with running totals, so that each line costs
/// the same whatever came before it (before, every line recounted the batch: quadratic).
#[derive(Debug, Default)]
struct Batch {
    lines: Vec<Line>,
    items: usize,
    bytes: usize,
}

impl Batch {
    /// Adds `line`; the whole batch when it is full: `items` lines that are not blank,
    /// `MAX_LINES_PER_ITEM` times as many physical lines, or [`MAX_BATCH_BYTES`] of text.
    fn push(&mut self, line: Line, items: usize) -> Option<Vec<Line>> {
        self.bytes += line.text.as_ref().map_or(0, String::len);
        self.items += usize::from(!line.is_blank());
        self.lines.push(line);
        let full = self.items >= items
            || self.lines.len() >= items.saturating_mul(MAX_LINES_PER_ITEM)
            || self.bytes >= MAX_BATCH_BYTES;
        full.then(|| std::mem::take(self).lines)
    }
}

/// Where counting the file's lines stands after a run of it.
enum Counted {
    Done,
    /// The run's time is up: the count is saved and goes on in the continuation.
    Later,
    NoFile,
}

/// Why a run stopped short.
#[derive(Debug)]
enum Stop {
    /// Another worker saved the job since this one read it: it owns the job now.
    Lost,
    /// The organization's rate bucket holds no tokens for the next batch before the run's
    /// time is up: the continuation comes when it will (seconds).
    Paced(i32),
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

/// The imports one queue message asks for.
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
            if let Some(target) = export_target(body) {
                if let Err(e) = self.export(&target, deadline).await {
                    let (org, id) = (&target.org, &target.id);
                    tracing::warn!(%org, export = %id, error = %e, "export deferred");
                    response.add_failure(m.message_id.clone().unwrap_or_default());
                }
                continue;
            }
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
            Err(Stop::Paced(wait)) => self.continue_later(org, id, wait).await,
            Err(Stop::Failed(e)) => Err(e),
        }
    }

    /// Runs export `id` of `org` from its checkpoint for at most its slice; a run that
    /// fails is retried from its checkpoint (the message comes back).
    async fn export(&self, target: &Target, deadline: Instant) -> Result<(), String> {
        let times = Times::for_run(deadline, &self.config);
        let exporter = Exporter {
            cx: self.cx,
            s3: &self.s3,
            config: &self.config,
        };
        // boxed: the walk's futures nest deep enough to overflow the compiler's layout
        // query depth in the worker's binary otherwise
        match Box::pin(exporter.run(target, times)).await? {
            Some((delay, ver)) => {
                let (org, id) = (&target.org, &target.id);
                let next = json!({"export": {"org": org, "id": id, "ver": ver}});
                self.send_later(next, delay).await
            }
            None => Ok(()),
        }
    }

    /// Queues the import's continuation on the import queue, `delay` seconds from now.
    async fn continue_later(&self, org: &str, id: &str, delay: i32) -> Result<(), String> {
        self.send_later(json!({"import": {"org": org, "id": id}}), delay)
            .await
    }

    /// Queues `body` on the import queue, `delay` seconds from now.
    async fn send_later(&self, body: Value, delay: i32) -> Result<(), String> {
        let url = self
            .config
            .queue_url
            .as_deref()
            .ok_or("no import queue is configured for the continuation")?;
        self.sqs
            .send_message()
            .queue_url(url)
            .message_body(body.to_string())
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
            match self.count_lines(&key, &mut job, stop_at).await? {
                Counted::Done => {}
                Counted::Later => return Ok(true),
                Counted::NoFile => {
                    return self
                        .fail(&mut job, "the uploaded file cannot be read")
                        .await
                }
            }
        }
        let Some(mut body) = self.read_from(&key, job.offset).await? else {
            // Past the end of the file, or the file is gone (expired, deleted).
            if !self.exists(&key).await? {
                return self.fail(&mut job, "the uploaded file is gone").await;
            }
            return self.finish(&mut job).await;
        };
        let policy = match store.get_org(org).await? {
            Some(o) => o.rate_limit.map(Into::into),
            None => None,
        }
        .unwrap_or(self.cx.config.rate_limit);
        // A batch never costs more than the bucket holds, so it can always be paid for
        // whole (tokens are never taken for a batch that is then not written).
        let batch_items = if policy.rate == 0 {
            self.config.batch_lines
        } else {
            self.config
                .batch_lines
                .min(policy.burst as usize * 10)
                .max(1)
        };
        let mut splitter = Splitter::new(job.offset, job.line, MAX_LINE_BYTES);
        let mut batch = Batch::default();
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
                if let Some(full) = batch.push(line, batch_items) {
                    self.pace(org, policy, &full, stop_at).await?;
                    self.apply(org, &mut job, full).await?;
                    if Instant::now() >= stop_at {
                        return Ok(true);
                    }
                }
            }
            if eof {
                break;
            }
        }
        if !batch.lines.is_empty() {
            self.pace(org, policy, &batch.lines, stop_at).await?;
            self.apply(org, &mut job, batch.lines).await?;
        }
        self.finish(&mut job).await
    }

    /// Takes what a batch costs from the organization's rate bucket, as the bulk route
    /// charges its lines (a token per started group of 10), so an import writes no faster
    /// than the organization's calls may (before, 60 lines refused as one bulk call were
    /// all written as an import). A batch costs at most the burst (see `batch_items`);
    /// while the bucket cannot pay for it the run waits, or, past its time, hands over to
    /// a continuation due when the bucket can ([`Stop::Paced`]).
    async fn pace(
        &self,
        org: &str,
        policy: crate::domain::rate::Policy,
        batch: &[Line],
        stop_at: Instant,
    ) -> Result<(), Stop> {
        use crate::store::rate::{Bucket, Taken};
        if policy.rate == 0 {
            return Ok(());
        }
        let items = batch.iter().filter(|l| !l.is_blank()).count();
        let cost = crate::domain::rate::lines_cost(items);
        if cost == 0 {
            return Ok(());
        }
        loop {
            let now = crate::domain::time::Timestamp::now().millis() * 1000;
            match self
                .cx
                .store
                .take_tokens(org, Bucket::Calls, policy, cost, 0, now, None)
                .await?
            {
                Taken::Granted { .. } => return Ok(()),
                Taken::Refused { wait_us, .. } => {
                    let wait = Duration::from_micros(wait_us.max(1) as u64);
                    if Instant::now() + wait >= stop_at {
                        return Err(Stop::Paced(wait.as_secs_f64().ceil().min(900.0) as i32));
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        }
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
                    // an export's line imports as the product it shows
                    Some(t) => ndjson_line(t).map(as_patch),
                    None => Err(crate::error::Failure::TooLarge(format!(
                        "line is longer than {MAX_LINE_BYTES} bytes or not UTF-8"
                    ))),
                },
            })
            .collect();
        let lines: Vec<usize> = items.iter().map(|i| i.line).collect();
        // every line's writes are recorded as the import's (history's `by`)
        let origin = Origin::new(Actor::Import(job.id.clone()), None);
        let outcomes = match write_items(self.cx, org, items, Some(&job.id), &origin, None).await {
            Ok(outcomes) => outcomes,
            // A batch refused whole (a limit over all its lines) fails each of its lines:
            // applying it again would be refused again.
            Err(e) if e.is_refusal() => lines
                .into_iter()
                .map(|line| crate::usecases::bulk::LineOutcome {
                    line,
                    identifier: None,
                    status: e.status(),
                    error: Some(e.message().to_string()),
                })
                .collect(),
            Err(e) => return Err(Stop::Failed(e.message().to_string())),
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

    /// Counts the file's non-blank lines into `job.total` (one pass over it, from where an
    /// earlier run's count stopped), saving the count as it goes: at least every
    /// [`COUNT_CHECKPOINT_BYTES`], and when the run's time is up ([`Counted::Later`]).
    async fn count_lines(
        &self,
        key: &str,
        job: &mut ImportItem,
        stop_at: Instant,
    ) -> Result<Counted, Stop> {
        let Some(mut body) = self.read_from(key, job.counted_to).await? else {
            if !self.exists(key).await? {
                return Ok(Counted::NoFile);
            }
            // counted to the end already
            job.total = Some(job.counted);
            self.cx.store.save_import(job).await?;
            return Ok(Counted::Done);
        };
        let mut splitter = Splitter::new(job.counted_to, 0, MAX_LINE_BYTES);
        let (mut n, mut end) = (job.counted, job.counted_to);
        let start = end;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| Stop::Failed(format!("reading the file: {e}")))?;
            for line in splitter.push(&chunk) {
                n += u64::from(!line.is_blank());
                end = line.end;
            }
            // a run that has counted no whole line yet goes on: every run makes progress
            let late = Instant::now() >= stop_at && end > start;
            if late || end - job.counted_to >= COUNT_CHECKPOINT_BYTES {
                (job.counted, job.counted_to) = (n, end);
                self.cx.store.save_import(job).await?;
                if late {
                    return Ok(Counted::Later);
                }
            }
        }
        n += splitter.finish().filter(|l| !l.is_blank()).map_or(0, |_| 1);
        job.total = Some(n);
        self.cx.store.save_import(job).await?;
        Ok(Counted::Done)
    }

    async fn exists(&self, key: &str) -> Result<bool, Stop> {
        crate::imports::object_exists(&self.s3, self.bucket()?, key)
            .await
            .map_err(Stop::Failed)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(number: u64, text: &str) -> Line {
        Line {
            number,
            end: number,
            text: Some(text.to_string()),
        }
    }

    /// Before, 20 KB of newlines made one batch of 20,000 lines that every line recounted,
    /// and no checkpoint until the file's end. Now a stretch of blank lines is cut into
    /// batches of at most `MAX_LINES_PER_ITEM` × `batch_lines` lines, each checkpointed.
    #[test]
    fn blank_lines_are_batched_and_checkpointed_like_any_other() {
        let mut batch = Batch::default();
        let mut sizes = Vec::new();
        for n in 1..=20_000 {
            if let Some(full) = batch.push(line(n, ""), 500) {
                sizes.push(full.len());
            }
        }
        assert_eq!(sizes, vec![2_000; 10]);
        assert!(batch.lines.is_empty());
        // items fill a batch first when there are any
        let mut sizes = Vec::new();
        for n in 1..=3_000 {
            let text = if n % 2 == 0 { "{}" } else { "  " };
            if let Some(full) = batch.push(line(n, text), 500) {
                sizes.push(full.len());
            }
        }
        assert_eq!(sizes, vec![1_000; 3]);
        // and so does the text's size
        let big = "x".repeat(MAX_BATCH_BYTES / 2);
        assert!(batch.push(line(1, &big), 500).is_none());
        assert_eq!(batch.push(line(2, &big), 500).map(|b| b.len()), Some(2));
        assert_eq!(batch.items, 0);
        assert_eq!(batch.bytes, 0);
    }

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
