//! Lists under writes (issue 44): one warm process's filtered `/products` at one call a
//! second, without writes and with 10 SKU price writes a second beside it, with the read
//! units DynamoDB reports for each call (`x-catalog-ddb-capacity-milli`), and what a warm
//! instance-hour of such calls reads against the full reads it did every 15 minutes before
//! checkpoints.

use catalog_e2e::{send_to, Org, Request};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Writes a second beside the calls (the rate).
pub(super) const WRITES_PER_SECOND: u64 = 10;

struct Phase {
    p50: Duration,
    p95: Duration,
    /// Read units per call, mean.
    units: f64,
    requests: f64,
    writes: usize,
}

/// `samples` calls of `path` on `process`, one a second (each sees a second of writes when
/// a writer runs), after 3 warm-up calls that answer 200.
async fn phase(
    org: &Org,
    process: &str,
    path: &str,
    samples: usize,
    writer: Option<&Writer>,
) -> Result<Phase, String> {
    let mut times = Vec::new();
    let (mut milli, mut requests) = (0u64, 0u64);
    let start_writes = writer.map_or(0, Writer::done);
    let (mut warmed, mut tries) = (0, 0);
    while warmed < 3 {
        // a fresh process's first calls may answer 503 while its lists load
        let r = send_to(process, Request::new("GET", path).bearer(&org.key)).await;
        match r.status {
            200 => warmed += 1,
            503 if tries < 200 => tries += 1,
            s => return Err(format!("warm-up: status {s}: {}", r.body)),
        }
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    for _ in 0..samples {
        tick.tick().await;
        let started = Instant::now();
        let r = send_to(process, Request::new("GET", path).bearer(&org.key)).await;
        if r.status != 200 {
            return Err(format!("status {}: {}", r.status, r.body));
        }
        times.push(started.elapsed());
        milli += r.ddb_capacity_milli();
        requests += u64::from(r.ddb_requests());
    }
    times.sort();
    Ok(Phase {
        p50: super::quantile(&times, 50),
        p95: super::quantile(&times, 95),
        units: milli as f64 / 1000.0 / samples as f64,
        requests: requests as f64 / samples as f64,
        writes: writer.map_or(0, Writer::done) - start_writes,
    })
}

/// SKU price writes through the API at [`WRITES_PER_SECOND`] until stopped.
pub(super) struct Writer {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

impl Writer {
    pub(super) fn start(org: &Org, products: usize) -> Self {
        let (stop, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (org, s, d) = (org.clone(), stop.clone(), done.clone());
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(1000 / WRITES_PER_SECOND));
            let mut i = 0usize;
            while !s.load(Ordering::SeqCst) {
                tick.tick().await;
                let id = format!("p{:07}-v-{}", (i * 7919) % products, i % 3);
                let price = format!("{}.00 EUR", 10 + i % 90);
                let r = org
                    .patch(
                        &format!("/v1/skus/{id}"),
                        json!({"values": {"price": price}}),
                    )
                    .await;
                if r.status != 200 {
                    return Err(format!("write {id}: status {}: {}", r.status, r.body));
                }
                d.fetch_add(1, Ordering::SeqCst);
                i += 1;
            }
            Ok(())
        });
        Self { stop, done, task }
    }

    pub(super) fn done(&self) -> usize {
        self.done.load(Ordering::SeqCst)
    }

    pub(super) async fn stop(self) -> Result<(), String> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.map_err(|e| e.to_string())?
    }
}

/// The section: `path` (a filtered `/products`) on a warm `products` process of its own;
/// `full_read_units`, what the cold process's full read of its types consumed.
pub async fn under_writes(
    org: &Org,
    products: usize,
    path: &str,
    full_read_units: f64,
    samples: usize,
) {
    println!("\n### Filtered /products under writes\n");
    println!("One warm process, one call a second ({samples} samples after 3 warm-up calls), without writes and with {WRITES_PER_SECOND} SKU price writes a second (`PATCH /v1/skus/{{id}}`) beside it. Read units as DynamoDB reports them for each call; an hour is 3,600 such calls. Before checkpoints, a warm process also read its lists in full every 15 minutes: 4 x the full read of the products and SKUs ({full_read_units:.0} units, the cold call above) an hour.\n");
    println!("| Writes beside | p50 ms | p95 ms | DynamoDB requests per call | read units per call | read units per warm instance-hour | before checkpoints (+ 4 full reads) | writes made |");
    println!("|---|---|---|---|---|---|---|---|");
    let process = "products@underwrites";
    let quiet = phase(org, process, path, samples, None).await;
    let writer = Writer::start(org, products);
    let busy = phase(org, process, path, samples, Some(&writer)).await;
    let stopped = writer.stop().await;
    for (label, p) in [("none", quiet), ("10 a second", busy)] {
        match p {
            Ok(p) => println!(
                "| {label} | {:.1} | {:.1} | {:.1} | {:.2} | {:.0} | {:.0} | {} |",
                p.p50.as_secs_f64() * 1000.0,
                p.p95.as_secs_f64() * 1000.0,
                p.requests,
                p.units,
                p.units * 3600.0,
                p.units * 3600.0 + 4.0 * full_read_units,
                p.writes
            ),
            Err(e) => println!("| {label} | {e} | – | – | – | – | – | – |"),
        }
    }
    if let Err(e) = stopped {
        println!("\nThe writer failed: {e}");
    }
}
