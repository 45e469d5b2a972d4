//! Lambda's recursive loop detection against the designed loops (issue 31, 1): an import
//! continues itself through its own queue, so a long import is a chain of invocations longer
//! than the 16 Lambda lets through by default. The local event source mapping carries the
//! chain's trace header from invocation to invocation as Lambda and SQS do, and applies the
//! function's `RecursiveLoop` from infra/template.yaml (`lineage.rs`, `sqs_trace.rs`).

use catalog_e2e::imports::{imports_chained, CHAINED_BATCH_LINES};
use catalog_e2e::lineage::{self, RecursiveLoop, MAX_HOPS};
use catalog_e2e::local::{run_queue, Invoker};
use catalog_e2e::webhooks::{eventually, moto, sqs_client};
use catalog_e2e::Org;
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PRODUCTS: usize = 100;

/// The real import worker, with a continuation after every batch: 100 lines make a chain of
/// 22 invocations (the first counts the file, whose time is up then; 20 batches; and the run
/// that finds the end), all of which run, because the template allows the worker's loop.
#[tokio::test]
async fn an_import_whose_chain_is_longer_than_16_invocations_completes() {
    imports_chained().await;
    assert_eq!(lineage::setting("import-worker"), RecursiveLoop::Allow);
    let org = Org::new().await;
    let text: String = (0..PRODUCTS)
        .map(|i| {
            json!({"identifier": format!("chain{i:03}"), "name": format!("Chain {i}")}).to_string()
                + "\n"
        })
        .collect();
    let r = org.post("/v1/imports", json!({"format": "ndjson"})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let id = r.body["result"]["id"].as_str().unwrap().to_string();
    let url = r.body["result"]["uploadUrl"].as_str().unwrap().to_string();
    let put = reqwest::Client::new()
        .put(url)
        .body(text)
        .send()
        .await
        .expect("upload");
    assert!(put.status().is_success(), "{}", put.status());
    let job = eventually("the import to finish", Duration::from_secs(180), || async {
        let r = org.get(&format!("/v1/imports/{id}")).await;
        (r.body["result"]["status"] == "succeeded").then(|| r.body["result"].clone())
    })
    .await;
    assert_eq!(
        (&job["processed"], &job["created"], &job["failed"]),
        (&json!(PRODUCTS), &json!(PRODUCTS), &json!(0)),
        "{job}"
    );
    // the count's run, one per batch, the end's
    let runs = (PRODUCTS / CHAINED_BATCH_LINES) as u32 + 2;
    let seen = lineage::seen("import-worker");
    assert_eq!(
        seen,
        lineage::Seen {
            longest_chain: runs,
            dropped: 0
        },
        "every continuation carried the chain on: the worker's SDK sent the trace header, the \
         queue kept it, the mapping counted it"
    );
    assert!(runs > MAX_HOPS + 4);
}

/// What the same mapping does to a function left at Lambda's default: the chain stops after
/// 16 invocations, as it would stop the import above without `RecursiveLoop: Allow`. The
/// "function" here sends its continuation through the same SQS endpoint the worker uses,
/// with the trace header it was invoked with, as the AWS SDK does inside Lambda.
#[tokio::test]
async fn the_default_setting_stops_the_chain_after_16_invocations() {
    imports_chained().await;
    for (function, expected, dropped) in [
        // change-feed: a function of the template that keeps the default.
        ("change-feed@chain", MAX_HOPS, 1),
        ("import-worker@chain", 40, 0),
    ] {
        let invocations = chain(function, 40).await;
        assert_eq!(invocations, expected, "{function}");
        let seen = lineage::seen(function);
        assert_eq!(seen.dropped, dropped, "{function}: {seen:?}");
        assert_eq!(seen.longest_chain, expected + dropped, "{function}");
    }
}

/// Runs a chain of a stand-in for `function` on a queue of its own until it has been invoked
/// `limit` times or the mapping stopped it; returns how many invocations ran.
async fn chain(function: &'static str, limit: u32) -> u32 {
    let sqs = sqs_client(moto());
    let queue = sqs
        .create_queue()
        .queue_name(format!("chain-{}", function.replace('@', "-")))
        .send()
        .await
        .expect("queue")
        .queue_url
        .unwrap();
    // The function's SDK client: through the endpoint that keeps trace headers.
    let traced = sqs_client(&catalog_e2e::sqs_trace::start(moto().to_string()));
    let runs = Arc::new(AtomicU32::new(0));
    let invoke: Invoker = {
        let (runs, queue) = (runs.clone(), queue.clone());
        Arc::new(move |function, event| {
            let (runs, queue, traced) = (runs.clone(), queue.clone(), traced.clone());
            Box::pin(async move {
                let (header, _) =
                    lineage::invocation_trace(&function, &event).expect("an SQS event");
                if runs.fetch_add(1, Ordering::SeqCst) + 1 < limit {
                    traced
                        .send_message()
                        .queue_url(&queue)
                        .message_body("continue")
                        .customize()
                        .mutate_request(move |req| {
                            req.headers_mut().insert("x-amzn-trace-id", header.clone());
                        })
                        .send()
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Ok(json!({"batchItemFailures": []}))
            })
        })
    };
    let poller = tokio::spawn(run_queue(
        sqs.clone(),
        queue.clone(),
        function.into(),
        invoke,
        1,
    ));
    sqs.send_message()
        .queue_url(&queue)
        .message_body("start")
        .send()
        .await
        .expect("the first message");
    eventually("the chain to end", Duration::from_secs(60), || async {
        let done = runs.load(Ordering::SeqCst) >= limit || lineage::seen(function).dropped > 0;
        done.then_some(())
    })
    .await;
    // Nothing runs after the end.
    tokio::time::sleep(Duration::from_secs(2)).await;
    poller.abort();
    runs.load(Ordering::SeqCst)
}
