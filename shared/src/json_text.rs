//! JSON text as the API and imports read it, below HTTP: the nesting limit checked before
//! parsing, and one item of a bulk body or an import file (an NDJSON line to an object).
//! The bulk route and the import worker share it without the worker reaching HTTP types.

use crate::error::Failure;
use serde_json::Value;

/// JSON nested deeper than this is refused before it reaches any handler.
pub const MAX_JSON_DEPTH: usize = 32;

/// One item of a bulk body: its 1-based line, and the object or why it is not one.
#[derive(Debug, Clone)]
pub struct BulkItem {
    pub line: usize,
    pub body: Result<serde_json::Map<String, Value>, Failure>,
}

/// One NDJSON line as a JSON object, or why it is not one (the bulk route's NDJSON body and
/// an import's file parse lines alike).
pub fn ndjson_line(line: &str) -> Result<serde_json::Map<String, Value>, Failure> {
    if nesting_depth(line.as_bytes()) > MAX_JSON_DEPTH {
        return Err(Failure::invalid(format!(
            "line nests deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    serde_json::from_str::<Value>(line)
        .map_err(|e| Failure::invalid(format!("line is not valid JSON: {e}")))
        .and_then(object_item)
}

pub(crate) fn object_item(v: Value) -> Result<serde_json::Map<String, Value>, Failure> {
    match v {
        Value::Object(map) => Ok(map),
        _ => Err(Failure::invalid("item must be a JSON object")),
    }
}

/// The deepest bracket nesting in a JSON text (strings skipped), found without parsing.
pub(crate) fn nesting_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_outside_strings() {
        assert_eq!(nesting_depth(b"{\"a\":\"[[[[\"}"), 1);
        assert_eq!(nesting_depth(b"[[{\"a\\\"[\":[1]}]]"), 4);
    }

    #[test]
    fn an_ndjson_line_is_one_object() {
        assert_eq!(ndjson_line("{\"a\":1}").map(|m| m.len()), Ok(1));
        let e = ndjson_line("[1]").unwrap_err();
        assert_eq!(
            (e.status(), e.message()),
            (400, "item must be a JSON object")
        );
        let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
        let e = ndjson_line(&deep).unwrap_err();
        assert_eq!(e.message(), "line nests deeper than 32 levels");
        assert!(ndjson_line("{")
            .unwrap_err()
            .message()
            .starts_with("line is not valid JSON: "));
    }
}
