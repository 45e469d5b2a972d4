//! `make bench`: ingestion and lists at catalog scale, through the real function binaries on
//! DynamoDB Local (docs/performance.md quotes its output).
//!
//! 1. Ingestion: the same products (one variant, three SKUs; five values on the product, one
//!    on the variant, two on each SKU) written by sequential single PATCHes, by bulk PATCHes
//!    of 100 and of 1,000 items, and by the raw floor: BatchWriteItem of the very items those
//!    writes store, with the bulk route's parallelism, no API. Entities per second for each.
//! 2. Lists: N products seeded through the bulk API, then the first call of fresh function
//!    processes (time until the first answer, calls, DynamoDB requests, peak RSS) beside the
//!    floor (a raw parallel Query of the same index partitions, nothing decoded), the same
//!    first calls of processes that start from the list checkpoints in S3, and warm p50/p95
//!    of the same calls, page 1 and the last page; then the filtered `/products` at one call
//!    a second without and with 10 writes a second beside it, with its read units per call
//!    and per warm instance-hour (`under_writes.rs`).
//!
//! 3. Import (`--import N`): N such products through the imports API and S3, total time,
//!    entities/s, the progress along the way, the worker's peak memory.
//!
//! 4. Webhooks (`--webhooks N`): N product writes with a 2 s coalescing window, first with
//!    one healthy receiver subscribed, then with a receiver that hangs past the delivery
//!    timeout and one that refuses connections beside it: the healthy receiver's write →
//!    delivery latency, p50 / p99 / max, each time.
//!
//!    With `--sync N`, an ERP sync's write → delivery latency and the change feed's batches,
//!    `sync.rs`.
//!
//! 5. Tenant isolation (`--isolation SECONDS`): `isolation.rs`.
//!
//! 6. Write shapes (`--write-shapes N`): `shapes.rs`.
//!
//! 7. Events (`--destinations N`, `--filtered N`): `events.rs`.
//! 8. History (`--history N`): the change feed's cost of it, `history.rs`.
//! 9. Export (`--export N`): N products exported with their variants and SKUs, `export.rs`.
//! 10. A single product's GET (`--get N`): warm, beside its DynamoDB floor, and cold, `get.rs`;
//!     with `--peer`, serverless-rust-demo's `get-product` beside it (`scripts/peer.sh`).
//! 11. Checkpoint freshness (`--freshness SECONDS`): the newest checkpoints' age under 10 SKU
//!     writes a second, the builder's schedule scaled with the catalog, `freshness.rs`.
//!
//! Usage: `bench [--products N] [--ingest N] [--import N] [--webhooks N] [--isolation S] [--write-shapes N] [--samples N] [--timeout S]`;
//! unknown flags are refused. A call that does not answer in time is a figure ("no answer in N s"), not a panic.

mod events;
mod export;
mod freshness;
mod get;
mod history;
mod isolation;
mod shapes;
mod sync;
mod under_writes;

use shapes::Shape;

use catalog::store::index_shards;
use catalog::store::raw::change_pks;
use catalog_e2e::{encode, send_to, stack, Org, Request, Response};
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

const COLORS: [&str; 5] = ["red", "blue", "green", "black", "white"];
const SIZES: [&str; 3] = ["S", "M", "L"];
const MATERIALS: [&str; 3] = ["oak", "pine", "steel"];
/// Entities per product tree: the product, its variant, three SKUs.
const TREE: usize = 5;

struct Args {
    products: usize,
    ingest: usize,
    import: usize,
    webhooks: usize,
    sync: usize,
    sync_trees: usize,
    webhook_rate: usize,
    destinations: usize,
    filtered: usize,
    filtered_subs: usize,
    history: usize,
    export: usize,
    get: usize,
    peer: bool,
    freshness: usize,
    isolation: usize,
    write_shapes: usize,
    samples: usize,
    timeout: Duration,
}

