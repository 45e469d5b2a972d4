//! `make dev`'s event source mappings: reads DynamoDB Local's stream and the SQS emulator's
//! delivery and import queues the way Lambda does and invokes the functions running under
//! `cargo lambda watch` (POST `/2015-03-31/functions/<name>/invocations`).
//!
//! Usage:
//!   local-poller queues              creates the queues and the import bucket (S3 notifying
//!                                    the import queue), prints their names as env lines
//!   local-poller run                 polls until stopped
//!   local-poller checkpoints save|restore DIR
//!                                    keeps the import bucket's list checkpoints in DIR
//!                                    across restarts (`kept_checkpoints.rs`)
//! Environment: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_S3,
//! CATALOG_TABLE, CATALOG_DELIVERY_QUEUE_URL and CATALOG_IMPORT_QUEUE_URL (run),
//! CATALOG_INVOKE_URL (run; e.g. http://127.0.0.1:9000).

use catalog_e2e::kept_checkpoints;
use catalog_e2e::local::{
    create_delivery_queues, create_import_resources, run_queue, run_schedule, run_stream,
    stream_arn, Invoker, Start,
};
use catalog_e2e::runtime::DELIVERY_CONCURRENCY;
use std::sync::Arc;

/// `make dev`'s import bucket (it also holds the list checkpoints).
const BUCKET: &str = "catalog-imports-local";

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

#[tokio::main]
async fn main() {
    let shared = aws_config::load_from_env().await;
    let sqs = aws_sdk_sqs::Client::new(&shared);
    match std::env::args().nth(1).as_deref() {
        Some("queues") => {
            let (queue, dlq) = create_delivery_queues(&sqs).await.expect("queues created");
            println!("CATALOG_DELIVERY_QUEUE_URL={queue}");
            println!("CATALOG_DEAD_LETTER_QUEUE_URL={dlq}");
            let s3 = catalog::imports::s3_client(&shared);
            let imports = create_import_resources(&sqs, &s3, BUCKET, 720)
                .await
                .expect("import bucket and queue created");
            println!("CATALOG_IMPORT_BUCKET={BUCKET}");
            println!("CATALOG_IMPORT_QUEUE_URL={imports}");
        }
        Some("run") => {
            let ddb = aws_sdk_dynamodb::Client::new(&shared);
            let stream_arn = stream_arn(&ddb, &env("CATALOG_TABLE")).await;
            let base = env("CATALOG_INVOKE_URL");
            let http = reqwest::Client::new();
            let invoke: Invoker = Arc::new(move |function, event| {
                let url = format!("{base}/2015-03-31/functions/{function}/invocations");
                let http = http.clone();
                Box::pin(async move {
                    let r = http
                        .post(url)
                        .body(event.to_string())
                        .send()
                        .await
                        .map_err(|e| e.to_string())?;
                    let status = r.status();
                    let text = r.text().await.map_err(|e| e.to_string())?;
                    if !status.is_success() {
                        return Err(format!("{status}: {text}"));
                    }
                    serde_json::from_str(&text).map_err(|e| e.to_string())
                })
            });
            let streams = aws_sdk_dynamodbstreams::Client::new(&shared);
            let feed = tokio::spawn(run_stream(
                streams,
                stream_arn,
                "change-feed".into(),
                invoke.clone(),
                Start::Latest,
            ));
            let deliver = tokio::spawn(run_queue(
                sqs.clone(),
                env("CATALOG_DELIVERY_QUEUE_URL"),
                "webhook-delivery".into(),
                invoke.clone(),
                DELIVERY_CONCURRENCY,
            ));
            let import = tokio::spawn(run_queue(
                sqs,
                env("CATALOG_IMPORT_QUEUE_URL"),
                "import-worker".into(),
                invoke.clone(),
                1,
            ));
            // the template's schedule is every 5 minutes; a local stack builds sooner
            let every = std::env::var("CATALOG_CHECKPOINT_SCHEDULE_SECONDS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(60);
            let build = tokio::spawn(run_schedule(
                "checkpoint-builder".into(),
                std::time::Duration::from_secs(every),
                invoke,
            ));
            eprintln!(
                "[local-poller] stream -> change-feed, deliveries -> webhook-delivery, imports -> import-worker, every {every} s -> checkpoint-builder"
            );
            let _ = tokio::join!(feed, deliver, import, build);
        }
        Some("checkpoints") => {
            let s3 = catalog::imports::s3_client(&shared);
            let (op, dir) = (std::env::args().nth(2), std::env::args().nth(3));
            let dir = std::path::PathBuf::from(dir.unwrap_or_else(|| usage()));
            // the checkpoints' own bucket, as make dev names it (else the import bucket)
            let bucket = std::env::var("CATALOG_CHECKPOINT_BUCKET").unwrap_or(BUCKET.into());
            let done = match op.as_deref() {
                Some("save") => kept_checkpoints::save(&s3, &bucket, &dir).await,
                Some("restore") => kept_checkpoints::restore(&s3, &bucket, &dir).await,
                _ => usage(),
            };
            match done {
                Ok(n) => eprintln!(
                    "[local-poller] {n} list checkpoints {}d",
                    op.unwrap_or_default()
                ),
                Err(e) => {
                    eprintln!("[local-poller] checkpoints: {e}");
                    std::process::exit(1);
                }
            }
        }
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!("usage: local-poller queues|run|checkpoints save|restore DIR");
    std::process::exit(2);
}
