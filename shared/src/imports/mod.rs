//! Imports of NDJSON files larger than one request: the client uploads to a presigned S3
//! URL, the upload's event notification reaches the import queue, and the import worker
//! applies the file in batches through the bulk write path, checkpointing after each batch
//! (`lines.rs` splits the file, `client.rs` is the operator CLI's upload with a progress
//! bar; the worker that runs a job is `workers/import.rs`).

pub mod checkpoints;
pub mod client;
pub(crate) mod exported;
pub(crate) mod lines;

use std::time::Duration;

/// Import settings, read once at cold start.
#[derive(Debug, Clone)]
pub struct ImportConfig {
    /// The bucket uploads go to (`CATALOG_IMPORT_BUCKET`); unset, imports are off.
    pub bucket: Option<String>,
    /// The bucket list checkpoints go to (`CATALOG_CHECKPOINT_BUCKET`; the imports' bucket
    /// as deployed); unset, a cold process reads the index in full.
    pub checkpoint_bucket: Option<String>,
    /// The import queue (`CATALOG_IMPORT_QUEUE_URL`): the worker queues its own continuation.
    pub queue_url: Option<String>,
    /// Lines applied per batch and checkpoint (`CATALOG_IMPORT_BATCH_LINES`, default 1000).
    pub batch_lines: usize,
    /// The most one invocation works before it hands over to a continuation message
    /// (`CATALOG_IMPORT_SLICE_SECONDS`; default: until `reserve` before the deadline).
    pub slice: Option<Duration>,
    /// Time kept free before the invocation's deadline (`CATALOG_IMPORT_RESERVE_SECONDS`,
    /// default 20): no batch starts later than this.
    pub reserve: Duration,
    /// How long an upload URL works (decisions.md: 1 hour).
    pub upload_ttl: Duration,
    /// How long an import waits before it tries again while another import of its
    /// organization runs (`CATALOG_IMPORT_WAIT_SECONDS`, default 30).
    pub wait: Duration,
    /// An export's parts hold about this many gzip bytes (`CATALOG_EXPORT_PART_BYTES`,
    /// default 8 MiB; S3 refuses parts under 5 MiB but the last, so lower only against an
    /// emulator told so): the most of the file the worker holds, and its checkpoint step.
    pub export_part_bytes: usize,
    /// Entities an export reads per page at most (`CATALOG_EXPORT_PAGE_ITEMS`, default 200;
    /// a tenth of it when lines embed their trees).
    pub export_page_items: usize,
    /// The most bytes of entities an export's walk holds read and not yet written
    /// (`CATALOG_EXPORT_PAGE_BYTES`, default 8 MiB, as DynamoDB counts items): its pages are
    /// cut by it (`usecases/export/pages.rs`).
    pub export_page_bytes: usize,
    /// The most one invocation works on an export before it hands over to a continuation
    /// (`CATALOG_EXPORT_SLICE_SECONDS`, default 120), so the jobs on the queue take turns.
    pub export_slice: Duration,
}

impl Default for ImportConfig {
    fn default() -> Self {
        Self {
            bucket: None,
            checkpoint_bucket: None,
            queue_url: None,
            batch_lines: 1000,
            slice: None,
            reserve: Duration::from_secs(20),
            upload_ttl: Duration::from_secs(3600),
            wait: Duration::from_secs(30),
            export_part_bytes: 8 * 1024 * 1024,
            export_page_items: 200,
            export_page_bytes: 8 * 1024 * 1024,
            export_slice: Duration::from_secs(120),
        }
    }
}

