//! End-to-end harness: real DynamoDB Local (free port, in memory), the real function
//! binaries from `target/debug` (or `CATALOG_E2E_PROFILE`), and a Lambda Runtime API emulator that hands them real API
//! Gateway HTTP API (v2) events, the way Lambda does.
//!
//! Everything is started once per test binary on a dedicated thread and stopped with it:
//! child processes get `PR_SET_PDEATHSIG`, so they die with the test process.

pub mod console;
pub mod ddb;
pub mod faults;
pub mod filter_model;
pub mod gateway;
pub mod imports;
pub mod kept_checkpoints;
pub mod lineage;
pub mod local;
pub mod runtime;
pub mod sqs_trace;
pub mod webhooks;

use catalog::auth::Scope;
use catalog::store::Store;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;

pub const TABLE: &str = "catalog-e2e";

/// The repository's root folder.
/// Runs an external tool (schemathesis, a generated client's workflow) to its end, off the
/// runtime's threads: whether it succeeded, and its output (stdout, then stderr).
pub async fn run_tool(mut command: std::process::Command) -> (bool, String) {
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the tool's thread")
        .expect("the tool runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The table of the benchmark's peer (`bench --get N --peer`): serverless-rust-demo's
/// products, keyed by `id`.
pub const PEER_TABLE: &str = "peer-products";

/// serverless-rust-demo's `get-product`, as `scripts/peer.sh` builds it.
pub fn peer_binary() -> PathBuf {
    let path = repo_root().join("target/peer/get-product");
    assert!(
        path.exists(),
        "{} is not built: run scripts/peer.sh first",
        path.display()
    );
    path
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// A workspace binary built by `cargo build --workspace --bins` (make test does that first),
/// from the `CATALOG_E2E_PROFILE` profile's folder (default `debug`; `make bench` uses `perf`).
pub fn binary(name: &str) -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let profile = std::env::var("CATALOG_E2E_PROFILE").unwrap_or_else(|_| "debug".into());
    let path = repo_root().join(target).join(profile).join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --workspace --bins` first (make test does)",
        path.display()
    );
    // Checked once per binary and test process: a run that outlives an edit (a benchmark)
    // keeps the binaries it started with.
    static CHECKED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    if checked.contains(&path) {
        return path;
    }
    if let Some(newer) = newer_source(&path) {
        panic!(
            "{} is older than {}: run `cargo build --workspace --bins` first (make test does), \
             so that the tests run the code as it is",
            path.display(),
            newer.display()
        );
    }
    checked.push(path.clone());
    path
}

/// A source file that `binary` is built from changed after it was built, if any: the tests
/// must never run stale binaries. Sources: the library (`shared/src`, its own binaries
/// aside) and the binary's crate (`functions/<name>/src`, or `tests/src` for the harness's
/// own binaries; `shared/src/bin` for the operator CLI), and the files a function builds in
/// (`functions/<name>/assets`).
fn newer_source(binary: &std::path::Path) -> Option<PathBuf> {
    let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok()?;
    let root = repo_root();
    let name = binary.file_name()?.to_str()?;
    let function = root.join("functions").join(name).join("src");
    // files a function builds in (the console's pages)
    let assets = root.join("functions").join(name).join("assets");
    let admin = root.join("shared/src/bin").join(format!("{name}.rs"));
    let mut stack = vec![root.join("shared/src")];
    if function.exists() {
        stack.push(function);
        stack.push(assets.clone());
    } else if admin.exists() {
        stack.push(root.join("shared/src/bin"));
    } else {
        stack.push(root.join("tests/src"));
    }
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if !path.ends_with("shared/src/bin") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") || dir.starts_with(&assets) {
                files.push(path);
            }
        }
    }
    files.into_iter().find(|f| {
        std::fs::metadata(f)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t > built)
    })
}

/// `template` as CloudFormation receives it: `scripts/expand-template.sh` (the SAM transform
/// `make lint-template` lints) into a file of this process's own. Tests keep it once each.
pub fn expand_template(template: &std::path::Path) -> Value {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let out = std::env::temp_dir().join(format!(
        "catalog-template-{}-{}.expanded.json",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let status = std::process::Command::new(repo_root().join("scripts/expand-template.sh"))
        .arg(template)
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("scripts/expand-template.sh runs");
    assert!(status.success(), "expanding {} failed", template.display());
    let text = std::fs::read_to_string(&out).expect("expanded template");
    let _ = std::fs::remove_file(&out);
    serde_json::from_str(&text).expect("expanded template is JSON")
}

/// The resources of an expanded template of type `kind` (`AWS::Lambda::Function`), by name.
pub fn of_type<'a>(expanded: &'a Value, kind: &str) -> Vec<(&'a String, &'a Value)> {
    expanded["Resources"]
        .as_object()
        .expect("resources")
        .iter()
        .filter(|(_, r)| r["Type"] == kind)
        .collect()
}

/// The process id of the running function process named `name` (`products`,
/// `products@cold1`), found by its `AWS_LAMBDA_FUNCTION_NAME`.
pub fn function_pid(name: &str) -> Option<i32> {
    let needle = format!("AWS_LAMBDA_FUNCTION_NAME={name}\0");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let env = std::fs::read(entry.path().join("environ")).ok()?;
            env.windows(needle.len())
                .any(|w| w == needle.as_bytes())
                .then_some(pid)
        })
}

/// The `byChange` partitions per organization and entity type that the functions use (the
/// same setting, `CATALOG_INDEX_SHARDS`, reaches them): a list's delta costs one Query each.
pub fn shards() -> u32 {
    catalog::store::index_shards()
}

/// Percent-encodes a query parameter value (everything but RFC 3986 unreserved characters).
pub fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, UNRESERVED).to_string()
}

const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The shared local stack of this test binary. It holds no SDK client: clients are bound to
/// the tokio runtime that first uses them, and every test has its own runtime (see `store`).
pub struct Stack {
    pub ddb_endpoint: String,
    runtime: runtime::Emulator,
}

/// Environment for a process that talks to DynamoDB Local at `endpoint` and the test table.
fn aws_env(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint.to_string()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "local".into()),
        ("AWS_SECRET_ACCESS_KEY", "local".into()),
        ("CATALOG_TABLE", TABLE.into()),
    ]
}

impl Stack {
    /// Environment for a process that talks to the stack's DynamoDB Local.
    pub fn aws_env(&self) -> Vec<(&'static str, String)> {
        aws_env(&self.ddb_endpoint)
    }

    /// A store on the stack's table, with a client for the calling test's runtime.
    pub fn store(&self) -> Store {
        Store::new(ddb::client(&self.ddb_endpoint), TABLE)
    }

    /// Every item of partition `pk`, as stored (one Query page: the tests' partitions are
    /// small).
    pub async fn partition(
        &self,
        pk: &str,
    ) -> Vec<HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
        self.store()
            .client()
            .query()
            .table_name(TABLE)
            .key_condition_expression("PK = :pk")
            .expression_attribute_values(
                ":pk",
                aws_sdk_dynamodb::types::AttributeValue::S(pk.to_string()),
            )
            .send()
            .await
            .expect("Query")
            .items
            .unwrap_or_default()
    }
}

static STACK: tokio::sync::OnceCell<Stack> = tokio::sync::OnceCell::const_new();

/// Starts (once) DynamoDB Local, the table and the emulator; functions start on first use.
pub async fn stack() -> &'static Stack {
    STACK.get_or_init(start_stack).await
}

async fn start_stack() -> Stack {
    let endpoint = ddb::start();
    Store::new(ddb::client(&endpoint), TABLE)
        .ensure_table()
        .await
        .expect("table created");
    let mut env = aws_env(&endpoint);
    env.extend([
        ("CATALOG_DEBUG_HEADERS", "1".into()),
        ("CATALOG_LOCAL_MODE", "1".into()),
        ("CATALOG_AUTH_CACHE_SECONDS", "600".into()),
        // tests and benchmarks are not rate limited unless they ask (`@limited`), so that
        // their DynamoDB request counts are the routes' own
        ("CATALOG_RATE_LIMIT_RATE", "0".into()),
        // usage is added to the table after every call, so a test reads it at once
        ("CATALOG_USAGE_FLUSH_SECONDS", "0".into()),
        // writes may start until 2 s before the emulator's 30 s invocation deadline, so a
        // debug build on a busy machine answers as a release build on Lambda does (the
        // deadline's own test, `@deadline`, sets 3 s)
        ("CATALOG_WRITE_BUDGET_MS", "28000".into()),
        (
            "RUST_LOG",
            std::env::var("CATALOG_E2E_LOG").unwrap_or_else(|_| "warn".into()),
        ),
    ]);
    let emulator = runtime::Emulator::start(env);
    Stack {
        ddb_endpoint: endpoint,
        runtime: emulator,
    }
}

/// Invokes `function` with a raw Lambda event (e.g. a fixture from `events/`).
pub async fn invoke(function: &str, event: Value) -> Value {
    stack().await.runtime.invoke(function, event).await
}

/// Sends `req` to a named function process: `webhooks@strict` runs outside local mode.
pub async fn send_to(function: &str, req: Request) -> Response {
    stack().await.runtime.http_on(function, req).await
}

/// The `identifier` of every entry of a list response, in order; panics on anything else.
pub fn ids(r: &Response) -> Vec<String> {
    r.body["result"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {} {:?}", r.status, r.body))
        .iter()
        .map(|e| e["identifier"].as_str().unwrap().to_string())
        .collect()
}

/// An HTTP response from a function.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl Response {
    /// Asserts the call was refused for lacking `scope`: 403 with the error naming it.
    pub fn assert_lacks(&self, scope: &str) {
        let error = format!("this API key lacks the '{scope}' scope");
        assert_eq!(
            (self.status, &self.body),
            (403, &serde_json::json!({ "error": error })),
        );
    }

    /// DynamoDB requests the call cost (the `x-catalog-ddb-requests` debug header).
    pub fn ddb_requests(&self) -> u32 {
        self.headers["x-catalog-ddb-requests"]
            .parse()
            .expect("a number")
    }

    /// Sequential DynamoDB round trips the call took (`x-catalog-ddb-round-trips`):
    /// requests sent in parallel share one.
    pub fn ddb_round_trips(&self) -> u32 {
        self.headers["x-catalog-ddb-round-trips"]
            .parse()
            .expect("a number")
    }

    /// Thousandths of the DynamoDB capacity units the call consumed, as DynamoDB reports
    /// them (`x-catalog-ddb-capacity-milli`).
    pub fn ddb_capacity_milli(&self) -> u64 {
        self.headers["x-catalog-ddb-capacity-milli"]
            .parse()
            .expect("a number")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// A request to send through a function.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

impl Request {
    pub fn new(method: &str, path: &str) -> Self {
        Self {
            method: method.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    pub fn bearer(self, key: &str) -> Self {
        self.header("authorization", &format!("Bearer {key}"))
    }

    pub fn json(self, body: Value) -> Self {
        self.raw_body("application/json", &body.to_string())
    }

    pub fn raw_body(mut self, content_type: &str, body: &str) -> Self {
        self.headers
            .push(("content-type".into(), content_type.into()));
        self.body = Some(body.into());
        self
    }

    /// Sends the request through the function that serves its route.
    pub async fn send(self) -> Response {
        let s = stack().await;
        s.runtime.http(self).await
    }

    /// Sends the request as its v2 event's text after `edit`; `Err` when the function
    /// cannot answer it (API Gateway then answers its own 500, not the API's JSON).
    pub async fn try_send_edited(
        self,
        edit: impl FnOnce(String) -> String,
    ) -> Result<Response, String> {
        stack().await.runtime.try_http_edited(self, edit).await
    }
}

/// An organization with an all-scopes key, made directly through the library.
#[derive(Clone)]
pub struct Org {
    pub id: String,
    pub key: String,
}

impl Org {
    pub async fn new() -> Self {
        let store = stack().await.store();
        // DynamoDB Local under load has been seen to refuse a valid condition once
        // ("Invalid ConditionExpression: Index 0 out of bounds"): a fresh org is tried again.
        let mut tries = 0;
        let org = loop {
            tries += 1;
            match catalog::admin::create_org(&store, "e2e").await {
                Ok(org) => break org,
                Err(e) if tries < 3 && format!("{e:?}").contains("out of bounds") => continue,
                Err(e) => panic!("org: {e:?}"),
            }
        };
        let key = catalog::admin::create_key(&store, &org.id, "e2e", &Scope::ALL)
            .await
            .expect("key");
        Self {
            id: org.id,
            key: key.plain,
        }
    }

    /// Another key of this organization, tagged as `@strict` processes tag theirs: they hold
    /// a deployment secret, and refuse the keys a local stack tags by its table name.
    pub async fn strict_key(&self) -> String {
        let config = catalog::Config::from_lookup(|name| {
            (name == "CATALOG_CURSOR_KEY").then(|| runtime::STRICT_CURSOR_KEY.to_string())
        });
        let tags = config.credential_tags().expect("a deployment secret");
        let store = stack().await.store().with_credential_tags(tags);
        catalog::admin::create_key(&store, &self.id, "strict", &Scope::ALL)
            .await
            .expect("key")
            .plain
    }

    /// Another key of this organization with only `scopes`.
    pub async fn key_with(&self, scopes: &[Scope]) -> String {
        catalog::admin::create_key(&stack().await.store(), &self.id, "scoped", scopes)
            .await
            .expect("key")
            .plain
    }

    pub async fn get(&self, path: &str) -> Response {
        Request::new("GET", path).bearer(&self.key).send().await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Response {
        Request::new("PATCH", path)
            .bearer(&self.key)
            .json(body)
            .send()
            .await
    }

    pub async fn post(&self, path: &str, body: Value) -> Response {
        Request::new("POST", path)
            .bearer(&self.key)
            .json(body)
            .send()
            .await
    }

    pub async fn delete(&self, path: &str) -> Response {
        Request::new("DELETE", path).bearer(&self.key).send().await
    }

    pub async fn put(&self, path: &str, body: Value) -> Response {
        Request::new("PUT", path)
            .bearer(&self.key)
            .json(body)
            .send()
            .await
    }

    /// Creates the languages `codes`, each answered 201.
    pub async fn languages(&self, codes: &[&str]) {
        for code in codes {
            let r = self.post("/v1/languages", json!({ "code": code })).await;
            assert_eq!(r.status, 201, "language {code}: {:?}", r.body);
        }
    }

    /// Creates metaobject definition `name` with `fields`, and the metaobjects `ids` of it
    /// (no values), through the API; panics on any other status than 201.
    pub async fn metaobjects(&self, name: &str, fields: Value, ids: &[&str]) {
        let r = self
            .post(
                "/v1/metaobject-definitions",
                serde_json::json!({"name": name, "fields": fields}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        for id in ids {
            let r = self
                .put(
                    &format!("/v1/metaobjects/{name}/{id}"),
                    serde_json::json!({}),
                )
                .await;
            assert_eq!(r.status, 201, "{:?}", r.body);
        }
    }

    /// Creates an attribute definition through the API; panics unless 201.
    pub async fn define(&self, body: Value) {
        let r = self.post("/v1/attributes", body).await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
}
