//! The import side of the local stack for e2e tests, wired as the template wires it: moto's
//! S3 (the import bucket, notifying the import queue of every upload) and SQS (the queue),
//! and the local event source mapping feeding the queue to the real `import-worker` binary.
//!
//! Call `imports().await` first in a test that creates imports: the functions must start
//! with the bucket and queue in their environment.

use crate::local::{create_import_resources, run_queue, Invoker};
use crate::webhooks::{eventually, moto, sqs_client};
use crate::Org;
use serde_json::{json, Value};
use std::time::Duration;

pub const BUCKET: &str = "catalog-imports-e2e";
/// Lines per batch and checkpoint in the tests: an import of 10,000 lines has 20.
pub const BATCH_LINES: usize = 500;
/// An export's parts in the tests (S3's floor is 5 MiB; moto runs with this one).
pub const EXPORT_PART_BYTES: usize = 1024;
/// What an export's walk holds of entities read and not yet written, in the tests (8 MiB
/// as deployed): a few products of tens of KB.
pub const EXPORT_PAGE_BYTES: usize = 100_000;

pub struct Imports {
    pub queue_url: String,
}

static IMPORTS: tokio::sync::OnceCell<Imports> = tokio::sync::OnceCell::const_new();

/// Starts (once) the bucket, the queue, the notification and the poller, with the tests'
/// settings: batches of [`BATCH_LINES`], a continuation after about a second.
pub async fn imports() -> &'static Imports {
    IMPORTS
        .get_or_init(|| {
            start(vec![
                ("CATALOG_IMPORT_BATCH_LINES", BATCH_LINES.to_string()),
                ("CATALOG_IMPORT_SLICE_SECONDS", "1".into()),
                ("CATALOG_IMPORT_RESERVE_SECONDS", "0".into()),
                ("CATALOG_IMPORT_WAIT_SECONDS", "1".into()),
                // exports: pages of 10 (a tree per line: 1) and 100 KB, parts of 1 KiB (moto
                // is told so), a continuation every second: a small export has many
                // checkpoints
                ("CATALOG_EXPORT_PAGE_ITEMS", "10".into()),
                ("CATALOG_EXPORT_PAGE_BYTES", EXPORT_PAGE_BYTES.to_string()),
                ("CATALOG_EXPORT_PART_BYTES", EXPORT_PART_BYTES.to_string()),
                ("CATALOG_EXPORT_SLICE_SECONDS", "1".into()),
            ])
        })
        .await
}

/// The same stack with the production settings (batches of 1,000 lines, continuations
/// before the invocation's deadline), for the benchmark.
pub async fn imports_as_deployed() -> &'static Imports {
    IMPORTS.get_or_init(|| start(Vec::new())).await
}

/// Lines per run in [`imports_chained`]: every run applies one batch and continues.
pub const CHAINED_BATCH_LINES: usize = 5;

/// The stack for long continuation chains: every run applies one batch of
/// [`CHAINED_BATCH_LINES`] and queues its continuation (the time it keeps before its deadline
/// is more than it has), and the worker sends through `sqs_trace.rs`, so its messages carry
/// the chain's trace header as on AWS: an import of 100 lines is a chain of 21 invocations.
pub async fn imports_chained() -> &'static Imports {
    IMPORTS
        .get_or_init(|| async {
            let traced = crate::sqs_trace::start(moto().to_string());
            start_with(
                vec![
                    (
                        "CATALOG_IMPORT_BATCH_LINES",
                        CHAINED_BATCH_LINES.to_string(),
                    ),
                    ("CATALOG_IMPORT_RESERVE_SECONDS", "86400".into()),
                ],
                Some(traced),
            )
            .await
        })
        .await
}

/// An S3 client for the emulator (path-style, as the functions use it locally).
pub fn s3_client(endpoint: &str) -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "local", "local", None, None, "e2e",
        ))
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

async fn start(settings: Vec<(&'static str, String)>) -> Imports {
    start_with(settings, None).await
}

/// The stack; the functions reach SQS through `functions_sqs` when given.
async fn start_with(
    settings: Vec<(&'static str, String)>,
    functions_sqs: Option<String>,
) -> Imports {
    let stack = crate::stack().await;
    let endpoint = moto().to_string();
    let sqs = sqs_client(&endpoint);
    let queue_url = create_import_resources(&sqs, &s3_client(&endpoint), BUCKET, 5)
        .await
        .expect("import bucket and queue");
    stack.runtime.extend_env(vec![
        ("AWS_ENDPOINT_URL_S3", endpoint.clone()),
        (
            "AWS_ENDPOINT_URL_SQS",
            functions_sqs.unwrap_or_else(|| endpoint.clone()),
        ),
        ("CATALOG_IMPORT_BUCKET", BUCKET.into()),
        ("CATALOG_IMPORT_QUEUE_URL", queue_url.clone()),
    ]);
    stack.runtime.extend_env(settings);
    let invoke: Invoker = crate::local::emulator_invoker();
    let queue = queue_url.clone();
    stack.runtime.handle.spawn(async move {
        run_queue(
            sqs_client(&endpoint),
            queue,
            "import-worker".into(),
            invoke,
            1,
        )
        .await
    });
    Imports { queue_url }
}

/// Creates an import, uploads `text` to its URL and returns its id.
pub async fn start_import(org: &Org, text: &str) -> String {
    let r = org.post("/v1/imports", json!({"format": "ndjson"})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let result = &r.body["result"];
    assert_eq!(result["status"], "awaiting_upload");
    assert_eq!(result["processed"], 0);
    assert!(result["id"].as_str().unwrap().starts_with("imp_"));
    let url = result["uploadUrl"].as_str().unwrap();
    let put = reqwest::Client::new()
        .put(url)
        .body(text.to_string())
        .send()
        .await
        .expect("upload");
    assert!(put.status().is_success(), "{}", put.status());
    result["id"].as_str().unwrap().to_string()
}

/// The import's job once it has finished (within 240 s).
pub async fn finished(org: &Org, id: &str) -> Value {
    eventually("the import to finish", Duration::from_secs(240), || async {
        let r = org.get(&format!("/v1/imports/{id}")).await;
        assert_eq!(r.status, 200);
        let status = r.body["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (status == "completed_with_errors" || status == "succeeded")
            .then_some(r.body["result"].clone())
    })
    .await
}
