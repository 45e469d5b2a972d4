//! The export worker (run by `import-worker`, on the import queue): walks an export's list
//! in identifier order from its checkpoint, renders each page (`usecases/export.rs`) into
//! a gzip member, and uploads each member of about `CATALOG_EXPORT_PART_BYTES` as one part
//! of an S3 multipart upload (concatenated gzip members are one gzip file). After each part
//! it saves the part's ETag and the last identifier in it in one conditional write, so
//! at most one part's work is redone after a crash and memory holds one part; past its
//! slice it queues its continuation. The last part completes the upload.

use crate::context::Context;
use crate::domain::time::Timestamp;
use crate::imports::{export_key, ImportConfig};
use crate::store::exports::{ExportItem, ExportPart, ExportStatus};
use crate::store::StoreError;
use crate::usecases::export::{page, ExportRequest, ExportSpec};
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
    /// The run's time is up mid-part: what it had of the part is dropped and redone.
    Later,
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

/// What a run may spend: no part starts after `stop_at` (a part that would end past it, as
/// long as the last one took, neither), and a part still gathering at `hard_stop` (just
/// before the invocation's deadline) is dropped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Times {
    pub stop_at: Instant,
    pub hard_stop: Instant,
}

impl Times {
    /// A run's times from its invocation's deadline: its slice, ended the reserve before
    /// the deadline at the latest, and a hard stop 5 s before it.
    pub fn for_run(deadline: Instant, config: &ImportConfig) -> Self {
        let started = Instant::now();
        let reserved = deadline.checked_sub(config.reserve).unwrap_or(started);
        Self {
            stop_at: (started + config.export_slice).min(reserved),
            hard_stop: deadline
                .checked_sub(Duration::from_secs(5))
                .unwrap_or(started),
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
        let started = Instant::now();
        let (org, id) = (target.org.as_str(), target.id.as_str());
        let mut job = None;
        let advanced = crate::store::metrics::counted(self.advance(target, times, &mut job));
        let (advanced, cost) = advanced.await;
        // the run's cost, for the logs' metric filters and the bench
        tracing::info!(
            %org,
            export = %id,
            ddb_requests = cost.requests,
            ms = started.elapsed().as_millis() as u64,
            peak_rss_kib = peak_rss_kib(),
            "export run"
        );
        let ver = job.map_or(0, |j: ExportItem| j.ver);
        match advanced {
            Ok(true) | Err(Stop::Later) => Ok(Some((0, ver))),
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
            .and_then(|r| r.spec().map_err(|e| e.message))
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
        let (mut fresh, mut last_part) = (false, None::<Duration>);
        loop {
            if last_part.is_some_and(|took| Instant::now() + took >= times.stop_at) {
                return Ok(true);
            }
            let began = Instant::now();
            job.claimed = job.claimed.max(job.parts.last().map_or(0, |p| p.number)) + 1;
            self.save(job).await?;
            let number = job.claimed;
            let gathered = self.part(org, spec, job, times.hard_stop, &mut fresh).await;
            let (part, after, written, done) = match gathered {
                Ok(p) => p,
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
            (job.after, job.written) = (after, written);
            if done {
                return self.complete(org, job, bucket, &key, &upload_id).await;
            }
            self.save(job).await?;
            last_part = Some(began.elapsed());
        }
    }

    /// The next part: gzip of the pages after `job.after` until it holds the part size or
    /// the list ends (`true`), with the last identifier and the count after it. A request
    /// the list refuses now (`Err(Err(why))`: its filter names a definition deleted since)
    /// fails the export; past `hard_stop` the part is dropped ([`Stop::Later`]).
    #[allow(clippy::type_complexity)]
    async fn part(
        &self,
        org: &str,
        spec: &ExportSpec,
        job: &ExportItem,
        hard_stop: Instant,
        fresh: &mut bool,
    ) -> Result<(Vec<u8>, Option<String>, u64, bool), Result<Stop, String>> {
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        let (mut after, mut written) = (job.after.clone(), job.written);
        let done = loop {
            if Instant::now() >= hard_stop {
                return Err(Ok(Stop::Later));
            }
            // the run's first page brings the engine up to date (past `asOf`: the run
            // started after the export was asked for); the others walk what it holds, as
            // nothing else reads lists in this invocation (one message per invocation,
            // the queue's BatchSize 1: no eviction, no reload)
            let refresh = if *fresh { Refresh::Skip } else { Refresh::Now };
            let size = spec.page_size(self.config.export_page_items);
            let lines = match page(self.cx, org, spec, (after.as_deref(), size), refresh).await {
                Ok(lines) => {
                    *fresh = true;
                    lines
                }
                Err(e) if e.status == 503 => {
                    // the list index is loading: it goes on from where it stopped
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                Err(e) if e.status >= 500 => return Err(Ok(Stop::Failed(e.message))),
                Err(e) => return Err(Err(e.message)),
            };
            // flushed after each page, so the bytes held are the part's size (a sync flush
            // a page costs a few bytes of the ratio)
            gz.write_all(&lines.text)
                .and_then(|()| gz.flush())
                .map_err(|e| Ok(Stop::Failed(format!("gzip: {e}"))))?;
            written += lines.count;
            if lines.last.is_some() {
                after = lines.last;
            }
            if !lines.more {
                break true;
            }
            if gz.get_ref().len() >= self.config.export_part_bytes {
                break false;
            }
        };
        let part = gz
            .finish()
            .map_err(|e| Ok(Stop::Failed(format!("gzip: {e}"))))?;
        Ok((part, after, written, done))
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
        match self
            .s3
            .head_object()
            .bucket(self.bucket()?)
            .key(key)
            .send()
            .await
        {
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
}
