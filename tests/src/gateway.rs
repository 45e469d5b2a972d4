//! A local stand-in for API Gateway's HTTP API: the v2 event a function receives for a
//! request and its v2 response decoded (for the Runtime API emulator, `runtime.rs`), and a
//! plain HTTP server on loopback that turns each request into that event for the function
//! serving its route and the function's answer back into HTTP. Tools that speak HTTP, such
//! as schemathesis, test the real binaries through it.

use crate::ddb::loopback_listener;
use crate::{Request, Response};
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;

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
        // several `Set-Cookie`s arrive joined by newlines (`response_of`)
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

/// The API Gateway HTTP API (v2) event of `req` (request id `id`).
pub fn v2_event(req: &Request, id: &str) -> Value {
    let (path, query) = req.path.split_once('?').unwrap_or((&req.path, ""));
    // As API Gateway, cookies travel in `cookies`, not among the headers.
    let headers: serde_json::Map<String, Value> = req
        .headers
        .iter()
        .filter(|(k, _)| k != "cookie")
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let cookies: Vec<&str> = req
        .headers
        .iter()
        .filter(|(k, _)| k == "cookie")
        .flat_map(|(_, v)| v.split(';').map(str::trim))
        .collect();
    let now = chrono::Utc::now();
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "cookies": cookies,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": "localhost",
            "domainPrefix": "local",
            "http": {"method": req.method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "catalog-e2e"},
            "requestId": id,
            "routeKey": "$default",
            "stage": "$default",
            "time": now.format("%d/%b/%Y:%H:%M:%S %z").to_string(),
            "timeEpoch": now.timestamp_millis()
        },
        "body": req.body,
        "isBase64Encoded": false
    })
}

/// A function's v2 response, decoded.
pub(crate) fn response_of(out: Value) -> Response {
    let body = out["body"].as_str().unwrap_or_default();
    // `Set-Cookie` comes back in `cookies`, as API Gateway reads it.
    let set_cookie = out["cookies"]
        .as_array()
        .filter(|c| !c.is_empty())
        .map(|c| {
            (
                "set-cookie".to_string(),
                c.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        });
    let mut headers: HashMap<String, String> = out["headers"]
        .as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| {
                    (
                        k.to_ascii_lowercase(),
                        v.as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    headers.extend(set_cookie);
    Response {
        status: out["statusCode"].as_u64().expect("statusCode") as u16,
        headers,
        body: serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_string())),
    }
}
