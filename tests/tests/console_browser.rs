//! The console in a real browser (docs/console.md): Playwright (`tests/browser/`, from npm)
//! drives Debian's Chromium against the real functions behind the local gateway, with the
//! webhook and import stacks running, and scans every page with axe-core. This test seeds
//! the catalog, makes the sign-in link, runs `tests/browser/console.test.mjs` and checks
//! what the browser did from the outside: the receiver got the test event and its replay,
//! under two different delivery ids, and the import's products are stored.

use catalog_e2e::ddb::die_with_parent;
use catalog_e2e::gateway;
use catalog_e2e::imports::imports;
use catalog_e2e::webhooks::{eventually, sqs_client, webhooks, Receiver};
use catalog_e2e::{repo_root, Org, Request};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn seed(org: &Org) {
    org.define(
        json!({"key": "color", "displayName": "Color", "targetEntity": "product", "type": "text"}),
    )
    .await;
    org.define(
        json!({"key": "size", "displayName": "Size", "targetEntity": "sku", "type": "text"}),
    )
    .await;
    for (id, color) in [("chair", "red"), ("table", "blue"), ("lamp", "green")] {
        let r = org
            .patch(
                &format!("/v1/products/{id}"),
                json!({"name": id, "values": {"color": color},
                       "variants": [{"identifier": format!("{id}-oak"), "name": "Oak",
                                     "skus": [{"identifier": format!("{id}-oak-m"), "name": "M",
                                               "values": {"size": "M"}}]}]}),
            )
            .await;
        assert!(r.status == 200 || r.status == 201, "{id}: {:?}", r.body);
    }
}

#[tokio::test]
async fn the_console_works_in_a_real_browser() {
    webhooks().await;
    imports().await;
    let org = Org::new().await;
    seed(&org).await;
    let receiver = Receiver::start(0).await;
    let queue_url = sqs_client(&webhooks().await.sqs_endpoint)
        .create_queue()
        .queue_name(format!("console-{}", org.id))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let port = gateway::start().await;
    let made = Request::new("POST", "/v1/console-sessions")
        .bearer(&org.key)
        .header("host", &format!("127.0.0.1:{port}"))
        .send()
        .await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let link = made.body["result"]["url"].as_str().unwrap().to_string();

    let out = repo_root().join("target/console-browser");
    std::fs::create_dir_all(&out).unwrap();
    let import = out.join("import.ndjson");
    std::fs::write(
        &import,
        "{\"identifier\":\"imported-1\",\"name\":\"Imported 1\"}\n{\"identifier\":\"imported-2\",\"name\":\"Imported 2\"}\n",
    )
    .unwrap();
    let script = repo_root().join("tests/browser/console.test.mjs");
    let log = |name: &str| std::fs::File::create(out.join(name)).unwrap();
    let mut child = die_with_parent(
        std::process::Command::new("node")
            .arg(&script)
            .env("CONSOLE_LINK", &link)
            .env("RECEIVER_URL", receiver.url())
            .env("SQS_QUEUE_URL", &queue_url)
            .env("IMPORT_FILE", &import)
            .env("PRODUCT_ID", "chair")
            .env("SCREENSHOT_DIR", out.join("screenshots"))
            .env(
                "CHROMIUM",
                std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()),
            )
            .current_dir(repo_root())
            .stdout(log("stdout.txt"))
            .stderr(log("stderr.txt")),
    )
    .spawn()
    .expect("node runs (scripts/browser-tools.sh installs what the script needs)");
    // Polled, so that this runtime keeps serving the gateway the browser calls.
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the browser test did not end within 5 minutes");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let stdout = std::fs::read_to_string(out.join("stdout.txt")).unwrap();
    assert!(
        status.success(),
        "the browser test failed:\n{stdout}\n{}",
        std::fs::read_to_string(out.join("stderr.txt")).unwrap()
    );

    // The browser's test event and its replay reached the receiver, under their own ids.
    let ids: Value = stdout
        .lines()
        .find_map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(|v| v.get("testDelivery").is_some())
        })
        .expect("the script prints the delivery ids");
    let (test, replay) = (
        ids["testDelivery"].as_str().unwrap(),
        ids["replayDelivery"].as_str().unwrap(),
    );
    assert_ne!(test, replay);
    let mut sent = vec![test, replay];
    sent.sort();
    let tests = || {
        let mut ids: Vec<String> = receiver
            .received()
            .iter()
            .filter(|r| r.json["event"] == json!("webhook.test"))
            .filter_map(|r| r.json["id"].as_str().map(str::to_string))
            .collect();
        ids.sort();
        ids
    };
    eventually(
        "the test event and its replay",
        Duration::from_secs(60),
        || {
            let got = tests();
            async move { (got.len() >= 2).then_some(()) }
        },
    )
    .await;
    assert_eq!(tests(), sent);
    // The uploaded file was imported.
    for id in ["imported-1", "imported-2"] {
        let r = org.get(&format!("/v1/products/{id}")).await;
        assert_eq!(r.status, 200, "{id}: {:?}", r.body);
    }
}
