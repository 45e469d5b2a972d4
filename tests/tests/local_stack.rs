//! The local stack's router answers as API Gateway does (decisions.md, "Unknown routes"):
//! `make dev` serves the API through `cargo lambda watch`, whose router is the
//! `[workspace.metadata.lambda.watch.router]` block of Cargo.toml. This runs the real
//! cargo-lambda (the version `scripts/tools.sh --dev` installs) on that block, with the
//! real function binaries attached to its Runtime API, and asks it over HTTP.

use catalog_e2e::ddb::{die_with_parent, free_port, keep};
use catalog_e2e::{binary, repo_root, stack, Org};
use serde_json::{json, Value};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `cargo lambda watch --only-lambda-apis` on a free port (the functions are the
/// test's processes, not `cargo run`), waits until it listens; its port.
fn watch() -> u16 {
    let cargo_lambda = repo_root().join(".tools/venv/bin/cargo-lambda");
    assert!(
        cargo_lambda.exists(),
        "cargo-lambda is not installed at {}: run scripts/tools.sh --dev (make test does)",
        cargo_lambda.display()
    );
    let port = free_port();
    // the flags make dev gives it
    let flags = std::fs::read_to_string(repo_root().join("scripts/watch-args"))
        .expect("scripts/watch-args");
    let flags = flags
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let child = die_with_parent(
        Command::new(&cargo_lambda)
            .args(["lambda", "watch", "--only-lambda-apis"])
            .args(flags)
            .args(["--invoke-address", "127.0.0.1", "--invoke-port"])
            .arg(port.to_string())
            .current_dir(repo_root())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .spawn()
    .expect("cargo lambda watch starts");
    keep(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "cargo lambda watch did not listen on {port} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    port
}

/// Attaches a process of `function`'s binary to the watch's Runtime API, as `make dev`'s
/// `cargo run` would.
fn attach(port: u16, function: &str, env: &[(&'static str, String)]) {
    let child = die_with_parent(
        Command::new(binary(function))
            .envs(env.iter().cloned())
            .env("CATALOG_LOCAL_MODE", "1")
            .env("RUST_LOG", "warn")
            .env(
                "AWS_LAMBDA_RUNTIME_API",
                format!("http://127.0.0.1:{port}/.rt/{function}"),
            )
            .env("AWS_LAMBDA_FUNCTION_NAME", function)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
    )
    .spawn()
    .expect("function starts");
    keep(child);
}

async fn call(
    port: u16,
    method: &str,
    path: &str,
    key: Option<&str>,
) -> (u16, Option<String>, Option<String>, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    // A function that cannot attach leaves the invocation queued: fail instead of waiting.
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let mut req = client.request(method, format!("http://127.0.0.1:{port}{path}"));
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    let r = req.send().await.expect("the watch answers");
    let header = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().expect("ascii").to_string())
    };
    let (status, content_type, allow) =
        (r.status().as_u16(), header("content-type"), header("allow"));
    let text = r.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, content_type, allow, body)
}

#[tokio::test]
async fn cargo_lambda_watch_answers_unknown_paths_with_the_json_404() {
    let env = stack().await.aws_env();
    let org = Org::new().await;
    let port = watch();
    attach(port, "fallback", &env);
    attach(port, "products", &env);
    let key = Some(org.key.as_str());
    for path in [
        "/v1/nothing",
        "/",
        "/v1",
        "/v2/products",
        "/v1/products/p1/nothing",
    ] {
        assert_eq!(
            call(port, "GET", path, key).await,
            (
                404,
                Some("application/json".into()),
                None,
                json!({"error": format!("no route for GET {path}")})
            ),
            "{path}"
        );
    }
    // Authentication first, as on AWS.
    let (status, _, _, body) = call(port, "GET", "/v1/nothing", None).await;
    assert_eq!(
        (status, body),
        (
            401,
            json!({"error": "Unauthorized - missing or invalid authentication"})
        )
    );
    // A served path still reaches its function, which answers another method 405 itself.
    let (status, _, _, body) = call(port, "GET", "/v1/openapi.json", None).await;
    assert_eq!((status, &body["openapi"]), (200, &json!("3.1.0")));
    assert_eq!(
        call(port, "POST", "/v1/products/p1", key).await,
        (
            405,
            Some("application/json".into()),
            Some("GET, PATCH, DELETE".into()),
            json!({"error": "method POST is not allowed on this path"})
        )
    );
}

/// `make dev` answers no other origin: before, cargo-lambda's default CORS reflected any
/// `Origin` with `Access-Control-Allow-Credentials: true`, so any local page could call the
/// API with the console's session cookie and read the answers.
#[tokio::test]
async fn make_devs_router_allows_no_cross_origin_calls() {
    let env = stack().await.aws_env();
    let org = Org::new().await;
    let port = watch();
    attach(port, "products", &env);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let url = format!("http://127.0.0.1:{port}/v1/products");
    let preflight = client
        .request(reqwest::Method::OPTIONS, &url)
        .header("origin", "http://evil.example")
        .header("access-control-request-method", "PATCH")
        .header("access-control-request-headers", "x-csrf-token")
        .send()
        .await
        .expect("the watch answers");
    let get = client
        .get(&url)
        .header("origin", "http://evil.example")
        .bearer_auth(&org.key)
        .send()
        .await
        .expect("the watch answers");
    assert_eq!(get.status(), 200);
    for r in [&preflight, &get] {
        for name in [
            "access-control-allow-origin",
            "access-control-allow-credentials",
            "access-control-allow-methods",
        ] {
            assert_eq!(r.headers().get(name), None, "{name} on {}", r.url());
        }
    }
}
