//! `make dev`'s event source mappings and the Lambda service behind them: reads DynamoDB
//! Local's stream and the SQS emulator's delivery and import queues the way Lambda does and
//! invokes the event-driven functions (change-feed, webhook-delivery, import-worker, and
//! checkpoint-builder on its schedule), which it runs itself as the tests do: processes of
//! `target/debug`'s binaries under the Runtime API emulator (`runtime.rs`), each started
//! again when it dies, outruns its timeout in infra/template.yaml or is rebuilt. (`cargo
//! lambda watch`, which serves the API, never starts a killed function process again: its
//! slot stays taken and the invocation it held is never answered.)
//!
//! Usage:
//!   local-poller queues              creates the queues and the import bucket (S3 notifying
//!                                    the import queue), prints their names as env lines
//!   local-poller run                 polls until stopped
//!   local-poller checkpoints save|restore DIR
//!                                    keeps the import bucket's list checkpoints in DIR
//!                                    across restarts (`kept_checkpoints.rs`)
//! Environment: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_S3,
//! CATALOG_TABLE, CATALOG_DELIVERY_QUEUE_URL and CATALOG_IMPORT_QUEUE_URL (run); with run,
//! the functions' own settings too (they inherit it; `scripts/dev.sh` passes
//! `.local/functions.env`).

use catalog_e2e::kept_checkpoints;
use catalog_e2e::local::{
    create_delivery_queues, create_import_resources, run_queue, run_schedule, run_stream,
    stream_arn, timeout_of, Invoker, Start,
};
use catalog_e2e::runtime::{Emulator, DELIVERY_CONCURRENCY};
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
            // the memory `cargo lambda watch` gives its functions (the snapshot budget is half)
            let memory = ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "4096".to_string());
            let emulator = Arc::new(Emulator::for_dev(vec![memory]));
            let invoke: Invoker = Arc::new(move |function, event| {
                let emulator = emulator.clone();
                Box::pin(async move {
                    let timeout = timeout_of(&function);
                    emulator.try_invoke_within(&function, event, timeout).await
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
