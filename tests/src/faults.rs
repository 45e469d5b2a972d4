//! A DynamoDB endpoint that fails on demand: a loopback proxy in front of DynamoDB Local that
//! answers chosen operations with DynamoDB's own throttling error, so that a test sees what a
//! throttled table does to a real function process (`<binary>@faultydb` talks through it).
//! It also measures round trips as they happen: with a hold set, every request waits there
//! before it is forwarded, so requests a function sends together overlap, and requests it
//! sends one after the other never do; the number of overlapping groups is the number of
//! round trips, whatever the code labels them. A gate holds the requests of one operation
//! until the test releases them: it opens a window between a function's reads and its write
//! at a chosen point, so that a race can be played in a fixed order instead of hoped for.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What happens to one operation (e.g. `TransactWriteItems`): the first `pass` requests go
/// through, the next `fail` are throttled, the rest go through.
#[derive(Debug, Clone, Copy)]
struct Rule {
    pass: u32,
    fail: u32,
}

#[derive(Default)]
struct State {
    rules: HashMap<String, Rule>,
    /// Requests seen per operation since the last `reset`.
    seen: HashMap<String, u32>,
    /// While measuring: how long each request waits before it is forwarded.
    hold: Option<Duration>,
    /// While measuring: when each request arrived and when its answer was complete.
    spans: Vec<(Instant, Instant)>,
    /// Requests of this operation wait here until released.
    gate: Option<Gate>,
}

/// A closed gate: how many requests it holds, and whether it was opened.
#[derive(Clone)]
struct Gate {
    operation: String,
    held: Arc<tokio::sync::watch::Sender<u32>>,
    open: Arc<tokio::sync::watch::Sender<bool>>,
}

/// The proxy: its endpoint, its rules and what it saw.
pub struct FaultyDb {
    pub endpoint: String,
    state: Arc<Mutex<State>>,
    /// Tests that change the rules hold this, so they never overlap.
    pub exclusive: tokio::sync::Mutex<()>,
}

/// Throttles every request of the operation from now on.
pub const ALWAYS: u32 = u32::MAX;

impl FaultyDb {
    /// From now on, `operation` lets `pass` requests through, then throttles `fail` of them;
    /// forgets every other rule and the counts.
    pub fn throttle(&self, operation: &str, pass: u32, fail: u32) {
        let mut s = self.state.lock().expect("lock");
        s.rules = HashMap::from([(operation.to_string(), Rule { pass, fail })]);
        s.seen.clear();
    }

    /// No fault any more, no measuring, no gate (what it held goes on); counts start again.
    pub fn reset(&self) {
        let mut s = self.state.lock().expect("lock");
        s.rules.clear();
        s.seen.clear();
        s.hold = None;
        s.spans.clear();
        if let Some(g) = s.gate.take() {
            g.open.send_replace(true);
        }
    }

    /// From now on, every request of `operation` waits at the proxy until [`Self::release`].
    pub fn close_gate(&self, operation: &str) {
        let mut s = self.state.lock().expect("lock");
        s.gate = Some(Gate {
            operation: operation.to_string(),
            held: Arc::new(tokio::sync::watch::channel(0).0),
            open: Arc::new(tokio::sync::watch::channel(false).0),
        });
    }

    /// Resolves once the gate holds `n` requests (at once when there is no gate).
    pub async fn holding(&self, n: u32) {
        let gate = self.state.lock().expect("lock").gate.clone();
        if let Some(g) = gate {
            let mut held = g.held.subscribe();
            let _ = held.wait_for(|h| *h >= n).await;
        }
    }

    /// Opens the gate: what it holds is forwarded, and later requests pass.
    pub fn release(&self) {
        if let Some(g) = self.state.lock().expect("lock").gate.take() {
            g.open.send_replace(true);
        }
    }

    /// From now on, holds every request for `hold` before forwarding it and records its
    /// span; forgets every rule, count and earlier span.
    pub fn measure(&self, hold: Duration) {
        self.reset();
        self.state.lock().expect("lock").hold = Some(hold);
    }

