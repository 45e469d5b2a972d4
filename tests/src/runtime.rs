//! A Lambda Runtime API emulator: each function binary runs as a real process polling
//! `/2018-06-01/runtime/invocation/next` on its own port, exactly as inside Lambda. HTTP
//! requests become API Gateway HTTP API (v2) events and the function's v2 response comes back.
//! As Lambda, it replaces a process that exits (the invocation it ran fails at once) and one
//! that does not answer within the invocation's timeout (which fails). The tests run it, and
//! `make dev`'s local poller runs the event-driven functions under it ([`Emulator::for_dev`]).

use crate::ddb::{die_with_parent, loopback_listener};
use crate::gateway::{response_of, v2_event};
use crate::{Request, Response};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;
use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The largest answer a synchronous Lambda invocation returns (6 MB).
const LAMBDA_RESPONSE_BYTES: usize = 6 * 1024 * 1024;

type Reply = oneshot::Sender<Result<Value, String>>;

struct Invocation {
    id: String,
    /// The event as Lambda hands it over: JSON text, or what API Gateway makes of bytes
    /// that are not UTF-8 (`\\xNN` escapes, which no JSON parser takes).
    event: String,
    /// The X-Ray trace header Lambda hands this invocation (`Lambda-Runtime-Trace-Id`):
    /// for an SQS event, the one its messages carry, one hop further (`lineage.rs`).
    trace: Option<String>,
    /// How long from now the function is told it has (`lambda-runtime-deadline-ms`).
    deadline: Duration,
    reply: Reply,
}

/// One function's invocation queue, shared by its processes.
struct Queue {
    tx: mpsc::Sender<Invocation>,
    rx: tokio::sync::Mutex<mpsc::Receiver<Invocation>>,
    instances: Mutex<Vec<Arc<Instance>>>,
}

/// One process of a function (a Lambda sandbox): its Runtime API and the invocation it runs.
struct Instance {
    queue: Arc<Queue>,
    pending: Mutex<HashMap<String, Reply>>,
    /// The running process, if any.
    pid: Mutex<Option<u32>>,
    /// Requests for the next invocation it has open (`next` is waiting for one).
    asking: AtomicUsize,
}

/// Counts an open request for the next invocation while it lives.
struct Asking<'a>(&'a AtomicUsize);