fn usage() -> ! {
    eprintln!(
        "usage: bench [--products N] [--ingest N] [--import N] [--webhooks N] [--sync N [--sync-trees N]] [--webhook-rate N] [--destinations N] [--filtered N] [--filtered-subs N] [--history N] [--export N] [--get N [--peer]] [--freshness SECONDS] [--isolation SECONDS] [--write-shapes N] [--samples N] [--timeout SECONDS]\n\
         --products  products seeded for the list figures (default 10000)\n\
         --ingest    products per ingestion row (default 2000; single PATCHes use a tenth)\n\
         --import    products in an import through S3 (default 0: none)\n\
         --webhooks  product writes for the webhook latency figures (default 0: none)\n\
         --webhook-rate  writes per second for them (default 0: as fast as 4 writers go)\n\
         --sync      product trees of an ERP sync (bulk creations, SKU price updates, deletions; --sync-trees trees a request, default 10; --webhook-rate requests a second, default 2): write → delivery latency, the change feed's batches\n\
         --destinations  product writes to SQS and EventBridge destinations, each alone and beside a refusing one (at --webhook-rate, default 10 a second)\n\
         --filtered  SKU writes against --filtered-subs (default 20) random filtered subscriptions: missed and false deliveries, the change feed's cost\n\
         --history  product writes (creations, updates, deletions): the change feed's cost of history, and a history page's\n\
         --export    products exported with their variants and SKUs: time, file, the worker's requests and memory\n\
         --get       products seeded for the single GET figures: warm beside the DynamoDB floor, and cold (--samples warm calls, 5 cold)\n\
         --peer      with --get: serverless-rust-demo's get-product beside ours, call for call (build it first: scripts/peer.sh)\n\
         --freshness seconds of 10 SKU writes a second at 5,000 products beside the checkpoint builder on its schedule scaled to them (default 0: none): the age of the newest checkpoints\n\
         --isolation seconds per phase of the noisy/quiet organizations figures (default 0: none)\n\
         --write-shapes  trees per row of the write shapes figures (default 0: none)\n\
         --samples   warm samples per list row (default 30)\n\
         --timeout   seconds one call may take before it counts as no answer (default 60)"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        products: 10_000,
        ingest: 2_000,
        import: 0,
        webhooks: 0,
        sync: 0,
        sync_trees: 10,
        webhook_rate: 0,
        destinations: 0,
        filtered: 0,
        filtered_subs: 20,
        history: 0,
        export: 0,
        get: 0,
        peer: false,
        freshness: 0,
        isolation: 0,
        write_shapes: 0,
        samples: 30,
        timeout: Duration::from_secs(60),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut number = || -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match flag.as_str() {
            "--products" => args.products = number(),
            "--ingest" => args.ingest = number(),
            "--import" => args.import = number(),
            "--webhooks" => args.webhooks = number(),
            "--sync" => args.sync = number(),
            "--sync-trees" => args.sync_trees = number(),
            "--webhook-rate" => args.webhook_rate = number(),
            "--destinations" => args.destinations = number(),
            "--filtered" => args.filtered = number(),
            "--filtered-subs" => args.filtered_subs = number().max(1),
            "--history" => args.history = number(),
            "--export" => args.export = number(),
            "--get" => args.get = number(),
            "--peer" => args.peer = true,
            "--freshness" => args.freshness = number(),
            "--isolation" => args.isolation = number(),
            "--write-shapes" => args.write_shapes = number(),
            "--samples" => args.samples = number().max(1),
            "--timeout" => args.timeout = Duration::from_secs(number() as u64),
            _ => usage(),
        }
    }
    args
}

/// Bulk item of product `i`: five product values, one variant value, two per SKU.
fn tree(i: usize) -> Value {
    let p = format!("p{i:07}");
    let skus: Vec<Value> = (0..3)
        .map(|s| {
            json!({"identifier": format!("{p}-v-{s}"), "values": {
                "price": format!("{}.00 EUR", 10 + (i + s) % 90),
                "ean": format!("400{i:07}{s}")}})
        })
        .collect();
    json!({
        "identifier": p,
        "name": format!("Product {i}"),
        "values": {
            "brand": format!("Brand {:02}", i % 40),
            "color": COLORS[i % COLORS.len()],
            "price": format!("{}.{:02} EUR", 5 + i % 200, i % 100),
            "material": MATERIALS[i % MATERIALS.len()],
            "weight": format!("{}.5 kg", 1 + i % 20),
        },
        "variants": [{"identifier": format!("{p}-v"), "values": {"size": SIZES[i % SIZES.len()]}, "skus": skus}]
    })
}

async fn define_catalog(org: &Org) {
    for (entity, key, t, extra) in [
        ("product", "brand", "text", json!({})),
        ("product", "color", "select", json!({"options": COLORS})),
        ("product", "price", "price", json!({})),
        ("product", "material", "text", json!({})),
        ("product", "weight", "weight", json!({})),
        ("variant", "size", "select", json!({"options": SIZES})),
        ("sku", "price", "price", json!({})),
        ("sku", "ean", "text", json!({})),
    ] {
        let mut body = json!({"displayName": key, "key": key, "targetEntity": entity, "type": t});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        org.define(body).await;
    }
}

