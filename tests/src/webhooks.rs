//! The webhook side of the local stack for e2e tests: the SQS emulator (moto's server,
//! installed by `scripts/tools.sh`), the delivery queue and its dead-letter queue, the two
//! local event source mappings (`local.rs`) feeding the real change-feed and delivery
//! binaries, and receivers: real HTTP servers on loopback that record every request.
//!
//! Call `webhooks().await` first in every webhook test: the functions must start with the
//! queue settings in their environment.

use crate::ddb::{die_with_parent, free_port, keep};
use crate::local::{create_delivery_queues, run_queue, run_stream, stream_arn, Invoker, Start};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Settings the functions run with in the webhook tests: a 3 s coalescing window, eight
/// attempts one second apart and a 2 s answer timeout, so a whole schedule takes seconds.
pub const COALESCE_SECONDS: u64 = 5;
pub const ATTEMPTS: u32 = 8;
/// How long the delivery worker waits for a receiver: far above a loaded machine's answer time.
pub const RECEIVER_TIMEOUT_SECONDS: u64 = 5;
/// A subscription whose deliveries all fail this long is disabled (5 days as deployed):
/// well past a whole retry schedule of the tests, so only the test of it reaches it.
pub const DISABLE_AFTER_SECONDS: u64 = 30;

/// What the local stack may deliver to: the emulator's account and region (as `make dev`).
pub const LOCAL_DESTINATIONS: &str =
    "arn:aws:sqs:us-east-1:123456789012:*,arn:aws:events:us-east-1:123456789012:event-bus/*";

pub struct Hooks {
    pub sqs_endpoint: String,
    pub queue_url: String,
    pub dead_letter_url: String,
    /// Where the change feed sets aside records it cannot process.
    pub feed_failures_url: String,
}

static HOOKS: tokio::sync::OnceCell<Hooks> = tokio::sync::OnceCell::const_new();

/// Starts (once) the SQS emulator, the queues and the pollers.
pub async fn webhooks() -> &'static Hooks {
    HOOKS.get_or_init(start).await
}

/// An EventBridge client for the emulator (the same endpoint as SQS).
pub fn events_client(endpoint: &str) -> aws_sdk_eventbridge::Client {
    use aws_sdk_eventbridge::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_eventbridge::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("local", "local", None, None, "e2e"))
        .build();
    aws_sdk_eventbridge::Client::from_conf(config)
}

/// An SQS client for the emulator, bound to the calling runtime.
pub fn sqs_client(endpoint: &str) -> aws_sdk_sqs::Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "local", "local", None, None, "e2e",
        ))
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}

fn streams_client(endpoint: &str) -> aws_sdk_dynamodbstreams::Client {
    use aws_sdk_dynamodbstreams::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("local", "local", None, None, "e2e"))
        .build();
    aws_sdk_dynamodbstreams::Client::from_conf(config)
}

/// moto's server of this test binary (SQS for webhooks, S3 and SQS for imports), started
/// on first use; it dies with the test process.
pub fn moto() -> &'static str {
    static MOTO: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MOTO.get_or_init(start_moto)
}

/// Starts moto's server on a free port.
fn start_moto() -> String {
    let bin = crate::repo_root().join(".tools/venv/bin/moto_server");
    assert!(
        bin.exists(),
        "moto_server is not installed at {}: run scripts/tools.sh (make test does)",
        bin.display()
    );
    let port = free_port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let child = die_with_parent(
            Command::new(&bin)
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                // exports' parts in the tests are small (imports::EXPORT_PART_BYTES)
                .env(
                    "S3_UPLOAD_PART_MIN_SIZE",
                    crate::imports::EXPORT_PART_BYTES.to_string(),
                )
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .spawn();
        let _ = tx.send(child.map(keep).map_err(|e| e.to_string()));
        loop {
            std::thread::park();
        }
    });
    rx.recv().expect("spawner").expect("moto_server starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "moto_server did not listen within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    format!("http://127.0.0.1:{port}")
}

