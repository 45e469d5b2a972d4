//! Imports end to end: the real `imports` and `import-worker` binaries, moto's S3 (presigned
//! upload, bucket notification) and SQS (the import queue, fed to the worker as the event
//! source mapping does), DynamoDB Local.

use catalog_e2e::imports::{finished, imports, start_import, BATCH_LINES};
use catalog_e2e::webhooks::eventually;
use catalog_e2e::{function_pid, stack, Org};
use serde_json::{json, Value};
use std::time::Duration;

const LINES: usize = 10_000;

/// The import file: product `i` with one variant, a value on each; known bad lines; blank
/// lines (counted as lines, not as items).
/// A line the import must refuse: (line, identifier, status, error).
type Refused = (u64, Option<String>, u16, String);

fn file() -> (String, Vec<Refused>) {
    let mut text = String::new();
    let mut bad = Vec::new();
    let mut number = 0u64;
    for i in 0..LINES {
        number += 1;
        let id = format!("m{i:05}");
        let line = if i % 1000 == 7 {
            bad.push((
                number,
                Some(id.clone()),
                400,
                "values: unknown attribute 'product.colour'".to_string(),
            ));
            json!({"identifier": id, "values": {"colour": "red"}}).to_string()
        } else if i % 2500 == 11 {
            let cut = format!("{{\"identifier\":\"{id}\"");
            bad.push((
                number,
                None,
                400,
                format!(
                    "line is not valid JSON: EOF while parsing an object at line 1 column {}",
                    cut.len()
                ),
            ));
            cut
        } else {
            json!({"identifier": id, "name": format!("Model {i}"), "values": {"color": "red"},
                   "variants": [{"identifier": format!("{id}-v"), "values": {"size": "M"}}]})
            .to_string()
        };
        text.push_str(&line);
        text.push('\n');
        if i % 3000 == 0 {
            number += 1;
            text.push('\n');
        }
    }
    (text, bad)
}

async fn catalog(org: &Org) {
    org.define(
        json!({"key": "color", "displayName": "Color", "type": "text", "targetEntity": "product"}),
    )
    .await;
    org.define(
        json!({"key": "size", "displayName": "Size", "type": "text", "targetEntity": "variant"}),
    )
    .await;
}

fn counts(job: &Value) -> Value {
    json!({
        "status": job["status"], "total": job["total"], "processed": job["processed"],
        "created": job["created"], "updated": job["updated"], "failed": job["failed"],
        "errors": job["errors"],
    })
}

/// Everything the import wrote, as the API shows it (timestamps aside).
async fn state(org: &Org) -> Vec<Value> {
    let mut all = Vec::new();
    for page in 1.. {
        let r = org
            .get(&format!("/v1/variants?limit=200&page={page}"))
            .await;
        assert_eq!(r.status, 200);
        let result = r.body["result"].as_array().unwrap().clone();
        if result.is_empty() {
            break;
        }
        all.extend(result.into_iter().map(|v| {
            json!({"id": v["identifier"], "product": v["product"]["identifier"],
                   "size": v["attributes"]["variant.size"][0]["value"]})
        }));
    }
    all
}

#[tokio::test]
async fn an_import_reports_exact_counts_and_a_killed_worker_ends_the_same() {
    imports().await;
    let (text, bad) = file();
    let expected_errors: Vec<Value> = bad
        .iter()
        .take(100)
        .map(|(line, id, status, error)| {
            json!({"line": line, "identifier": id, "status": status, "error": error})
        })
        .collect();
    let good = (LINES - bad.len()) as u64;

    // Uninterrupted.
    let calm = Org::new().await;
    catalog(&calm).await;
    let id = start_import(&calm, &text).await;
    let job = finished(&calm, &id).await;
    let calm_counts = counts(&job);
    assert_eq!(
        calm_counts,
        json!({"status": "completed_with_errors", "total": LINES, "processed": LINES,
               "created": good, "updated": 0, "failed": bad.len(), "errors": expected_errors})
    );
    assert!(job["startedAt"].is_string() && job["finishedAt"].is_string());
    let listed = calm.get("/v1/products?limit=1").await;
    assert_eq!(listed.body["pagination"]["totalResults"], good);

    // The same file, with the worker's process killed while it works: the queue hands the
    // message out again, a new process resumes at the last checkpoint.
    let rough = Org::new().await;
    catalog(&rough).await;
    let id = start_import(&rough, &text).await;
    let path = format!("/v1/imports/{id}");
    eventually(
        "the import to be under way",
        Duration::from_secs(120),
        || async {
            let r = rough.get(&path).await;
            let processed = r.body["result"]["processed"].as_u64().unwrap_or(0);
            (processed >= 3 * BATCH_LINES as u64).then_some(())
        },
    )
    .await;
    let pid = function_pid("import-worker").expect("the worker's process");
    // SAFETY: a plain kill(2) of our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let killed_at = rough.get(&path).await.body["result"]["processed"].clone();
    let job = finished(&rough, &id).await;
    assert_eq!(counts(&job), calm_counts);
    assert!(
        killed_at.as_u64().unwrap() < LINES as u64,
        "the kill came before the end: {killed_at}"
    );
    assert_eq!(state(&rough).await, state(&calm).await);
}

