//! The export worker (run by `import-worker`, on the import queue): walks an export's list
//! in identifier order from its checkpoint, renders each page (`usecases/export/`) into
//! a gzip member, and uploads each member of about `CATALOG_EXPORT_PART_BYTES` as one part
//! of an S3 multipart upload (concatenated gzip members are one gzip file). After each part
//! it saves the part's ETag and the last identifier in it in one conditional write, so
//! at most one part's work is redone after a crash and memory holds one part, and of the
//! entities read at most `CATALOG_EXPORT_PAGE_BYTES` (pages are cut by it: `Budget`); past
//! its slice it queues its continuation. The last part completes the upload.

use crate::context::Context;
use crate::domain::time::Timestamp;
use crate::error::Failure;
use crate::imports::{export_key, export_pending_key, ImportConfig};
use crate::store::exports::{ExportItem, ExportPart, ExportStatus, Pending};
use crate::store::StoreError;
use crate::usecases::export::{read, Budget, ExportRequest, ExportSpec, Page};
use crate::usecases::listing::Refresh;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::Write;
use std::time::{Duration, Instant};

/// How long an export holds its slot without a run renewing it: past a failed run's return
/// (the queue's visibility timeout, 12 minutes) and a run's slice, so a running export
/// keeps its slot; past it, a crashed export no longer counts against its organization.
pub const EXPORT_HOLD: Duration = Duration::from_secs(30 * 60);

/// A run whose message names an older version than the export's stops when the export was
/// saved this recently: another run carries it (a duplicate chain of messages ends here).
const LIVE: Duration = Duration::from_secs(5 * 60);

/// Why a run stopped short.
#[derive(Debug)]
enum Stop {
    /// Another worker saved the export since this one read it: it owns it now.
    Lost,
    /// The list index is still loading, storage or S3 failed: the run resumes later.
    Failed(String),
    /// The multipart upload is gone: a run completed it (and died before saving), or it
    /// was aborted.
    UploadGone,
    /// S3 refused what no retry cures (a 4xx): the export fails.
    Refused(String),
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::ConditionFailed => Stop::Lost,
            other => Stop::Failed(other.to_string()),
        }
    }
}

/// What an S3 error means for the export.
fn s3_stop<E>(
    op: &str,
    e: aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> Stop
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::fmt::Debug,
{
    let code = e
        .as_service_error()
        .and_then(|s| s.code())
        .unwrap_or_default();
    let status = e.raw_response().map(|r| r.status().as_u16());
    match (code, status) {
        ("NoSuchUpload", _) => Stop::UploadGone,
        (_, Some(s)) if (400..500).contains(&s) && s != 429 && s != 408 => {
            Stop::Refused(format!("{op}: {code} ({s})"))
        }
        _ => Stop::Failed(format!("{op}: {e:?}")),
    }
}

/// What a part's gathering ended with.
enum Gathered {
    /// The part (its bytes, last identifier and count after it), and whether it is the last.
    Full(Vec<u8>, Option<String>, u64, bool),
    /// The run's time was up before the part was full: kept until the next run.
    Short(Vec<u8>, Option<String>, u64),
}

/// What a run may spend: its slice, ended the reserve before the invocation's deadline at
/// the latest. A part still gathering then is kept short until the next run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Times {
    pub stop_at: Instant,
}

impl Times {
    /// A run's times from its invocation's deadline.
    pub fn for_run(deadline: Instant, config: &ImportConfig) -> Self {
        let started = Instant::now();
        let reserved = deadline.checked_sub(config.reserve).unwrap_or(started);
        Self {
            stop_at: (started + config.export_slice).min(reserved),
        }
    }
}

/// What one queue message asks for.
pub(crate) struct Target {
    pub org: String,
    pub id: String,
    /// The export's version when the message was sent (continuations).
    pub ver: Option<u64>,
}

