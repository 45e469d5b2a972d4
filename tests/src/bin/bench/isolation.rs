//! Tenant isolation (`--isolation SECONDS`): a noisy organization sends five times its rate
//! limit (single calls and bulk writes) while a quiet one sends steady reads at a tenth of
//! its limit, both through the same three processes of the `products` function (three
//! Lambda instances sharing each organization's bucket). Measured: the quiet organization's
//! latency alone and beside the noisy one, the noisy one's answers (429s and whether their
//! headers are exact), 5xx answers, and the tokens the fleet admitted to the noisy
//! organization against the bound `burst + rate × (t + 1 s)` of docs/design/tenancy.md.

use catalog_e2e::{send_to, stack, Org, Request, Response};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Both organizations' limit: tokens per second and burst.
const RATE: u32 = 20;
const BURST: u32 = 40;
/// The function the load goes through: four processes on one invocation queue.
const FLEET: &str = "products@fleet";
/// Lines of one noisy bulk write (5 tokens).
const BULK_LINES: usize = 50;

/// One answer: when it was sent (since the phase began), its latency and the response.
struct Answer {
    sent: Duration,
    took: Duration,
    tokens: u32,
    response: Option<Response>,
}

type Answers = Arc<Mutex<Vec<Answer>>>;

/// Sends `make(i)` every `every` for `seconds`, each call on its own task; waits for all.
async fn paced(
    seconds: u64,
    every: Duration,
    timeout: Duration,
    make: impl Fn(usize) -> (Request, u32),
) -> Vec<Answer> {
    let answers: Answers = Arc::default();
    let began = Instant::now();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tasks = Vec::new();
    let mut i = 0;
    while began.elapsed() < Duration::from_secs(seconds) {
        tick.tick().await;
        let (req, tokens) = make(i);
        let answers = answers.clone();
        tasks.push(tokio::spawn(async move {
            let sent = began.elapsed();
            let started = Instant::now();
            let response = tokio::time::timeout(timeout, send_to(FLEET, req))
                .await
                .ok();
            answers.lock().unwrap().push(Answer {
                sent,
                took: started.elapsed(),
                tokens,
                response,
            });
        }));
        i += 1;
    }
    for t in tasks {
        let _ = t.await;
    }
    let mut out = std::mem::take(&mut *answers.lock().unwrap());
    out.sort_by_key(|a| a.sent);
    out
}

fn status(a: &Answer) -> u16 {
    a.response.as_ref().map_or(0, |r| r.status)
}

/// Whether a 429 of the rate limit carries exactly the fields decisions.md names.
fn exact_refusal(r: &Response) -> bool {
    let policy = format!("\"org\";q={BURST};w={}", BURST / RATE);
    let retry = r
        .header("retry-after")
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|s| s >= 1);
    let left = r.header("ratelimit").is_some_and(|v| {
        v.strip_prefix("\"org\";r=0;t=")
            .is_some_and(|t| t.parse::<u64>().is_ok())
    });
    retry
        && left
        && r.header("ratelimit-policy") == Some(policy.as_str())
        && r.body["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("rate limit exceeded: "))
}

