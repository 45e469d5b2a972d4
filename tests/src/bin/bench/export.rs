//! `--export N`: an export of N bench products with their variants and SKUs (5 N entities)
//! through the real path (`POST /exports`, the import queue, the worker's multipart upload to
//! moto's S3): time, entities per second, the file's size, the worker's DynamoDB requests
//! and runs (summed from its `export run` log lines) and its peak RSS (issue 42).

use super::{bulk_write, define_catalog, TREE};
use catalog_e2e::webhooks::eventually;
use catalog_e2e::Org;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub async fn export(n: usize, timeout: Duration) {
    let log = std::path::PathBuf::from(std::env::var("CATALOG_E2E_LOG_DIR").unwrap())
        .join("import-worker.log");
    println!("## Export: {n} products with their variants and SKUs\n");
    let org = Org::new().await;
    define_catalog(&org).await;
    // requests of 200: a 1,000-item bulk call can take past the runtime's 60 s on a
    // debug build beside a large table
    bulk_write(&org, 0..n, 200, 4, timeout.max(Duration::from_secs(300)))
        .await
        .expect("the catalog seeded");
    let from = super::events::log_len(&log);
    let started = Instant::now();
    // a cold `imports` process loads the organization's list index first: 503 with
    // Retry-After until it has, as the list routes answer
    let body = json!({"entity": "products", "include": ["variants", "skus"]});
    let r = eventually("the export accepted", Duration::from_secs(600), || async {
        let r = org.post("/v1/exports", body.clone()).await;
        match r.status {
            503 => None,
            _ => Some(r),
        }
    })
    .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let id = r.body["result"]["id"].as_str().unwrap().to_string();
    let job: Value = eventually("the export", Duration::from_secs(3600), || async {
        let r = org.get(&format!("/v1/exports/{id}")).await;
        (r.body["result"]["status"] != "running").then(|| r.body["result"].clone())
    })
    .await;
    let took = started.elapsed();
    assert_eq!(job["status"], "succeeded", "{job}");
    let bytes = reqwest::get(job["url"].as_str().unwrap())
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .len();
    // the worker logs a line per run; the last may lag the status by a moment
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (mut runs, mut requests, mut ms, mut cpu_ms, mut rss) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let text = std::fs::read(&log).unwrap_or_default();
    for line in String::from_utf8_lossy(&text[(from as usize).min(text.len())..]).lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let f = &v["fields"];
        if f["message"] == json!("export run") && f["export"] == json!(id) {
            runs += 1;
            requests += f["ddb_requests"].as_u64().unwrap_or(0);
            ms += f["ms"].as_u64().unwrap_or(0);
            cpu_ms += f["cpu_ms"].as_u64().unwrap_or(0);
            rss = rss.max(f["peak_rss_kib"].as_u64().unwrap_or(0));
        }
    }
    let entities = n * TREE;
    println!("| products | entities | lines | file (MB, gzip) | from POST to succeeded (s) | worker time (s) | worker CPU (s) | entities/s | worker runs | DynamoDB requests (per 1,000 entities) | worker's peak RSS (MiB) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {n} | {entities} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {runs} | {requests} ({:.1}) | {:.0} |\n",
        job["written"],
        bytes as f64 / 1e6,
        took.as_secs_f64(),
        ms as f64 / 1000.0,
        cpu_ms as f64 / 1000.0,
        entities as f64 / took.as_secs_f64().max(1e-9),
        requests as f64 * 1000.0 / entities.max(1) as f64,
        rss as f64 / 1024.0
    );
}