async fn start() -> Hooks {
    let stack = crate::stack().await;
    let endpoint = moto().to_string();
    let sqs = sqs_client(&endpoint);
    let (queue_url, dead_letter_url) = create_delivery_queues(&sqs).await.expect("queues created");
    let feed_failures_url = sqs
        .create_queue()
        .queue_name("change-feed-failures")
        .send()
        .await
        .expect("feed failure queue created")
        .queue_url
        .expect("a queue url");
    stack.runtime.extend_env(vec![
        ("AWS_ENDPOINT_URL_SQS", endpoint.clone()),
        // AWS destinations: the emulator's EventBridge, and its account's queues and buses
        ("AWS_ENDPOINT_URL_EVENTBRIDGE", endpoint.clone()),
        ("CATALOG_EVENT_DESTINATIONS", LOCAL_DESTINATIONS.into()),
        ("CATALOG_FEED_FAILURE_QUEUE_URL", feed_failures_url.clone()),
        ("CATALOG_DELIVERY_QUEUE_URL", queue_url.clone()),
        ("CATALOG_DEAD_LETTER_QUEUE_URL", dead_letter_url.clone()),
        (
            "CATALOG_WEBHOOK_COALESCE_SECONDS",
            // the benchmark runs with a shorter window
            std::env::var("CATALOG_E2E_WEBHOOK_WINDOW")
                .unwrap_or_else(|_| COALESCE_SECONDS.to_string()),
        ),
        (
            "CATALOG_WEBHOOK_RETRY_SCHEDULE",
            // the benchmark runs a production-like schedule, scaled down
            std::env::var("CATALOG_E2E_WEBHOOK_SCHEDULE")
                .unwrap_or_else(|_| vec!["1"; ATTEMPTS as usize - 1].join(",")),
        ),
        (
            "CATALOG_WEBHOOK_TIMEOUT_SECONDS",
            RECEIVER_TIMEOUT_SECONDS.to_string(),
        ),
        (
            "CATALOG_WEBHOOK_DISABLE_AFTER_SECONDS",
            // the benchmark keeps its bad receivers subscribed throughout
            std::env::var("CATALOG_E2E_WEBHOOK_DISABLE_AFTER")
                .unwrap_or_else(|_| DISABLE_AFTER_SECONDS.to_string()),
        ),
    ]);
    let stream_arn = stream_arn(stack.store().client(), crate::TABLE).await;
    let invoke: Invoker = crate::local::emulator_invoker();
    let (ddb, sqs_endpoint, queue) = (
        stack.ddb_endpoint.clone(),
        endpoint.clone(),
        queue_url.clone(),
    );
    let invoke_queue = invoke.clone();
    // Clients are built inside the emulator's runtime, which lives as long as the process.
    stack.runtime.handle.spawn(async move {
        run_stream(
            streams_client(&ddb),
            stream_arn,
            "change-feed".into(),
            invoke,
            Start::Oldest,
        )
        .await
    });
    stack.runtime.handle.spawn(async move {
        run_queue(
            sqs_client(&sqs_endpoint),
            queue,
            "webhook-delivery".into(),
            invoke_queue,
            crate::runtime::DELIVERY_CONCURRENCY,
        )
        .await
    });
    Hooks {
        sqs_endpoint: endpoint,
        queue_url,
        dead_letter_url,
        feed_failures_url,
    }
}

/// One request a receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub json: Value,
    pub at: Instant,
}

#[derive(Default)]
struct ReceiverState {
    received: Vec<Received>,
    /// Requests answered `fail_status` (500 by default) before it starts answering 204.
    fail_first: usize,
    fail_status: u16,
    /// How long it waits before answering.
    delay: Duration,
    answered: usize,
}

/// A webhook receiver on loopback.
#[derive(Clone)]
pub struct Receiver {
    pub port: u16,
    state: Arc<Mutex<ReceiverState>>,
    /// The port, bound but not listening until `listen` (connections are refused, and no
    /// other socket, not even an outgoing connection, can take the port meanwhile).
    socket: Arc<Mutex<Option<tokio::net::TcpSocket>>>,
}