impl ImportConfig {
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Self {
        let d = Self::default();
        let text = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let number = |name: &str| text(name).and_then(|v| v.trim().parse::<u64>().ok());
        Self {
            bucket: text("CATALOG_IMPORT_BUCKET"),
            checkpoint_bucket: text("CATALOG_CHECKPOINT_BUCKET"),
            queue_url: text("CATALOG_IMPORT_QUEUE_URL"),
            batch_lines: number("CATALOG_IMPORT_BATCH_LINES")
                .map(|n| n.clamp(1, crate::domain::limits::MAX_BULK_ITEMS as u64) as usize)
                .unwrap_or(d.batch_lines),
            slice: number("CATALOG_IMPORT_SLICE_SECONDS")
                .filter(|n| *n > 0)
                .map(Duration::from_secs),
            reserve: number("CATALOG_IMPORT_RESERVE_SECONDS")
                .map(Duration::from_secs)
                .unwrap_or(d.reserve),
            upload_ttl: d.upload_ttl,
            wait: number("CATALOG_IMPORT_WAIT_SECONDS")
                .map(|n| Duration::from_secs(n.clamp(1, 900)))
                .unwrap_or(d.wait),
            export_part_bytes: number("CATALOG_EXPORT_PART_BYTES")
                .map(|n| n.clamp(1, 1 << 30) as usize)
                .unwrap_or(d.export_part_bytes),
            export_page_items: number("CATALOG_EXPORT_PAGE_ITEMS")
                .map(|n| n.clamp(1, 1000) as usize)
                .unwrap_or(d.export_page_items),
            export_page_bytes: number("CATALOG_EXPORT_PAGE_BYTES")
                .map(|n| n.clamp(1, 1 << 30) as usize)
                .unwrap_or(d.export_page_bytes),
            export_slice: number("CATALOG_EXPORT_SLICE_SECONDS")
                .map(|n| Duration::from_secs(n.clamp(1, 900)))
                .unwrap_or(d.export_slice),
        }
    }
}

/// Where an import's file lives in the bucket.
pub fn object_key(org: &str, id: &str) -> String {
    format!("imports/{org}/{id}.ndjson")
}

/// Where an export's file lives in the bucket (a lifecycle rule removes `exports/` files
/// after 7 days).
pub fn export_key(org: &str, id: &str) -> String {
    format!("exports/{org}/{id}.ndjson.gz")
}

/// Where an export keeps a part still short of its size between two runs.
pub fn export_pending_key(org: &str, id: &str) -> String {
    format!("exports/{org}/{id}.pending")
}

/// The organization and import of an object key (as S3 event notifications give it,
/// URL-encoded with `+` for spaces).
pub fn parse_object_key(encoded: &str) -> Option<(String, String)> {
    let plus = encoded.replace('+', " ");
    let key = percent_encoding::percent_decode_str(&plus)
        .decode_utf8()
        .ok()?;
    let rest = key.strip_prefix("imports/")?;
    let (org, file) = rest.split_once('/')?;
    let id = file.strip_suffix(".ndjson")?;
    let plain =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    (plain(org) && plain(id)).then(|| (org.to_string(), id.to_string()))
}

/// Whether `key` exists in `bucket` (HeadObject): the import and export workers' check.
pub async fn object_exists(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
) -> Result<bool, String> {
    match s3.head_object().bucket(bucket).key(key).send().await {
        Ok(_) => Ok(true),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(false),
        Err(e) => Err(format!("HeadObject: {e:?}")),
    }
}

/// An S3 client for the configured endpoint: path-style addressing when an endpoint
/// override is set (a local S3), virtual-hosted otherwise.
pub fn s3_client(shared: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let local =
        std::env::var("AWS_ENDPOINT_URL_S3").is_ok() || std::env::var("AWS_ENDPOINT_URL").is_ok();
    let config = aws_sdk_s3::config::Builder::from(shared)
        .force_path_style(local)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_round_trip_and_refuse_strangers() {
        let key = object_key("abc123", "imp_01ARZ");
        assert_eq!(key, "imports/abc123/imp_01ARZ.ndjson");
        assert_eq!(
            parse_object_key("imports%2Fabc123%2Fimp_01ARZ.ndjson"),
            Some(("abc123".into(), "imp_01ARZ".into()))
        );
        assert_eq!(
            parse_object_key(&key),
            Some(("abc123".into(), "imp_01ARZ".into()))
        );
        assert_eq!(parse_object_key("imports/abc123/x.csv"), None);
        assert_eq!(parse_object_key("other/abc123/x.ndjson"), None);
        assert_eq!(parse_object_key("imports/a+b/x.ndjson"), None);
        assert_eq!(parse_object_key("imports/../x.ndjson"), None);
    }

    #[test]
    fn settings_have_bounds() {
        let c = ImportConfig::from_lookup(&|n: &str| match n {
            "CATALOG_IMPORT_BATCH_LINES" => Some("5000".into()),
            "CATALOG_IMPORT_SLICE_SECONDS" => Some("2".into()),
            _ => None,
        });
        assert_eq!(c.batch_lines, 1000);
        assert_eq!(c.slice, Some(Duration::from_secs(2)));
        assert_eq!(c.bucket, None);
    }
}
