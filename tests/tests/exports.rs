//! `/exports` end to end through the real `imports` and `import-worker` functions and
//! moto's S3: the file is the list in identifier order, each line as the detail route
//! shows it; an export checkpoints part by part across continuations; the file plus the
//! changes after `asOf` is exactly the catalog while writers run; a product export imports
//! unchanged into a second organization; requests are checked as the lists check them, and
//! at most two run at once per organization; the list of exports reads only its page, and an
//! export's walk holds its byte budget of entities, however large they are.

use aws_sdk_dynamodb::types::AttributeValue;
use catalog_e2e::imports::imports;
use catalog_e2e::webhooks::eventually;
use catalog_e2e::{encode, stack, Org};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::time::Duration;

/// The longest an export of the tests' catalogs runs.
const FINISHED: Duration = Duration::from_secs(180);

/// Starts an export: 202 with `running`, `asOf` and the total; returns it.
async fn start(org: &Org, body: Value) -> Value {
    let r = org.post("/v1/exports", body).await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let job = r.body["result"].clone();
    assert_eq!(job["status"], "running", "{job}");
    assert!(job["id"].as_str().unwrap().starts_with("exp_"), "{job}");
    assert_eq!(job["url"], Value::Null);
    assert_eq!(job["written"], 0);
    job
}

/// The export once it has finished.
async fn finished(org: &Org, id: &str) -> Value {
    eventually("the export to finish", FINISHED, || async {
        let r = org.get(&format!("/v1/exports/{id}")).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        (r.body["result"]["status"] != "running").then(|| r.body["result"].clone())
    })
    .await
}

/// The lines of the export's file, from its download URL (gzip members, one per part).
async fn lines(job: &Value) -> (Vec<Value>, usize) {
    let url = job["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no url: {job}"));
    let bytes = reqwest::get(url).await.unwrap().bytes().await.unwrap();
    let members = bytes
        .windows(3)
        .filter(|w| w == &[0x1f, 0x8b, 0x08])
        .count();
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, members)
}

/// Every entity of a list (all pages), by identifier.
async fn listed(org: &Org, path: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut next = format!("{path}{sep}limit=50");
    loop {
        let r = org.get(&next).await;
        assert_eq!(r.status, 200, "{next}: {:?}", r.body);
        for e in r.body["result"].as_array().unwrap() {
            out.insert(e["identifier"].as_str().unwrap().to_string(), e.clone());
        }
        match r.body["pagination"]["nextCursor"].as_str() {
            Some(c) => next = format!("{path}{sep}limit=50&cursor={c}"),
            None => return out,
        }
    }
}

fn tree(p: &str, color: &str) -> Value {
    json!({"name": format!("Product {p} {}", noise(p, 64)), "values": {"color": color}, "variants": [
        {"identifier": format!("{p}-v"), "name": "V", "skus": [
            {"identifier": format!("{p}-s1"), "name": "S1"},
            {"identifier": format!("{p}-s2"), "name": "S2"}
        ]}
    ]})
}

/// `len` letters and digits that deflate cannot shorten much, the same for each `p`: a
/// product line's gzip bytes are then mostly its own, and parts hold a few lines each.
fn noise(p: &str, len: usize) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = p.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ABC[(x % 62) as usize] as char
        })
        .collect()
}