impl Receiver {
    /// A receiver listening now, failing its first `fail_first` requests with 500.
    pub async fn start(fail_first: usize) -> Self {
        let r = Self::reserve(fail_first);
        r.listen().await;
        r
    }

    /// A receiver whose port is chosen but not listening yet (connections are refused).
    pub fn reserve(fail_first: usize) -> Self {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("a loopback port");
        let port = socket.local_addr().expect("its address").port();
        Self {
            port,
            socket: Arc::new(Mutex::new(Some(socket))),
            state: Arc::new(Mutex::new(ReceiverState {
                fail_first,
                fail_status: 500,
                ..Default::default()
            })),
        }
    }

    /// A receiver that always answers `status` after `delay`.
    pub async fn answering(status: u16, delay: Duration) -> Self {
        let r = Self::reserve(usize::MAX);
        {
            let mut s = r.state.lock().expect("lock");
            s.fail_status = status;
            s.delay = delay;
        }
        r.listen().await;
        r
    }

    /// Starts listening (on the calling test's runtime).
    pub async fn listen(&self) {
        let app = Router::new()
            .route("/hook", post(receive))
            .with_state(self.state.clone());
        let socket = self.socket.lock().expect("lock").take();
        let listener = match socket {
            Some(socket) => socket.listen(1024).expect("receiver port"),
            // listening again after a stop: bind the same port anew
            None => tokio::net::TcpListener::bind(("127.0.0.1", self.port))
                .await
                .expect("receiver port"),
        };
        tokio::spawn(async move { axum::serve(listener, app).await });
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().expect("lock").received.clone()
    }

    /// The deliveries a consumer that deduplicates by the body's `id` keeps, first arrivals
    /// only: deliveries are at least once (a message whose visibility lapsed under a slow
    /// attempt is attempted again, under the same id).
    pub fn distinct(&self) -> Vec<Received> {
        let mut seen = std::collections::HashSet::new();
        self.received()
            .into_iter()
            .filter(|r| seen.insert(r.json["id"].to_string()))
            .collect()
    }

