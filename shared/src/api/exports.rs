//! `/exports` routes (scope `catalog:read`, served by the `imports` function): an export
//! is checked and counted here, then run by the import worker from the import queue
//! (`workers/export.rs`); its status, and once written a presigned download URL, are read
//! back here (decisions.md, "Exports and gapless sync"). The list reads only its page and
//! the organization's export counts (`store/exports.rs`), whatever it holds beyond the
//! page: `page` or a `cursor` (sealed like the lists' cursors), newest first. A finished
//! export is erased with its files by `DELETE /exports/{id}`.

use crate::app::{App, Call};
use crate::auth::apikey::prefixed_ulid;
use crate::domain::limits::MAX_RUNNING_EXPORTS;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::cursor::{CursorPageParams, CursorPaging, Start};
use crate::http::render::to_json;
use crate::http::schema;
use crate::http::ApiResponse;
use crate::imports::{export_key, export_pending_key};
use crate::store::exports::{ExportItem, ExportStatus};
use crate::store::metrics::in_parallel;
use crate::usecases::export::{count, ExportRequest};
use crate::workers::export::EXPORT_HOLD;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};
use std::time::Duration;

/// An export's `asOf` is this long before it was asked for: a write whose time is earlier
/// has committed by the time the walk reads (docs/design/writes.md, "Exports").
const AS_OF_OVERLAP_MS: i64 = 5_000;

/// The most an export's request (its filter, include and selectors as JSON) may hold.
const MAX_REQUEST_BYTES: usize = 32 * 1024;

/// How long a download URL works (decisions.md).
const URL_TTL: Duration = Duration::from_secs(3600);

/// When every export slot is taken, the client is told to come back this much later.
const BUSY_RETRY_SECONDS: u32 = 30;

/// An export as served (decisions.md).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Export")]
struct ExportView<'a> {
    id: &'a str,
    status: ExportStatus,
    /// The file plus `updated_after=<asOf>` and `/deletions?updated_after=<asOf>` is the catalog
    as_of: Timestamp,
    /// Entities the list held when the export started
    total: u64,
    /// Lines written so far
    written: u64,
    /// Presigned GET of the gzip NDJSON file, once succeeded (valid until `expiresAt`)
    url: Option<String>,
    expires_at: Option<Timestamp>,
    error: Option<&'a str>,
    created_at: Timestamp,
    finished_at: Option<Timestamp>,
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] = &[schema::answer::<ExportView>];

/// The export as served: the download URL is presigned now (no request), while the file
/// is kept.
async fn render(app: &App, org: &str, job: &ExportItem) -> Result<Value, ApiError> {
    let now = Timestamp::now();
    let (mut url, mut expires_at) = (None, None);
    if let (true, Some(s3), Some(bucket)) =
        (job.file_kept(now), &app.s3, &app.config.imports.bucket)
    {
        let presigning =
            aws_sdk_s3::presigning::PresigningConfig::expires_in(URL_TTL).map_err(|e| {
                tracing::error!(error = %e, "presigning config");
                ApiError::internal()
            })?;
        let get = s3
            .get_object()
            .bucket(bucket)
            .key(export_key(org, &job.id))
            .presigned(presigning)
            .await
            .map_err(|e| {
                tracing::error!(error = ?e, "presigning the download URL");
                ApiError::internal()
            })?;
        url = Some(get.uri().to_string());
        expires_at = Some(Timestamp::from_millis(
            now.millis() + URL_TTL.as_millis() as i64,
        ));
    }
    Ok(to_json(ExportView {
        id: &job.id,
        status: job.status,
        as_of: job.as_of,
        total: job.total,
        written: job.written,
        url,
        expires_at,
        error: job.error.as_deref(),
        created_at: job.created_at,
        finished_at: job.finished_at,
    }))
}

/// POST /exports: checked and counted as the list would be, then queued: 202.
pub async fn create(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: ExportRequest = call.body(app)?;
    let spec = body.spec()?;
    // kept in the export's item (DynamoDB's 400 KB): bounded before any read or write
    let request = serde_json::to_string(&body).map_err(|_| ApiError::internal())?;
    if request.len() > MAX_REQUEST_BYTES {
        return Err(ApiError::bad_request(format!(
            "the export's request is {} bytes as JSON, more than the {MAX_REQUEST_BYTES} an export keeps",
            request.len()
        )));
    }
    let (Some(_), Some(_), Some(sqs), Some(queue)) = (
        &app.s3,
        &app.config.imports.bucket,
        &app.sqs,
        &app.config.imports.queue_url,
    ) else {
        return Err(ApiError::new(
            503,
            "exports are not configured for this deployment",
        ));
    };
    let org = call.org();
    let now = Timestamp::now();
    let as_of = Timestamp::from_millis(now.millis() - AS_OF_OVERLAP_MS);
    let total = count(app, org, &spec).await?;
    let slot = app
        .store
        .take_slot(org, "export", MAX_RUNNING_EXPORTS, EXPORT_HOLD)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                429,
                format!(
                    "too many running exports: at most {MAX_RUNNING_EXPORTS} run at once per organization; retry after {BUSY_RETRY_SECONDS} s"
                ),
            )
            .with_header("retry-after", BUSY_RETRY_SECONDS.to_string())
        })?;
    let id = prefixed_ulid("exp_");
    let mut job = ExportItem::new(org, &id, request, now, as_of);
    job.total = total;
    job.slot = Some(slot.clone());
    if let Err(e) = app.store.create_export(&job, call.guard()).await {
        app.store.give_back_slot(&slot).await;
        return Err(e.into());
    }
    let sent = sqs
        .send_message()
        .queue_url(queue)
        .message_body(json!({"export": {"org": org, "id": id}}).to_string())
        .send()
        .await;
    if let Err(e) = sent {
        tracing::error!(error = ?e, export = %id, "queueing the export");
        job.status = ExportStatus::Failed;
        job.error = Some("the export could not be started; create it again".into());
        job.finished_at = Some(Timestamp::now());
        job.slot = None;
        let _ = app.store.save_export(&mut job).await;
        app.store.give_back_slot(&slot).await;
        return Err(ApiError::new(503, "the export could not be started; retry"));
    }
    Ok(ApiResponse::single(202, render(app, org, &job).await?))
}

