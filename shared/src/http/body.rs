//! Typed access to a JSON request body's fields, with errors that name the field.

use super::ApiRequest;
use crate::error::ApiError;
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
}