    /// At least `n` distinct deliveries ([`Receiver::distinct`]); panics after `within`.
    pub async fn wait_for_distinct(&self, n: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.distinct();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "receiver got {} of {n} distinct deliveries within {within:?}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The requests once there are at least `n`; panics after `within`.
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "receiver got {} of {n} requests within {within:?}: {:?}",
                got.len(),
                got.iter().map(|r| &r.json).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Exactly `n` requests: waits for them (within `within`), then watches for one more
    /// coalescing window and a second, and fails if anything else arrives meanwhile.
    pub async fn wait_for_exactly(&self, n: usize, within: Duration) -> Vec<Received> {
        let got = self.wait_for(n, within).await;
        // Absence is what is asserted here: the window is the assertion, not a synchronization.
        tokio::time::sleep(Duration::from_secs(COALESCE_SECONDS + 1)).await;
        let after = self.received();
        assert_eq!(
            after.len(),
            n,
            "an extra request arrived after the {n} expected: {:?}",
            after[n..].iter().map(|r| &r.json).collect::<Vec<_>>()
        );
        got
    }

    /// From now on, answers every request 204.
    pub fn recover(&self) {
        let mut s = self.state.lock().expect("lock");
        s.fail_first = s.answered;
        s.delay = Duration::ZERO;
    }

    /// Requests answered 2xx (the deliveries that succeeded).
    pub fn delivered(&self) -> Vec<Received> {
        let s = self.state.lock().expect("lock");
        s.received.iter().skip(s.fail_first).cloned().collect()
    }
}

async fn receive(
    State(state): State<Arc<Mutex<ReceiverState>>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let delay = state.lock().expect("lock").delay;
    tokio::time::sleep(delay).await;
    let mut s = state.lock().expect("lock");
    s.received.push(Received {
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    v.to_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
        json: serde_json::from_slice(&body).unwrap_or(Value::Null),
        body: body.to_vec(),
        at: Instant::now(),
    });
    s.answered += 1;
    if s.answered <= s.fail_first {
        StatusCode::from_u16(s.fail_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    } else {
        StatusCode::NO_CONTENT
    }
}

/// Polls `probe` until it returns `Some`, or panics with `what` after `within`.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether the official Standard Webhooks library of `language` ("python" or "node", as
/// installed by `scripts/tools.sh`) verifies `body` with these headers and `secret`; on
/// failure, the library's error.
pub fn standard_verify(
    language: &str,
    secret: &str,
    headers: &HashMap<String, String>,
    body: &[u8],
) -> Result<(), String> {
    let root = crate::repo_root();
    let standard: HashMap<&str, &str> = ["webhook-id", "webhook-timestamp", "webhook-signature"]
        .into_iter()
        .filter_map(|h| Some((h, headers.get(h)?.as_str())))
        .collect();
    let headers_json = serde_json::to_string(&standard).expect("headers encode");
    let dir = tempfile_dir();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let body_path = dir.join(format!("body-{}-{n}", std::process::id()));
    std::fs::write(&body_path, body).expect("body written");
    let mut command = match language {
        "python" => {
            let mut c = Command::new(root.join(".tools/venv/bin/python"));
            c.args(["-c", PYTHON_VERIFY]);
            c
        }
        "node" => {
            let mut c = Command::new("node");
            c.args(["-e", NODE_VERIFY])
                .env("NODE_PATH", root.join(".tools/node/node_modules"));
            c
        }
        other => panic!("no verifier for {other}"),
    };
    let out = command
        .arg(secret)
        .arg(&body_path)
        .arg(&headers_json)
        .output()
        .unwrap_or_else(|e| {
            panic!("{language} verifier does not run (scripts/tools.sh installs it): {e}")
        });
    let _ = std::fs::remove_file(&body_path);
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match stdout.as_str() {
        "ok" => Ok(()),
        _ if stdout.starts_with("fail:") => Err(stdout),
        _ => panic!(
            "{language} verifier broke: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = crate::repo_root().join("target/webhook-verify");
    std::fs::create_dir_all(&dir).expect("verify dir");
    dir
}

/// argv: secret, body file, headers JSON. Prints `ok` or `fail:<error>`.
const PYTHON_VERIFY: &str = r#"
import json, sys
from standardwebhooks import Webhook
secret, path, headers = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
try:
    Webhook(secret).verify(open(path, "rb").read(), headers)
    print("ok")
except Exception as e:
    print("fail:" + type(e).__name__ + ": " + str(e))
"#;

const NODE_VERIFY: &str = r#"
const { Webhook } = require("standardwebhooks");
const fs = require("fs");
const [secret, path, headers] = process.argv.slice(1);
try {
  new Webhook(secret).verify(fs.readFileSync(path, "utf8"), JSON.parse(headers));
  console.log("ok");
} catch (e) {
  console.log("fail:" + e.name + ": " + e.message);
}
"#;

/// The body of the first message on `queue_url` that contains `needle`, within `within`.
pub async fn queued(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    needle: &str,
    what: &str,
    within: Duration,
) -> String {
    eventually(what, within, || async {
        // each receive hides what it returned for a while, so successive polls walk the
        // whole queue however many messages other tests left on it
        let out = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .visibility_timeout(20)
            .send()
            .await
            .unwrap();
        out.messages
            .unwrap_or_default()
            .into_iter()
            .filter_map(|m| m.body)
            .find(|b| b.contains(needle))
    })
    .await
}

/// A stream record of the table inserting `image` (sequence number `seq`), as Lambda hands
/// one to the change feed.
pub fn stream_insert(seq: &str, image: Value) -> Value {
    json!({
        "eventID": seq, "eventName": "INSERT", "eventVersion": "1.1",
        "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
        "dynamodb": {"ApproximateCreationDateTime": 1.7e9, "Keys": {}, "NewImage": image,
                     "SequenceNumber": seq, "SizeBytes": 1, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:1:table/t/stream/s"
    })
}
