//! The event figures of issue 41 (docs/performance.md, "Events"):
//! - `--destinations N`: N paced product writes delivered to an SQS queue and to an
//!   EventBridge bus (a rule forwarding to a queue read here), each alone and beside a
//!   verified destination of the same type that then disappears (every send refused);
//! - `--filtered N`: N SKU writes against 20 random filtered subscriptions, in rounds, each
//!   round's deliveries compared with the model (`filter_model.rs`): missed and false ones
//!   counted; and the change feed's DynamoDB requests and time per write, read from its
//!   per-batch log line, with the filters and with as many unfiltered subscriptions.

use super::WEBHOOK_WINDOW;
use aws_sdk_sqs::types::QueueAttributeName;
use catalog_e2e::filter_model::{define, expected, Filter, Rng, Sku};
use catalog_e2e::webhooks::{events_client, moto, sqs_client, Receiver};
use catalog_e2e::Org;
use futures_util::{stream, StreamExt};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// A queue of the emulator: (URL, ARN).
async fn queue(sqs: &aws_sdk_sqs::Client, name: &str) -> (String, String) {
    let url = sqs
        .create_queue()
        .queue_name(name)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&QueueAttributeName::QueueArn]
        .clone();
    (url, arn)
}

/// The catalog body of a message of `queue_url` (an EventBridge event's `detail`).
fn body_of(text: &str) -> Value {
    let v: Value = serde_json::from_str(text).unwrap_or_default();
    match v.get("detail") {
        Some(detail) => detail.clone(),
        None => v,
    }
}

/// Receives from `queue_url` until `stop` says so: each message's body, with its arrival.
async fn drain(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    mut stop: impl FnMut(&[(Value, Instant)]) -> bool,
) -> Vec<(Value, Instant)> {
    let mut got = Vec::new();
    while !stop(&got) {
        let out = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        for m in out.messages.unwrap_or_default() {
            got.push((body_of(m.body.as_deref().unwrap_or("")), Instant::now()));
            let _ = sqs
                .delete_message()
                .queue_url(queue_url)
                .receipt_handle(m.receipt_handle.unwrap_or_default())
                .send()
                .await;
        }
    }
    got
}

