//! The API against its own OpenAPI document: schemathesis (PyPI, installed by
//! `scripts/check-openapi.sh`) generates requests for every operation from
//! `GET /v1/openapi.json` and sends them through a local HTTP gateway to the real function
//! binaries; no server error, every status documented, every body as its schema says. The
//! organization first holds the sample catalog the document's examples name, so that the
//! examples phase reaches real entities rather than 404s. The sample webhook subscription
//! points at a real receiver on loopback, and every `/webhooks/{id}` operation is pinned to
//! it, so those operations are fuzzed against a real subscription rather than 404s.

use catalog::api::samples;
use catalog_e2e::webhooks::Receiver;
use catalog_e2e::{gateway, repo_root, Org, Request};
use serde_json::{json, Value};

/// Examples per operation and phase: bounded so that CI stays well inside its limit.
const MAX_EXAMPLES: &str = "8";

#[tokio::test]
async fn schemathesis_finds_no_failures_on_any_operation() {
    let exe = repo_root().join(".tools/openapi/bin/schemathesis");
    assert!(
        exe.exists(),
        "{} is missing: run scripts/check-openapi.sh (make test does)",
        exe.display()
    );
    // Webhook queues and imports are configured (moto's SQS and S3), so that test events,
    // replays and POST /imports answer as deployed.
    catalog_e2e::webhooks::webhooks().await;
    catalog_e2e::imports::imports().await;
    let org = Org::new().await;
    let receiver = Receiver::start(0).await;
    let webhook = seed_the_sample_catalog(&org, &receiver.url()).await;
    let r = org.get(&format!("/v1/webhooks/{webhook}")).await;
    assert_eq!(
        (r.status, &r.body["result"]["url"]),
        (200, &json!(receiver.url()))
    );
    // Every operation under /webhooks/{id} gets the sample subscription's id, but DELETE,
    // which gets a second subscription's, so that the others never meet a deleted one.
    let doomed = org
        .post(
            "/v1/webhooks",
            json!({"url": receiver.url(), "topics": ["*"]}),
        )
        .await;
    assert_eq!(doomed.status, 201, "{:?}", doomed.body);
    let doomed = doomed.body["result"]["id"].as_str().unwrap().to_string();
    let config = repo_root().join("target/schemathesis-contract.toml");
    let pin = |methods: &str, id: &str| {
        format!(
            "[[operations]]\ninclude-path-regex = \"^/webhooks/\\\\{{id\\\\}}\"\n\
             include-method-regex = \"^({methods})$\"\nparameters = {{ \"path.id\" = \"{id}\" }}\n\n"
        )
    };
    std::fs::write(
        &config,
        pin("GET|PATCH|POST", &webhook) + &pin("DELETE", &doomed),
    )
    .expect("write the schemathesis config");
    let port = gateway::start().await;
    let base = format!("http://127.0.0.1:{port}/v1");
    let args = vec![
        "--config-file".to_string(),
        config.display().to_string(),
        "run".to_string(),
        format!("{base}/openapi.json"),
        "--url".into(),
        base,
        "--header".into(),
        format!("Authorization: Bearer {}", org.key),
        "--checks".into(),
        "not_a_server_error,status_code_conformance,response_schema_conformance".into(),
        "--max-examples".into(),
        MAX_EXAMPLES.into(),
        "--phases".into(),
        "examples,fuzzing".into(),
        "--workers".into(),
        "1".into(),
        "--seed".into(),
        "20261121".into(),
        "--generation-database".into(),
        "none".into(),
        "--no-color".into(),
    ];
    let workdir = repo_root().join("target");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args(&args)
            .current_dir(workdir)
            .output()
            .expect("schemathesis runs")
    })
    .await
    .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // the run's report: operations, cases and checks (shown with --nocapture, and on failure)
    println!("{text}");
    assert!(out.status.success(), "schemathesis found failures:\n{text}");
    // every operation, the document's own route included
    let tested: usize = catalog::api::FUNCTIONS
        .iter()
        .map(|a| a.endpoints.len())
        .sum();
    assert!(
        text.contains(&format!("Selected: {tested}/{tested}"))
            && text.contains(&format!("Tested: {tested}"))
            && !text.contains("- GET /webhooks/{id}\n"),
        "every one of the {tested} operations ran, the webhook ones against a subscription:\n{text}"
    );
}

/// Writes every sample write of the document, in order; each succeeds on a fresh
/// organization. The sample webhook subscription gets `hook_url` (the example's public host
/// does not resolve here); answers its id.
async fn seed_the_sample_catalog(org: &Org, hook_url: &str) -> String {
    let mut webhook = None;
    for s in samples::writes() {
        let mut req = Request::new(s.method, &format!("/v1{}", s.path)).bearer(&org.key);
        if let Some(mut body) = s.body {
            if s.path == "/webhooks" {
                body["url"] = Value::from(hook_url);
            }
            req = req.json(body);
        }
        let r = req.send().await;
        if s.path == "/webhooks" {
            webhook = r.body["result"]["id"].as_str().map(str::to_string);
        }
        assert!(
            matches!(r.status, 200 | 201),
            "sample '{}' ({} {}): {} {}",
            s.name,
            s.method,
            s.path,
            r.status,
            r.body
        );
    }
    // The examples name family 1, the first of the organization.
    let r = org.get("/v1/families/1").await;
    assert_eq!(
        (r.status, &r.body["result"]["name"]),
        (200, &json!("Chairs"))
    );
    webhook.expect("the samples create a webhook subscription")
}
