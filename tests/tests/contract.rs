//! The API against its own OpenAPI document: schemathesis (PyPI, installed by
//! `scripts/check-openapi.sh`) generates requests for every operation from
//! `GET /v1/openapi.json` and sends them through a local HTTP gateway to the real function
//! binaries, with every check and the stateful phase: no server error, every status and
//! header documented, every body as its schema says, a request the document calls valid
//! accepted and one it calls invalid refused. The
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

/// What a request the document calls valid may be answered (`positive_data_acceptance`).
/// Everywhere: success, or a refusal that depends on stored state the document cannot
/// know: 404 (no such entity), 409 (conflict), 412 (`If-Match` names another version) and
/// 422 (an `Idempotency-Key` already used). A 400 only on the operations below, each for a
/// rule JSON Schema cannot state: every other 400 is the document being less precise than
/// the parser, and fails.
const ACCEPTANCE: &str = r#"[checks.positive_data_acceptance]
expected-statuses = ["2xx", "401", "403", "404", "409", "412", "422", "429", "5xx"]

# Lists: `cursor` is an opaque signed token (a generated one is refused), exclusive with
# `page`; `search` names attribute definitions that must exist, with operators by type.
[[operations]]
include-method-regex = "^GET$"
include-path-regex = '^/(products|variants|skus|bundles|categories|assets|attributes|api-keys|webhooks|imports|deletions|metaobjects/\{definition\}|webhooks/\{id\}/deliveries)$'
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "412", "422", "429", "5xx"]

# Writes naming other entities or definitions, which must exist: `values` keys (attribute
# definitions), categories, families, parents, bundle items, linked assets, metaobject
# definitions, profile attributes, locales and channels of the organization.
[[operations]]
include-method-regex = "^(PATCH|PUT|POST)$"
include-path-regex = '^/(products|products/\{identifier\}|products/\{identifier\}/assets|skus/\{identifier\}|bundles/\{identifier\}|categories/\{identifier\}|metaobjects/\{definition\}/\{identifier\}|families|completeness-profiles|attributes|channels|assets|assets/\{identifier\}|imports)$'
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "412", "422", "429", "5xx"]

# A subscription's URL must resolve, in time, to public addresses only.
[[operations]]
include-method-regex = "^(PATCH|POST)$"
include-path-regex = '^/webhooks(/\{id\})?$'
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "412", "422", "429", "5xx"]

# A bulk write answers 200 with a status per line: a line the document calls invalid is
# refused in its own line status (400), the others are written.
[[operations]]
include-method-regex = "^PATCH$"
include-path-regex = '^/products$'
checks.negative_data_rejection.expected-statuses = ["200", "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]

# The console's own routes take its session cookie, not the API key the run sends.
[[operations]]
include-path-regex = '^/console-sessions'
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "412", "422", "429", "5xx"]

"#;

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
        ACCEPTANCE.to_string() + &pin("GET|PATCH|POST", &webhook) + &pin("DELETE", &doomed),
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
        "all".into(),
        "--max-examples".into(),
        MAX_EXAMPLES.into(),
        "--phases".into(),
        "examples,fuzzing,stateful".into(),
        "--workers".into(),
        "1".into(),
        "--seed".into(),
        "20261121".into(),
        "--generation-database".into(),
        "none".into(),
        "--no-color".into(),
    ];
    let workdir = repo_root().join("target");
    let mut command = std::process::Command::new(exe);
    command.args(&args).current_dir(workdir);
    let (succeeded, text) = catalog_e2e::run_tool(command).await;
    // the run's report: operations, cases and checks (shown with --nocapture, and on failure)
    println!("{text}");
    assert!(succeeded, "schemathesis found failures:\n{text}");
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
            matches!(r.status, 200..=202),
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
