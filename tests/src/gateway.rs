//! A local stand-in for API Gateway's HTTP API: a plain HTTP server on loopback that turns
//! each request into the v2 event the function serving its route receives (through the
//! Runtime API emulator) and the function's answer back into HTTP. Tools that speak HTTP,
//! such as schemathesis, test the real binaries through it.

use crate::ddb::loopback_listener;
use crate::Request;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::Router;

async fn forward(method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> impl IntoResponse {
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| uri.path().to_string());
    let mut req = Request::new(method.as_str(), &path);
    // As API Gateway, a value that is not visible ASCII is passed on, not dropped (bytes
    // that are not UTF-8 as U+FFFD: a header here is text).
    for (name, value) in &headers {
        req = req.header(name.as_str(), &String::from_utf8_lossy(value.as_bytes()));
    }
    if !body.is_empty() {
        req.body = Some(String::from_utf8_lossy(&body).into_owned());
    }
    let answer = req.send().await;
    let mut out = HeaderMap::new();
    for (name, value) in &answer.headers {
        // several `Set-Cookie`s arrive joined by newlines (`runtime::response_of`)
        for value in value.split('\n') {
            if let (Ok(n), Ok(v)) = (
                axum::http::HeaderName::from_bytes(name.as_bytes()),
                axum::http::HeaderValue::from_str(value),
            ) {
                out.append(n, v);
            }
        }
    }
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
    // a body that is not JSON (the console's pages) goes back as it came
    let body = match answer.body {
        serde_json::Value::String(text) => text,
        serde_json::Value::Null => String::new(),
        json => json.to_string(),
    };
    (status, out, body)
}

/// Starts the gateway on a free loopback port (for the test binary's lifetime); its port.
pub async fn start() -> u16 {
    let (listener, port) = loopback_listener();
    let listener = tokio::net::TcpListener::from_std(listener).expect("gateway listener");
    let app = Router::new().fallback(forward);
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}
