//! An SQS endpoint in front of moto that keeps a sender's trace header on its message, as
//! SQS does: the `X-Amzn-Trace-Id` header of a `SendMessage` (which the AWS SDK sets from
//! `_X_AMZN_TRACE_ID` inside a Lambda function) becomes the message's `AWSTraceHeader`
//! system attribute, which a receive returns. moto takes the attribute only from the
//! request's body, so this proxy puts it there; everything else passes unchanged. Functions
//! whose `AWS_ENDPOINT_URL_SQS` is this endpoint carry a chain's hop count from one
//! invocation to the next (`lineage.rs`).

use crate::ddb::loopback_listener;
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

/// Starts the proxy in front of `upstream` (moto's endpoint) and returns its endpoint.
pub fn start(upstream: String) -> String {
    let (listener, port) = loopback_listener();
    let client = reqwest::Client::new();
    let app = Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        forward(client.clone(), upstream.clone(), headers, body)
    });
    // It outlives any one test's runtime: it runs on a thread of its own.
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
    format!("http://127.0.0.1:{port}")
}

/// The request body with the trace header as the message's `AWSTraceHeader`.
fn with_trace(target: &str, trace: &str, body: &[u8]) -> Option<Vec<u8>> {
    let mut request: Value = serde_json::from_slice(body).ok()?;
    let attribute = json!({"AWSTraceHeader": {"DataType": "String", "StringValue": trace}});
    match target {
        "AmazonSQS.SendMessage" => request["MessageSystemAttributes"] = attribute,
        "AmazonSQS.SendMessageBatch" => {
            for entry in request["Entries"].as_array_mut()? {
                entry["MessageSystemAttributes"] = attribute.clone();
            }
        }
        _ => return None,
    }
    serde_json::to_vec(&request).ok()
}

async fn forward(
    client: reqwest::Client,
    upstream: String,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let body = match (header("x-amz-target"), header("x-amzn-trace-id")) {
        (Some(target), Some(trace)) => with_trace(target, trace, &body)
            .map(Bytes::from)
            .unwrap_or(body),
        _ => body,
    };
    let mut req = client.post(&upstream).body(body);
    for (name, value) in &headers {
        if !matches!(name.as_str(), "host" | "content-length" | "connection") {
            req = req.header(name.as_str(), value.as_bytes());
        }
    }
    let Ok(answer) = req.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
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
    (status, h, bytes).into_response()
}
