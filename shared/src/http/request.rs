//! A framework-free view of one HTTP request, built from the lambda_http request.

use crate::error::ApiError;
use crate::json_text::{ndjson_line, nesting_depth, object_item, BulkItem, MAX_JSON_DEPTH};
use lambda_http::{Body, RequestExt};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default)]
pub struct ApiRequest {
    pub method: String,
    /// The raw (still percent-encoded) path, e.g. `/v1/products/a%20b`.
    pub path: String,
    /// Decoded `(name, value)` pairs in order, repeated names kept.
    pub query: Vec<(String, String)>,
    pub authorization: Option<String>,
    pub content_type: Option<String>,
    /// `If-Match`, as sent (see [`crate::http::etag::readable`]).
    pub if_match: Option<String>,
    /// `Idempotency-Key`, as sent (see [`crate::http::idempotency::key`]).
    pub idempotency_key: Option<String>,
    /// `Cookie`, as sent (API Gateway's `cookies`, joined by lambda_http): the console's
    /// session (`auth/session.rs`).
    pub cookie: Option<String>,
    /// `X-CSRF-Token`: what a state-changing call under a console session carries.
    pub csrf_token: Option<String>,
    /// `Host`: where a console sign-in link points.
    pub host: Option<String>,
    pub body: Vec<u8>,
    /// When the request arrived, and when its invocation must have answered (Lambda's
    /// deadline): what a call's writes are bounded by ([`ApiRequest::write_deadline`]).
    pub received: Option<Instant>,
    pub invocation_deadline: Option<Instant>,
}

/// The time kept before the invocation's deadline for the writes already started and the
/// answer: no write starts later.
pub const WRITE_MARGIN: Duration = Duration::from_secs(2);

impl ApiRequest {
    pub fn from_lambda(req: lambda_http::Request) -> Self {
        // A value that is not visible ASCII is kept (as text, bytes that are not UTF-8 as
        // U+FFFD), never dropped: each header's check then refuses it by name, instead of
        // the request running as if the header had not been sent.
        let header = |name: &str| {
            req.headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let authorization = header("authorization");
        let content_type = header("content-type");
        let if_match = header("if-match");
        let idempotency_key = header("idempotency-key");
        let cookie = header("cookie");
        let csrf_token = header("x-csrf-token");
        let host = header("host");
        let raw_path = req.raw_http_path();
        let path = if raw_path.is_empty() {
            req.uri().path().to_string()
        } else {
            raw_path.to_string()
        };
        let query = req
            .uri()
            .query()
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let method = req.method().as_str().to_string();
        let received = Instant::now();
        let invocation_deadline = req.lambda_context_ref().and_then(|c| {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?
                .as_millis() as u64;
            let left = c.deadline.checked_sub(now_ms)?;
            received.checked_add(Duration::from_millis(left))
        });
        let body = match req.into_body() {
            Body::Empty => Vec::new(),
            Body::Text(t) => t.into_bytes(),
            Body::Binary(b) => b,
            _ => Vec::new(),
        };
        Self {
            method,
            path,
            query,
            authorization,
            content_type,
            if_match,
            idempotency_key,
            cookie,
            csrf_token,
            host,
            body,
            received: Some(received),
            invocation_deadline,
        }
    }

    /// The last moment a write of this call may start: `budget` after it arrived, and
    /// [`WRITE_MARGIN`] before its invocation's deadline at the latest; `None` when neither
    /// is known (a request built in a test).
    pub fn write_deadline(&self, budget: Duration) -> Option<Instant> {
        let by_budget = self.received.and_then(|r| r.checked_add(budget));
        let by_invocation = self
            .invocation_deadline
            .and_then(|d| d.checked_sub(WRITE_MARGIN));
        match (by_budget, by_invocation) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The body as a JSON object, checked for size, content type, syntax and depth. An empty
    /// body is `{}`.
    pub fn json_object(
        &self,
        max_bytes: usize,
    ) -> Result<serde_json::Map<String, Value>, ApiError> {
        if self.body.len() > max_bytes {
            return Err(ApiError::payload_too_large(max_bytes));
        }
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(serde_json::Map::new());
        }
        let is_json = self.content_type.as_deref().is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
        if !is_json {
            return Err(ApiError::unsupported_media_type());
        }
        if nesting_depth(&self.body) > MAX_JSON_DEPTH {
            return Err(ApiError::bad_request(format!(
                "request body nests deeper than {MAX_JSON_DEPTH} levels"
            )));
        }
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(ApiError::bad_request("request body must be a JSON object")),
            Err(e) => Err(ApiError::bad_request(format!(
                "request body is not valid JSON: {e}"
            ))),
        }
    }

