//! `/imports` routes (scope `catalog:write`): an import is created with a presigned upload
//! URL; the upload starts it (S3 event → import queue → `workers/import.rs`); its progress,
//! counts and first errors are read back here. The same function serves `/exports`
//! (`exports.rs`): both are files moved through the import bucket and queue.

use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::apikey::prefixed_ulid;
use crate::auth::Scope;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::body::present;
use crate::http::cursor::CursorPageParams;
use crate::http::doc::{QueryDoc, NO_QUERY, PAGE};
use crate::http::render::to_json;
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Credential, Doc, Paging, Route};
use crate::imports::object_key;
use crate::store::imports::{ImportError, ImportItem, ImportStatus};
use crate::usecases::export::ExportRequest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new("GET", "/imports", Scope::CatalogWrite, Doc::new("List imports, newest first", PAGE, None, 200, Body::List("Import"))),
        handler!(list),
    ),
    Endpoint::new(
        Route::new("POST", "/imports", Scope::CatalogWrite, Doc::new("Create an import: PUT the NDJSON file (the bodies of PATCH /products, one per line, up to 5 GiB) to the returned `uploadUrl` within an hour; the upload starts it", NO_QUERY, Some(request::<NewImport>), 201, Body::Single("ImportCreated"))),
        handler!(create),
    ),
    Endpoint::new(
        Route::new("GET", "/imports/{id}", Scope::CatalogWrite, Doc::new("An import's status, counts and first 100 failed lines", NO_QUERY, None, 200, Body::Single("Import"))),
        handler!(get),
    ),
    Endpoint::new(
        Route::new("GET", "/exports", Scope::CatalogRead, Doc::new("List exports, newest first (kept 7 days), by `page` or `cursor`", QueryDoc::of::<CursorPageParams>(), None, 200, Body::List("Export"))),
        handler!(super::exports::list),
    ),
    Endpoint::new(
        Route::new("POST", "/exports", Scope::CatalogRead, Doc::new("Start an export of products, variants or SKUs (a list's filter, include and selectors) into one gzip NDJSON file, in identifier order; at most 2 run at once per organization", NO_QUERY, Some(request::<ExportRequest>), 202, Body::Single("Export"))),
        handler!(super::exports::create),
    ),
    Endpoint::new(
        Route::new("GET", "/exports/{id}", Scope::CatalogRead, Doc::new("An export's status and, once succeeded, its download URL (valid 1 hour)", NO_QUERY, None, 200, Body::Single("Export"))),
        handler!(super::exports::get),
    ),
    Endpoint::new(
        Route::new("DELETE", "/exports/{id}", Scope::SettingsManage, Doc::delete("Erase a finished export: its file, then its record (for personal data; 409 while it runs)")),
        handler!(super::exports::delete),
    ),
];

pub const API: Api = Api {
    function: "imports",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::LISTS.with_s3(),
};

/// An import as served (decisions.md).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Import")]
struct ImportView<'a> {
    id: &'a str,
    status: ImportStatus,
    /// Lines in the file, once counted
    total: Option<u64>,
    processed: u64,
    created: u64,
    updated: u64,
    failed: u64,
    /// The first 100 failed lines
    errors: &'a [ImportError],
    created_at: Timestamp,
    started_at: Option<Timestamp>,
    finished_at: Option<Timestamp>,
}

/// A new import: where to upload its file.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ImportCreated")]
struct CreatedView<'a> {
    #[serde(flatten)]
    import: ImportView<'a>,
    /// Presigned S3 URL: PUT the file here (null in an idempotent replay of this answer:
    /// no credential is kept)
    #[schemars(with = "Option<String>")]
    upload_url: Credential<'a>,
    expires_at: Timestamp,
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] =
    &[schema::answer::<ImportView>, schema::answer::<CreatedView>];

fn view(job: &ImportItem) -> ImportView<'_> {
    ImportView {
        id: &job.id,
        status: job.status,
        total: job.total,
        processed: job.processed,
        created: job.created,
        updated: job.updated,
        failed: job.failed,
        errors: &job.errors,
        created_at: job.created_at,
        started_at: job.started_at,
        finished_at: job.finished_at,
    }
}

/// An import as served (decisions.md).
pub fn render(job: &ImportItem) -> Value {
    to_json(view(job))
}

/// The body of POST /imports.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ImportCreate")]
struct NewImport {
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "ndjson")]
    format: Option<String>,
}

/// The one file format.
fn ndjson(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"enum": ["ndjson"]})
}

/// POST /imports `{"format": "ndjson"}`: 201 with the upload URL (valid one hour).
async fn create(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: NewImport = call.body(app)?;
    match body.format.as_deref() {
        None | Some("ndjson") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "field 'format': '{other}' is not supported (allowed: ndjson)"
            )))
        }
    }
    let (Some(s3), Some(bucket)) = (&app.s3, &app.config.imports.bucket) else {
        return Err(ApiError::new(
            503,
            "imports are not configured for this deployment",
        ));
    };
    let id = prefixed_ulid("imp_");
    let now = Timestamp::now();
    let ttl = app.config.imports.upload_ttl;
    let expires = Timestamp::from_millis(now.millis() + ttl.as_millis() as i64);
    let presigning = aws_sdk_s3::presigning::PresigningConfig::expires_in(ttl).map_err(|e| {
        tracing::error!(error = %e, "presigning config");
        ApiError::internal()
    })?;
    let upload = s3
        .put_object()
        .bucket(bucket)
        .key(object_key(call.org(), &id))
        .presigned(presigning)
        .await
        .map_err(|e| {
            tracing::error!(error = ?e, "presigning the upload URL");
            ApiError::internal()
        })?;
    let job = ImportItem::new(call.org(), &id, now, expires);
    app.store.create_import(&job, call.guard()).await?;
    let created = CreatedView {
        import: view(&job),
        upload_url: Credential(upload.uri()),
        expires_at: expires,
    };
    Ok(ApiResponse::shown(201, &created))
}

async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "import")?;
    let job = app
        .store
        .get_import(call.org(), id)
        .await?
        .ok_or_else(|| ApiError::entity_not_found("import", id))?;
    Ok(ApiResponse::single(200, render(&job)))
}

/// GET /imports: newest first.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let query = &call.query;
    let paging = Paging::from_query(query)?;
    let all = app.store.list_imports(call.org()).await?;
    Ok(paging.envelope(&all, render))
}