async fn seed(org: &Org, n: usize) {
    org.define(
        json!({"key": "color", "displayName": "Color", "targetEntity": "product", "type": "text"}),
    )
    .await;
    let body: Vec<Value> = (0..n)
        .map(|i| {
            let mut t = tree(&format!("p{i:03}"), if i % 3 == 0 { "red" } else { "blue" });
            t["identifier"] = json!(format!("p{i:03}"));
            t
        })
        .collect();
    let r = org.patch("/v1/products", Value::Array(body)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
}

#[tokio::test]
async fn an_export_is_the_list_in_identifier_order_as_the_detail_route_shows_it() {
    imports().await;
    let org = Org::new().await;
    seed(&org, 45).await;

    let job = start(
        &org,
        json!({"entity": "products", "include": ["variants", "skus"]}),
    )
    .await;
    assert_eq!(job["total"], 45);
    let id = job["id"].as_str().unwrap();
    let job = finished(&org, id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(job["written"], 45);
    assert_eq!(job["error"], Value::Null);
    assert!(job["expiresAt"].is_string(), "{job}");
    let (got, members) = lines(&job).await;
    // a line per product, in order, each exactly its detail with the same include
    let ids: Vec<&str> = got
        .iter()
        .map(|l| l["identifier"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert_eq!(ids.len(), 45);
    for line in &got {
        let p = line["identifier"].as_str().unwrap();
        let r = org
            .get(&format!("/v1/products/{p}?include=variants,skus"))
            .await;
        assert_eq!(&r.body["result"], line);
    }
    // pages of one tree, parts of 1 KiB: the file is many parts, each its own gzip member,
    // written across continuations (a slice of 1 s). Each name holds 64 letters deflate
    // cannot shorten much, so the file is about 7 KiB (7,229-7,265 bytes in three runs) and
    // a part closes at the first line past 1 KiB: 6 parts at least (7 seen), however the
    // runs' slices fall (a short part kept across a continuation only adds members)
    assert!(members >= 5, "{members} gzip members");

    // a filtered SKU export with selectors: the list's own selection
    let search = json!({"product.color": [{"operator": "EQUALS", "value": "red"}]});
    let job = start(
        &org,
        json!({"entity": "skus", "search": search, "attributes": ["product.color"]}),
    )
    .await;
    assert_eq!(job["total"], 30);
    let job = finished(&org, job["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let (got, _) = lines(&job).await;
    let list = listed(
        &org,
        &format!(
            "/v1/skus?search={}&attributes=product.color",
            encode(&search.to_string())
        ),
    )
    .await;
    assert_eq!(got, list.into_values().collect::<Vec<_>>());

    // newest first, and a stranger's or unknown id is 404
    let r = org.get("/v1/exports").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let listed: Vec<&str> = r.body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec![job["id"].as_str().unwrap(), id]);
    assert_eq!(r.body["pagination"]["totalResults"], 2);
    let other = Org::new().await;
    let r = other.get(&format!("/v1/exports/{id}")).await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    assert_eq!(r.body, json!({"error": format!("export '{id}' not found")}));
}

#[tokio::test]
async fn requests_are_checked_as_the_lists_check_them_and_refusals_change_nothing() {
    imports().await;
    let org = Org::new().await;
    seed(&org, 3).await;
    for (body, error) in [
        (json!({"entity": "assets"}), "unknown variant `assets`"),
        (json!({"entity": "skus", "limit": 5}), "unknown field 'limit'"),
        (json!({}), "field 'entity' is required"),
        (
            json!({"entity": "products", "include": ["skus"]}),
            "field 'include': 'skus' needs 'variants' on products",
        ),
        (
            json!({"entity": "variants", "include": ["metaobjects"]}),
            "field 'include': 'metaobjects' is not one of [skus] for variant (metaobjects are not embedded in exports)",
        ),
        (
            json!({"entity": "products", "search": {"product.nope": [{"operator": "EQUALS", "value": "x"}]}}),
            "nope",
        ),
        (
            json!({"entity": "products", "search": "{"}),
            "query parameter 'search' is not valid JSON",
        ),
    ] {
        let r = org.post("/v1/exports", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {:?}", r.body);
        let said = r.body["error"].as_str().unwrap();
        assert!(said.contains(error), "{body}: {said}");
    }
    // the request is kept in the export's item: bounded in bytes before anything is read
    let selectors: Vec<String> = (0..2000)
        .map(|i| format!("product.key_{i:05}_padding"))
        .collect();
    let r = org
        .post(
            "/v1/exports",
            json!({"entity": "products", "attributes": selectors}),
        )
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .ends_with("bytes as JSON, more than the 32768 an export keeps"),
        "{:?}",
        r.body
    );
    let r = org.get("/v1/exports").await;
    assert_eq!(r.body["result"], json!([]));

    // two slots: a third export waits (429 with Retry-After) and creates nothing
    let store = stack().await.store();
    let held: Vec<_> = futures_util::future::join_all(
        (0..2).map(|_| store.take_slot(&org.id, "export", 2, Duration::from_secs(600))),
    )
    .await
    .into_iter()
    .map(|s| s.unwrap().expect("a free slot"))
    .collect();
    let r = org.post("/v1/exports", json!({"entity": "products"})).await;
    assert_eq!(r.status, 429, "{:?}", r.body);
    assert_eq!(r.headers["retry-after"], "30");
    assert_eq!(
        r.body,
        json!({"error": "too many running exports: at most 2 run at once per organization; retry after 30 s"})
    );
    assert_eq!(org.get("/v1/exports").await.body["result"], json!([]));
    store.give_back_slot(&held[0]).await;
    let job = start(&org, json!({"entity": "products"})).await;
    let job = finished(&org, job["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    // the export gave its slot back: the next takes it
    let job = start(&org, json!({"entity": "variants"})).await;
    assert_eq!(job["total"], 3);
    store.give_back_slot(&held[1]).await;
}

/// Products, by identifier, as `GET /products?include=variants,skus` shows them.
async fn catalog(org: &Org) -> BTreeMap<String, Value> {
    listed(org, "/v1/products?include=variants,skus").await
}

#[tokio::test]
async fn the_file_plus_the_changes_after_as_of_is_exactly_the_catalog() {
    imports().await;
    let org = Org::new().await;
    seed(&org, 120).await;
    let job = start(
        &org,
        json!({"entity": "products", "include": ["variants", "skus"]}),
    )
    .await;
    let id = job["id"].as_str().unwrap().to_string();
    // writers update, create and delete while the export walks (pages of one product)
    let writer = {
        let org = Org {
            id: org.id.clone(),
            key: org.key.clone(),
        };
        let id = id.clone();
        tokio::spawn(async move {
            let mut round = 0usize;
            loop {
                let r = org.get(&format!("/v1/exports/{id}")).await;
                if r.body["result"]["status"] != "running" {
                    return round;
                }
                let i = (round * 7) % 120;
                let p = format!("p{i:03}");
                let r = org
                    .patch(&format!("/v1/products/{p}"), tree(&p, &format!("c{round}")))
                    .await;
                assert!(r.status == 200 || r.status == 201, "{:?}", r.body);
                let fresh = format!("p{:03}n{round}", (round * 13) % 120);
                let r = org
                    .patch(&format!("/v1/products/{fresh}"), tree(&fresh, "new"))
                    .await;
                assert_eq!(r.status, 201, "{:?}", r.body);
                let doomed = format!("p{:03}", (round * 11 + 5) % 120);
                let r = org.delete(&format!("/v1/products/{doomed}")).await;
                assert!(r.status == 200 || r.status == 404, "{:?}", r.body);
                let r = org
                    .delete(&format!("/v1/skus/p{:03}-s2", (round * 3 + 1) % 120))
                    .await;
                assert!(r.status == 200 || r.status == 404, "{:?}", r.body);
                round += 1;
            }
        })
    };
    let job = finished(&org, &id).await;
    let rounds = writer.await.unwrap();
    assert_eq!(job["status"], "succeeded", "{job}");
    assert!(
        rounds >= 3,
        "the writers ran {rounds} rounds during the export"
    );
    assert_is_the_catalog(&org, &job).await;
}

/// The export's file plus the products and deletions after its `asOf` is exactly the
/// catalog (a deletion removes what the replica holds from before it: a product deleted and
/// created again after `asOf` is listed by both, and the later one wins).
async fn assert_is_the_catalog(org: &Org, job: &Value) {
    let after = encode(job["asOf"].as_str().unwrap());
    let (file, _) = lines(job).await;
    let mut replica: BTreeMap<String, Value> = file
        .into_iter()
        .map(|l| (l["identifier"].as_str().unwrap().to_string(), l))
        .collect();
    let changed = format!("/v1/products?include=variants,skus&updated_after={after}");
    replica.extend(listed(org, &changed).await);
    let deleted = format!("/v1/deletions?entity_type=product&updated_after={after}");
    for (p, d) in listed(org, &deleted).await {
        let deleted_at = d["deletedAt"].as_str().unwrap();
        if replica
            .get(&p)
            .is_some_and(|l| l["updatedAt"].as_str().unwrap() < deleted_at)
        {
            replica.remove(&p);
        }
    }
    let truth = catalog(org).await;
    assert_eq!(
        replica.keys().collect::<Vec<_>>(),
        truth.keys().collect::<Vec<_>>()
    );
    for (p, line) in &truth {
        assert_eq!(&replica[p], line, "{p}");
    }
}

/// Three runs of one export at once (an SQS message delivered again, a continuation sent
/// twice) while its products change: each part number is claimed by one run before it is
/// uploaded, so the runs never upload different bytes under one number (before, the
/// completion could name an ETag S3 no longer held), and the file is whole.
#[tokio::test]
async fn runs_of_one_export_at_once_never_share_a_part() {
    imports().await;
    let org = Org::new().await;
    seed(&org, 60).await;
    let job = start(
        &org,
        json!({"entity": "products", "include": ["variants", "skus"]}),
    )
    .await;
    let id = job["id"].as_str().unwrap().to_string();
    let message = json!({"export": {"org": org.id, "id": id}}).to_string();
    let event = json!({"Records": [{"messageId": "dup", "body": message}]});
    let runs = (0..3).map(|_| catalog_e2e::invoke("import-worker", event.clone()));
    let writes = async {
        for i in 0..30 {
            let p = format!("p{:03}", i * 2);
            let r = org
                .patch(&format!("/v1/products/{p}"), tree(&p, &format!("w{i}")))
                .await;
            assert_eq!(r.status, 200, "{:?}", r.body);
        }
    };
    let (answers, ()) = tokio::join!(futures_util::future::join_all(runs), writes);
    for a in answers {
        // no run failed: each finished, handed over, or found another run carrying it
        assert_eq!(a, json!({"batchItemFailures": []}), "{a}");
    }
    let job = finished(&org, &id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_is_the_catalog(&org, &job).await;
}

/// What two organizations' copies of one product share: all but their times.
fn content(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("selfUpdatedAt");
        o.remove("updatedAt");
        for child in ["variants", "skus"] {
            if let Some(items) = o.get_mut(child).and_then(Value::as_array_mut) {
                for item in items.iter_mut() {
                    *item = content(item.take());
                }
            }
        }
    }
    v
}

/// The definitions of the round trip, in an organization.
async fn define_all(org: &Org) {
    for d in [
        json!({"key": "color", "displayName": "Color", "targetEntity": "product", "type": "text"}),
        json!({"key": "tags", "displayName": "Tags", "targetEntity": "product", "type": "text", "isMulti": true}),
        json!({"key": "size", "displayName": "Size", "targetEntity": "variant", "type": "select", "options": ["S", "M", "L"]}),
        json!({"key": "price", "displayName": "Price", "targetEntity": "sku", "type": "price"}),
        json!({"key": "stock", "displayName": "Stock", "targetEntity": "sku", "type": "number"}),
        json!({"key": "active", "displayName": "Active", "targetEntity": "sku", "type": "boolean"}),
    ] {
        org.define(d).await;
    }
}

#[tokio::test]
async fn a_product_export_imports_unchanged_into_a_second_organization() {
    imports().await;
    let (a, b) = (Org::new().await, Org::new().await);
    define_all(&a).await;
    define_all(&b).await;
    let body: Vec<Value> = (0..25)
        .map(|i| {
            json!({"identifier": format!("r{i:02}"), "name": format!("Round {i}"),
                "values": {"color": "Teal", "tags": ["a", format!("t{i}")]},
                "variants": [{"identifier": format!("r{i:02}-m"), "name": "M", "values": {"size": "M"},
                    "skus": [{"identifier": format!("r{i:02}-m1"), "name": "M1",
                        "values": {"price": "12.50 EUR", "stock": i, "active": i % 2 == 0}}]}]})
        })
        .collect();
    let r = a.patch("/v1/products", Value::Array(body)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let job = start(
        &a,
        json!({"entity": "products", "include": ["variants", "skus"]}),
    )
    .await;
    let job = finished(&a, job["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let url = job["url"].as_str().unwrap();
    let gz = reqwest::get(url).await.unwrap().bytes().await.unwrap();
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .unwrap();
    let import = catalog_e2e::imports::start_import(&b, &text).await;
    let done = catalog_e2e::imports::finished(&b, &import).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(
        (done["created"].clone(), done["failed"].clone()),
        (json!(25), json!(0))
    );
    let (ca, cb) = (catalog(&a).await, catalog(&b).await);
    assert_eq!(ca.len(), 25);
    let strip =
        |c: BTreeMap<String, Value>| -> Vec<Value> { c.into_values().map(content).collect() };
    assert_eq!(strip(ca), strip(cb));
}

/// `catalog-admin export`: starts an export through the API, shows a progress bar until it
/// finishes and downloads the file (through the local HTTP gateway, as a client would).
#[tokio::test]
async fn the_cli_exports_with_progress_and_downloads_the_file() {
    imports().await;
    let org = Org::new().await;
    seed(&org, 12).await;
    let port = catalog_e2e::gateway::start().await;
    let file = std::env::temp_dir().join(format!("catalog-export-{}.ndjson.gz", org.id));
    let mut cli = std::process::Command::new(catalog_e2e::binary("catalog-admin"));
    cli.args(["export", "--out", file.to_str().unwrap()]).args([
        "--url",
        &format!("http://127.0.0.1:{port}/v1"),
        "--key",
        &org.key,
    ]);
    let out = tokio::task::spawn_blocking(move || cli.output())
        .await
        .unwrap()
        .expect("catalog-admin runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "[{}] 100%  12/12 entities  (succeeded)",
            "#".repeat(30)
        )),
        "{stderr}"
    );
    let job: Value = serde_json::from_slice(&out.stdout).expect("the export as JSON");
    assert_eq!(job["status"], "succeeded");
    let gz = std::fs::read(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(
        stderr.contains(&format!("downloaded {} bytes", gz.len())),
        "{stderr}"
    );
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .unwrap();
    // products with their variants and SKUs, by default
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 12);
    assert_eq!(lines, catalog(&org).await.into_values().collect::<Vec<_>>());
}

/// The exports partition of an organization, as stored: its records and its counts.
async fn exports_partition(org: &Org) -> Vec<HashMap<String, AttributeValue>> {
    catalog_e2e::stack()
        .await
        .partition(&format!("O#{}#E", org.id))
        .await
}

fn text(item: &HashMap<String, AttributeValue>, name: &str) -> String {
    item[name].as_s().unwrap().clone()
}

/// `GET /exports` reads only its page: a cursor's page reads `limit + 1` records, a numbered
/// page those up to its end, and the total comes from the organization's counts (one small
/// item, moved by each create in its own transaction), never from reading every record.
/// Records hold their parts' ETags (tens of KB for large files) and an organization keeps a
/// week of them: here 80 records of 30 KB (2.4 MB), which a list used to read whole (3
/// Query requests, whatever the page).
#[tokio::test]
async fn the_export_list_reads_only_its_page_whatever_the_organization_holds() {
    imports().await;
    let org = Org::new().await;
    seed(&org, 1).await;
    // three exports, made and counted through the API (two run at most at once)
    let mut made = Vec::new();
    for _ in 0..3 {
        let job = start(&org, json!({"entity": "products"})).await;
        let id = job["id"].as_str().unwrap().to_string();
        assert_eq!(finished(&org, &id).await["status"], "succeeded");
        made.insert(0, id);
    }
    let items = exports_partition(&org).await;
    let newest = items
        .iter()
        .find(|i| text(i, "SK") == made[0])
        .unwrap()
        .clone();
    let ttl: i64 = newest["ttl"].as_n().unwrap().parse().unwrap();
    // every record of a day expires at the start of the 9th day after it, with its count
    assert_eq!(ttl % 86_400, 0);
    let day = format!("d{}", ttl / 86_400 - 9);
    let counts = items
        .iter()
        .find(|i| text(i, "SK") == "counts")
        .expect("the counts item");
    assert_eq!(counts[&day], AttributeValue::N("3".into()), "{counts:?}");

    // 80 older records as the worker leaves them after a large file: 600 parts each
    let store = catalog_e2e::stack().await.store();
    let parts = AttributeValue::L(
        (1..=600)
            .map(|n| {
                AttributeValue::M(HashMap::from([
                    ("number".to_string(), AttributeValue::N(n.to_string())),
                    (
                        "etag".to_string(),
                        AttributeValue::S(format!("\"{:032x}\"", n * 7_919)),
                    ),
                ]))
            })
            .collect(),
    );
    let older: Vec<String> = (0..80)
        .rev()
        .map(|i| format!("exp_00000000{i:018}"))
        .collect();
    for chunk in older.chunks(25) {
        let puts = chunk
            .iter()
            .map(|id| {
                let mut item = newest.clone();
                item.insert("SK".into(), AttributeValue::S(id.clone()));
                item.insert("id".into(), AttributeValue::S(id.clone()));
                item.insert("parts".into(), parts.clone());
                let put = aws_sdk_dynamodb::types::PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .unwrap();
                aws_sdk_dynamodb::types::WriteRequest::builder()
                    .put_request(put)
                    .build()
            })
            .collect();
        let out = store
            .client()
            .batch_write_item()
            .request_items(store.table(), puts)
            .send()
            .await
            .expect("BatchWriteItem");
        assert!(out.unprocessed_items.unwrap_or_default().is_empty());
    }
    store
        .client()
        .update_item()
        .table_name(store.table())
        .key("PK", AttributeValue::S(format!("O#{}#E", org.id)))
        .key("SK", AttributeValue::S("counts".into()))
        .update_expression("ADD #day :n")
        .expression_attribute_names("#day", &day)
        .expression_attribute_values(":n", AttributeValue::N("80".into()))
        .send()
        .await
        .expect("UpdateItem");
    let all: Vec<String> = made.iter().cloned().chain(older.iter().cloned()).collect();

    let ids = |r: &catalog_e2e::Response| -> Vec<String> {
        r.body["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };
    let pagination = |r: &catalog_e2e::Response| {
        let mut p = r.body["pagination"].clone();
        let cursor = p["nextCursor"].take();
        (p, cursor.as_str().map(str::to_string))
    };
    // a numbered page: the records up to its end (one Query) and the counts (one GetItem),
    // in one round trip
    let r = org.get("/v1/exports?limit=2").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!((r.ddb_requests(), r.ddb_round_trips()), (2, 1));
    assert_eq!(ids(&r), all[..2]);
    let (p, cursor) = pagination(&r);
    assert_eq!(
        p,
        json!({"limit": 2, "page": 1, "totalPages": 42, "totalResults": 83, "nextCursor": null})
    );
    // each listed export as its own route shows it (its URL signed anew)
    let unsigned = |mut v: Value| {
        assert!(v["url"].is_string(), "{v}");
        (v["url"], v["expiresAt"]) = (Value::Null, Value::Null);
        v
    };
    let one = org.get(&format!("/v1/exports/{}", made[1])).await;
    assert_eq!(
        unsigned(r.body["result"][1].clone()),
        unsigned(one.body["result"].clone())
    );
    let r = org.get("/v1/exports?limit=2&page=3").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!((r.ddb_requests(), r.ddb_round_trips()), (2, 1));
    assert_eq!(ids(&r), all[4..6]);
    assert_eq!(pagination(&r).0["page"], 3);

    // by cursor, `limit + 1` records a page, to the end: every export once, in order
    let mut seen = Vec::new();
    let mut next = cursor.expect("a next cursor");
    let mut costs = Vec::new();
    loop {
        let r = org
            .get(&format!("/v1/exports?limit=20&cursor={next}"))
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        costs.push(r.ddb_requests());
        seen.extend(ids(&r));
        let (p, cursor) = pagination(&r);
        assert_eq!(
            p,
            json!({"limit": 20, "page": null, "totalPages": 5, "totalResults": 83, "nextCursor": null})
        );
        match cursor {
            Some(c) => next = c,
            None => break,
        }
    }
    assert_eq!(seen, all[2..]);
    // 21 records of 30 KB are one Query response, the 20 of the last page too
    assert_eq!(costs, [2, 2, 2, 2, 2]);

    // a cursor is this list's and this organization's, and not with `page`
    for (query, error) in [
        ("cursor=00.00", "query parameter 'cursor': not a cursor of this list (edited, or made for other filters)"),
        (&format!("cursor={next}&page=2"), "query parameters 'cursor' and 'page' cannot be used together"),
    ] {
        let r = org.get(&format!("/v1/exports?{query}")).await;
        assert_eq!((r.status, r.body), (400, json!({ "error": error })), "{query}");
    }
    let other = Org::new().await;
    let r = other.get(&format!("/v1/exports?cursor={next}")).await;
    assert_eq!(r.status, 400, "{:?}", r.body);

    // an expired record DynamoDB has not deleted yet is neither listed nor counted
    let mut expired = newest.clone();
    let gone = "exp_7zzzzzzzzzzzzzzzzzzzzzzzzz".to_string();
    expired.insert("SK".into(), AttributeValue::S(gone.clone()));
    expired.insert("id".into(), AttributeValue::S(gone));
    expired.insert(
        "ttl".into(),
        AttributeValue::N((ttl - 9 * 86_400).to_string()),
    );
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(expired))
        .send()
        .await
        .expect("PutItem");
    let r = org.get("/v1/exports?limit=2").await;
    assert_eq!(ids(&r), all[..2]);
    assert_eq!(r.body["pagination"]["totalResults"], 83);
    // it took its own Query response: the page read one record short
    assert_eq!(r.ddb_requests(), 3);

    // an organization without counts (none made since they began) is counted by reading
    // its records: a COUNT Query, one request per 1 MB of them
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .key("PK", AttributeValue::S(format!("O#{}#E", org.id)))
        .key("SK", AttributeValue::S("counts".into()))
        .send()
        .await
        .expect("DeleteItem");
    let r = org.get("/v1/exports?limit=2").await;
    assert_eq!(ids(&r), all[..2]);
    assert_eq!(r.body["pagination"]["totalResults"], 83);
    assert_eq!(r.ddb_requests(), 3 + 3);
}

/// An export's memory follows its byte budget, not its entities' size times its page: the
/// page being written and the one read ahead hold at most `CATALOG_EXPORT_PAGE_BYTES` of
/// entities (100 KB here; pages of 10 products of 30 KB, and 10 more ahead, held 600 KB),
/// as the worker counts and keeps in the record; a tree larger than the budget is read
/// alone, its first Query response and then the rest. The files are whole and exact.
#[tokio::test]
async fn an_exports_walk_holds_its_byte_budget_however_large_its_entities() {
    use catalog_e2e::imports::EXPORT_PAGE_BYTES;
    imports().await;
    let org = Org::new().await;
    for (key, target) in [("description", "product"), ("notes", "sku")] {
        org.define(json!({"key": key, "displayName": key, "targetEntity": target, "type": "text"}))
            .await;
    }
    // 12 products of about 30 KB
    let body: Vec<Value> = (0..12)
        .map(|i| {
            let p = format!("big{i:02}");
            json!({"identifier": p, "name": p, "values": {"description": noise(&p, 30_000)}})
        })
        .collect();
    let r = org.patch("/v1/products", Value::Array(body)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);

    let job = start(&org, json!({"entity": "products"})).await;
    let id = job["id"].as_str().unwrap().to_string();
    let job = finished(&org, &id).await;
    assert_eq!(
        (&job["status"], &job["written"]),
        (&json!("succeeded"), &json!(12)),
        "{job}"
    );
    let (got, _) = lines(&job).await;
    let mut expected = Vec::new();
    for i in 0..12 {
        expected.push(org.get(&format!("/v1/products/big{i:02}")).await.body["result"].clone());
    }
    assert_eq!(got, expected);
    // three products at most were held at once (their bytes as DynamoDB counts them: the
    // 30,000 of each description and the rest of its item), never a page of ten
    let held = peak_bytes(&org, &id).await;
    assert!(3 * 30_000 < held && held <= EXPORT_PAGE_BYTES, "{held}");

    // a tree of 2.3 MB (24 SKUs of 95 KB): more than one Query response, more than the
    // budget: held alone (nothing read beside it), whole only while its line is written,
    // and written exactly as its detail route shows it; a variant export embedding those
    // SKUs the same
    let skus: Vec<Value> = (0..24)
        .map(|i| {
            let s = format!("tall-s{i:02}");
            json!({"identifier": s, "name": s, "values": {"notes": noise(&s, 95_000)}})
        })
        .collect();
    let r = org
        .patch(
            "/v1/products",
            json!([{"identifier": "tall", "name": "Tall", "variants": [
                {"identifier": "tall-v", "name": "V", "skus": skus}
            ]}]),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["result"][0]["status"], 201, "{:?}", r.body);
    for (body, detail) in [
        (
            json!({"entity": "products", "include": ["variants", "skus"]}),
            "/v1/products/tall?include=variants,skus",
        ),
        (
            json!({"entity": "variants", "include": ["skus"]}),
            "/v1/variants/tall-v?include=skus",
        ),
    ] {
        let job = start(&org, body).await;
        let id = job["id"].as_str().unwrap().to_string();
        let job = finished(&org, &id).await;
        assert_eq!(job["status"], "succeeded", "{job}");
        let (got, _) = lines(&job).await;
        let tall = got
            .iter()
            .find(|l| l["identifier"].as_str().unwrap().starts_with("tall"))
            .unwrap();
        assert_eq!(tall, &org.get(detail).await.body["result"], "{detail}");
        let held = peak_bytes(&org, &id).await;
        let tree = 24 * 95_000..24 * 95_000 + EXPORT_PAGE_BYTES;
        assert!(tree.contains(&held), "{detail}: {held}");
    }
}

/// The most bytes of entities export `id`'s walk held at once, as its record keeps it.
async fn peak_bytes(org: &Org, id: &str) -> usize {
    let items = exports_partition(org).await;
    let record = items.iter().find(|i| text(i, "SK") == id).unwrap();
    record
        .get("peakBytes")
        .expect("the record keeps its walk's peak")
        .as_n()
        .unwrap()
        .parse()
        .unwrap()
}

/// `DELETE /exports/{id}` (scope `settings:manage`, as the erasure of history) erases a
/// finished export for personal data: its file goes from the bucket, its record from the
/// detail route and from the list and its total. A running export is refused (409) and
/// keeps its record; a key that only reads or writes the catalog is refused (403).
#[tokio::test]
async fn a_finished_export_is_erased_with_its_file() {
    use catalog::auth::Scope;
    use catalog_e2e::imports::{s3_client, BUCKET};
    imports().await;
    let org = Org::new().await;
    seed(&org, 5).await;
    let job = start(&org, json!({"entity": "products"})).await;
    let id = job["id"].as_str().unwrap().to_string();
    let job = finished(&org, &id).await;
    assert_eq!(job["status"], "succeeded", "{job}");
    // a running export, as POST /exports leaves it before the worker ends it: the finished
    // one's record, copied
    let mut running = exports_partition(&org)
        .await
        .into_iter()
        .find(|i| i.get("id").and_then(|v| v.as_s().ok()) == Some(&id))
        .expect("the export's record");
    for (name, value) in [
        ("SK", "exp_running"),
        ("id", "exp_running"),
        ("status", "running"),
    ] {
        running.insert(name.into(), AttributeValue::S(value.into()));
    }
    stack()
        .await
        .store()
        .client()
        .put_item()
        .table_name(catalog_e2e::TABLE)
        .set_item(Some(running))
        .send()
        .await
        .unwrap();
    let s3 = s3_client(catalog_e2e::webhooks::moto());
    let file = catalog::imports::export_key(&org.id, &id);
    let head = || s3.head_object().bucket(BUCKET).key(&file).send();
    assert!(head().await.is_ok(), "the file is in the bucket");
    let r = org.get("/v1/exports").await;
    assert_eq!(r.body["pagination"]["totalResults"], 2, "{:?}", r.body);

    let catalog_key = org
        .key_with(&[Scope::CatalogRead, Scope::CatalogWrite])
        .await;
    let r = catalog_e2e::Request::new("DELETE", &format!("/v1/exports/{id}"))
        .bearer(&catalog_key)
        .send()
        .await;
    r.assert_lacks("settings:manage");
    let r = org.delete("/v1/exports/exp_running").await;
    assert_eq!(r.status, 409, "{:?}", r.body);
    assert_eq!(
        r.body,
        json!({"error": "export exp_running is running: delete it once it has finished (GET /exports/exp_running tells when)"})
    );
    assert!(head().await.is_ok(), "refusals delete nothing");

    // the record's GetItem, then (after the files' DeleteObjects) the transaction that
    // deletes it and takes it from its day's count
    let r = org.delete(&format!("/v1/exports/{id}")).await;
    assert_eq!(
        (r.status, r.body.clone(), r.ddb_requests()),
        (
            200,
            json!({"result": {"identifier": id, "deleted": true}}),
            2
        )
    );
    let gone = head().await.expect_err("the file is gone");
    assert!(gone.into_service_error().is_not_found());
    let r = org.get(&format!("/v1/exports/{id}")).await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    let r = org.get("/v1/exports").await;
    assert_eq!(r.body["pagination"]["totalResults"], 1, "{:?}", r.body);
    let listed: Vec<&str> = r.body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["exp_running"]);
    let r = org.delete(&format!("/v1/exports/{id}")).await;
    assert_eq!(r.status, 404, "{:?}", r.body);
}
