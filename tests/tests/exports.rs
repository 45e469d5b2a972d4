//! `/exports` end to end through the real `imports` and `import-worker` functions and
//! moto's S3: the file is the list in identifier order, each line as the detail route
//! shows it; an export checkpoints part by part across continuations; the file plus the
//! changes after `asOf` is exactly the catalog while writers run; a product export imports
//! unchanged into a second organization; requests are checked as the lists check them, and
//! at most two run at once per organization.

use catalog_e2e::imports::imports;
use catalog_e2e::webhooks::eventually;
use catalog_e2e::{encode, stack, Org};
use serde_json::{json, Value};
use std::collections::BTreeMap;
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
    json!({"name": format!("Product {p} {}", noise(p)), "values": {"color": color}, "variants": [
        {"identifier": format!("{p}-v"), "name": "V", "skus": [
            {"identifier": format!("{p}-s1"), "name": "S1"},
            {"identifier": format!("{p}-s2"), "name": "S2"}
        ]}
    ]})
}

/// 64 letters and digits that deflate cannot shorten much, the same for each `p`: a
/// product line's gzip bytes are then mostly its own, and parts hold a few lines each.
fn noise(p: &str) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = p.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..64)
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
