//! A single product's GET (`--get N`, issue 44 item 5): where a warm call's time goes, and a
//! fresh process's first answer. N products are seeded; then one warm `products` process
//! answers GETs of them one after the other, beside the same product read straight from
//! DynamoDB Local by the benchmark (the floor any function pays: one strongly consistent
//! GetItem and its decoding), and the function's own time for the call
//! (`x-catalog-serve-us`), and a call through the same runtime that reads nothing (the
//! fallback's 404); then fresh processes answer their first GET. With `--peer`,
//! serverless-rust-demo's `get-product` (built by `scripts/peer.sh`) answers the same number
//! of GETs from its own table (copies of our items, with its id, name and price added),
//! call for call beside ours, and as many fresh processes.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use catalog_e2e::gateway::v2_event;
use catalog_e2e::{invoke, stack, Org, Request, PEER_TABLE};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The peer's table (`id` its key) with a copy of each of `org`'s `n` products' items
/// (every attribute as our table holds it, so that both functions read the same bytes) and
/// the peer's own attributes: id, name, price.
async fn seed_peer(org: &str, n: usize) -> Result<(), String> {
    use catalog::store::raw::{product_pk, PRODUCT_SK};
    let store = stack().await.store();
    let client = store.client();
    let schema = |name: &str| -> Result<_, String> {
        Ok((
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| e.to_string())?,
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(KeyType::Hash)
                .build()
                .map_err(|e| e.to_string())?,
        ))
    };
    let (definition, key) = schema("id")?;
    client
        .create_table()
        .table_name(PEER_TABLE)
        .attribute_definitions(definition)
        .key_schema(key)
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .map_err(|e| format!("CreateTable: {e:?}"))?;
    for i in 0..n {
        let id = format!("p{i:07}");
        let ours = client
            .get_item()
            .table_name(store.table())
            .key("PK", AttributeValue::S(product_pk(org, &id)))
            .key("SK", AttributeValue::S(PRODUCT_SK.into()))
            .send()
            .await
            .map_err(|e| format!("GetItem: {e:?}"))?;
        let mut item = ours.item.ok_or_else(|| format!("no product {id}"))?;
        item.insert("id".into(), AttributeValue::S(id));
        item.insert("name".into(), AttributeValue::S(format!("Product {i}")));
        item.insert("price".into(), AttributeValue::N(format!("{}.99", i % 100)));
        client
            .put_item()
            .table_name(PEER_TABLE)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| format!("PutItem: {e:?}"))?;
    }
    Ok(())
}

/// The API Gateway (v2) event of `GET path`, as both functions get it (the emulator's own
/// event): with `bearer` as its key, and the route's `{id}` in `pathParameters` for the peer
/// (its route fills them).
fn event(path: &str, id: Option<&str>, bearer: Option<&str>) -> Value {
    let mut req = Request::new("GET", path).header("accept", "application/json");
    if let Some(key) = bearer {
        req = req.bearer(key);
    }
    let mut event = v2_event(&req, "bench");
    if let Some(id) = id {
        event["pathParameters"] = json!({"id": id});
        event["routeKey"] = json!("GET /{id}");
    }
    event
}

/// One GET on `process` (the same event building and reading for both functions): its time
/// and the function's answer, or what went wrong.
async fn timed_get(process: &str, event: Value) -> Result<(Duration, Value), String> {
    let started = Instant::now();
    let out = invoke(process, event).await;
    let took = started.elapsed();
    match out["statusCode"].as_u64() {
        Some(200) => Ok((took, out)),
        _ => Err(format!("{process}: {out}")),
    }
}

/// The body's length of a function's answer.
fn body_len(out: &Value) -> usize {
    out["body"].as_str().map_or(0, str::len)
}