/// A verified subscription of `org` to `destination`, whose messages reach `read_url`: its id.
async fn verified(
    org: &Org,
    sqs: &aws_sdk_sqs::Client,
    destination: Value,
    read_url: &str,
) -> String {
    let r = org
        .post(
            "/v1/webhooks",
            json!({"destination": destination, "topics": ["product.*"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let id = r.body["result"]["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = drain(sqs, read_url, |got| {
        !got.is_empty() || Instant::now() > deadline
    })
    .await;
    let token = got[0].0["token"].as_str().expect("a verification token");
    let ok = org
        .post(
            &format!("/v1/webhooks/{id}/verify"),
            json!({ "token": token }),
        )
        .await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    id
}

/// What the newest page of subscription `id`'s log says of its catalog deliveries: how
/// many have each status, and the first error logged.
async fn log_of(org: &Org, id: &str) -> String {
    let r = org
        .get(&format!("/v1/webhooks/{id}/deliveries?limit=200"))
        .await;
    let entries: Vec<&Value> = r.body["result"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|d| d["event"] != json!("webhook.verification"))
                .collect()
        })
        .unwrap_or_default();
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &entries {
        *by_status
            .entry(d["status"].as_str().unwrap_or("?"))
            .or_default() += 1;
    }
    let statuses: Vec<String> = by_status.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let error = entries
        .iter()
        .find_map(|d| d["lastError"].as_str())
        .unwrap_or("none yet");
    format!("newest {}: {}; {error}", entries.len(), statuses.join(", "))
}

/// A destination of `kind` named `name`: its `destination` field, the queue its messages
/// reach, and how to make it disappear.
async fn destination(
    kind: &str,
    name: &str,
) -> (
    Value,
    String,
    Box<dyn FnOnce() -> futures_util::future::BoxFuture<'static, ()>>,
) {
    let sqs = sqs_client(moto());
    let (url, arn) = queue(&sqs, name).await;
    if kind == "sqs" {
        let gone_url = url.clone();
        let remove = Box::new(move || {
            Box::pin(async move {
                let _ = sqs.delete_queue().queue_url(gone_url).send().await;
            }) as futures_util::future::BoxFuture<'static, ()>
        });
        return (json!({"type": "sqs", "queueUrl": url}), url, remove);
    }
    let events = events_client(moto());
    let bus_arn = events
        .create_event_bus()
        .name(name)
        .send()
        .await
        .unwrap()
        .event_bus_arn
        .unwrap();
    events
        .put_rule()
        .name("all")
        .event_bus_name(name)
        .event_pattern(json!({"source": [{"prefix": "catalog."}]}).to_string())
        .send()
        .await
        .unwrap();
    events
        .put_targets()
        .rule("all")
        .event_bus_name(name)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("queue")
                .arn(arn)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let bus = name.to_string();
    let remove = Box::new(move || {
        Box::pin(async move {
            let _ = events
                .remove_targets()
                .rule("all")
                .event_bus_name(&bus)
                .ids("queue")
                .send()
                .await;
            let _ = events
                .delete_rule()
                .name("all")
                .event_bus_name(&bus)
                .send()
                .await;
            let _ = events.delete_event_bus().name(&bus).send().await;
        }) as futures_util::future::BoxFuture<'static, ()>
    });
    (
        json!({"type": "eventbridge", "eventBusArn": bus_arn}),
        url,
        remove,
    )
}

fn quantile(sorted: &[Duration], q: f64) -> String {
    sorted
        .get(((sorted.len() as f64 * q).ceil() as usize).saturating_sub(1))
        .map_or("-".to_string(), |d| format!("{:.2} s", d.as_secs_f64()))
}

/// Write → arrival latency on a healthy SQS queue and EventBridge bus, alone and beside a
/// failing destination of the same type; `rate` writes a second.
pub async fn destinations(n: usize, rate: usize, timeout: Duration) {
    let rate = rate.max(1);
    println!(
        "## Events: {n} product writes at {rate} per second to AWS destinations, window {WEBHOOK_WINDOW} s\n"
    );
    println!("| destination | beside | delivered | p50 | p99 | max | the refusing one's log |\n|---|---|---|---|---|---|---|");
    let sqs = sqs_client(moto());
    for kind in ["sqs", "eventbridge"] {
        for beside in [false, true] {
            let org = Org::new().await;
            let (healthy, read_url, _keep) =
                destination(kind, &format!("bench-ok-{}", org.id)).await;
            verified(&org, &sqs, healthy, &read_url).await;
            let mut failing_id = None;
            if beside {
                let (failing, failing_read, remove) =
                    destination(kind, &format!("bench-gone-{}", org.id)).await;
                failing_id = Some(verified(&org, &sqs, failing, &failing_read).await);
                // verified, then gone: every send to it is refused from now on
                remove().await;
            }
            let started = Instant::now();
            let writes = stream::iter(0..n)
                .map(|i| {
                    let org = &org;
                    async move {
                        let at = started + Duration::from_secs_f64(i as f64 / rate as f64);
                        tokio::time::sleep_until(at.into()).await;
                        let id = format!("e{i:05}");
                        let r = org
                            .patch(&format!("/v1/products/{id}"), json!({"name": id}))
                            .await;
                        assert_eq!(r.status, 201, "{:?}", r.body);
                        (id, Instant::now())
                    }
                })
                .buffer_unordered(8)
                .collect::<Vec<(String, Instant)>>();
            let deadline = Instant::now()
                + timeout.max(Duration::from_secs(120))
                + Duration::from_secs_f64(n as f64 / rate as f64);
            let reads = drain(&sqs, &read_url, |got| {
                got.len() >= n || Instant::now() > deadline
            });
            let (written, got) = futures_util::join!(writes, reads);
            let arrived: HashMap<String, Instant> = got
                .iter()
                .filter_map(|(b, at)| Some((b["identifier"].as_str()?.to_string(), *at)))
                .collect();
            let mut latencies: Vec<Duration> = written
                .iter()
                .filter_map(|(id, at)| Some(arrived.get(id)?.saturating_duration_since(*at)))
                .collect();
            latencies.sort();
            let refusing = match &failing_id {
                Some(id) => log_of(&org, id).await,
                None => "–".to_string(),
            };
            println!(
                "| {kind} | {} | {} of {n} | {} | {} | {} | {refusing} |",
                if beside { "a refusing one" } else { "none" },
                latencies.len(),
                quantile(&latencies, 0.5),
                quantile(&latencies, 0.99),
                quantile(&latencies, 1.0)
            );
        }
    }
    println!();
}

/// The change feed's per-batch log lines written since `from` (bytes): (changes, DynamoDB
/// requests, milliseconds) summed.
/// The change feed's work summed over its `change-feed batch` log lines.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct FeedCost {
    /// Batches that held changes (each reads its organizations' subscriptions).
    pub batches: u64,
    pub changes: u64,
    pub history: u64,
    pub requests: u64,
    pub ms: u64,
}

