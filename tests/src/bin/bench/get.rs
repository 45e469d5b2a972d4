//! A single product's GET (`--get N`, issue 44 item 5): where a warm call's time goes, and a
//! fresh process's first answer. N products are seeded; then one warm `products` process
//! answers GETs of them one after the other, beside the same product read straight from
//! DynamoDB Local by the benchmark (the floor any function pays: one strongly consistent
//! GetItem and its decoding), and the function's own time for the call
//! (`x-catalog-serve-us`), and a call through the same runtime that reads nothing (the
//! fallback's 404); then fresh processes answer their first GET.

use catalog_e2e::{send_to, stack, Org, Request};
use std::time::{Duration, Instant};

/// The `p`th percentile of `times`, in milliseconds.
fn percentile(times: &mut [Duration], p: usize) -> f64 {
    times.sort();
    super::quantile(times, p).as_secs_f64() * 1000.0
}

/// The section: `samples` warm GETs, as many floor reads, and `cold` fresh processes.
pub async fn get(n: usize, samples: usize, cold: usize, timeout: Duration) {
    let org = Org::new().await;
    super::define_catalog(&org).await;
    if let Err(e) = super::bulk_write(&org, 0..n, 100, 2, timeout).await {
        println!("Seeding {n} products failed: {e}");
        return;
    }
    let id = |i: usize| format!("p{:07}", (i * 7919) % n);
    let path = |i: usize| format!("/v1/products/{}", id(i));
    let process = "products@get";
    for i in 0..5 {
        // warm-up: the process starts and its clients connect
        send_to(process, Request::new("GET", &path(i)).bearer(&org.key)).await;
    }
    let (mut client, mut serve, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    let store = stack().await.store();
    for i in 0..samples {
        let started = Instant::now();
        let r = send_to(process, Request::new("GET", &path(i)).bearer(&org.key)).await;
        client.push(started.elapsed());
        if r.status != 200 {
            println!("GET {}: status {}: {}", path(i), r.status, r.body);
            return;
        }
        let us: u64 = r
            .header("x-catalog-serve-us")
            .map_or(0, |v| v.parse().unwrap_or(0));
        serve.push(Duration::from_micros(us));
        let started = Instant::now();
        let got = store.get_product(&org.id, &id(i)).await;
        floor.push(started.elapsed());
        assert!(matches!(got, Ok(Some(_))), "the floor reads the product");
    }
    // the same trip through the runtime with no storage: the fallback's 404 (the key's
    // lookup is cached after the first call)
    let mut bare = Vec::new();
    for i in 0..samples + 5 {
        let started = Instant::now();
        let r = send_to(
            "fallback@get",
            Request::new("GET", "/v1/nothing").bearer(&org.key),
        )
        .await;
        if i >= 5 {
            bare.push(started.elapsed());
        }
        if r.status != 404 {
            println!("GET /v1/nothing: status {}: {}", r.status, r.body);
            return;
        }
    }
    let mut first = Vec::new();
    for k in 0..cold {
        let process = format!("products@getcold{k}");
        let started = Instant::now();
        let r = send_to(&process, Request::new("GET", &path(k)).bearer(&org.key)).await;
        first.push(started.elapsed());
        if r.status != 200 {
            println!("cold GET: status {}: {}", r.status, r.body);
            return;
        }
    }
    println!("## A single product's GET\n");
    println!("{n} products seeded; {samples} warm GETs of them on one `products` process after 5 warm-up calls, each followed by the same product read by the benchmark straight from DynamoDB Local (GetItem, strongly consistent, decoded); then {cold} fresh processes each answer one GET.\n");
    println!("| Measure | p50 ms | p95 ms |");
    println!("|---|---|---|");
    let rows: [(&str, &mut Vec<Duration>); 5] = [
        ("warm GET, as the client sees it", &mut client),
        (
            "the function's own time for it (`x-catalog-serve-us`)",
            &mut serve,
        ),
        ("the floor: the same GetItem from the benchmark", &mut floor),
        (
            "a call that reads nothing (the fallback's 404), as the client sees it",
            &mut bare,
        ),
        (
            "a fresh process's first GET (start, init, call)",
            &mut first,
        ),
    ];
    for (label, times) in rows {
        println!(
            "| {label} | {:.2} | {:.2} |",
            percentile(times, 50),
            percentile(times, 95)
        );
    }
}
