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

/// How long an export holds its slot without a checkpoint: past this, a crashed export
/// no longer counts against its organization's running exports.
pub const EXPORT_HOLD: Duration = Duration::from_secs(15 * 60);

/// Why a run stopped short.
#[derive(Debug)]
enum Stop {
    /// Another worker saved the export since this one read it: it owns it now.
    Lost,
    /// The list index is still loading, storage or S3 failed: the run resumes later.
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

/// What a run of an export needs: the context, S3 and the settings.
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

/// The export a queue message names (`{"export": {"org", "id"}}`: its start or its
/// continuation).
pub(crate) fn export_target(body: &str) -> Option<(String, String)> {
    let v = serde_json::from_str::<serde_json::Value>(body).ok()?;
    let (org, id) = (v["export"]["org"].as_str()?, v["export"]["id"].as_str()?);
    Some((org.to_string(), id.to_string()))
}

impl Exporter<'_> {
    /// Runs export `id` of `org` until `stop_at`: its continuation's delay in seconds when
    /// one is due; an error when the run failed (the message comes back, and the next run
    /// resumes from the last part saved).
    pub async fn run(&self, org: &str, id: &str, stop_at: Instant) -> Result<Option<i32>, String> {
        let started = Instant::now();
        let (advanced, cost) = crate::store::metrics::counted(self.advance(org, id, stop_at)).await;
        // the run's cost, for the logs' metric filters and the bench
        tracing::info!(
            %org,
            export = %id,
            ddb_requests = cost.requests,
            ms = started.elapsed().as_millis() as u64,
            peak_rss_kib = peak_rss_kib(),
            "export run"
        );
        match advanced {
            Ok(true) => Ok(Some(0)),
            Ok(false) => Ok(None),
            // another worker saved it since: it carries on (a minute later, this finds
            // the export where that one left it)
            Err(Stop::Lost) => Ok(Some(60)),
            Err(Stop::Failed(e)) => Err(e),
        }
    }

    /// Works on export `id` of `org` until it has finished (`false`) or its slice is over
    /// (`true`: to be continued).
    async fn advance(&self, org: &str, id: &str, stop_at: Instant) -> Result<bool, Stop> {
        let store = &self.cx.store;
        let Some(mut job) = store.get_export(org, id).await? else {
            return Ok(false);
        };
        if job.status != ExportStatus::Running {
            return Ok(false);
        }
        let spec = match serde_json::from_str::<ExportRequest>(&job.request)
            .map_err(|e| e.to_string())
            .and_then(|r| r.spec().map_err(|e| e.message))
        {
            Ok(spec) => spec,
            Err(why) => return self.fail(org, &mut job, &why).await,
        };
        let bucket = self.bucket()?;
        let key = export_key(org, id);
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
                    .map_err(|e| Stop::Failed(format!("CreateMultipartUpload: {e:?}")))?;
                let u = out.upload_id.ok_or(Stop::Failed("no upload id".into()))?;
                job.upload_id = Some(u.clone());
                store.save_export(&mut job).await?;
                u
            }
        };
        let mut fresh = false;
        loop {
            let (part, done) = match self.part(org, &spec, &mut job, stop_at, &mut fresh).await {
                Ok(p) => p,
                Err(Err(why)) => return self.fail(org, &mut job, &why).await,
                Err(Ok(stop)) => return Err(stop),
            };
            let number = job.parts.len() as i32 + 1;
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
                .map_err(|e| Stop::Failed(format!("UploadPart: {e:?}")))?;
            job.parts.push(ExportPart {
                number,
                etag: uploaded.e_tag.unwrap_or_default(),
            });
            if done {
                return self.complete(&mut job, bucket, &key, &upload_id).await;
            }
            store.save_export(&mut job).await?;
            if let Some(slot) = &job.slot {
                if !store.renew_slot(slot, EXPORT_HOLD).await? {
                    tracing::warn!(%org, export = %id, "export slot lapsed; the export goes on");
                }
            }
            if Instant::now() >= stop_at {
                return Ok(true);
            }
        }
    }

    /// The next part: gzip of the pages after `job.after` until it holds the part size or
    /// the list ends (`true`). `job.after` and `job.written` move on with it. A request
    /// the list refuses now (`Err(Err(why))`: its filter names a definition deleted since)
    /// fails the export.
    async fn part(
        &self,
        org: &str,
        spec: &ExportSpec,
        job: &mut ExportItem,
        stop_at: Instant,
        fresh: &mut bool,
    ) -> Result<(Vec<u8>, bool), Result<Stop, String>> {
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        let (mut after, mut written) = (job.after.clone(), job.written);
        let done = loop {
            // the run's first page brings the engine up to date (past `asOf`: the run
            // started after the export was asked for); the others walk what it holds, as
            // nothing else reads lists in this invocation (no eviction, no reload)
            let refresh = if *fresh { Refresh::Skip } else { Refresh::Now };
            let size = spec.page_size(self.config.export_page_items);
            let lines = match page(self.cx, org, spec, (after.as_deref(), size), refresh).await {
                Ok(lines) => {
                    *fresh = true;
                    lines
                }
                Err(e) if e.status == 503 && Instant::now() < stop_at => {
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
        (job.after, job.written) = (after, written);
        Ok((part, done))
    }

    async fn complete(
        &self,
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
            .map_err(|e| Stop::Failed(format!("CompleteMultipartUpload: {e:?}")))?;
        // (a run that completed the upload but died before saving finds the upload gone:
        // its UploadPart fails until the message is dead-lettered, and the export stays
        // running; rare enough to leave to the alarm on the dead-letter queue)
        job.status = ExportStatus::Succeeded;
        self.finish(job).await
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
        self.finish(job).await
    }

    /// Saves the finished export and gives its slot back.
    async fn finish(&self, job: &mut ExportItem) -> Result<bool, Stop> {
        job.finished_at = Some(Timestamp::now());
        let slot = job.slot.take();
        self.cx.store.save_export(job).await?;
        if let Some(slot) = slot {
            self.cx.store.give_back_slot(&slot).await;
        }
        Ok(false)
    }

    fn bucket(&self) -> Result<&str, Stop> {
        self.config
            .bucket
            .as_deref()
            .ok_or_else(|| Stop::Failed("no import bucket is configured".into()))
    }
}
