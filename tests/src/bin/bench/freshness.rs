//! Checkpoint freshness under writes (`--freshness SECONDS`, issue 44): how old the newest
//! checkpoint of each list is while 10 SKU price writes a second go through the API and the
//! checkpoint builder runs on its schedule. The schedule is scaled with the catalog: the
//! builder rewrites a list's checkpoint once 5 % of its entities changed, so at a tenth of
//! the entities a tenth of the writes make one due, and a run every tenth of 5 minutes
//! keeps the deployment's ratio of schedule to threshold. Every age is then the same
//! multiple of its deployed size: the table gives both.

use super::under_writes::{Writer, WRITES_PER_SECOND};
use catalog::imports::checkpoints::SYNCED;
use catalog_e2e::imports::{s3_client, BUCKET};
use catalog_e2e::{encode, Org};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The catalog measured: a tenth of the bench's 50,000 products, so a tenth of 5 minutes.
pub const PRODUCTS: usize = 5_000;
/// The catalog the deployed schedule (a run every 5 minutes) is scaled to.
const DEPLOYED_PRODUCTS: usize = 50_000;
const DEPLOYED_PERIOD: Duration = Duration::from_secs(300);

/// The age of `org`'s newest `kind` checkpoint at `now_ms`, from its metadata.
async fn age_ms(s3: &aws_sdk_s3::Client, org: &str, kind: &str, now_ms: i64) -> Option<i64> {
    let head = s3
        .head_object()
        .bucket(BUCKET)
        .key(format!("checkpoints/{org}/{kind}/2"))
        .send()
        .await
        .ok()?;
    let synced: i64 = head.metadata()?.get(SYNCED)?.parse().ok()?;
    Some(now_ms - synced)
}

/// The section: `products` products (as many variants, 3 SKUs each), `seconds` of writes.
pub async fn freshness(products: usize, seconds: u64, timeout: Duration) {
    let org = Org::new().await;
    super::define_catalog(&org).await;
    if let Err(e) = super::bulk_write(&org, 0..products, 1000, 2, timeout).await {
        println!("Seeding {products} products failed: {e}");
        return;
    }
    // a serving process's first filtered list notes both lists for the builder
    let search = json!({
        "product.brand": [{"operator": "CONTAINS", "value": "brand 1"}],
        "sku.price": [{"operator": "LESS_THAN", "value": "20 EUR"}]
    });
    let path = format!(
        "/v1/products?limit=100&search={}",
        encode(&search.to_string())
    );
    let first = super::first_answer(&org, "products@coldckptfresh", &path, timeout).await;
    if let Err(e) = &first.outcome {
        println!("The first filtered list failed: {e}");
        return;
    }
    let kinds = ["product", "sku"];
    if let Err(e) = super::checkpoints_written(&org.id, &kinds, timeout).await {
        println!("The first checkpoints: {e}");
        return;
    }
    let scale = DEPLOYED_PRODUCTS as f64 / products as f64;
    let period = DEPLOYED_PERIOD.div_f64(scale).max(Duration::from_secs(1));
    let s3 = s3_client(catalog_e2e::webhooks::moto());
    let writer = Writer::start(&org, products);
    let (runs, written) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let builder = {
        let (org, runs, written) = (org.id.clone(), runs.clone(), written.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.tick().await;
            loop {
                tick.tick().await;
                let mut event = catalog_e2e::local::scheduled_event();
                event["org"] = json!(org);
                let run = catalog_e2e::invoke("checkpoint-builder@coldckpt", event).await;
                runs.fetch_add(1, Ordering::SeqCst);
                written.fetch_add(run["written"].as_u64().unwrap_or(0), Ordering::SeqCst);
            }
        })
    };
    let mut ages: Vec<Vec<Duration>> = vec![Vec::new(); kinds.len()];
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    while started.elapsed() < Duration::from_secs(seconds) {
        tick.tick().await;
        let now = chrono::Utc::now().timestamp_millis();
        for (kind, ages) in kinds.iter().zip(&mut ages) {
            if let Some(age) = age_ms(&s3, &org.id, kind, now).await {
                ages.push(Duration::from_millis(age.max(0) as u64));
            }
        }
    }
    builder.abort();
    let writes = writer.done();
    let stopped = writer.stop().await;
    println!("## Checkpoint freshness under writes\n");
    println!("{products} products, {products} variants, {} SKUs; {WRITES_PER_SECOND} SKU price writes a second through the API ({writes} made) for {seconds} s, the checkpoint builder invoked every {:.1} s ({} runs, {} checkpoints written; the deployed 5 minutes scaled by {products}/{DEPLOYED_PRODUCTS}: the same share of the list changes between two runs); the age of each list's newest checkpoint (now minus the position it is synced to) read from its metadata once a second.\n", 3 * products, period.as_secs_f64(), runs.load(Ordering::SeqCst), written.load(Ordering::SeqCst));
    println!("| List | samples | age p50 s | p99 s | max s | scaled to {DEPLOYED_PRODUCTS} products: p50 min | p99 min | max min |");
    println!("|---|---|---|---|---|---|---|---|");
    for (kind, ages) in kinds.iter().zip(&mut ages) {
        if ages.is_empty() {
            println!("| {kind} | 0 | – | – | – | – | – | – |");
            continue;
        }
        ages.sort();
        let secs = |p: usize| super::quantile(ages, p).as_secs_f64();
        let (p50, p99, max) = (secs(50), secs(99), secs(100));
        let minutes = |v: f64| v * scale / 60.0;
        println!(
            "| {kind} | {} | {p50:.1} | {p99:.1} | {max:.1} | {:.1} | {:.1} | {:.1} |",
            ages.len(),
            minutes(p50),
            minutes(p99),
            minutes(max)
        );
    }
    if let Err(e) = stopped {
        println!("\nThe writer failed: {e}");
    }
}