/// What an export run needs: the context, S3 and the settings.
pub(crate) struct Exporter<'a> {
    pub cx: &'static Context,
    pub s3: &'a aws_sdk_s3::Client,
    pub config: &'a ImportConfig,
}

/// This process's peak resident memory (Linux's `VmHWM`, as Lambda runs), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

/// The CPU time this process's threads have had (Linux's per-thread `schedstat`), for a
/// run's share of it: what a run costs where storage is not the bottleneck.
fn cpu_time() -> Option<Duration> {
    let mut ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        ns += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(ns))
}

/// The export a queue message names (`{"export": {"org", "id", "ver"?}}`: its start, or a
/// continuation).
pub(crate) fn export_target(body: &str) -> Option<Target> {
    let v = serde_json::from_str::<serde_json::Value>(body).ok()?;
    let (org, id) = (v["export"]["org"].as_str()?, v["export"]["id"].as_str()?);
    Some(Target {
        org: org.to_string(),
        id: id.to_string(),
        ver: v["export"]["ver"].as_u64(),
    })
}

impl Exporter<'_> {
    /// Runs the export `target` names within `times`: its continuation when one is due
    /// (the delay in seconds, and the version it expects); an error when the run failed
    /// (the message comes back, and the next run resumes from the last part saved).
    pub async fn run(&self, target: &Target, times: Times) -> Result<Option<(i32, u64)>, String> {
        let (started, cpu) = (Instant::now(), cpu_time());
        let (org, id) = (target.org.as_str(), target.id.as_str());
        let mut job = None;
        let advanced = crate::store::metrics::counted(self.advance(target, times, &mut job));
        let (advanced, cost) = advanced.await;
        let cpu_ms = cpu_time()
            .zip(cpu)
            .map(|(now, then)| now.saturating_sub(then).as_millis() as u64);
        // the run's cost, for the logs' metric filters and the bench
        tracing::info!(
            %org,
            export = %id,
            ddb_requests = cost.requests,
            ms = started.elapsed().as_millis() as u64,
            cpu_ms,
            peak_rss_kib = peak_rss_kib(),
            peak_bytes = job.as_ref().map(|j: &ExportItem| j.peak_bytes),
            "export run"
        );
        let ver = job.map_or(0, |j: ExportItem| j.ver);
        match advanced {
            Ok(true) => Ok(Some((0, ver))),
            Ok(false) => Ok(None),
            // another worker saved it since: it carries on, and this chain ends a minute
            // later unless that one has stopped saving meanwhile (`LIVE`)
            Err(Stop::Lost) => Ok(Some((60, ver))),
            Err(Stop::Failed(e)) => Err(e),
            Err(Stop::UploadGone | Stop::Refused(_)) => Err("unsettled S3 failure".into()),
        }
    }

    /// Works on the export until it has finished (`false`) or its time is up (`true`: to
    /// be continued); `seen` keeps the record as last read or saved.
    async fn advance(
        &self,
        target: &Target,
        times: Times,
        seen: &mut Option<ExportItem>,
    ) -> Result<bool, Stop> {
        let (org, id) = (target.org.as_str(), target.id.as_str());
        let Some(job) = self.cx.store.get_export(org, id).await? else {
            return Ok(false);
        };
        let job = seen.insert(job);
        if job.status != ExportStatus::Running {
            return Ok(false);
        }
        let recent = job
            .saved_at
            .is_some_and(|at| Timestamp::now().millis() - at.millis() < LIVE.as_millis() as i64);
        if target.ver.is_some_and(|v| v != job.ver) && recent {
            tracing::info!(%org, export = %id, "another run carries the export: this chain ends");
            return Ok(false);
        }
        let spec = match serde_json::from_str::<ExportRequest>(&job.request)
            .map_err(|e| e.to_string())
            .and_then(|r| r.spec().map_err(|e| e.message().to_string()))
        {
            Ok(spec) => spec,
            Err(why) => return self.fail(org, job, &why).await,
        };
        match self.walk(org, job, &spec, times).await {
            Err(Stop::UploadGone) => {
                // completed by a run that died before saving, or aborted
                if self.file_exists(&export_key(org, id)).await? {
                    job.status = ExportStatus::Succeeded;
                    self.finish(org, job).await
                } else {
                    self.fail(org, job, "the export's upload was lost; start a new export")
                        .await
                }
            }
            Err(Stop::Refused(why)) => {
                tracing::error!(%org, export = %id, %why, "S3 refused the export's file");
                self.fail(
                    org,
                    job,
                    "the export's file could not be written; start a new export",
                )
                .await
            }
            other => other,
        }
    }

    /// Writes parts from the checkpoint on. Each part's number is claimed (a conditional
    /// save) before it is uploaded, so two runs on one export never upload under one
    /// number: the one that loses the claim stops before it uploads anything.
    async fn walk(
        &self,
        org: &str,
        job: &mut ExportItem,
        spec: &ExportSpec,
        times: Times,
    ) -> Result<bool, Stop> {
        let store = &self.cx.store;
        let bucket = self.bucket()?;
        let key = export_key(org, &job.id);
        if let Some(slot) = &job.slot {
            if !store.renew_slot(slot, EXPORT_HOLD).await? {
                tracing::warn!(%org, export = %job.id, "export slot lapsed; the export goes on");
            }
        }
        let upload_id = match job.upload_id.clone() {
            Some(u) => u,
            None => {
                let out = self
                    .s3
                    .create_multipart_upload()
                    .bucket(bucket)
                    .key(&key)
                    .content_type("application/gzip")
                    .send()
                    .await
                    .map_err(|e| s3_stop("CreateMultipartUpload", e))?;
                let u = out.upload_id.ok_or(Stop::Failed("no upload id".into()))?;
                job.upload_id = Some(u.clone());
                self.save(job).await?;
                u
            }
        };
        let mut fresh = false;
        // what this run's walk holds of entities read and not yet written
        let mut budget = Budget::new(self.config.export_page_bytes);
        loop {
            if fresh && Instant::now() >= times.stop_at {
                return Ok(true);
            }
            job.claimed = job.claimed.max(job.parts.last().map_or(0, |p| p.number)) + 1;
            self.save(job).await?;
            let number = job.claimed;
            let gathered = self
                .part(org, spec, job, (times.stop_at, &mut budget), &mut fresh)
                .await;
            job.peak_bytes = job.peak_bytes.max(budget.peak() as u64);
            let (part, after, written, done) = match gathered {
                Ok(Gathered::Full(part, after, written, done)) => (part, after, written, done),
                Ok(Gathered::Short(part, after, written)) => {
                    // kept beside the file until the next run fills it
                    self.s3
                        .put_object()
                        .bucket(bucket)
                        .key(export_pending_key(org, &job.id))
                        .body(ByteStream::from(part))
                        .send()
                        .await
                        .map_err(|e| s3_stop("PutObject", e))?;
                    job.pending = Some(Pending { after, written });
                    self.save(job).await?;
                    return Ok(true);
                }
                Err(Err(why)) => return self.fail(org, job, &why).await,
                Err(Ok(stop)) => return Err(stop),
            };
            let uploaded = self
                .s3
                .upload_part()
                .bucket(bucket)
                .key(&key)
                .upload_id(&upload_id)
                .part_number(number)
                .body(ByteStream::from(part))
                .send()
                .await
                .map_err(|e| s3_stop("UploadPart", e))?;
            job.parts.push(ExportPart {
                number,
                etag: uploaded.e_tag.unwrap_or_default(),
            });
            (job.after, job.written, job.pending) = (after, written, None);
            if done {
                return self.complete(org, job, bucket, &key, &upload_id).await;
            }
            self.save(job).await?;
        }
    }

    /// The next part: gzip of the pages after `job.after` (or after the pending part's, its
    /// bytes first) until it holds the part size or the list ends (`true`), with the last
    /// identifier and the count after it. Each page is as many entities as `budget` leaves
    /// room for. A request the list refuses now (`Err(Err(why))`: its filter names a
    /// definition deleted since) fails the export; at `stop_at` the part is handed back
    /// short, to be kept until the next run (after one page at least: every run moves on).
    async fn part(
        &self,
        org: &str,
        spec: &ExportSpec,
        job: &ExportItem,
        (stop_at, budget): (Instant, &mut Budget),
        fresh: &mut bool,
    ) -> Result<Gathered, Result<Stop, String>> {
        let (mut after, mut written, held) = match &job.pending {
            None => (job.after.clone(), job.written, Vec::new()),
            Some(p) => {
                let key = export_pending_key(org, &job.id);
                (
                    p.after.clone(),
                    p.written,
                    self.pending_bytes(&key).await.map_err(Ok)?,
                )
            }
        };
        // gzip members one after another are one gzip file: the held bytes, then this run's
        let mut gz = GzEncoder::new(held, Compression::fast());
        let mut pages = 0;
        let cap = spec.page_size(self.config.export_page_items);
        // the page read while the one before it was packed
        let mut ahead: Option<Page> = None;
        let done = loop {
            if pages > 0 && Instant::now() >= stop_at {
                let part = gz
                    .finish()
                    .map_err(|e| Ok(Stop::Failed(format!("gzip: {e}"))))?;
                return Ok(Gathered::Short(part, after, written));
            }
            let current = match ahead.take() {
                Some(page) => page,
                None => {
                    // the run's first page brings the engine up to date (past `asOf`: the
                    // run started after the export was asked for); the others walk what it
                    // holds, as nothing else reads lists in this invocation (one message
                    // per invocation, the queue's BatchSize 1: no eviction, no reload)
                    let refresh = if *fresh { Refresh::Skip } else { Refresh::Now };
                    let cut = (after.as_deref(), budget.window(0, cap));
                    match read(self.cx, org, spec, cut, refresh).await {
                        Ok(page) => {
                            *fresh = true;
                            budget.saw(&page);
                            page
                        }
                        Err(Failure::Busy(_)) => {
                            // the list index is loading: it goes on from where it stopped
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            continue;
                        }
                        Err(e) if e.is_refusal() => return Err(Err(e.message().to_string())),
                        Err(e) => return Err(Ok(Stop::Failed(e.message().to_string()))),
                    }
                }
            };
            // the next page's read is sent before this one is packed, so the table answers
            // while this process renders (polled first, it sends its requests, then the
            // packing runs to its end); it asks for what the bytes this page leaves free
            // hold (none: it is read after). One that failed is read again above, where
            // its error is handled, and one still ahead when the part fills or the run's
            // time is up is dropped and read again by the next part or run (a page per part)
            let (last, more) = (current.last.clone(), current.more);
            let count = if more {
                budget.window(current.bytes(), cap)
            } else {
                0
            };
            let next = async {
                match count {
                    0 => None,
                    n => read(self.cx, org, spec, (last.as_deref(), n), Refresh::Skip)
                        .await
                        .ok(),
                }
            };
            let pack = async {
                // a line at a time, flushed after each page, so the bytes held are the
                // part's size (a sync flush a page costs a few bytes of the ratio)
                let (lines, held) = current
                    .write(self.cx, org, spec, &mut gz)
                    .await
                    .map_err(|e| Ok(Stop::Failed(e.message().to_string())))?;
                gz.flush()
                    .map_err(|e| Ok(Stop::Failed(format!("gzip: {e}"))))?;
                Ok::<_, Result<Stop, String>>((lines, held))
            };
            let (next, packed) = futures_util::future::join(next, pack).await;
            let (lines, held) = packed?;
            if let Some(page) = &next {
                budget.saw(page);
            }
            budget.hold(held + next.as_ref().map_or(0, Page::bytes));
            written += lines;
            ahead = next;
            pages += 1;
            if last.is_some() {
                after = last;
            }
            if !more {
                break true;
            }
            if gz.get_ref().len() >= self.config.export_part_bytes {
                break false;
            }
        };
        let part = gz
            .finish()
            .map_err(|e| Ok(Stop::Failed(format!("gzip: {e}"))))?;
        Ok(Gathered::Full(part, after, written, done))
    }

    /// The bytes of the pending part.
    async fn pending_bytes(&self, key: &str) -> Result<Vec<u8>, Stop> {
        let out = self
            .s3
            .get_object()
            .bucket(self.bucket()?)
            .key(key)
            .send()
            .await
            .map_err(|e| Stop::Failed(format!("GetObject: {e:?}")))?;
        let bytes = out
            .body
            .collect()
            .await
            .map_err(|e| Stop::Failed(format!("GetObject: {e}")))?;
        Ok(bytes.into_bytes().to_vec())
    }

    async fn complete(
        &self,
        org: &str,
        job: &mut ExportItem,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<bool, Stop> {
        let parts = job
            .parts
            .iter()
            .map(|p| {
                CompletedPart::builder()
                    .part_number(p.number)
                    .e_tag(&p.etag)
                    .build()
            })
            .collect();
        self.s3
            .complete_multipart_upload()
            .bucket(bucket)
            .key(key)
            .upload_id(upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| s3_stop("CompleteMultipartUpload", e))?;
        job.status = ExportStatus::Succeeded;
        self.finish(org, job).await
    }

    /// Ends the export as failed (its upload, if any, aborted).
    async fn fail(&self, org: &str, job: &mut ExportItem, why: &str) -> Result<bool, Stop> {
        if let (Some(upload_id), Ok(bucket)) = (&job.upload_id, self.bucket()) {
            let aborted = self
                .s3
                .abort_multipart_upload()
                .bucket(bucket)
                .key(export_key(org, &job.id))
                .upload_id(upload_id)
                .send()
                .await;
            if let Err(e) = aborted {
                tracing::warn!(export = %job.id, error = ?e, "aborting the upload failed; the bucket's lifecycle rule removes it");
            }
        }
        job.status = ExportStatus::Failed;
        job.error = Some(why.to_string());
        self.finish(org, job).await
    }

    /// Saves the finished export and gives its slot back (also when the save was an SDK
    /// retry of one that committed: the record, read again, is no longer running).
    async fn finish(&self, org: &str, job: &mut ExportItem) -> Result<bool, Stop> {
        job.finished_at = Some(Timestamp::now());
        let slot = job.slot.take();
        let saved = self.save(job).await;
        let ended = match &saved {
            Ok(()) => true,
            Err(StoreError::ConditionFailed) => {
                let now = self.cx.store.get_export(org, &job.id).await?;
                now.is_some_and(|j| j.status != ExportStatus::Running)
            }
            Err(_) => false,
        };
        if let Some(slot) = slot.filter(|_| ended) {
            self.cx.store.give_back_slot(&slot).await;
        }
        saved?;
        Ok(false)
    }

    /// Saves the export (conditional on the version read), stamped with the time.
    async fn save(&self, job: &mut ExportItem) -> Result<(), StoreError> {
        job.saved_at = Some(Timestamp::now());
        self.cx.store.save_export(job).await
    }

    async fn file_exists(&self, key: &str) -> Result<bool, Stop> {
        crate::imports::object_exists(self.s3, self.bucket()?, key)
            .await
            .map_err(Stop::Failed)
    }

    fn bucket(&self) -> Result<&str, Stop> {
        self.config
            .bucket
            .as_deref()
            .ok_or_else(|| Stop::Failed("no import bucket is configured".into()))
    }
}
