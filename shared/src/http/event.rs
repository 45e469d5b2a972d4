//! The Lambda event of an HTTP request, made decodable before lambda_http reads it. A header
//! value holding a byte that is not UTF-8 reaches the function as a `\xNN` escape (API
//! Gateway's and ALB's events are then not JSON), and one holding a control character is
//! JSON that no `http` header value can hold: either way lambda_http cannot build the
//! request, the runtime reports an invocation error, and API Gateway answers its own 500.
//! Repaired, such a value carries U+FFFD where the unreadable byte was, so the pipeline
//! sees a header it cannot read and answers our 400 naming it.

use lambda_runtime::{LambdaInvocation, Service};
use serde_json::Value;
use std::task::{Context, Poll};

/// The event `raw`, repaired when lambda_http could not decode its headers; `None` when it
/// is fine as it is (the common case: one scan, no parse).
pub fn readable(raw: &[u8]) -> Option<Vec<u8>> {
    if !suspicious(raw) {
        return None;
    }
    let (mut event, mut repaired): (Value, bool) = match serde_json::from_slice(raw) {
        Ok(v) => (v, false),
        Err(_) => (serde_json::from_slice(&unescaped(raw)).ok()?, true),
    };
    for field in ["headers", "multiValueHeaders", "cookies"] {
        if let Some(v) = event.get_mut(field) {
            repaired |= sanitize(v, 0);
        }
    }
    if !repaired {
        return None;
    }
    tracing::warn!("an event with unreadable header bytes was repaired");
    serde_json::to_vec(&event).ok()
}

/// Whether `raw` may hold what lambda_http cannot decode: bytes that are not UTF-8, a `\x`
/// escape, DEL or another control character, raw or escaped (`\u`, which also matches
/// harmless escapes).
fn suspicious(raw: &[u8]) -> bool {
    let control = |b: &u8| *b == 0x7f || (*b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'));
    std::str::from_utf8(raw).is_err()
        || raw.iter().any(control)
        || raw.windows(2).any(|w| w == b"\\x" || w == b"\\u")
}

/// `raw` with every `\xNN` escape and raw control byte inside a string written as `\ufffd`,
/// and bytes that are not UTF-8 as U+FFFD: JSON again.
fn unescaped(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let (mut i, mut in_string) = (0, false);
    while i < raw.len() {
        let b = raw[i];
        if in_string && b == b'\\' && raw.get(i + 1) == Some(&b'x') {
            out.extend_from_slice(b"\\ufffd");
            i += 2;
            let digits = raw[i..]
                .iter()
                .take(2)
                .take_while(|d| d.is_ascii_hexdigit())
                .count();
            i += digits;
            continue;
        }
        if in_string && b == b'\\' {
            out.extend_from_slice(&raw[i..(i + 2).min(raw.len())]);
            i += 2;
            continue;
        }
        if in_string && b < 0x20 {
            out.extend_from_slice(b"\\ufffd");
        } else {
            out.push(b);
        }
        if b == b'"' {
            in_string = !in_string;
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned().into_bytes()
}

/// Replaces what no header value may hold (control characters but tab, DEL) with U+FFFD in
/// the strings of a headers map (or list, or map of lists), and drops entries whose name is
/// not a header name; whether anything changed.
fn sanitize(value: &mut Value, depth: usize) -> bool {
    match value {
        Value::String(s) if s.chars().any(unfit) => {
            *s = s
                .chars()
                .map(|c| if unfit(c) { '\u{fffd}' } else { c })
                .collect();
            true
        }
        Value::Array(items) if depth < 2 => all_sanitized(items.iter_mut(), depth + 1),
        Value::Object(map) if depth == 0 => {
            let before = map.len();
            map.retain(|name, _| {
                lambda_http::http::HeaderName::from_bytes(name.as_bytes()).is_ok()
            });
            let dropped = map.len() != before;
            all_sanitized(map.values_mut(), depth + 1) || dropped
        }
        _ => false,
    }
}

/// [`sanitize`] on every value (none skipped); whether any changed.
fn all_sanitized<'a>(values: impl Iterator<Item = &'a mut Value>, depth: usize) -> bool {
    let mut changed = false;
    for v in values {
        changed |= sanitize(v, depth);
    }
    changed
}

fn unfit(c: char) -> bool {
    (c < ' ' && c != '\t') || c == '\u{7f}'
}

/// A lambda_runtime layer that hands the inner service each event made [`readable`].
#[derive(Clone)]
pub struct Readable<S>(pub S);

impl<S: Service<LambdaInvocation>> Service<LambdaInvocation> for Readable<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, mut invocation: LambdaInvocation) -> Self::Future {
        if let Some(event) = readable(&invocation.body) {
            invocation.body = event.into();
        }
        self.0.call(invocation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers_of(raw: &[u8]) -> Value {
        let fixed = readable(raw).expect("repaired");
        serde_json::from_slice::<Value>(&fixed).unwrap()["headers"].clone()
    }

    #[test]
    fn ordinary_events_are_left_alone() {
        let event =
            json!({"headers": {"if-match": "\"a\"", "x": "é"}, "body": "{\"a\":\"\\u00e9\"}"});
        assert_eq!(readable(event.to_string().as_bytes()), None);
    }

    #[test]
    fn bytes_that_are_not_utf8_become_replacement_characters() {
        let raw = br#"{"headers":{"idempotency-key":"k\xEEt","a":"\\x41"},"body":"x"}"#;
        assert_eq!(
            headers_of(raw),
            json!({"idempotency-key": "k\u{fffd}t", "a": "\\x41"})
        );
        let mut raw = br#"{"headers":{"k":"a"#.to_vec();
        raw.extend_from_slice(&[0xee, b'"', b'}', b'}']);
        assert_eq!(headers_of(&raw), json!({"k": "a\u{fffd}"}));
    }

    #[test]
    fn control_characters_and_bad_names_are_made_harmless() {
        let del = json!({"headers": {"if-match": "\"a\u{7f}\""}}).to_string();
        assert!(del.as_bytes().contains(&0x7f), "JSON leaves DEL unescaped");
        assert_eq!(
            headers_of(del.as_bytes()),
            json!({"if-match": "\"a\u{fffd}\""})
        );
        let event = json!({"headers": {"if-match": "\"a\u{1}\"", "bad name": "x", "ok": "a\tb"},
                           "cookies": ["c=\u{7f}"]});
        let fixed: Value =
            serde_json::from_slice(&readable(event.to_string().as_bytes()).unwrap()).unwrap();
        assert_eq!(
            fixed["headers"],
            json!({"if-match": "\"a\u{fffd}\"", "ok": "a\tb"})
        );
        assert_eq!(fixed["cookies"], json!(["c=\u{fffd}"]));
    }
}