fn quantile(answers: &[&Answer], q: f64) -> String {
    let mut times: Vec<Duration> = answers.iter().map(|a| a.took).collect();
    if times.is_empty() {
        return "–".into();
    }
    times.sort();
    let i = ((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1;
    format!("{:.1} ms", times[i].as_secs_f64() * 1000.0)
}

fn row(who: &str, answers: &[Answer]) -> String {
    let count = |f: &dyn Fn(u16) -> bool| answers.iter().filter(|a| f(status(a))).count();
    let ok: Vec<&Answer> = answers
        .iter()
        .filter(|a| (200..300).contains(&status(a)))
        .collect();
    format!(
        "| {who} | {} | {} | {} | {} | {} | {} | {} |",
        answers.len(),
        ok.len(),
        count(&|s| s == 429),
        count(&|s| s >= 500),
        count(&|s| s == 0),
        quantile(&ok, 0.5),
        quantile(&ok, 0.99),
    )
}

pub async fn isolation(seconds: u64, timeout: Duration) {
    let store = stack().await.store();
    let noisy = Org::new().await;
    let quiet = Org::new().await;
    for org in [&noisy, &quiet] {
        catalog::admin::set_limits(&store, &org.id, RATE, Some(BURST))
            .await
            .expect("limits set");
        assert_eq!(org.patch("/v1/products/p1", json!({})).await.status, 201);
        // the processes know both keys (and limits) before the clock starts
        let warm = (0..8).map(|_| {
            send_to(
                FLEET,
                Request::new("GET", "/v1/products/p1").bearer(&org.key),
            )
        });
        for r in futures_util::future::join_all(warm).await {
            assert!(matches!(r.status, 200 | 429), "{}", r.body);
        }
    }
    println!(
        "## Tenant isolation: limits {RATE}/s, bursts of {BURST}; {} processes of `products`; {seconds} s per phase\n",
        catalog_e2e::runtime::DELIVERY_CONCURRENCY
    );
    // the buckets fill up again (BURST / RATE seconds) before each phase
    let refill = Duration::from_secs(u64::from(BURST / RATE) + 1);
    tokio::time::sleep(refill).await;
    let read = |org: &Org| {
        let key = org.key.clone();
        move |_| (Request::new("GET", "/v1/products/p1").bearer(&key), 1)
    };
    let quiet_every = Duration::from_secs_f64(10.0 / f64::from(RATE));
    let alone = paced(seconds, quiet_every, timeout, read(&quiet)).await;
    tokio::time::sleep(refill).await;
    // 5 × the limit: 80 % of it in single reads, 20 % in bulk writes of 5 tokens each
    let singles_every = Duration::from_secs_f64(1.0 / (4.0 * f64::from(RATE)));
    let bulk_every = Duration::from_secs_f64(BULK_LINES as f64 / 10.0 / f64::from(RATE));
    let bulk_key = noisy.key.clone();
    let bulk = move |i: usize| {
        let lines: Vec<Value> = (0..BULK_LINES)
            .map(|l| json!({"identifier": format!("b{i}-{l}")}))
            .collect();
        let req = Request::new("PATCH", "/v1/products")
            .bearer(&bulk_key)
            .json(Value::Array(lines));
        (req, BULK_LINES.div_ceil(10) as u32)
    };
    let (beside, noisy_singles, noisy_bulk) = tokio::join!(
        paced(seconds, quiet_every, timeout, read(&quiet)),
        paced(seconds, singles_every, timeout, read(&noisy)),
        paced(seconds, bulk_every, timeout, bulk),
    );
    println!("| organization | calls | 2xx | 429 | 5xx | no answer | p50 (2xx) | p99 (2xx) |");
    println!("|---|---|---|---|---|---|---|---|");
    println!("{}", row("quiet, alone", &alone));
    println!("{}", row("quiet, beside the noisy one", &beside));
    println!("{}", row("noisy: single reads", &noisy_singles));
    println!("{}", row("noisy: bulk writes of 50 lines", &noisy_bulk));
    let noisy: Vec<&Answer> = noisy_singles.iter().chain(&noisy_bulk).collect();
    let refusals: Vec<&Response> = noisy
        .iter()
        .filter_map(|a| a.response.as_ref())
        .filter(|r| {
            r.status == 429
                && r.body["error"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("rate limit"))
        })
        .collect();
    let exact = refusals.iter().filter(|r| exact_refusal(r)).count();
    let admitted: u32 = noisy
        .iter()
        .filter(|a| (200..300).contains(&status(a)))
        .map(|a| a.tokens)
        .sum();
    let span = noisy
        .iter()
        .map(|a| a.sent + a.took)
        .max()
        .unwrap_or_default()
        .as_secs_f64();
    let bound = f64::from(BURST) + f64::from(RATE) * (span + 1.0);
    let ratio = |q: f64| {
        let at = |xs: &[Answer]| {
            let mut t: Vec<f64> = xs
                .iter()
                .filter(|a| (200..300).contains(&status(a)))
                .map(|a| a.took.as_secs_f64())
                .collect();
            t.sort_by(f64::total_cmp);
            t.get(((t.len() as f64 * q).ceil() as usize).clamp(1, t.len().max(1)) - 1)
                .copied()
        };
        match (at(&beside), at(&alone)) {
            (Some(b), Some(a)) if a > 0.0 => format!("{:.2}×", b / a),
            _ => "–".into(),
        }
    };
    println!();
    println!(
        "- quiet p99 beside the noisy organization / alone: {}; p50: {}",
        ratio(0.99),
        ratio(0.5)
    );
    println!(
        "- noisy: {exact} of {} rate-limit 429s carry exact `Retry-After`, `RateLimit-Policy` and `RateLimit` fields and the error",
        refusals.len()
    );
    println!(
        "- noisy: admitted {admitted} tokens in {span:.1} s ({:.1}/s against {RATE}/s); bound burst + rate × (t + 1 s) = {bound:.0}: {}",
        f64::from(admitted) / span.max(0.001),
        if f64::from(admitted) <= bound { "within" } else { "OVER" }
    );
    println!();
}