    /// The items of a bulk body, each with its 1-based line: a JSON array of objects
    /// (`application/json`), or NDJSON (`application/x-ndjson`, one object per line, blank
    /// lines skipped but counted). Over `max_bytes` or `max_items`: 413, nothing parsed. A body
    /// that is not an array (or not NDJSON): 400. An item that is not a JSON object (or an
    /// NDJSON line that is not JSON) is that item's own 400.
    pub fn json_items(
        &self,
        max_bytes: usize,
        max_items: usize,
    ) -> Result<Vec<BulkItem>, ApiError> {
        if self.body.len() > max_bytes {
            return Err(ApiError::payload_too_large(max_bytes));
        }
        let media = self
            .content_type
            .as_deref()
            .and_then(|ct| ct.split(';').next())
            .map(|m| m.trim().to_ascii_lowercase());
        let too_many = |n: usize| {
            ApiError::new(
                413,
                format!("a bulk request holds at most {max_items} items; this one has {n}"),
            )
        };
        match media.as_deref() {
            Some("application/json") => {
                if nesting_depth(&self.body) > MAX_JSON_DEPTH + 1 {
                    return Err(ApiError::bad_request(format!(
                        "request body nests deeper than {MAX_JSON_DEPTH} levels"
                    )));
                }
                let items = match serde_json::from_slice::<Value>(&self.body) {
                    Ok(Value::Array(items)) => items,
                    Ok(_) => return Err(ApiError::bad_request(NOT_A_LIST)),
                    Err(e) if self.body.iter().all(u8::is_ascii_whitespace) => {
                        return Err(ApiError::bad_request(format!("{NOT_A_LIST}: {e}")))
                    }
                    Err(e) => {
                        return Err(ApiError::bad_request(format!(
                            "request body is not valid JSON: {e}"
                        )))
                    }
                };
                if items.len() > max_items {
                    return Err(too_many(items.len()));
                }
                Ok(items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| BulkItem {
                        line: i + 1,
                        body: object_item(v),
                    })
                    .collect())
            }
            Some("application/x-ndjson") => {
                let text = std::str::from_utf8(&self.body)
                    .map_err(|_| ApiError::bad_request("NDJSON body is not valid UTF-8"))?;
                let lines: Vec<(usize, &str)> = text
                    .split('\n')
                    .enumerate()
                    .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
                    .filter(|(_, l)| !l.trim().is_empty())
                    .collect();
                if lines.len() > max_items {
                    return Err(too_many(lines.len()));
                }
                Ok(lines
                    .into_iter()
                    .map(|(line, l)| BulkItem {
                        line,
                        body: ndjson_line(l),
                    })
                    .collect())
            }
            _ => Err(ApiError::new(
                415,
                "request body must be sent with Content-Type: application/json (a JSON array) \
                 or application/x-ndjson",
            )),
        }
    }

    /// The body decoded into `T` (whose serde attributes refuse unknown fields).
    pub fn json<T: DeserializeOwned>(&self, max_bytes: usize) -> Result<T, ApiError> {
        let map = self.json_object(max_bytes)?;
        serde_json::from_value(Value::Object(map))
            .map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")))
    }
}

const NOT_A_LIST: &str = "request body must be a JSON array of objects (or NDJSON with \
     Content-Type: application/x-ndjson)";

#[cfg(test)]
mod tests {
    use super::*;

