//! The clients generated from docs/openapi.yaml (`scripts/clients.sh`, make clients: Python's
//! openapi-python-client, TypeScript's openapi-typescript with openapi-fetch) run their smoke
//! workflows (`tests/clients/`) against the real functions, over HTTP through the local
//! gateway: a tree upserted, a filtered list, If-Match kept and refused, a bulk call, errors.

use catalog_e2e::{gateway, repo_root, Org};

/// Runs `program args` with the API's base and a fresh organization's key, and asserts it
/// succeeded and printed `ok_line`.
async fn smoke(
    program: std::path::PathBuf,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    ok_line: &str,
) {
    assert!(
        program.exists(),
        "{} is missing: run scripts/clients.sh (make test does)",
        program.display()
    );
    let org = Org::new().await;
    let port = gateway::start().await;
    let base = format!("http://127.0.0.1:{port}/v1");
    let mut command = std::process::Command::new(&program);
    command
        .args(&args)
        .env("CATALOG_URL", base)
        .env("CATALOG_KEY", &org.key)
        .envs(env);
    let (succeeded, text) = catalog_e2e::run_tool(command).await;
    assert!(succeeded, "the smoke workflow failed:\n{text}");
    assert_eq!(text.trim(), ok_line, "{text}");
}

#[tokio::test]
async fn the_generated_python_client_runs_its_workflow() {
    let root = repo_root();
    let python = root.join(".tools/clients-py/bin/python");
    let script = root.join("tests/clients/smoke.py").display().to_string();
    let path = root.join("target/clients/python").display().to_string();
    smoke(
        python,
        vec![script],
        vec![("PYTHONPATH", path)],
        "python smoke: ok",
    )
    .await;
}

#[tokio::test]
async fn the_generated_typescript_client_runs_its_workflow() {
    let script = repo_root().join("target/clients/typescript/smoke.js");
    assert!(
        script.exists(),
        "{} is missing: run scripts/clients.sh",
        script.display()
    );
    // Node from PATH, as scripts/tools.sh checks it (README, "Prerequisites")
    let node = std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("node"))
                .find(|n| n.exists())
        })
        .expect("node on PATH");
    let args = vec![script.display().to_string()];
    smoke(node, args, vec![], "typescript smoke: ok").await;
}