/// A call with a deadline: `None` when it does not answer in time.
async fn timed(req: Request, function: Option<&str>, timeout: Duration) -> Option<Response> {
    let call = async {
        match function {
            Some(f) => send_to(f, req).await,
            None => req.send().await,
        }
    };
    tokio::time::timeout(timeout, call).await.ok()
}

fn bulk_request(org: &Org, items: &[Value]) -> Request {
    Request::new("PATCH", "/v1/products")
        .bearer(&org.key)
        .json(Value::Array(items.to_vec()))
}

/// Writes products `range` through the bulk route, `per_request` items a call, `parallel`
/// calls at once. Panics on a line that is not 200/201 (the seed must be whole).
async fn bulk_write(
    org: &Org,
    range: std::ops::Range<usize>,
    per_request: usize,
    parallel: usize,
    timeout: Duration,
) -> Result<Duration, String> {
    let started = Instant::now();
    let chunks: Vec<Vec<Value>> = range
        .collect::<Vec<_>>()
        .chunks(per_request)
        .map(|c| c.iter().map(|i| tree(*i)).collect())
        .collect();
    let results: Vec<Result<(), String>> = stream::iter(chunks)
        .map(|items| async move {
            let r = timed(bulk_request(org, &items), None, timeout)
                .await
                .ok_or_else(|| format!("no answer in {} s", timeout.as_secs()))?;
            if r.status != 200 {
                return Err(format!("status {}: {}", r.status, r.body));
            }
            for line in r.body["result"].as_array().into_iter().flatten() {
                if line["status"] != 200 && line["status"] != 201 {
                    return Err(format!("line failed: {line}"));
                }
            }
            Ok(())
        })
        .buffer_unordered(parallel)
        .collect()
        .await;
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    Ok(started.elapsed())
}

fn rate(products: usize, took: Duration) -> String {
    format!(
        "{:.0}",
        (products * TREE) as f64 / took.as_secs_f64().max(1e-9)
    )
}

async fn ingestion(args: &Args) {
    let n = args.ingest;
    let singles = (n / 10).max(10);
    println!("## Ingestion\n");
    println!(
        "Products of one variant and three SKUs (5 entities; 5 values on the product, 1 on the variant, 2 on each SKU), each row into an empty organization.\n"
    );
    println!("| Write path | products | entities | seconds | entities/s |");
    println!("|---|---|---|---|---|");
    let mut rates: HashMap<&str, f64> = HashMap::new();
    let mut row = |name: &'static str, products: usize, took: Result<Duration, String>| match took {
        Ok(t) => {
            rates.insert(name, (products * TREE) as f64 / t.as_secs_f64());
            println!(
                "| {name} | {products} | {} | {:.1} | {} |",
                products * TREE,
                t.as_secs_f64(),
                rate(products, t)
            );
        }
        Err(e) => println!("| {name} | {products} | {} | {e} | – |", products * TREE),
    };

    let org = Org::new().await;
    define_catalog(&org).await;
    let started = Instant::now();
    let mut single: Result<Duration, String> = Ok(Duration::ZERO);
    for i in 0..singles {
        let mut body = tree(i);
        let id = body["identifier"].as_str().unwrap().to_string();
        body.as_object_mut().unwrap().remove("identifier");
        let req = Request::new("PATCH", &format!("/v1/products/{id}"))
            .bearer(&org.key)
            .json(body);
        match timed(req, None, args.timeout).await {
            Some(r) if r.status == 201 => {}
            Some(r) => {
                single = Err(format!("status {}", r.status));
                break;
            }
            None => {
                single = Err(format!("no answer in {} s", args.timeout.as_secs()));
                break;
            }
        }
    }
    row(
        "sequential single PATCHes",
        singles,
        single.map(|_| started.elapsed()),
    );
    for (name, per) in [
        ("bulk PATCH, 100 per request", 100),
        ("bulk PATCH, 1,000 per request", 1000),
    ] {
        let org = Org::new().await;
        define_catalog(&org).await;
        row(name, n, bulk_write(&org, 0..n, per, 1, args.timeout).await);
    }
    const FLOOR: &str = "raw floor: BatchWriteItem, 16 in parallel";
    const TRANSACTIONS: &str = "raw transactions: the bulk route's, 16 in parallel";
    let parallel = 16;
    row(FLOOR, n, Ok(shapes::write(n, Shape::Batch, parallel).await));
    row(
        TRANSACTIONS,
        n,
        Ok(shapes::write(n, Shape::Packed, parallel).await),
    );
    let [single, floor, transactions] =
        ["sequential single PATCHes", FLOOR, TRANSACTIONS].map(|r| rates.get(r).copied());
    for name in [
        "bulk PATCH, 100 per request",
        "bulk PATCH, 1,000 per request",
    ] {
        if let (Some(b), Some(s), Some(f), Some(t)) = (rates.get(name), single, floor, transactions)
        {
            println!(
                "\n{name}: {:.1}× sequential single PATCHes, {:.0}% of the raw floor, {:.0}% of the raw transactions.",
                b / s,
                100.0 * b / f,
                100.0 * b / t
            );
        }
    }
    println!();
}