/// GET /exports/{id}.
pub async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "export")?;
    let job = app
        .store
        .get_export(call.org(), id)
        .await?
        .ok_or_else(|| ApiError::entity_not_found("export", id))?;
    Ok(ApiResponse::single(
        200,
        render(app, call.org(), &job).await?,
    ))
}

/// DELETE /exports/{id}: erases a finished export for personal data. Its file and the part
/// a run kept beside it are deleted from the bucket first (one DeleteObjects), then its
/// record, taken out of the counts (one transaction): a failure leaves the record, so the
/// call can be made again, never a file without its record. 200 with `{"identifier",
/// "deleted": true}`; 404 when there is none; 409 while it runs. Scope `settings:manage`,
/// as the erasure of history.
pub async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "export")?;
    let org = call.org();
    let not_found = || ApiError::entity_not_found("export", id);
    let job = app.store.get_export(org, id).await?.ok_or_else(not_found)?;
    if job.status == ExportStatus::Running {
        return Err(ApiError::conflict(format!(
            "export {id} is running: delete it once it has finished (GET /exports/{id} tells when)"
        )));
    }
    delete_files(app, org, id).await?;
    match app.store.delete_export(&job).await {
        Ok(()) => {}
        // another call deleted it meanwhile
        Err(crate::store::StoreError::ConditionFailed) => return Err(not_found()),
        Err(e) => return Err(e.into()),
    }
    Ok(ApiResponse::single(200, crate::http::render::deleted(id)))
}

/// Deletes the export's file and its kept part from the bucket (either may be absent).
async fn delete_files(app: &App, org: &str, id: &str) -> Result<(), ApiError> {
    let (Some(s3), Some(bucket)) = (&app.s3, &app.config.imports.bucket) else {
        return Ok(());
    };
    let unavailable = |e: &dyn std::fmt::Debug| {
        tracing::error!(error = ?e, export = id, "deleting the export's files");
        ApiError::unavailable()
    };
    let objects = [export_key(org, id), export_pending_key(org, id)]
        .into_iter()
        .map(|key| {
            aws_sdk_s3::types::ObjectIdentifier::builder()
                .key(key)
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unavailable(&e))?;
    let delete = aws_sdk_s3::types::Delete::builder()
        .set_objects(Some(objects))
        .quiet(true)
        .build()
        .map_err(|e| unavailable(&e))?;
    let out = s3
        .delete_objects()
        .bucket(bucket)
        .delete(delete)
        .send()
        .await
        .map_err(|e| unavailable(&e))?;
    // a key that is absent is deleted too; any error is one S3 could not delete
    if let Some(e) = out.errors.as_ref().and_then(|e| e.first()) {
        return Err(unavailable(e));
    }
    Ok(())
}

/// GET /exports: newest first. One Query reads the page's records (a cursor's page:
/// `limit + 1`, to tell whether more follow; a numbered page: the records up to its end) and
/// one GetItem the counts, in one round trip; the counts' total, or, when the page's Query
/// read the list to its end, the number it read. An organization without counts (none
/// created since they began) is counted by a COUNT Query.
pub async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let params = call.query.typed::<CursorPageParams>()?;
    let org = call.org();
    let paging = CursorPaging::open(&params, &app.config.cursor_key, org, "exports".into())?;
    let limit = paging.limit as usize;
    let (after, skip, want) = match &paging.start {
        Start::After(id) => (Some(id.as_str()), 0, limit + 1),
        Start::Page(_) => (None, paging.offset(), paging.offset().saturating_add(limit)),
    };
    let now = Timestamp::now();
    let (page, counted) = in_parallel(async {
        futures_util::try_join!(
            app.store.list_exports(org, after, want, now),
            app.store.export_total(org, now)
        )
    })
    .await?;
    let read = page.jobs.len();
    let total = match (&paging.start, counted) {
        // every live record, from the newest
        (Start::Page(_), _) if !page.more => read as u64,
        (_, Some(total)) => total,
        (_, None) => app.store.count_live_exports(org, now).await?,
    };
    let shown: Vec<&ExportItem> = page.jobs.iter().skip(skip).take(limit).collect();
    let more = match paging.start {
        Start::After(_) => read > limit,
        Start::Page(_) => shown.len() == limit && page.more && total > want as u64,
    };
    let mut result = Vec::with_capacity(shown.len());
    for job in &shown {
        result.push((render(app, org, job).await?, job.id.clone()));
    }
    let next = more.then(|| shown.last().map(|j| j.id.as_str())).flatten();
    paging.respond(result, total as usize, next)
}