/// The change feed's cost logged after byte `from` of its log.
pub(super) fn feed_cost(log: &std::path::Path, from: u64) -> FeedCost {
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text[(from as usize).min(text.len())..]).to_string();
    let mut sum = FeedCost::default();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let f = &v["fields"];
        if f["message"] != json!("change-feed batch") {
            continue;
        }
        let n = |name: &str| f[name].as_u64().unwrap_or(0);
        sum.changes += n("changes");
        sum.batches += u64::from(n("changes") > 0);
        sum.history += n("history");
        sum.requests += n("ddb_requests");
        sum.ms += n("ms");
    }
    sum
}

pub(super) fn log_len(log: &std::path::Path) -> u64 {
    std::fs::metadata(log).map_or(0, |m| m.len())
}

/// `n` SKU writes against `subs` random filtered subscriptions (and, for the feed's cost,
/// `n / 10` against as many unfiltered ones).
pub async fn filtered(n: usize, subs: usize, timeout: Duration) {
    let log = std::path::PathBuf::from(std::env::var("CATALOG_E2E_LOG_DIR").unwrap())
        .join("change-feed.log");
    let seed = std::env::var("FILTER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_u64);
    println!("## Events: {n} SKU writes against {subs} filtered subscriptions (seed {seed})\n");
    let mut rng = Rng(seed);
    let org = Org::new().await;
    define(&org).await;
    let filters: Vec<Filter> = (0..subs).map(|_| Filter::random(&mut rng)).collect();
    let mut receivers = Vec::new();
    for f in &filters {
        let receiver = Receiver::start(0).await;
        let mode = if f.any { "any" } else { "all" };
        let r = org
            .post(
                "/v1/webhooks",
                json!({"url": receiver.url(), "topics": ["sku.*"], "filter": {"search": f.search(), "searchMode": mode}}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        receivers.push(receiver);
    }
    let (model, ids) = seed_catalog(&org, &mut rng).await;
    let mut model = model;
    let mut counts = vec![0usize; subs];
    let (mut missed, mut false_ones, mut delivered) = (0usize, 0usize, 0usize);
    let from = log_len(&log);
    let started = Instant::now();
    let mut written = 0;
    // creations first: their deliveries, then rounds of updates
    let empty = BTreeMap::new();
    let mut rounds: Vec<(String, Vec<String>, BTreeMap<String, Sku>)> =
        vec![("sku.created".into(), ids.clone(), empty)];
    loop {
        let (event, changed, before) = rounds.pop().unwrap();
        let wants: Vec<_> = filters
            .iter()
            .map(|f| expected(f, &event, &changed, &before, &model))
            .collect();
        // every delivery of the round must arrive (and so its window be sealed) before the
        // next round writes: a window still open would coalesce two rounds' changes
        let deadline = Instant::now() + timeout.max(Duration::from_secs(900));
        for (i, want) in wants.iter().enumerate() {
            let to = counts[i] + want.len();
            while receivers[i].distinct().len() < to && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let got: Vec<(String, String, String)> = {
                let all = receivers[i].distinct();
                let end = all.len().min(to);
                let mut got: Vec<_> = all[counts[i].min(end)..end]
                    .iter()
                    .map(|r| {
                        let j = &r.json;
                        (
                            j["identifier"].as_str().unwrap_or("").to_string(),
                            j["event"].as_str().unwrap_or("").to_string(),
                            j["match"].as_str().unwrap_or("none").to_string(),
                        )
                    })
                    .collect();
                got.sort();
                got
            };
            let lost: Vec<_> = want.iter().filter(|w| !got.contains(w)).collect();
            let extra: Vec<_> = got.iter().filter(|g| !want.contains(g)).collect();
            if !lost.is_empty() || !extra.is_empty() {
                eprintln!(
                    "[bench] {event} round, filter {i} ({}): missed {lost:?}, false {extra:?}",
                    filters[i].search()
                );
            }
            missed += lost.len();
            false_ones += extra.len();
            delivered += got.len();
            counts[i] = to;
        }
        if written >= n {
            break;
        }
        // the next round: about half the SKUs, each written once
        let before = model.clone();
        let mut changed = Vec::new();
        let mut bodies = Vec::new();
        for id in &ids {
            if written + bodies.len() >= n || rng.below(2) == 0 {
                continue;
            }
            let sku = model.get_mut(id).unwrap();
            let body = if rng.below(2) == 0 {
                let stock = (sku.stock.unwrap_or(0) + 1 + rng.below(3) as i64) % 4;
                sku.stock = Some(stock);
                json!({"values": {"stock": stock}})
            } else {
                let sizes: Vec<&'static str> = ["S", "M", "L"]
                    .into_iter()
                    .filter(|z| Some(*z) != sku.size)
                    .collect();
                let size = *rng.pick(&sizes);
                sku.size = Some(size);
                json!({"values": {"size": size}})
            };
            bodies.push((id.clone(), body));
            changed.push(id.clone());
        }
        written += bodies.len();
        stream::iter(bodies)
            .map(|(id, body)| {
                let org = &org;
                async move {
                    let r = org.patch(&format!("/v1/skus/{id}"), body).await;
                    assert_eq!(r.status, 200, "{:?}", r.body);
                }
            })
            .buffer_unordered(4)
            .collect::<Vec<()>>()
            .await;
        rounds.push(("sku.updated".into(), changed, before));
    }
    // anything after the last round is false
    tokio::time::sleep(Duration::from_secs(WEBHOOK_WINDOW + 3)).await;
    for (i, r) in receivers.iter().enumerate() {
        false_ones += r.distinct().len().saturating_sub(counts[i]);
    }
    let took = started.elapsed();
    let FeedCost {
        changes,
        requests,
        ms,
        ..
    } = feed_cost(&log, from);
    println!("| writes | deliveries expected | delivered | missed | false | took |\n|---|---|---|---|---|---|");
    println!(
        "| {written} (+{} creations) | {} | {delivered} | {missed} | {false_ones} | {:.0} s |\n",
        ids.len(),
        counts.iter().sum::<usize>(),
        took.as_secs_f64()
    );
    println!("| change feed | changes | DynamoDB requests per change | ms per change |\n|---|---|---|---|");
    let per = |x: u64, of: u64| x as f64 / of.max(1) as f64;
    println!(
        "| {subs} filtered subscriptions | {changes} | {:.2} | {:.2} |",
        per(requests, changes),
        per(ms, changes)
    );

    // the same feed with as many unfiltered subscriptions (each change reaches all of them)
    let plain = Org::new().await;
    define(&plain).await;
    let mut sinks = Vec::new();
    for _ in 0..subs {
        let receiver = Receiver::start(0).await;
        let r = plain
            .post(
                "/v1/webhooks",
                json!({"url": receiver.url(), "topics": ["sku.*"]}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        sinks.push(receiver);
    }
    let (_, plain_ids) = seed_catalog(&plain, &mut rng).await;
    let m = (n / 10).max(1);
    let from = log_len(&log);
    stream::iter(0..m)
        .map(|i| {
            let plain = &plain;
            let id = plain_ids[i % plain_ids.len()].clone();
            async move {
                let r = plain
                    .patch(
                        &format!("/v1/skus/{id}"),
                        json!({"values": {"stock": i as i64 + 10}}),
                    )
                    .await;
                assert_eq!(r.status, 200, "{:?}", r.body);
            }
        })
        .buffer_unordered(4)
        .collect::<Vec<()>>()
        .await;
    let deadline = Instant::now() + timeout.max(Duration::from_secs(120));
    while feed_cost(&log, from).changes < m as u64 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let FeedCost {
        changes,
        requests,
        ms,
        ..
    } = feed_cost(&log, from);
    println!(
        "| {subs} unfiltered subscriptions ({m} writes) | {changes} | {:.2} | {:.2} |\n",
        per(requests, changes),
        per(ms, changes)
    );
}

/// 20 products of random colors with 10 SKUs each (random size and stock): the model, and
/// the SKU identifiers.
async fn seed_catalog(org: &Org, rng: &mut Rng) -> (BTreeMap<String, Sku>, Vec<String>) {
    let mut model = BTreeMap::new();
    let mut trees = Vec::new();
    for p in 0..20 {
        let color = *rng.pick(&["red", "blue", "green"]);
        let mut skus = Vec::new();
        for s in 0..10 {
            let id = format!("p{p}-s{s}");
            let sku = Sku {
                color,
                size: Some(*rng.pick(&["S", "M", "L"])),
                stock: Some(rng.below(4) as i64),
            };
            skus.push(json!({"identifier": id, "values": {"stock": sku.stock, "size": sku.size}}));
            model.insert(id, sku);
        }
        trees.push(
            json!({"identifier": format!("p{p}"), "values": {"color": color},
                          "variants": [{"identifier": format!("p{p}-v"), "skus": skus}]}),
        );
    }
    let r = org.patch("/v1/products", Value::Array(trees)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let ids = model.keys().cloned().collect();
    (model, ids)
}
