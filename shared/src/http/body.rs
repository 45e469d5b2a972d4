//! Typed access to a JSON request body: parsed whole into a `Deserialize` type (unknown
//! fields refused), with errors that name the field's path and the problem.

use super::ApiRequest;
use crate::error::{ApiError, Failure};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A request body that is a JSON object.
#[derive(Debug, Clone, Default)]
pub struct JsonBody(pub Map<String, Value>);

impl JsonBody {
    pub fn from_request(req: &ApiRequest, max_bytes: usize) -> Result<Self, ApiError> {
        req.json_object(max_bytes).map(Self)
    }

    /// The body as a `T` (declared with `#[serde(deny_unknown_fields)]`), each error naming
    /// the field's path and what it must be.
    pub fn parse<T: DeserializeOwned>(self) -> Result<T, ApiError> {
        Ok(typed(self.0)?)
    }
}

/// A JSON object as a `T`, each error naming the field's path and what it must be: a
/// body's (`JsonBody::parse`) and a bulk item's parsing.
pub fn typed<T: DeserializeOwned>(object: Map<String, Value>) -> Result<T, Failure> {
    serde_path_to_error::deserialize(Value::Object(object))
        .map_err(|e| Failure::Invalid(describe(&e.path().to_string(), &e.inner().to_string())))
}

/// For an optional field that may be left out but not sent as `null`: `#[serde(default, deserialize_with = "present")]`.
pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// A JSON number that is a whole number from 0 up: `295` or `295.0` (JSON Schema's
/// `integer` is the mathematical value, so a document that says integer accepts both).
pub fn whole_number(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u32::MAX as f64)
            .map(|f| f as u64)
    })
}

/// serde's words for a type, as the API says them.
fn expected(serde: &str) -> &str {
    match serde {
        "a string" | "a borrowed string" => "a string",
        "a boolean" => "true or false",
        "a sequence" => "an array",
        "a map" | "struct" => "an object",
        "i64" | "u64" | "i32" | "u32" | "u16" | "usize" => "an integer",
        "f64" => "a number",
        other if other.starts_with("struct ") => "an object",
        other => other,
    }
}

/// One deserialization error of a body in the API's words. `path` is where it happened
/// (`.` at the top), `serde` the error's text. An error inside a nested object is prefixed
/// with the object's path and names the field within it (`variants[0]: field 'identifier'
/// is required`), as the errors of the checks after parsing do.
fn describe(path: &str, serde: &str) -> String {
    let path = if path.is_empty() { "." } else { path };
    let in_object = |field: &str, text: String| -> String {
        // `field` may be a path itself (`variants[0].identifier`): its object is the prefix
        match field.rsplit_once('.') {
            Some((object, leaf)) => format!("{object}: {}", text.replace(field, leaf)),
            None => text,
        }
    };
    let at = |field: &str| {
        if path == "." {
            field.to_string()
        } else {
            format!("{path}.{field}")
        }
    };
    let ticked =
        |s: &str| -> Vec<String> { s.split('`').skip(1).step_by(2).map(String::from).collect() };
    if let Some(rest) = serde.strip_prefix("unknown field ") {
        let names = ticked(rest);
        let (field, allowed) = names
            .split_first()
            .map_or(("", &[][..]), |(f, a)| (f.as_str(), a));
        // the path of an unknown field ends in the field itself
        let field = if path == "." { field } else { path };
        let text = format!("unknown field '{field}' (allowed: {})", allowed.join(", "));
        return in_object(field, text);
    }
    if let Some(rest) = serde.strip_prefix("missing field ") {
        let field = at(ticked(rest).first().map_or("", String::as_str));
        return in_object(&field, format!("field '{field}' is required"));
    }
    if let Some((_, wanted)) = serde.rsplit_once(", expected ") {
        if serde.starts_with("invalid type: ") {
            let text = format!("field '{path}' must be {}", expected(wanted));
            return in_object(path, text);
        }
    }
    if path == "." {
        serde.to_string()
    } else {
        format!("field '{path}': {serde}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn whole_numbers_may_be_written_with_a_fraction_of_zero() {
        use serde_json::json;
        assert_eq!(whole_number(&json!(295)), Some(295));
        assert_eq!(whole_number(&json!(295.0)), Some(295));
        assert_eq!(whole_number(&json!(295.5)), None);
        assert_eq!(whole_number(&json!(-1)), None);
        assert_eq!(whole_number(&json!("295")), None);
    }

    use super::*;
    use serde_json::json;

    fn body(v: Value) -> JsonBody {
        JsonBody(v.as_object().unwrap().clone())
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        name: String,
        #[serde(default, deserialize_with = "present")]
        enabled: Option<bool>,
        tags: Option<Vec<String>>,
        #[serde(default)]
        parts: Vec<Part>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Part {
        identifier: String,
    }

    /// A typed body's errors name the field's path and what it must be.
    #[test]
    fn a_typed_body_names_the_field_at_fault() {
        let err = |v: Value| body(v).parse::<Sample>().unwrap_err().message;
        assert_eq!(err(json!({"name": 5})), "field 'name' must be a string");
        assert_eq!(err(json!({})), "field 'name' is required");
        assert_eq!(
            err(json!({"name": "a", "extra": 1})),
            "unknown field 'extra' (allowed: name, enabled, tags, parts)"
        );
        assert_eq!(
            err(json!({"name": "a", "enabled": 1})),
            "field 'enabled' must be true or false"
        );
        assert_eq!(
            err(json!({"name": "a", "tags": {}})),
            "field 'tags' must be an array"
        );
        assert_eq!(
            err(json!({"name": "a", "tags": ["x", 2]})),
            "field 'tags[1]' must be a string"
        );
        assert_eq!(
            err(json!({"name": "a", "enabled": null})),
            "field 'enabled' must be true or false"
        );
        assert_eq!(
            err(json!({"name": "a", "parts": [{"identifier": "p"}, 7]})),
            "field 'parts[1]' must be an object"
        );
        assert_eq!(
            err(json!({"name": "a", "parts": [{}]})),
            "parts[0]: field 'identifier' is required"
        );
        assert_eq!(
            err(json!({"name": "a", "parts": [{"identifier": "p", "x": 1}]})),
            "parts[0]: unknown field 'x' (allowed: identifier)"
        );
        assert_eq!(
            err(json!({"name": "a", "parts": [{"identifier": 7}]})),
            "parts[0]: field 'identifier' must be a string"
        );
        assert_eq!(
            body(json!({"name": "a"})).parse::<Sample>().unwrap().name,
            "a"
        );
    }
}
