//! The API against its own OpenAPI document: schemathesis (PyPI, installed by
//! `scripts/check-openapi.sh`) generates requests for every operation from
//! `GET /v1/openapi.json` and sends them through a local HTTP gateway to the real function
//! binaries; no server error, every status documented, every body as its schema says. The
//! organization first holds the sample catalog the document's examples name, so that the
//! examples phase reaches real entities rather than 404s.

use catalog::api::samples;
use catalog_e2e::{gateway, repo_root, Org, Request};
use serde_json::json;

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
    // Imports are configured (moto's S3), so that POST /imports answers as deployed.
    catalog_e2e::imports::imports().await;
    let org = Org::new().await;
    seed_the_sample_catalog(&org).await;
    let port = gateway::start().await;
    let base = format!("http://127.0.0.1:{port}/v1");
    let args = vec![
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
    // every operation but the document's own route (which schemathesis loads, not tests)
    let operations: usize = catalog::api::FUNCTIONS
        .iter()
        .map(|a| a.endpoints.len())
        .sum();
    let tested = operations - 1;
    assert!(
        text.contains(&format!("Selected: {tested}/{tested}"))
            && text.contains(&format!("Tested: {tested}")),
        "every one of the {tested} operations ran:\n{text}"
    );
}

/// Writes every sample write of the document, in order; each succeeds on a fresh organization.
async fn seed_the_sample_catalog(org: &Org) {
    for s in samples::writes() {
        let mut req = Request::new(s.method, &format!("/v1{}", s.path)).bearer(&org.key);
        if let Some(body) = s.body {
            req = req.json(body);
        }
        let r = req.send().await;
        if s.path == "/webhooks" && r.status == 400 {
            // The sandbox cannot look the example's public host up; the guard says so.
            let host = "url host 'hooks.example.com'";
            let said = [
                json!({"error": format!("{host} does not resolve")}),
                json!({"error": format!("{host} did not resolve in time")}),
            ];
            assert!(said.contains(&r.body), "{}", r.body);
            continue;
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
}