/// Peak resident memory (VmHWM) of the function process named `name`, in MiB.
fn peak_rss_mib(name: &str) -> Option<f64> {
    let pid = catalog_e2e::function_pid(name)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// The floor of a cold read: every shard of each type's index partition queried in parallel,
/// all pages, nothing decoded. Items, approximate bytes (attribute names and values), time.
async fn raw_read(org: &str, types: &[&str]) -> (usize, usize, Duration) {
    let store = stack().await.store();
    let started = Instant::now();
    let pks: Vec<String> = types.iter().flat_map(|t| change_pks(org, t)).collect();
    let counts: Vec<(usize, usize)> = futures_util::future::join_all(pks.into_iter().map(|pk| {
        let client = store.client().clone();
        let table = store.table().to_string();
        async move {
            let mut pages = client
                .query()
                .table_name(table)
                .index_name("byChange")
                .key_condition_expression("GSI1PK = :t")
                .expression_attribute_values(":t", aws_sdk_dynamodb::types::AttributeValue::S(pk))
                .into_paginator()
                .send();
            let (mut n, mut bytes) = (0, 0);
            while let Some(page) = pages.next().await {
                let page = page.expect("Query");
                for item in page.items() {
                    n += 1;
                    bytes += item.iter().map(|(k, v)| k.len() + size(v)).sum::<usize>();
                }
            }
            (n, bytes)
        }
    }))
    .await;
    let (n, bytes) = counts
        .into_iter()
        .fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
    (n, bytes, started.elapsed())
}

fn size(v: &aws_sdk_dynamodb::types::AttributeValue) -> usize {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    match v {
        A::S(s) => s.len(),
        A::N(n) => n.len(),
        A::Bool(_) | A::Null(_) => 1,
        A::M(m) => 3 + m.iter().map(|(k, v)| k.len() + size(v)).sum::<usize>(),
        A::L(l) => 3 + l.iter().map(size).sum::<usize>(),
        A::Ss(l) => l.iter().map(String::len).sum(),
        _ => 8,
    }
}

struct Warm {
    p50: Duration,
    p95: Duration,
    requests: u32,
    results: u64,
}

async fn warm(org: &Org, function: &str, path: &str, args: &Args) -> Result<Warm, String> {
    let mut times = Vec::new();
    let mut last = None;
    let (mut done, mut loads) = (0, 0);
    while done < args.samples + 3 {
        let started = Instant::now();
        let r = timed(
            Request::new("GET", path).bearer(&org.key),
            Some(function),
            args.timeout,
        )
        .await
        .ok_or_else(|| format!("no answer in {} s", args.timeout.as_secs()))?;
        if r.status == 503 && done < 3 && loads < 100 {
            // this process's first read of a type still loading: part of the warm-up
            loads += 1;
            continue;
        }
        if r.status != 200 {
            return Err(format!("status {}: {}", r.status, r.body));
        }
        if done >= 3 {
            times.push(started.elapsed());
        }
        done += 1;
        last = Some(r);
    }
    times.sort();
    let r = last.expect("samples");
    Ok(Warm {
        p50: quantile(&times, 50),
        p95: quantile(&times, 95),
        requests: r.ddb_requests(),
        results: r.body["pagination"]["totalResults"].as_u64().unwrap_or(0),
    })
}

/// The `p`th percentile of `sorted` (ascending, not empty).
/// The `q` quantile of sorted latencies as `1.23 s` (`-` when there are none).
fn quantile_text(sorted: &[Duration], q: f64) -> String {
    sorted
        .get(((sorted.len() as f64 * q).ceil() as usize).saturating_sub(1))
        .map_or("-".to_string(), |d| format!("{:.2} s", d.as_secs_f64()))
}

fn quantile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

/// A fresh process's first answer: how long until its first 200, after how many calls
/// (503s before it), and their DynamoDB requests.
struct First {
    outcome: Result<Duration, String>,
    tries: u32,
    requests: u32,
    /// Read units DynamoDB reported over the calls, in thousandths.
    capacity_milli: u64,
}

impl First {
    /// The table cells: time (or what happened), calls, DynamoDB requests, peak RSS.
    fn cells(&self, process: &str) -> String {
        let rss = peak_rss_mib(process)
            .map(|m| format!("{m:.0}"))
            .unwrap_or_else(|| "–".into());
        let time = match &self.outcome {
            Ok(t) => format!("{:.2}", t.as_secs_f64()),
            Err(e) => e.clone(),
        };
        format!("{time} | {} | {} | {rss}", self.tries, self.requests)
    }
}

/// Calls `path` on `process` until the first 200 (a 503 is a cold read going on).
async fn first_answer(org: &Org, process: &str, path: &str, timeout: Duration) -> First {
    let started = Instant::now();
    let mut first = First {
        outcome: Err("no call".to_string()),
        tries: 0,
        requests: 0,
        capacity_milli: 0,
    };
    while started.elapsed() < timeout {
        first.tries += 1;
        let Some(r) = timed(
            Request::new("GET", path).bearer(&org.key),
            Some(process),
            timeout,
        )
        .await
        else {
            first.outcome = Err(format!("no answer in {} s", timeout.as_secs()));
            break;
        };
        first.requests += r
            .headers
            .get("x-catalog-ddb-requests")
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0);
        first.capacity_milli += r
            .headers
            .get("x-catalog-ddb-capacity-milli")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        match r.status {
            200 => {
                first.outcome = Ok(started.elapsed());
                break;
            }
            503 => first.outcome = Err(format!("503 after {} calls", first.tries)),
            s => {
                first.outcome = Err(format!("status {s}: {}", r.body));
                break;
            }
        }
    }
    first
}