    /// A call's writes stop starting at its budget, or the margin before the invocation's
    /// deadline when that comes first.
    #[test]
    fn the_write_deadline_is_the_earlier_of_budget_and_invocation() {
        let t = Instant::now();
        let at = |received, deadline| ApiRequest {
            received,
            invocation_deadline: deadline,
            ..Default::default()
        };
        let budget = Duration::from_secs(6);
        let s = Duration::from_secs;
        assert_eq!(
            at(Some(t), Some(t + s(10))).write_deadline(budget),
            Some(t + s(6))
        );
        assert_eq!(
            at(Some(t), Some(t + s(7))).write_deadline(budget),
            Some(t + s(5))
        );
        assert_eq!(at(Some(t), None).write_deadline(budget), Some(t + s(6)));
        assert_eq!(
            at(None, Some(t + s(7))).write_deadline(budget),
            Some(t + s(5))
        );
        assert_eq!(at(None, None).write_deadline(budget), None);
    }

    fn req(ct: Option<&str>, body: &str) -> ApiRequest {
        ApiRequest {
            content_type: ct.map(str::to_string),
            body: body.as_bytes().to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn body_checks_in_order() {
        assert_eq!(req(None, "").json_object(10).unwrap().len(), 0);
        assert_eq!(
            req(Some("application/json"), &"x".repeat(11))
                .json_object(10)
                .unwrap_err()
                .status,
            413
        );
        assert_eq!(
            req(Some("text/plain"), "{}")
                .json_object(10)
                .unwrap_err()
                .status,
            415
        );
        assert_eq!(req(None, "{}").json_object(10).unwrap_err().status, 415);
        let ok = req(Some("application/json; charset=utf-8"), "{\"a\":1}");
        assert_eq!(ok.json_object(100).unwrap()["a"], 1);
        let bad = req(Some("application/json"), "{\"a\":")
            .json_object(100)
            .unwrap_err();
        assert!(
            bad.message.starts_with("request body is not valid JSON"),
            "{}",
            bad.message
        );
        assert_eq!(
            req(Some("application/json"), "[1]")
                .json_object(100)
                .unwrap_err()
                .message,
            "request body must be a JSON object"
        );
    }

    #[test]
    fn bulk_bodies_as_array_or_ndjson() {
        let items = req(Some("application/json"), r#"[{"identifier":"a"}, 5]"#)
            .json_items(1000, 10)
            .unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!((items[0].line, items[1].line), (1, 2));
        assert_eq!(items[0].body.as_ref().unwrap()["identifier"], "a");
        assert_eq!(
            items[1].body.as_ref().unwrap_err().message(),
            "item must be a JSON object"
        );
        let nd = req(
            Some("application/x-ndjson"),
            "{\"identifier\":\"a\"}\r\n\n{oops\n[1]\n",
        )
        .json_items(1000, 10)
        .unwrap();
        assert_eq!(nd.iter().map(|i| i.line).collect::<Vec<_>>(), vec![1, 3, 4]);
        assert!(nd[0].body.is_ok());
        assert!(nd[1]
            .body
            .as_ref()
            .unwrap_err()
            .message()
            .starts_with("line is not valid JSON"));
        assert_eq!(nd[2].body.as_ref().unwrap_err().status(), 400);
        let err = |ct: &str, body: &str, max: usize| {
            req(Some(ct), body).json_items(1000, max).unwrap_err()
        };
        assert_eq!(err("application/json", "[{},{},{}]", 2).status, 413);
        assert_eq!(err("application/x-ndjson", "{}\n{}\n{}", 2).status, 413);
        assert_eq!(
            err("application/json", r#"{"identifier":"a"}"#, 2).status,
            400
        );
        assert_eq!(err("application/json", "", 2).status, 400);
        assert_eq!(err("text/plain", "[]", 2).status, 415);
        assert_eq!(
            req(Some("application/json"), &"x".repeat(1001))
                .json_items(1000, 2)
                .unwrap_err()
                .status,
            413
        );
    }

    #[test]
    fn deep_nesting_is_refused_without_parsing() {
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        let err = req(Some("application/json"), &deep)
            .json_object(1 << 20)
            .unwrap_err();
        assert_eq!(err.status, 400);
    }
}