#[tokio::test]
async fn imports_are_listed_newest_first_and_refuse_bad_requests() {
    imports().await;
    let org = Org::new().await;
    let first = org.post("/v1/imports", json!({})).await;
    let second = org.post("/v1/imports", json!({"format": "ndjson"})).await;
    assert_eq!((first.status, second.status), (201, 201));
    let listed = org.get("/v1/imports").await;
    assert_eq!(listed.status, 200);
    let ids: Vec<&Value> = listed.body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| &j["id"])
        .collect();
    assert_eq!(
        ids,
        vec![&second.body["result"]["id"], &first.body["result"]["id"]]
    );
    assert_eq!(listed.body["pagination"]["totalResults"], 2);
    let got = org
        .get(&format!(
            "/v1/imports/{}",
            first.body["result"]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        got.body["result"],
        json!({"id": first.body["result"]["id"], "status": "awaiting_upload", "total": null,
               "processed": 0, "created": 0, "updated": 0, "failed": 0, "errors": [],
               "createdAt": first.body["result"]["createdAt"], "startedAt": null, "finishedAt": null})
    );
    let csv = org.post("/v1/imports", json!({"format": "csv"})).await;
    assert_eq!(
        (csv.status, csv.body),
        (
            400,
            json!({"error": "field 'format': 'csv' is not supported (allowed: ndjson)"})
        )
    );
    let missing = org.get("/v1/imports/imp_nothing").await;
    assert_eq!(
        (missing.status, missing.body),
        (404, json!({"error": "import 'imp_nothing' not found"}))
    );
    // Another organization sees none of them.
    let other = Org::new().await;
    let theirs = other
        .get(&format!(
            "/v1/imports/{}",
            first.body["result"]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(theirs.status, 404);
}

/// `catalog-admin import`: uploads a file through the API and shows a progress bar until the
/// import finishes (through the local HTTP gateway, as a client on the network would).
#[tokio::test]
async fn the_cli_uploads_and_shows_progress_to_the_end() {
    imports().await;
    let org = Org::new().await;
    let port = catalog_e2e::gateway::start().await;
    let lines: String = (0..1200)
        .map(|i| format!("{}\n", json!({"identifier": format!("cli{i:04}")})))
        .collect();
    let file = std::env::temp_dir().join(format!("catalog-import-{}.ndjson", org.id));
    std::fs::write(&file, lines).unwrap();
    let mut cli = std::process::Command::new(catalog_e2e::binary("catalog-admin"));
    cli.args(["import", "--file", file.to_str().unwrap()])
        .args([
            "--url",
            &format!("http://127.0.0.1:{port}/v1"),
            "--key",
            &org.key,
        ]);
    let out = tokio::task::spawn_blocking(move || cli.output())
        .await
        .unwrap()
        .expect("catalog-admin runs");
    let _ = std::fs::remove_file(&file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("uploading"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "[{}] 100%  1200/1200 lines  created 1200  updated 0  failed 0  (succeeded)",
            "#".repeat(30)
        )),
        "{stderr}"
    );
    let job: Value = serde_json::from_slice(&out.stdout).expect("the import as JSON");
    assert_eq!(job["status"], "succeeded");
    assert_eq!(job["created"], 1200);
}

/// Before, one organization's imports ran side by side on every worker instance (two at
/// most, shared by every organization): now an organization runs one import at a time, and
/// the others wait their turn untouched.
#[tokio::test]
async fn an_organizations_imports_take_turns() {
    imports().await;
    let org = Org::new().await;
    let store = stack().await.store();
    // another import of the organization is running (on another worker instance)
    let running = store
        .take_slot(&org.id, "import", 1, Duration::from_secs(120))
        .await
        .unwrap()
        .expect("the organization's import slot is free");
    let id = start_import(&org, "{\"identifier\":\"turn-1\"}\n").await;
    let until = std::time::Instant::now() + Duration::from_secs(4);
    while std::time::Instant::now() < until {
        let job = org.get(&format!("/v1/imports/{id}")).await.body["result"].clone();
        assert_eq!(
            (&job["status"], &job["processed"]),
            (&json!("awaiting_upload"), &json!(0)),
            "the import waits while another of its organization runs"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    store.give_back_slot(&running).await;
    let job = finished(&org, &id).await;
    assert_eq!(
        (&job["status"], &job["processed"], &job["created"]),
        (&json!("succeeded"), &json!(1), &json!(1))
    );
    // the run gave its slot back
    assert!(store
        .take_slot(&org.id, "import", 1, Duration::from_secs(1))
        .await
        .unwrap()
        .is_some());
}

/// A presigned upload URL is a credential: before, an `Idempotency-Key`'s record kept it at
/// rest for 24 h and replayed it. Now its answer type marks it, so the kept answer (and the
/// replay) has `uploadUrl: null` and nothing in the table holds its signature.
#[tokio::test]
async fn an_upload_url_is_not_kept_under_the_idempotency_key() {
    imports().await;
    let org = Org::new().await;
    let create = || {
        catalog_e2e::Request::new("POST", "/v1/imports")
            .bearer(&org.key)
            .header("idempotency-key", "k-import")
            .json(json!({}))
    };
    let first = create().send().await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    let url = first.body["result"]["uploadUrl"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(url.contains("Signature="), "{url}");
    let again = create().send().await;
    let mut expected = first.body.clone();
    expected["result"]["uploadUrl"] = Value::Null;
    assert_eq!((again.status, &again.body), (201, &expected));
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let signature = url.rsplit("Signature=").next().unwrap();
    let kept = stack().await.partition(&format!("O#{}#IK", org.id)).await;
    assert_eq!(kept.len(), 1);
    assert!(!format!("{kept:?}").contains(&signature[..16]));
}

/// An import writes within its organization's rate limit: before, 60 lines that the bulk
/// route refuses as one call (6 tokens, more than the burst of 5) were all written at once
/// as an import, taking no token. Now each batch takes what the same lines cost as bulk
/// calls from the organization's bucket, waiting for it: 1 token for the upload's call and
/// 6 for the lines move the bucket's `tat` (GCRA: one token is one second at 1 per second)
/// at least 7 s past the time before the first call.
#[tokio::test]
async fn an_import_is_paced_by_its_organizations_rate_limit() {
    imports().await;
    let org = Org::new().await;
    let store = stack().await.store();
    catalog::admin::set_limits(&store, &org.id, 1, Some(5))
        .await
        .expect("limits set");
    let before_us = catalog::domain::time::Timestamp::now().millis() * 1000;
    let text: String = (0..60)
        .map(|i| format!("{{\"identifier\":\"paced-{i}\"}}\n"))
        .collect();
    let id = start_import(&org, &text).await;
    // read from the table, not through the API: the test's own calls would take tokens
    let job = eventually("the import to finish", Duration::from_secs(240), || async {
        let job = store.get_import(&org.id, &id).await.unwrap()?;
        job.status.finished().then_some(job)
    })
    .await;
    assert_eq!(
        (job.processed, job.created, job.failed),
        (60, 60, 0),
        "{job:?}"
    );
    let bucket = store
        .client()
        .get_item()
        .table_name(catalog_e2e::TABLE)
        .key(
            "PK",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("O#{}", org.id)),
        )
        .key(
            "SK",
            aws_sdk_dynamodb::types::AttributeValue::S("RATE".into()),
        )
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("the organization's bucket");
    let tat: i64 = bucket["tat"].as_n().unwrap().parse().unwrap();
    assert!(
        tat - before_us >= 7_000_000,
        "the bucket's tat is only {} ms past the start: the import took no tokens",
        (tat - before_us) / 1000
    );
}
