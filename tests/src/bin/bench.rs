//! `make bench`: list latency at catalog scale, through the real products function on
//! DynamoDB Local. Seeds N products (one variant, three SKUs each, with values), then times
//! `GET /v1/products?limit=100` unfiltered, with two filters (first page and a deep page),
//! and with a SKU-level filter, and prints a Markdown table for docs/performance.md.
//!
//! Usage: `bench [--products N] [--samples N]` (defaults 10000 and 50). The harness runs
//! the binaries of `CATALOG_E2E_PROFILE` (`make bench` builds and uses `release`).

use catalog::domain::attributes::AttributeType;
use catalog::domain::time::Timestamp;
use catalog::domain::values::{StoredAttribute, StoredEntry, StoredValues};
use catalog::store::items::{EntityItem, EntityKind};
use catalog_e2e::{encode, stack, Org};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const COLORS: [&str; 5] = ["red", "blue", "green", "black", "white"];
const SIZES: [&str; 3] = ["S", "M", "L"];

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number"))
        })
        .unwrap_or(default)
}

fn one(t: AttributeType, value: String) -> StoredAttribute {
    StoredAttribute {
        attr_type: t,
        is_multi: false,
        metaobject_definition: None,
        entries: vec![StoredEntry {
            locale: None,
            channel: None,
            value,
        }],
    }
}

fn values(pairs: Vec<(&str, StoredAttribute)>) -> StoredValues {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Product `i`, its variant and its three SKUs.
fn tree(org: &str, i: usize, at: Timestamp) -> Vec<EntityItem> {
    let p = format!("p{i:06}");
    let v = format!("{p}-v");
    let product_values = values(vec![
        (
            "brand",
            one(AttributeType::Text, format!("Brand {:02}", i % 40)),
        ),
        (
            "color",
            one(AttributeType::Select, COLORS[i % COLORS.len()].to_string()),
        ),
        (
            "price",
            one(
                AttributeType::Price,
                format!("{}.{:02} EUR", 5 + i % 200, i % 100),
            ),
        ),
    ]);
    let mut items = vec![
        EntityItem::new(
            org,
            EntityKind::Product,
            &p,
            (None, None),
            &format!("Product {i}"),
            product_values,
            at,
        ),
        EntityItem::new(
            org,
            EntityKind::Variant,
            &v,
            (Some(&p), None),
            &v,
            values(vec![(
                "size",
                one(AttributeType::Select, SIZES[i % SIZES.len()].to_string()),
            )]),
            at,
        ),
    ];
    for s in 0..3 {
        let id = format!("{v}-{s}");
        let price = one(
            AttributeType::Price,
            format!("{}.00 EUR", 10 + (i + s) % 90),
        );
        let ean = one(AttributeType::Text, format!("400{i:06}{s}"));
        items.push(EntityItem::new(
            org,
            EntityKind::Sku,
            &id,
            (Some(&p), Some(&v)),
            &id,
            values(vec![("price", price), ("ean", ean)]),
            at,
        ));
    }
    items
}

struct Row {
    name: String,
    results: u64,
    requests: u32,
    round_trips: u32,
    p50: Duration,
    p95: Duration,
}

async fn measure(org: &Org, name: &str, path: &str, samples: usize) -> Row {
    for _ in 0..3 {
        let r = org.get(path).await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
    }
    let mut times = Vec::with_capacity(samples);
    let mut last = None;
    for _ in 0..samples {
        let start = Instant::now();
        let r = org.get(path).await;
        times.push(start.elapsed());
        assert_eq!(r.status, 200);
        last = Some(r);
    }
    times.sort();
    let r = last.expect("samples > 0");
    Row {
        name: name.to_string(),
        results: r.body["pagination"]["totalResults"].as_u64().unwrap_or(0),
        requests: r.ddb_requests(),
        round_trips: r.ddb_round_trips(),
        p50: times[times.len() / 2],
        p95: times[(times.len() * 95 / 100).min(times.len() - 1)],
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let products = arg("--products", 10_000);
    let samples = arg("--samples", 50).max(1);
    let org = Org::new().await;
    for (entity, key, t, extra) in [
        ("product", "brand", "text", json!({})),
        (
            "product",
            "color",
            "select",
            json!({"options": COLORS.to_vec()}),
        ),
        ("product", "price", "price", json!({})),
        (
            "variant",
            "size",
            "select",
            json!({"options": SIZES.to_vec()}),
        ),
        ("sku", "price", "price", json!({})),
        ("sku", "ean", "text", json!({})),
    ] {
        let mut body = json!({"displayName": key, "key": key, "targetEntity": entity, "type": t});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        org.define(body).await;
    }

    let started = Instant::now();
    let store = stack().await.store();
    let at = Timestamp::now();
    let org_id = org.id.clone();
    stream::iter((0..products).step_by(8))
        .map(|first| {
            let store = store.clone();
            let org_id = org_id.clone();
            async move {
                let items: Vec<EntityItem> = (first..(first + 8).min(products))
                    .flat_map(|i| tree(&org_id, i, at))
                    .collect();
                store.create_entities(&org_id, &items).await
            }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<()>>()
        .await
        .expect("seeded");
    let seeded = started.elapsed();
    eprintln!(
        "seeded {products} products, {products} variants, {} SKUs in {:.1} s",
        products * 3,
        seeded.as_secs_f64()
    );

    let two = json!({
        "product.color": [{"operator": "IN", "value": ["red", "blue"]}],
        "product.price": [{"operator": "GREATER_THAN", "value": 50}]
    });
    let cross = json!({
        "product.brand": [{"operator": "CONTAINS", "value": "brand 1"}],
        "sku.price": [{"operator": "LESS_THAN", "value": "20 EUR"}]
    });
    let filtered = format!("/v1/products?limit=100&search={}", encode(&two.to_string()));
    // the first call of the process: start, cold auth, full snapshot reads
    let start = Instant::now();
    let first: Value = org.get(&filtered).await.body;
    let cold = start.elapsed();
    let total = first["pagination"]["totalResults"].as_u64().unwrap_or(0);
    let last_page = total.div_ceil(100).max(1);
    let cross_path = format!(
        "/v1/products?limit=100&search={}",
        encode(&cross.to_string())
    );
    let rows = vec![
        measure(
            &org,
            "unfiltered, page 1",
            "/v1/products?limit=100",
            samples,
        )
        .await,
        measure(
            &org,
            "unfiltered, page 50",
            "/v1/products?limit=100&page=50",
            samples,
        )
        .await,
        measure(&org, "two filters, page 1", &filtered, samples).await,
        measure(
            &org,
            &format!("two filters, page {last_page} (last)"),
            &format!("{filtered}&page={last_page}"),
            samples,
        )
        .await,
        measure(&org, "product + SKU filter, page 1", &cross_path, samples).await,
        measure(
            &org,
            "two filters + include=variants,skus",
            &format!("{filtered}&include=variants,skus"),
            samples,
        )
        .await,
    ];

    println!(
        "Catalog: {products} products, {products} variants, {} SKUs (seeded in {:.1} s); {samples} samples per row after 3 warm-up calls.\n",
        products * 3,
        seeded.as_secs_f64()
    );
    println!("| `GET /v1/products?limit=100` | results | DynamoDB requests (round trips) | p50 ms | p95 ms |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} ({}) | {} | {} |",
            r.name,
            r.results,
            r.requests,
            r.round_trips,
            ms(r.p50),
            ms(r.p95)
        );
    }
    println!(
        "\nFirst call of a fresh function process (process start, key lookup, full snapshot reads of {products} products): {} ms.",
        ms(cold)
    );
}