/// Runs the checkpoint builder over `org`'s lists (as its schedule would), then waits (up
/// to `timeout`) until the checkpoints of `org`'s `kinds` are in the bucket; how long that
/// took.
async fn checkpoints_written(
    org: &str,
    kinds: &[&str],
    timeout: Duration,
) -> Result<Duration, String> {
    use catalog_e2e::imports::{s3_client, BUCKET};
    let s3 = s3_client(catalog_e2e::webhooks::moto());
    let started = Instant::now();
    let mut event = catalog_e2e::local::scheduled_event();
    event["org"] = serde_json::json!(org);
    let run = catalog_e2e::invoke("checkpoint-builder@coldckpt", event).await;
    eprintln!("[bench] checkpoint builder: {run}");
    for kind in kinds {
        let key = format!("checkpoints/{org}/{kind}/2");
        while s3
            .head_object()
            .bucket(BUCKET)
            .key(&key)
            .send()
            .await
            .is_err()
        {
            if started.elapsed() > timeout {
                return Err(format!("no {key} within {} s", timeout.as_secs()));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(started.elapsed())
}

async fn lists(args: &Args) {
    let n = args.products;
    let org = Org::new().await;
    define_catalog(&org).await;
    let seeded = bulk_write(&org, 0..n, 1000, 2, args.timeout).await;
    println!("## Lists\n");
    match &seeded {
        Ok(t) => println!(
            "Catalog: {n} products, {n} variants, {} SKUs, seeded through `PATCH /v1/products` (1,000 per request, 2 requests at once) in {:.1} s ({} entities/s). Index shards per type: {}.\n",
            3 * n,
            t.as_secs_f64(),
            rate(n, *t),
            index_shards()
        ),
        Err(e) => {
            println!("Seeding {n} products failed: {e}\n");
            return;
        }
    }
    let sku_and_product = json!({
        "product.brand": [{"operator": "CONTAINS", "value": "brand 1"}],
        "sku.price": [{"operator": "LESS_THAN", "value": "20 EUR"}]
    });
    let product_filter = json!({"product.color": [{"operator": "IN", "value": ["red", "blue"]}]});
    let calls: Vec<(&str, &str, String, &[&str])> = vec![
        (
            "/products unfiltered",
            "products",
            "/v1/products?limit=100".to_string(),
            &["product"],
        ),
        (
            "/products, product + SKU filter",
            "products",
            format!(
                "/v1/products?limit=100&search={}",
                encode(&sku_and_product.to_string())
            ),
            &["product", "sku"],
        ),
        (
            "/skus, product filter",
            "skus",
            format!(
                "/v1/skus?limit=100&search={}",
                encode(&product_filter.to_string())
            ),
            &["sku", "product"],
        ),
    ];
    println!("### First call of a fresh function process\n");
    println!("Each row starts a new process of the function and calls until the first 200 (a cold read that cannot finish within the call's budget answers 503 and goes on in the next call). The floor reads the same index partitions (every shard, in parallel) without decoding.\n");
    println!("| Call | first answer after (s) | calls | DynamoDB requests | peak RSS (MiB) | floor: items, MB, s |");
    println!("|---|---|---|---|---|---|");
    let mut full_read_units = 0.0;
    for (fresh, (name, function, path, types)) in calls.iter().enumerate() {
        let process = format!("{function}@cold{fresh}");
        let first = first_answer(&org, &process, path, args.timeout).await;
        if fresh == 1 {
            // the filtered /products: a full read of the products and the SKUs
            full_read_units = first.capacity_milli as f64 / 1000.0;
        }
        let (items, bytes, floor) = raw_read(&org.id, types).await;
        let floor = format!(
            "{items}, {:.1}, {:.2}",
            bytes as f64 / 1e6,
            floor.as_secs_f64()
        );
        println!("| {name} | {} | {floor} |", first.cells(&process));
    }
    println!("\n### First call of a fresh function process, from a checkpoint\n");
    // a process with checkpoints reads the index in full once and asks for them; the
    // checkpoint builder writes them
    let writer = "skus@coldckpt-writer";
    let (_, _, skus_by_product, _) = &calls[2];
    let wrote = first_answer(&org, writer, skus_by_product, args.timeout).await;
    let written = checkpoints_written(&org.id, &["product", "sku"], args.timeout).await;
    match written {
        Ok(t) => {
            println!(
                "A process that read the index in full ({}) asked for the checkpoints of the products and SKUs; the checkpoint builder wrote them in {:.1} s.\n",
                wrote.cells(writer),
                t.as_secs_f64()
            );
            println!("Each row starts a new process with checkpoints: it loads the type's checkpoint from S3 (moto here) and reads the index's changes after it.\n");
            println!(
                "| Call | first answer after (s) | calls | DynamoDB requests | peak RSS (MiB) |"
            );
            println!("|---|---|---|---|---|");
            for (fresh, (name, function, path, _)) in calls.iter().enumerate() {
                let process = format!("{function}@coldckpt{fresh}");
                let first = first_answer(&org, &process, path, args.timeout).await;
                println!("| {name} | {} |", first.cells(&process));
            }
        }
        // functions that write none (bench-compare's older side): the warm rows still run
        Err(e) => println!("No checkpoints: {e}"),
    }
    println!("\n### Warm calls\n");
    println!(
        "{} samples per row after 3 warm-up calls, one process per function.\n",
        args.samples
    );
    println!("| Call | results | DynamoDB requests | p50 ms | p95 ms |");
    println!("|---|---|---|---|---|");
    for (name, function, path, _) in &calls {
        let first = warm(&org, function, path, args).await;
        let last_page = first
            .as_ref()
            .map(|w| w.results.div_ceil(100).max(1))
            .unwrap_or(1);
        let rows = [
            (format!("{name}, page 1"), first),
            (
                format!("{name}, page {last_page} (last)"),
                warm(&org, function, &format!("{path}&page={last_page}"), args).await,
            ),
        ];
        for (label, w) in rows {
            match w {
                Ok(w) => println!(
                    "| {label} | {} | {} | {} | {} |",
                    w.results,
                    w.requests,
                    ms(w.p50),
                    ms(w.p95)
                ),
                Err(e) => println!("| {label} | {e} | – | – | – |"),
            }
        }
    }
    let (_, _, filtered, _) = &calls[1];
    under_writes::under_writes(&org, n, filtered, full_read_units, args.samples).await;
}

/// An import of `n` products through the real path (presigned PUT to moto's S3, bucket
/// notification, queue, import worker): total time, entities/s, the progress it reported
/// along the way, and the worker's peak memory.
async fn import(args: &Args) {
    let n = args.import;
    let org = Org::new().await;
    define_catalog(&org).await;
    let mut file = String::with_capacity(n * 450);
    for i in 0..n {
        file.push_str(&tree(i).to_string());
        file.push('\n');
    }
    println!("## Import\n");
    println!(
        "{n} products ({} entities) in one NDJSON file of {:.1} MB, uploaded to the presigned URL; batches of 1,000 lines; the worker continues itself before its deadline.\n",
        n * TREE,
        file.len() as f64 / 1e6
    );
    let r = org.post("/v1/imports", json!({"format": "ndjson"})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let id = r.body["result"]["id"].as_str().unwrap().to_string();
    let url = r.body["result"]["uploadUrl"].as_str().unwrap().to_string();
    let started = Instant::now();
    let put = reqwest::Client::new()
        .put(url)
        .body(file)
        .send()
        .await
        .expect("upload");
    assert!(put.status().is_success());
    println!("| after (s) | status | processed | created | failed |");
    println!("|---|---|---|---|---|");
    let mut last_print = Duration::ZERO;
    let job = loop {
        let r = org.get(&format!("/v1/imports/{id}")).await;
        let job = r.body["result"].clone();
        let done = matches!(
            job["status"].as_str(),
            Some("succeeded" | "completed_with_errors" | "failed")
        );
        if done || started.elapsed() >= last_print + Duration::from_secs(30) {
            last_print = started.elapsed();
            println!(
                "| {:.0} | {} | {} | {} | {} |",
                started.elapsed().as_secs_f64(),
                job["status"].as_str().unwrap_or("?"),
                job["processed"],
                job["created"],
                job["failed"]
            );
        }
        if done || started.elapsed() > Duration::from_secs(3600) {
            break job;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let took = started.elapsed();
    println!(
        "\nFrom upload to `{}`: {:.1} s, {} entities/s; the import worker's peak RSS: {} MiB.\n",
        job["status"].as_str().unwrap_or("?"),
        took.as_secs_f64(),
        rate(n, took),
        peak_rss_mib("import-worker").map_or_else(|| "–".into(), |m| format!("{m:.0}"))
    );
}

#[tokio::main]
async fn main() {
    let args = parse_args();
    let logged = args.filtered > 0 || args.history > 0 || args.export > 0 || args.sync > 0;
    if logged && std::env::var("CATALOG_E2E_LOG_DIR").is_err() {
        // the change feed's per-batch cost and the export worker's per-run cost are read
        // from their logs
        let dir = std::path::Path::new("target").join("bench-logs");
        std::env::set_var("CATALOG_E2E_LOG_DIR", dir);
        // at info: their per-batch and per-run lines
        if std::env::var("CATALOG_E2E_LOG").is_err() {
            std::env::set_var("CATALOG_E2E_LOG", "info");
        }
    }
    if args.import > 0 || args.products > 0 || args.export > 0 || args.freshness > 0 {
        // the import stack (its bucket also holds the list checkpoints) must be in the
        // functions' environment before any starts
        catalog_e2e::imports::imports_as_deployed().await;
    }
    if args.webhooks > 0
        || args.sync > 0
        || args.destinations > 0
        || args.filtered > 0
        || args.history > 0
    {
        // so must the webhook stack, with the window scaled down to 2 s
        std::env::set_var("CATALOG_E2E_WEBHOOK_WINDOW", WEBHOOK_WINDOW.to_string());
        std::env::set_var("CATALOG_E2E_WEBHOOK_DISABLE_AFTER", "86400");
        std::env::set_var("CATALOG_E2E_WEBHOOK_SCHEDULE", WEBHOOK_SCHEDULE);
        catalog_e2e::webhooks::webhooks().await;
    }
    println!(
        "Machine: {} cores; DynamoDB Local in memory; function binaries of profile `{}`.\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::env::var("CATALOG_E2E_PROFILE").unwrap_or_else(|_| "debug".into())
    );
    if args.ingest > 0 {
        ingestion(&args).await;
    }
    if args.import > 0 {
        import(&args).await;
    }
    if args.products > 0 {
        lists(&args).await;
    }
    if args.webhooks > 0 {
        webhook_latency(&args).await;
    }
    if args.sync > 0 {
        let rate = if args.webhook_rate == 0 {
            2
        } else {
            args.webhook_rate
        };
        sync::sync(args.sync, args.sync_trees, rate, args.timeout).await;
    }
    if args.destinations > 0 {
        let rate = if args.webhook_rate == 0 {
            10
        } else {
            args.webhook_rate
        };
        events::destinations(args.destinations, rate, args.timeout).await;
    }
    if args.filtered > 0 {
        events::filtered(args.filtered, args.filtered_subs, args.timeout).await;
    }
    if args.history > 0 {
        history::history(args.history, args.timeout).await;
    }
    if args.export > 0 {
        export::export(args.export, args.timeout).await;
    }
    if args.freshness > 0 {
        freshness::freshness(freshness::PRODUCTS, args.freshness as u64, args.timeout).await;
    }
    if args.get > 0 {
        get::get(args.get, args.samples, 5, args.peer, args.timeout).await;
    }
    if args.write_shapes > 0 {
        shapes::write_shapes(args.write_shapes).await;
    }
    if args.isolation > 0 {
        isolation::isolation(args.isolation as u64, args.timeout).await;
    }
}

/// The coalescing window of the webhook figures (10 s as deployed).
const WEBHOOK_WINDOW: u64 = 2;
/// The retry schedule of the webhook figures: the production one scaled down (`make dev`'s).
const WEBHOOK_SCHEDULE: &str = "5,10,30,60,120,300,600";

/// The healthy receiver's write → delivery latency for `args.webhooks` writes, alone and
/// beside a hanging and a refusing receiver.
async fn webhook_latency(args: &Args) {
    use catalog_e2e::webhooks::{Receiver, RECEIVER_TIMEOUT_SECONDS};
    println!(
        "## Webhooks: {} product writes ({}), window {WEBHOOK_WINDOW} s, delivery timeout {RECEIVER_TIMEOUT_SECONDS} s, retry schedule {WEBHOOK_SCHEDULE} s\n",
        args.webhooks,
        match args.webhook_rate {
            0 => "4 writers, unpaced".to_string(),
            r => format!("{r} per second"),
        }
    );
    println!(
        "| receivers subscribed | writes took | delivered | p50 | p99 | max |\n|---|---|---|---|---|---|"
    );
    // the same fan-out (three subscriptions) with healthy receivers is the control for
    // the one with a hanging and a refusing receiver
    for (label, others) in [
        ("healthy only", 0),
        ("healthy + 2 more healthy", 1),
        ("healthy + hanging + refusing", 2),
    ] {
        let org = Org::new().await;
        let healthy = Receiver::start(0).await;
        let mut urls = vec![healthy.url()];
        let mut kept = Vec::new();
        match others {
            1 => {
                for _ in 0..2 {
                    kept.push(Receiver::start(0).await);
                }
            }
            2 => {
                let hang = Duration::from_secs(RECEIVER_TIMEOUT_SECONDS + 5);
                kept.push(Receiver::answering(204, hang).await);
                // never listens: connections are refused
                kept.push(Receiver::reserve(0));
            }
            _ => {}
        }
        urls.extend(kept.iter().map(Receiver::url));
        for url in &urls {
            let r = org
                .post("/v1/webhooks", json!({"url": url, "topics": ["*"]}))
                .await;
            assert_eq!(r.status, 201, "{:?}", r.body);
        }
        let started = Instant::now();
        let written: Vec<(String, Instant)> = stream::iter(0..args.webhooks)
            .map(|i| {
                let org = &org;
                let rate = args.webhook_rate;
                async move {
                    if rate > 0 {
                        // paced: write i starts at i / rate seconds
                        let at = started + Duration::from_secs_f64(i as f64 / rate as f64);
                        tokio::time::sleep_until(at.into()).await;
                    }
                    let id = format!("w{i:05}");
                    let r = org
                        .patch(
                            &format!("/v1/products/{id}"),
                            json!({"name": format!("Item {i}")}),
                        )
                        .await;
                    assert_eq!(r.status, 201, "{:?}", r.body);
                    (id, Instant::now())
                }
            })
            .buffer_unordered(4)
            .collect()
            .await;
        let writes_took = started.elapsed();
        let deadline = Instant::now() + args.timeout.max(Duration::from_secs(300));
        while healthy.received().len() < args.webhooks && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let got = healthy.received();
        let arrived: HashMap<String, Instant> = got
            .iter()
            .filter_map(|r| Some((r.json["identifier"].as_str()?.to_string(), r.at)))
            .collect();
        let mut latencies: Vec<Duration> = written
            .iter()
            .filter_map(|(id, at)| Some(arrived.get(id)?.duration_since(*at)))
            .collect();
        latencies.sort();
        let pick = |q: f64| quantile_text(&latencies, q);
        println!(
            "| {} | {:.1} s | {} of {} | {} | {} | {} |",
            label,
            writes_took.as_secs_f64(),
            latencies.len(),
            args.webhooks,
            pick(0.5),
            pick(0.99),
            pick(1.0)
        );
    }
    println!();
}
