//! `--sync N`: an ERP sync's delivery latency (issue 60). N product trees (product, variant,
//! three SKUs) created through bulk PATCHes of `--sync-trees` trees (default 10), then every
//! SKU's price updated the same way, then a tenth of the products deleted one by one, by 2 writers at
//! `--webhook-rate` requests a second (default 2), with one subscription to `*` and a 2 s
//! window. Each change's latency runs from its write's answer to its first delivery; the
//! change feed's batches (count, records, DynamoDB requests, ms) come from its log. Goal:
//! p99 within the window + 5 s.

use super::events::log_len;
use super::{quantile_text, WEBHOOK_WINDOW};
use catalog_e2e::webhooks::Receiver;
use catalog_e2e::Org;
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One write request of the sync: its body, and the events it must cause.
struct Write {
    method: &'static str,
    path: String,
    body: Option<Value>,
    events: Vec<String>,
}

fn sku_ids(p: &str) -> Vec<String> {
    (0..3).map(|s| format!("{p}-v-{s}")).collect()
}

/// The writes of the sync in their order: creations, price updates, deletions.
fn writes(n: usize, per_request: usize) -> Vec<Write> {
    let ids: Vec<usize> = (0..n).collect();
    let mut out = Vec::new();
    for chunk in ids.chunks(per_request.max(1)) {
        let items: Vec<Value> = chunk.iter().map(|i| super::tree(*i)).collect();
        let mut events = Vec::new();
        for i in chunk {
            let p = format!("p{i:07}");
            events.push(format!("product.created {p}"));
            events.push(format!("variant.created {p}-v"));
            events.extend(sku_ids(&p).iter().map(|s| format!("sku.created {s}")));
        }
        out.push(Write {
            method: "PATCH",
            path: "/v1/products".into(),
            body: Some(Value::Array(items)),
            events,
        });
    }
    for chunk in ids.chunks(per_request.max(1)) {
        let mut events = Vec::new();
        let items: Vec<Value> = chunk
            .iter()
            .map(|i| {
                let p = format!("p{i:07}");
                let skus: Vec<Value> = sku_ids(&p)
                    .iter()
                    .enumerate()
                    .map(|(s, id)| {
                        events.push(format!("sku.updated {id}"));
                        json!({"identifier": id, "values": {"price": format!("{}.50 EUR", 10 + (i + s) % 90)}})
                    })
                    .collect();
                json!({"identifier": p, "variants": [{"identifier": format!("{p}-v"), "skus": skus}]})
            })
            .collect();
        out.push(Write {
            method: "PATCH",
            path: "/v1/products".into(),
            body: Some(Value::Array(items)),
            events,
        });
    }
    for i in (0..n).step_by(10) {
        let p = format!("p{i:07}");
        out.push(Write {
            method: "DELETE",
            path: format!("/v1/products/{p}"),
            body: None,
            events: vec![format!("product.deleted {p}")],
        });
    }
    out
}

pub async fn sync(n: usize, per_request: usize, rate: usize, timeout: Duration) {
    let log = std::path::PathBuf::from(std::env::var("CATALOG_E2E_LOG_DIR").unwrap())
        .join("change-feed.log");
    let rate = rate.max(1);
    let writes = writes(n, per_request);
    let expected: usize = writes.iter().map(|w| w.events.len()).sum();
    println!(
        "## Sync: {n} product trees created, their SKUs' prices updated, a tenth deleted ({} requests of up to {per_request} trees, {expected} changes; 2 writers, {rate} requests a second), window {WEBHOOK_WINDOW} s\n",
        writes.len()
    );
    let org = Org::new().await;
    super::define_catalog(&org).await;
    let receiver = Receiver::start(0).await;
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": receiver.url(), "topics": ["*"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let from = log_len(&log);
    let started = Instant::now();
    let answered: Vec<(usize, Instant)> = stream::iter(writes.iter().enumerate())
        .map(|(i, w)| {
            let org = &org;
            async move {
                let at = started + Duration::from_secs_f64(i as f64 / rate as f64);
                tokio::time::sleep_until(at.into()).await;
                let mut req = catalog_e2e::Request::new(w.method, &w.path).bearer(&org.key);
                if let Some(body) = &w.body {
                    req = req.json(body.clone());
                }
                let r = req.send().await;
                assert!(
                    r.status == 200 || r.status == 201,
                    "{}: {:?}",
                    w.path,
                    r.body
                );
                (i, Instant::now())
            }
        })
        .buffer_unordered(2)
        .collect()
        .await;
    let writes_took = started.elapsed();
    let deadline = Instant::now() + timeout.max(Duration::from_secs(300));
    let first = loop {
        let first = first_deliveries(&receiver);
        let all = writes
            .iter()
            .all(|w| w.events.iter().all(|e| first.contains_key(e)));
        if all || Instant::now() >= deadline {
            break first;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut latencies: Vec<Duration> = answered
        .iter()
        .flat_map(|(i, at)| {
            let first = &first;
            writes[*i]
                .events
                .iter()
                .filter_map(move |e| Some(first.get(e)?.saturating_duration_since(*at)))
        })
        .collect();
    latencies.sort();
    let pick = |q: f64| quantile_text(&latencies, q);
    // the feed may still log its last batch's line
    tokio::time::sleep(Duration::from_secs(1)).await;
    let batches = feed_batches(&log, from);
    let (records, requests, ms): (u64, u64, u64) = batches
        .iter()
        .fold((0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    let slowest = batches.iter().map(|b| b.2).max().unwrap_or(0);
    println!("| writes took | delivered | p50 | p99 | max | feed batches | records | DynamoDB requests | feed ms (slowest batch) |\n|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {:.1} s | {} of {expected} | {} | {} | {} | {} | {records} | {requests} | {ms} ({slowest}) |\n",
        writes_took.as_secs_f64(),
        latencies.len(),
        pick(0.5),
        pick(0.99),
        pick(1.0),
        batches.len(),
    );
}

/// When each event (`<event> <identifier>`) was first delivered.
fn first_deliveries(receiver: &Receiver) -> HashMap<String, Instant> {
    let mut first: HashMap<String, Instant> = HashMap::new();
    for r in receiver.received() {
        let key = format!(
            "{} {}",
            r.json["event"].as_str().unwrap_or_default(),
            r.json["identifier"].as_str().unwrap_or_default()
        );
        first.entry(key).or_insert(r.at);
    }
    first
}

/// Each change-feed batch logged after byte `from`: (records, DynamoDB requests, ms).
fn feed_batches(log: &std::path::Path, from: u64) -> Vec<(u64, u64, u64)> {
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text[(from as usize).min(text.len())..]).to_string();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v["fields"]["message"] == json!("change-feed batch"))
        .map(|v| {
            let n = |name: &str| v["fields"][name].as_u64().unwrap_or(0);
            (n("records"), n("ddb_requests"), n("ms"))
        })
        .collect()
}