/// A strongly consistent GetItem of `key` in `table`, as both functions' floor.
async fn floor_read(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    key: Vec<(&str, String)>,
) -> Duration {
    let started = Instant::now();
    let got = client
        .get_item()
        .table_name(table)
        .set_key(Some(
            key.into_iter()
                .map(|(k, v)| (k.to_string(), AttributeValue::S(v)))
                .collect(),
        ))
        .consistent_read(true)
        .send()
        .await;
    let took = started.elapsed();
    assert!(
        matches!(got, Ok(ref r) if r.item.is_some()),
        "the floor reads the item"
    );
    took
}

/// The CPU time (user and system) the function process `name` has used, from
/// `/proc/<pid>/stat` (clock ticks of 10 ms).
fn cpu(name: &str) -> Option<Duration> {
    let pid = catalog_e2e::function_pid(name)?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // after the command's closing parenthesis: state is field 3, utime 14 and stime 15
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3)?.parse::<u64>().ok();
    Some(Duration::from_millis((ticks(14)? + ticks(15)?) * 10))
}

/// The `p`th percentile of `times`, in milliseconds.
fn percentile(times: &mut [Duration], p: usize) -> f64 {
    times.sort();
    super::quantile(times, p).as_secs_f64() * 1000.0
}

/// The section: `samples` warm GETs, as many floor reads, and `cold` fresh processes.
pub async fn get(n: usize, samples: usize, cold: usize, peer: bool, timeout: Duration) {
    let org = Org::new().await;
    super::define_catalog(&org).await;
    if let Err(e) = super::bulk_write(&org, 0..n, 100, 2, timeout).await {
        println!("Seeding {n} products failed: {e}");
        return;
    }
    if peer {
        if let Err(e) = seed_peer(&org.id, n).await {
            println!("Seeding the peer's {n} products failed: {e}");
            return;
        }
    }
    use catalog::store::raw::{product_pk, PRODUCT_SK};
    let id = |i: usize| format!("p{:07}", (i * 7919) % n);
    let path = |i: usize| format!("/v1/products/{}", id(i));
    let ours = |i: usize| event(&path(i), None, Some(&org.key));
    let theirs = |i: usize| event(&format!("/{}", id(i)), Some(&id(i)), None);
    let process = "products@get";
    for i in 0..5 {
        // warm-up: the process starts and its clients connect
        let _ = timed_get(process, ours(i)).await;
        if peer {
            let _ = timed_get("peer@get", theirs(i)).await;
        }
    }
    let (mut client, mut serve, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    let (mut peer_client, mut peer_floor) = (Vec::new(), Vec::new());
    let (mut bytes, mut peer_bytes) = (0, 0);
    let store = stack().await.store();
    let cpu_before = (cpu(process), cpu("peer@get"));
    for i in 0..samples {
        let (took, out) = match timed_get(process, ours(i)).await {
            Ok(answer) => answer,
            Err(e) => return println!("{e}"),
        };
        client.push(took);
        bytes = body_len(&out);
        let us: u64 = out["headers"]["x-catalog-serve-us"]
            .as_str()
            .map_or(0, |v| v.parse().unwrap_or(0));
        serve.push(Duration::from_micros(us));
        let key = vec![
            ("PK", product_pk(&org.id, &id(i))),
            ("SK", PRODUCT_SK.into()),
        ];
        floor.push(floor_read(store.client(), store.table(), key).await);
        if peer {
            match timed_get("peer@get", theirs(i)).await {
                Ok((took, out)) => {
                    peer_client.push(took);
                    peer_bytes = body_len(&out);
                }
                Err(e) => return println!("{e}"),
            }
            let key = vec![("id", id(i))];
            peer_floor.push(floor_read(store.client(), PEER_TABLE, key).await);
        }
    }
    let per_call = |before: Option<Duration>, name: &str| {
        let used = cpu(name)?.checked_sub(before?)?;
        Some(used.as_secs_f64() * 1000.0 / samples as f64)
    };
    let cpu_per_call = (
        per_call(cpu_before.0, process),
        per_call(cpu_before.1, "peer@get"),
    );
    // the same trip through the runtime with no storage: the fallback's 404 (the key's
    // lookup is cached after the first call)
    let mut bare = Vec::new();
    for i in 0..samples + 5 {
        let started = Instant::now();
        let out = invoke("fallback@get", event("/v1/nothing", None, Some(&org.key))).await;
        if i >= 5 {
            bare.push(started.elapsed());
        }
        if out["statusCode"].as_u64() != Some(404) {
            println!("GET /v1/nothing: {out}");
            return;
        }
    }
    let (mut first, mut peer_first) = (Vec::new(), Vec::new());
    let mut first_trips = (0, 0);
    for k in 0..cold {
        if peer {
            match timed_get(&format!("peer@getcold{k}"), theirs(k)).await {
                Ok((took, _)) => peer_first.push(took),
                Err(e) => return println!("{e}"),
            }
        }
        let (took, out) = match timed_get(&format!("products@getcold{k}"), ours(k)).await {
            Ok(answer) => answer,
            Err(e) => return println!("cold GET: {e}"),
        };
        first.push(took);
        let header = |name: &str| -> u32 {
            out["headers"][name]
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let r = (
            header("x-catalog-ddb-requests"),
            header("x-catalog-ddb-round-trips"),
        );
        first_trips = r;
    }
    println!("## A single product's GET\n");
    println!("{n} products seeded; {samples} warm GETs of them on one `products` process after 5 warm-up calls, each followed by the same item read by the benchmark straight from DynamoDB Local (GetItem, strongly consistent, as the function reads it); then {cold} fresh processes each answer one GET.\n");
    if peer {
        println!("Beside each, serverless-rust-demo's `get-product` (`scripts/peer.sh`) answers a GET of the same identifier from its own table, whose items are copies of ours with the peer's id, name and price added (so both read the same bytes), then the benchmark reads that item (strongly consistent too); both functions get the same API Gateway (v2) event, built and read by the same code; before each of our fresh processes, a fresh peer process answers its first GET.\n");
    }
    println!("| Measure | p50 ms | p95 ms |");
    println!("|---|---|---|");
    let mut rows: Vec<(&str, &mut Vec<Duration>)> = vec![
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
    if peer {
        rows.extend([
            ("peer: warm GET, as the client sees it", &mut peer_client),
            (
                "peer: the floor, its GetItem from the benchmark",
                &mut peer_floor,
            ),
            ("peer: a fresh process's first GET", &mut peer_first),
        ]);
    }
    for (label, times) in rows {
        println!(
            "| {label} | {:.2} | {:.2} |",
            percentile(times, 50),
            percentile(times, 95)
        );
    }
    let ms = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.3}"));
    println!(
        "\nCPU per warm call (user and system time of the process over the {samples} calls, from /proc): ours {} ms{}.",
        ms(cpu_per_call.0),
        if peer {
            format!(", the peer's {}", ms(cpu_per_call.1))
        } else {
            String::new()
        }
    );
    println!(
        "\nA fresh process's first GET sends {} DynamoDB requests in {} round trips (the key's, then the product's){}.",
        first_trips.0,
        first_trips.1,
        if peer {
            "; the peer, which authenticates nothing, one"
        } else {
            ""
        }
    );
    println!(
        "\nOur answer's body is {bytes} bytes{}.",
        if peer {
            format!(", the peer's {peer_bytes}")
        } else {
            String::new()
        }
    );
    if peer {
        let ratio = |ours: &mut [Duration], theirs: &mut [Duration]| {
            percentile(ours, 50) / percentile(theirs, 50)
        };
        println!(
            "\nOurs against the peer at the p50: warm {:.2}x, first GET of a fresh process {:.2}x.",
            ratio(&mut client, &mut peer_client),
            ratio(&mut first, &mut peer_first)
        );
    }
}