impl<'a> Asking<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Queue {
    /// After invocation `id` outran its timeout: stops the process running it, as Lambda
    /// stops a function at its timeout, or, if no process took it, those that neither run an
    /// invocation nor ask for one (hung between two). Their threads start them again.
    fn stop_after_timeout(&self, id: &str) {
        let instances = self.instances.lock().expect("lock");
        let held = instances
            .iter()
            .find(|i| i.pending.lock().expect("lock").remove(id).is_some());
        let hung: Vec<&Arc<Instance>> = match held {
            Some(instance) => vec![instance],
            None => instances
                .iter()
                .filter(|i| {
                    i.asking.load(Ordering::Relaxed) == 0
                        && i.pending.lock().expect("lock").is_empty()
                })
                .collect(),
        };
        for instance in hung {
            if let Some(pid) = *instance.pid.lock().expect("lock") {
                // SAFETY: a plain kill(2) of the emulator's own child.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
    }
}

/// The deadline the tests' functions are told (they answer within it on a busy machine).
const TEST_DEADLINE: Duration = Duration::from_secs(30);
/// How long a direct invocation of the tests waits for its answer.
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Processes per function: the delivery function runs several, as its event source
/// mapping's concurrency does on AWS, so that one endpoint's slow answers cannot hold every
/// delivery, and so does an `@fleet` variant (the isolation benchmark); the change feed
/// runs one per concurrent batch of a shard (`local::STREAM_PARALLELIZATION`); every other
/// function runs one (the tests start named variants when they race).
pub const DELIVERY_CONCURRENCY: usize = 4;

fn instances(function: &str) -> usize {
    let (binary, variant) = function.split_once('@').unwrap_or((function, ""));
    if binary == "webhook-delivery" || variant == "fleet" {
        DELIVERY_CONCURRENCY
    } else if binary == "change-feed" && variant.is_empty() {
        crate::local::STREAM_PARALLELIZATION
    } else {
        1
    }
}

/// The cursor secret of `@strict` processes (a deployment secret on AWS).
pub const STRICT_CURSOR_KEY: &str = "strict-cursor-secret-0123456789abcdef0123456789";

pub struct Emulator {
    pub(crate) handle: tokio::runtime::Handle,
    env: Mutex<Vec<(&'static str, String)>>,
    functions: Mutex<HashMap<String, Arc<Queue>>>,
    next_id: AtomicU64,
    /// `make dev`'s: see [`Emulator::for_dev`].
    dev: bool,
}

impl Emulator {
    /// `make dev`'s emulator: the binaries of `target/debug` as they are (the sources may be
    /// edited meanwhile), a process replaced when `cargo build` replaces its binary, and each
    /// invocation's deadline its whole timeout, as on Lambda (the tests' functions are told
    /// 30 s at most). Processes inherit the caller's environment and `env`.
    pub fn for_dev(env: Vec<(&'static str, String)>) -> Self {
        Self {
            dev: true,
            ..Self::start(env)
        }
    }

    /// Starts the emulator's own runtime on a thread that lives as long as the process.
    pub fn start(env: Vec<(&'static str, String)>) -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            tx.send(rt.handle().clone()).expect("handle sent");
            rt.block_on(std::future::pending::<()>());
        });
        Self {
            handle: rx.recv().expect("emulator runtime"),
            env: Mutex::new(env),
            functions: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            dev: false,
        }
    }

    /// Adds environment for the function processes; only before the first one starts, so
    /// that every process of the stack sees the same settings.
    pub fn extend_env(&self, extra: Vec<(&'static str, String)>) {
        let launched = !self.functions.lock().expect("lock").is_empty();
        assert!(
            !launched,
            "a function started before the webhook stack: call `webhooks().await` first in the test"
        );
        self.env.lock().expect("lock").extend(extra);
    }

    /// The function API Gateway invokes for `method path`: the one with a route for both
    /// (the template's routes are method-specific), else the fallback behind the `$default`
    /// route, which answers unknown paths (404) and other methods (405) for the whole API.
    fn function_for(method: &str, path: &str) -> &'static str {
        if catalog::api::console::Site::page_of(path.split('?').next().unwrap_or(path)).is_some() {
            return catalog::api::console::API.function;
        }
        catalog::api::FUNCTIONS
            .iter()
            .find(|api| catalog::http::routes::find(api.endpoints, method, path).is_ok())
            .map_or(catalog::api::fallback::FUNCTION, |api| api.function)
    }

    fn queue(&self, function: &str) -> Arc<Queue> {
        let mut functions = self.functions.lock().expect("lock");
        if let Some(q) = functions.get(function) {
            return q.clone();
        }
        let (tx, rx) = mpsc::channel(1024);
        let queue = Arc::new(Queue {
            tx,
            rx: tokio::sync::Mutex::new(rx),
            instances: Mutex::new(Vec::new()),
        });
        functions.insert(function.to_string(), queue.clone());
        self.launch(function, queue.clone());
        queue
    }

    /// Starts the Runtime API for `function` and one process of its binary. A name
    /// `<binary>@<variant>` is another process of `<binary>`: `@strict` runs outside local
    /// mode (with a cursor secret; `@nokey` without one, which refuses to start), `@limited` with a
    /// rate limit of 1 call per second and bursts of 5, `@noqueue` with an unreachable queue endpoint, `@nodb` with an unreachable
    /// DynamoDB endpoint, `@faultydb` through the fault-injecting proxy of `faults.rs`
    /// (`@deadline` too, with a write budget of 3 s and one bulk transaction at a time),
    /// `@slowload` with a cold list read of one 5-item page per shard and call, `@reload`
    /// with list snapshots read again in full every 2 s (900 s as deployed), `@shortauth`
    /// with keys cached 3 s (60 s as deployed), `@fleet` as several processes sharing one
    /// invocation queue (as Lambda hands each call to a free instance), `@ckpt…` with list
    /// checkpoints and `@fullread…` without (both reading the index in 5-item pages;
    /// `@ckptreload…` reloading every 2 s, `@ckptswap…` too, with no room for two copies),
    /// `@coldckpt…` with list checkpoints and pages as deployed.
    fn launch(&self, function: &str, queue: Arc<Queue>) {
        for _ in 0..instances(function) {
            let instance = Arc::new(Instance {
                queue: queue.clone(),
                pending: Mutex::new(HashMap::new()),
                pid: Mutex::new(None),
                asking: AtomicUsize::new(0),
            });
            queue.instances.lock().expect("lock").push(instance.clone());
            self.launch_instance(function, instance);
        }
    }

    /// Starts one process of `function` with its own Runtime API on its own port.
    fn launch_instance(&self, function: &str, instance: Arc<Instance>) {
        let (listener, port) = loopback_listener();
        let (binary_name, variant) = function.split_once('@').unwrap_or((function, ""));
        let binary = match binary_name {
            "peer" => crate::peer_binary(),
            _ if self.dev => crate::repo_root().join("target/debug").join(binary_name),
            _ => crate::binary(binary_name),
        };
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(respond),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(fail))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            // Lambda takes an answer of up to 6 MB (synchronous invocations) and fails
            // the invocation beyond it: so does the emulator (axum's default is 2 MB)
            .layer(axum::extract::DefaultBodyLimit::max(LAMBDA_RESPONSE_BYTES))
            .with_state(instance.clone());
        let mut env = self.env.lock().expect("lock").clone();
        match variant {
            "strict" => env.extend([
                ("CATALOG_LOCAL_MODE", "0".into()),
                ("CATALOG_CURSOR_KEY", STRICT_CURSOR_KEY.into()),
            ]),
            // outside local mode without a cursor secret: refuses to start
            "nokey" => env.push(("CATALOG_LOCAL_MODE", "0".into())),
            // a deployment's default rate limit of 1 call per second, bursts of 5
            "limited" => env.extend([
                ("CATALOG_RATE_LIMIT_RATE", "1".into()),
                ("CATALOG_RATE_LIMIT_BURST", "5".into()),
            ]),
            "noqueue" => env.push(("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:1".into())),
            "nodb" => env.push(("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1".into())),
            // the proxy counts every request a process sends during a call, so usage is not
            // added after every call here (elsewhere in the tests it is): once an hour
            "faultydb" => env.extend([
                ("AWS_ENDPOINT_URL_DYNAMODB", crate::faults::endpoint()),
                ("CATALOG_USAGE_FLUSH_SECONDS", "3600".into()),
            ]),
            "deadline" => env.extend([
                ("AWS_ENDPOINT_URL_DYNAMODB", crate::faults::endpoint()),
                ("CATALOG_USAGE_FLUSH_SECONDS", "3600".into()),
                ("CATALOG_WRITE_BUDGET_MS", "3000".into()),
                ("CATALOG_BULK_CONCURRENCY", "1".into()),
            ]),
            "reload" => env.push(("CATALOG_LIST_RELOAD_SECONDS", "2".into())),
            "shortauth" => env.push(("CATALOG_AUTH_CACHE_SECONDS", "3".into())),
            "slowload" => env.extend([
                ("CATALOG_LIST_LOAD_BUDGET_MS", "0".into()),
                ("CATALOG_LIST_LOAD_PAGE_ITEMS", "5".into()),
            ]),
            // full reads of 5-item pages, with (`@ckpt…`) or without (`@fullread…`) list
            // checkpoints in the import stack's bucket (call `imports().await` first);
            // `@ckptreload…` also with snapshots due for their reload every 2 s
            // `@ckptswap…` as `@ckptreload…`, with a snapshot budget no two copies fit in
            v if v.starts_with("ckptswap") => env.extend([
                ("CATALOG_CHECKPOINT_BUCKET", crate::imports::BUCKET.into()),
                ("CATALOG_LIST_LOAD_PAGE_ITEMS", "5".into()),
                ("CATALOG_LIST_RELOAD_SECONDS", "2".into()),
                ("CATALOG_SNAPSHOT_MAX_BYTES", "1".into()),
            ]),
            v if v.starts_with("ckptreload") => env.extend([
                ("CATALOG_CHECKPOINT_BUCKET", crate::imports::BUCKET.into()),
                ("CATALOG_LIST_LOAD_PAGE_ITEMS", "5".into()),
                ("CATALOG_LIST_RELOAD_SECONDS", "2".into()),
            ]),
            v if v.starts_with("ckpt") => env.extend([
                ("CATALOG_CHECKPOINT_BUCKET", crate::imports::BUCKET.into()),
                ("CATALOG_LIST_LOAD_PAGE_ITEMS", "5".into()),
            ]),
            v if v.starts_with("fullread") => {
                env.push(("CATALOG_LIST_LOAD_PAGE_ITEMS", "5".into()))
            }
            // list checkpoints as deployed, DynamoDB's own page size (the bench's rows)
            v if v.starts_with("coldckpt") => {
                env.push(("CATALOG_CHECKPOINT_BUCKET", crate::imports::BUCKET.into()))
            }
            // the single GET's figures (`bench --get`): usage written as deployed, every 30 s,
            // not after every call as the tests read it
            v if v.starts_with("get") && binary_name != "peer" => {
                env.push(("CATALOG_USAGE_FLUSH_SECONDS", "30".into()))
            }
            // serverless-rust-demo's get-product (`peer@…`, `bench --get N --peer`): its
            // table, beside ours
            _ if binary_name == "peer" => env.push(("TABLE_NAME", crate::PEER_TABLE.into())),
            _ => {}
        }
        let name = function.to_string();
        self.handle.spawn(async move {
            let listener =
                tokio::net::TcpListener::from_std(listener).expect("runtime API listener");
            axum::serve(listener, app).await
        });
        // As Lambda replaces a sandbox whose process died, a process that exits is started
        // again, and the invocation it was running fails. The thread lives as long as the
        // test process (or the poller), so the children's PDEATHSIG fires only when it ends.
        let dev = self.dev;
        std::thread::spawn(move || loop {
            let built = modified(&binary);
            let child = die_with_parent(
                Command::new(&binary)
                    .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
                    .envs(env.clone())
                    .env("AWS_LAMBDA_RUNTIME_API", format!("127.0.0.1:{port}"))
                    .env("AWS_LAMBDA_FUNCTION_NAME", &name)
                    .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
                    .stdout(log_of(&name))
                    .stderr(Stdio::inherit()),
            )
            .spawn();
            let mut child = match child {
                Ok(child) => child,
                // a binary being rebuilt: try again
                Err(e) if dev => {
                    eprintln!("[runtime] {name} does not start ({e}); trying again");
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
                Err(_) => {
                    eprintln!("[runtime] {name} does not start");
                    return;
                }
            };
            *instance.pid.lock().expect("lock") = Some(child.id());
            let status = if dev {
                // a rebuilt binary replaces the process, as a crash does
                loop {
                    if let Ok(Some(status)) = child.try_wait() {
                        break Ok(status);
                    }
                    if modified(&binary) != built {
                        eprintln!("[runtime] {name} was rebuilt: replacing its process");
                        let _ = child.kill();
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            } else {
                child.wait()
            };
            *instance.pid.lock().expect("lock") = None;
            eprintln!("[runtime] {name} exited ({status:?}); starting it again");
            let lost: Vec<Reply> = instance
                .pending
                .lock()
                .expect("lock")
                .drain()
                .map(|(_, reply)| reply)
                .collect();
            for reply in lost {
                let _ = reply.send(Err("the function process exited".into()));
            }
            std::thread::sleep(Duration::from_millis(100));
        });
    }

    fn next_request_id(&self) -> String {
        format!("req-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Invokes `function` with a raw event and returns its raw response.
    pub async fn invoke(&self, function: &str, event: Value) -> Value {
        self.invoke_as(function, self.next_request_id(), event)
            .await
    }

    /// Invokes `function` under request id `id` (the runtime's `lambda-runtime-aws-request-id`).
    async fn invoke_as(&self, function: &str, id: String, event: Value) -> Value {
        self.try_invoke_as(function, id, event)
            .await
            .unwrap_or_else(|e| panic!("{function}: {e}"))
    }

    /// Invokes `function`; `Err` for an invocation error or no answer within 60 s (then its
    /// process is replaced).
    pub async fn try_invoke(&self, function: &str, event: Value) -> Result<Value, String> {
        self.try_invoke_as(function, self.next_request_id(), event)
            .await
    }

    async fn try_invoke_as(
        &self,
        function: &str,
        id: String,
        event: Value,
    ) -> Result<Value, String> {
        self.try_invoke_text(function, id, event.to_string(), TEST_TIMEOUT)
            .await
    }

    /// Invokes `function` as Lambda does under a timeout of `timeout`: `Err` for an
    /// invocation error, a process that exited, or no answer within `timeout` (then the
    /// process running it is stopped and started again, as Lambda resets a sandbox).
    pub async fn try_invoke_within(
        &self,
        function: &str,
        event: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        let id = self.next_request_id();
        self.try_invoke_text(function, id, event.to_string(), timeout)
            .await
    }

    /// Invokes `function` with an event given as text, exactly as sent.
    async fn try_invoke_text(
        &self,
        function: &str,
        id: String,
        event: String,
        timeout: Duration,
    ) -> Result<Value, String> {
        let queue = self.queue(function);
        let (reply, answer) = oneshot::channel();
        let trace = serde_json::from_str::<Value>(&event)
            .ok()
            .and_then(|e| crate::lineage::invocation_trace(function, &e))
            .map(|(header, _)| header);
        queue
            .tx
            .send(Invocation {
                id: id.clone(),
                event,
                trace,
                deadline: if self.dev {
                    timeout
                } else {
                    timeout.min(TEST_DEADLINE)
                },
                reply,
            })
            .await
            .map_err(|_| "invocation queue closed".to_string())?;
        let Ok(answer) = tokio::time::timeout(timeout, answer).await else {
            // `next` skips an invocation nobody waits for: one no process took is dropped
            queue.stop_after_timeout(&id);
            return Err(format!("no answer within {} s", timeout.as_secs()));
        };
        answer
            .map_err(|_| "no reply".to_string())?
            .map_err(|e| format!("invocation error: {e}"))
    }

    /// Invokes the function serving `req` with a v2 event and decodes its v2 response.
    pub async fn http(&self, req: Request) -> Response {
        let (path, _) = req.path.split_once('?').unwrap_or((&req.path, ""));
        let function = Self::function_for(&req.method, path);
        self.http_on(function, req).await
    }

    /// Sends `req` to the function process named `function` (e.g. `webhooks@strict`).
    pub async fn http_on(&self, function: &str, req: Request) -> Response {
        let id = self.next_request_id();
        let event = v2_event(&req, &id);
        response_of(self.invoke_as(function, id, event).await)
    }

    /// Sends `req` to the function serving it, as the v2 event's text after `edit` (to send
    /// what API Gateway sends for bytes that JSON cannot hold); `Err` when the function
    /// cannot answer (an invocation error, which API Gateway turns into its own 500).
    pub async fn try_http_edited(
        &self,
        req: Request,
        edit: impl FnOnce(String) -> String,
    ) -> Result<Response, String> {
        let (path, _) = req.path.split_once('?').unwrap_or((&req.path, ""));
        let function = Self::function_for(&req.method, path);
        let id = self.next_request_id();
        let event = edit(v2_event(&req, &id).to_string());
        self.try_invoke_text(function, id, event, TEST_TIMEOUT)
            .await
            .map(response_of)
    }
}

async fn next(State(q): State<Arc<Instance>>) -> impl IntoResponse {
    let asking = Asking::new(&q.asking);
    let inv = {
        let mut rx = q.queue.rx.lock().await;
        loop {
            let inv = rx.recv().await.expect("sender kept by the emulator");
            // one whose invoker gave up (its timeout) is not run
            if !inv.reply.is_closed() {
                break inv;
            }
        }
    };
    q.pending
        .lock()
        .expect("lock")
        .insert(inv.id.clone(), inv.reply);
    drop(asking);
    let deadline = chrono::Utc::now().timestamp_millis() + inv.deadline.as_millis() as i64;
    let mut headers = HeaderMap::new();
    headers.insert(
        "lambda-runtime-aws-request-id",
        inv.id.parse().expect("ascii id"),
    );
    headers.insert(
        "lambda-runtime-deadline-ms",
        deadline.to_string().parse().expect("digits"),
    );
    headers.insert(
        "lambda-runtime-invoked-function-arn",
        "arn:aws:lambda:us-east-1:123456789012:function:local"
            .parse()
            .expect("ascii"),
    );
    if let Some(trace) = inv.trace.as_deref().and_then(|t| t.parse().ok()) {
        headers.insert("lambda-runtime-trace-id", trace);
    }
    headers.insert("content-type", "application/json".parse().expect("ascii"));
    (headers, inv.event)
}

async fn respond(
    State(q): State<Arc<Instance>>,
    Path(id): Path<String>,
    body: Bytes,
) -> StatusCode {
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Some(reply) = q.pending.lock().expect("lock").remove(&id) {
        let _ = reply.send(Ok(value));
    }
    StatusCode::ACCEPTED
}

async fn fail(State(q): State<Arc<Instance>>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    if let Some(reply) = q.pending.lock().expect("lock").remove(&id) {
        let _ = reply.send(Err(String::from_utf8_lossy(&body).into_owned()));
    }
    StatusCode::ACCEPTED
}

async fn init_error(body: Bytes) -> StatusCode {
    eprintln!("function init error: {}", String::from_utf8_lossy(&body));
    StatusCode::ACCEPTED
}

/// When `binary` was last written (`None` while it is being replaced).
fn modified(binary: &std::path::Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(binary).and_then(|m| m.modified()).ok()
}

/// Where a function's log lines go: appended to `$CATALOG_E2E_LOG_DIR/<function>.log` when
/// that is set (the bench reads the change feed's cost from it), else to the test's output.
fn log_of(function: &str) -> Stdio {
    let Ok(dir) = std::env::var("CATALOG_E2E_LOG_DIR") else {
        return Stdio::inherit();
    };
    let _ = std::fs::create_dir_all(&dir);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(std::path::Path::new(&dir).join(format!("{function}.log")))
        .map_or_else(|_| Stdio::inherit(), Stdio::from)
}