    /// The requests and the round trips measured since `measure`: a round trip is a group
    /// of requests whose spans overlap (chained by overlap), so requests sent together
    /// count once and requests sent one after the other count each.
    pub fn measured(&self) -> (usize, usize) {
        let mut spans = self.state.lock().expect("lock").spans.clone();
        spans.sort();
        let mut trips = 0;
        let mut open_until: Option<Instant> = None;
        for (start, end) in &spans {
            match open_until {
                Some(until) if *start <= until => open_until = Some(until.max(*end)),
                _ => {
                    trips += 1;
                    open_until = Some(*end);
                }
            }
        }
        (spans.len(), trips)
    }

    /// Requests of `operation` seen (passed or throttled) since the rules last changed.
    pub fn seen(&self, operation: &str) -> u32 {
        let s = self.state.lock().expect("lock");
        s.seen.get(operation).copied().unwrap_or(0)
    }
}

static FAULTY: OnceLock<FaultyDb> = OnceLock::new();

/// The proxy in front of the stack's DynamoDB Local, started on first use.
pub async fn faulty_db() -> &'static FaultyDb {
    let upstream = crate::stack().await.ddb_endpoint.clone();
    if let Some(f) = FAULTY.get() {
        return f;
    }
    let (listener, port) = crate::ddb::loopback_listener();
    let state = Arc::new(Mutex::new(State::default()));
    let app = Router::new().fallback({
        let state = state.clone();
        let client = reqwest::Client::new();
        move |headers: HeaderMap, body: Bytes| {
            proxy(
                state.clone(),
                client.clone(),
                upstream.clone(),
                headers,
                body,
            )
        }
    });
    // The proxy outlives any one test's runtime: it runs on a thread of its own.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            axum::serve(listener, app).await
        })
    });
    FAULTY.get_or_init(|| FaultyDb {
        endpoint: format!("http://127.0.0.1:{port}"),
        state,
        exclusive: tokio::sync::Mutex::new(()),
    })
}

/// The endpoint of the started proxy (for a `@faultydb` process).
pub fn endpoint() -> String {
    FAULTY
        .get()
        .expect("faults::faulty_db() starts the proxy before a @faultydb process")
        .endpoint
        .clone()
}

async fn proxy(
    state: Arc<Mutex<State>>,
    client: reqwest::Client,
    upstream: String,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let operation = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.split_once('.'))
        .map(|(_, op)| op.to_string())
        .unwrap_or_default();
    let gate = state.lock().expect("lock").gate.clone();
    if let Some(g) = gate.filter(|g| g.operation == operation) {
        let mut open = g.open.subscribe();
        g.held.send_modify(|n| *n += 1);
        let _ = open.wait_for(|o| *o).await;
    }
    let arrived = Instant::now();
    let hold = state.lock().expect("lock").hold;
    if let Some(hold) = hold {
        tokio::time::sleep(hold).await;
    }
    let throttled = {
        let mut s = state.lock().expect("lock");
        let n = *s.seen.get(&operation).unwrap_or(&0);
        s.seen.insert(operation.clone(), n + 1);
        s.rules
            .get(&operation)
            .is_some_and(|r| n >= r.pass && n - r.pass < r.fail)
    };
    if throttled {
        let mut h = HeaderMap::new();
        h.insert(
            "content-type",
            HeaderValue::from_static("application/x-amz-json-1.0"),
        );
        let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#;
        return (StatusCode::BAD_REQUEST, h, body).into_response();
    }
    let mut req = client.post(&upstream).body(body);
    for (name, value) in &headers {
        if !matches!(name.as_str(), "host" | "content-length" | "connection") {
            req = req.header(name.as_str(), value.as_bytes());
        }
    }
    match req.send().await {
        Ok(answer) => {
            let status =
                StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let mut h = HeaderMap::new();
            for (name, value) in answer.headers() {
                if !matches!(
                    name.as_str(),
                    "content-length" | "transfer-encoding" | "connection"
                ) {
                    if let (Ok(n), Ok(v)) = (
                        axum::http::HeaderName::from_bytes(name.as_str().as_bytes()),
                        HeaderValue::from_bytes(value.as_bytes()),
                    ) {
                        h.insert(n, v);
                    }
                }
            }
            let bytes = answer.bytes().await.unwrap_or_default();
            if hold.is_some() {
                let mut s = state.lock().expect("lock");
                s.spans.push((arrived, Instant::now()));
            }
            (status, h, bytes).into_response()
        }
        Err(_) => StatusCode::BAD_GATEWAY.into_response(),
    }
}
