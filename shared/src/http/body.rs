//! Typed access to a JSON request body: parsed whole into a `Deserialize` type (unknown
//! fields refused), or field by field; either way errors name the field and the problem.

use super::ApiRequest;
use crate::error::ApiError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A request body that is a JSON object.
#[derive(Debug, Clone, Default)]
pub struct JsonBody(pub Map<String, Value>);

impl JsonBody {
    pub fn from_request(req: &ApiRequest, max_bytes: usize) -> Result<Self, ApiError> {
        req.json_object(max_bytes).map(Self)
    }

    /// Refuses any field not in `allowed`.
    pub fn only(&self, allowed: &[&str]) -> Result<(), ApiError> {
        match self.0.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(ApiError::bad_request(format!(
                "unknown field '{k}' (allowed: {})",
                allowed.join(", ")
            ))),
            None => Ok(()),
        }
    }

    /// The body as a `T` (declared with `#[serde(deny_unknown_fields)]`), each error in the
    /// words the field-by-field accessors use: the field's path and what it must be.
    pub fn parse<T: DeserializeOwned>(self) -> Result<T, ApiError> {
        serde_path_to_error::deserialize(Value::Object(self.0)).map_err(|e| {
            ApiError::bad_request(describe(&e.path().to_string(), &e.inner().to_string()))
        })
    }

    pub fn has(&self, field: &str) -> bool {
        self.0.contains_key(field)
    }

    fn typed<'a, T>(
        &'a self,
        field: &str,
        what: &str,
        pick: impl Fn(&'a Value) -> Option<T>,
    ) -> Result<Option<T>, ApiError> {
        match self.0.get(field) {
            None => Ok(None),
            Some(v) => pick(v)
                .map(Some)
                .ok_or_else(|| ApiError::bad_request(format!("field '{field}' must be {what}"))),
        }
    }

    pub fn opt_str(&self, field: &str) -> Result<Option<&str>, ApiError> {
        self.typed(field, "a string", Value::as_str)
    }

    pub fn opt_object(&self, field: &str) -> Result<Option<&Map<String, Value>>, ApiError> {
        self.typed(field, "an object", Value::as_object)
    }

    pub fn opt_array(&self, field: &str) -> Result<Option<&Vec<Value>>, ApiError> {
        self.typed(field, "an array", Value::as_array)
    }

    pub fn opt_bool(&self, field: &str) -> Result<Option<bool>, ApiError> {
        self.typed(field, "true or false", Value::as_bool)
    }

    pub fn req_str(&self, field: &str) -> Result<&str, ApiError> {
        self.opt_str(field)?
            .ok_or_else(|| ApiError::bad_request(format!("field '{field}' is required")))
    }
}

/// For an optional field that may be left out but not sent as `null` (as the
/// field-by-field accessors read it): `#[serde(default, deserialize_with = "present")]`.
pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
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
        other => other,
    }
}

/// One deserialization error of a body in the API's words. `path` is where it happened
/// (`.` at the top), `serde` the error's text.
fn describe(path: &str, serde: &str) -> String {
    let at = |field: &str| {
        if path == "." || path.is_empty() {
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
        return format!("unknown field '{field}' (allowed: {})", allowed.join(", "));
    }
    if let Some(rest) = serde.strip_prefix("missing field ") {
        return format!(
            "field '{}' is required",
            at(ticked(rest).first().map_or("", String::as_str))
        );
    }
    if let Some((_, wanted)) = serde.rsplit_once(", expected ") {
        if serde.starts_with("invalid type: ") {
            return format!("field '{path}' must be {}", expected(wanted));
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
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> JsonBody {
        JsonBody(v.as_object().unwrap().clone())
    }

    #[test]
    fn names_the_field_at_fault() {
        let b = body(json!({"name": 5, "extra": 1}));
        assert_eq!(
            b.opt_str("name").unwrap_err().message,
            "field 'name' must be a string"
        );
        assert_eq!(
            b.only(&["name"]).unwrap_err().message,
            "unknown field 'extra' (allowed: name)"
        );
        assert_eq!(
            b.req_str("url").unwrap_err().message,
            "field 'url' is required"
        );
        assert_eq!(b.opt_object("values").unwrap(), None);
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        name: String,
        #[serde(default, deserialize_with = "present")]
        enabled: Option<bool>,
        tags: Option<Vec<String>>,
    }

    /// A typed body's errors read like the accessors' above.
    #[test]
    fn a_typed_body_names_the_field_at_fault() {
        let err = |v: Value| body(v).parse::<Sample>().unwrap_err().message;
        assert_eq!(err(json!({"name": 5})), "field 'name' must be a string");
        assert_eq!(err(json!({})), "field 'name' is required");
        assert_eq!(
            err(json!({"name": "a", "extra": 1})),
            "unknown field 'extra' (allowed: name, enabled, tags)"
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
            body(json!({"name": "a"})).parse::<Sample>().unwrap().name,
            "a"
        );
    }
}
