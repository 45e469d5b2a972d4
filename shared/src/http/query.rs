//! Query strings: the names a route takes checked before anything runs, then the values
//! read into the route's query type (`Deserialize` + `JsonSchema`, as bodies are), whose
//! value types check each value in the API's words and describe it in the document.

use crate::error::ApiError;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{value::MapDeserializer, DeserializeOwned};
use std::fmt;

/// Decoded query parameters; each name may appear at most once.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Refuses repeated and unknown parameters, naming them.
    pub fn parse(pairs: &[(String, String)], allowed: &[&str]) -> Result<Self, ApiError> {
        for (i, (name, _)) in pairs.iter().enumerate() {
            if !allowed.contains(&name.as_str()) {
                return Err(ApiError::bad_request(format!(
                    "unknown query parameter '{name}'"
                )));
            }
            if pairs[..i].iter().any(|(n, _)| n == name) {
                return Err(ApiError::bad_request(format!(
                    "query parameter '{name}' is given more than once"
                )));
            }
        }
        Ok(Self {
            pairs: pairs.to_vec(),
        })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The query read into `T`: each value by its type's [`QueryValue::parse`], an absent
    /// required one refused by name.
    pub fn typed<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        let pairs = self
            .pairs
            .iter()
            .map(|(n, v)| (n.as_str(), Text(v.as_str())));
        T::deserialize(MapDeserializer::<_, QueryError>::new(pairs))
            .map_err(|e| ApiError::bad_request(e.0))
    }
}

/// One value's text: a string, and present (an `Option` field given it is `Some`), which
/// serde's own string deserializer does not say.
struct Text<'a>(&'a str);

impl<'de, 'a> serde::Deserializer<'de> for Text<'a> {
    type Error = QueryError;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, QueryError> {
        v.visit_str(self.0)
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, QueryError> {
        v.visit_some(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

impl<'de, 'a> serde::de::IntoDeserializer<'de, QueryError> for Text<'a> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// A query type's failure, in the API's words (serde's would name Rust fields).
#[derive(Debug)]
struct QueryError(String);

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for QueryError {}

impl serde::de::Error for QueryError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        Self(format!("query parameter '{field}' is required"))
    }

    fn unknown_field(field: &str, _: &'static [&'static str]) -> Self {
        Self(format!("unknown query parameter '{field}'"))
    }

    fn duplicate_field(field: &'static str) -> Self {
        Self(format!("query parameter '{field}' is given more than once"))
    }
}

/// One query parameter's value: read from its text (the error names the parameter) and
/// described, with the parameter's meaning, by its schema. [`query_values!`] gives such a
/// type its `Deserialize` and `JsonSchema`.
pub trait QueryValue: Sized {
    fn parse(raw: &str) -> Result<Self, ApiError>;
    fn schema() -> Schema;
}

/// `Deserialize` and `JsonSchema` from [`QueryValue`], for each type named.
macro_rules! query_values {
    ($($t:ty),+ $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                <$t as $crate::http::query::QueryValue>::parse(&raw)
                    .map_err(|e| serde::de::Error::custom(e.message))
            }
        }

        impl schemars::JsonSchema for $t {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($t).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <$t as $crate::http::query::QueryValue>::schema()
            }
        }
    )+};
}
pub(crate) use query_values;

/// The query type of a route: the names it takes (checked before anything runs), its
/// values' check (the handler's one typed read; the property tests run it on any input)
/// and its schema (the document's parameters), all from `T`.
#[derive(Clone, Copy)]
pub struct QueryDoc {
    pub names: fn() -> &'static [&'static str],
    pub check: fn(&Query) -> Result<(), ApiError>,
    pub schema: fn(&mut SchemaGenerator) -> Schema,
}

impl fmt::Debug for QueryDoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries((self.names)()).finish()
    }
}

impl QueryDoc {
    pub const fn of<T: JsonSchema + DeserializeOwned + 'static>() -> Self {
        Self {
            names: names_of::<T>,
            check: |query| query.typed::<T>().map(drop),
            schema: schema_of::<T>,
        }
    }

    /// `pairs` checked: only the names `T` takes, each once. The values are read once, by
    /// the handler (`Query::typed`): no route that claims an `Idempotency-Key` takes a
    /// query, so reading them here too would only parse every `search` twice.
    pub fn read(&self, pairs: &[(String, String)]) -> Result<Query, ApiError> {
        Query::parse(pairs, (self.names)())
    }
}

/// A route without query parameters.
pub const NO_QUERY: QueryDoc = QueryDoc {
    names: || &[],
    check: |_| Ok(()),
    schema: |_| Schema::default(),
};

/// The generator of query schemas: inlined, an absent value not described as `null`.
pub fn generator() -> SchemaGenerator {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.into_generator()
}

fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.root_schema_for::<T>()
}

/// The parameters of `schema`, in the document's terms: (name, schema without `null`,
/// required).
pub fn parameters(schema: &Schema) -> Vec<(String, serde_json::Value, bool)> {
    let required = |name: &str| {
        schema
            .get("required")
            .and_then(|r| r.as_array())
            .is_some_and(|r| r.iter().any(|n| n == name))
    };
    let Some(props) = schema.get("properties").and_then(|p| p.as_object()) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, prop)| (name.clone(), non_null(prop.clone()), required(name)))
        .collect()
}

/// `prop` without the `null` an `Option` field adds (a query value is absent, never null).
fn non_null(mut prop: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    if let Some(Value::Array(types)) = prop.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            prop["type"] = only;
        }
    }
    if let Some(Value::Array(values)) = prop.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(any)) = prop.get("anyOf") {
        let rest: Vec<&Value> = any
            .iter()
            .filter(|s| s.get("type") != Some(&"null".into()))
            .collect();
        if let [one] = rest.as_slice() {
            let mut one = (*one).clone();
            if let (Some(o), Some(outer)) = (one.as_object_mut(), prop.as_object()) {
                for (k, v) in outer.iter().filter(|(k, _)| *k != "anyOf") {
                    o.insert(k.clone(), v.clone());
                }
            }
            return one;
        }
    }
    prop
}

/// The names `T` takes, worked out from its schema once per process.
fn names_of<T: JsonSchema + 'static>() -> &'static [&'static str] {
    use std::any::TypeId;
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock, PoisonError};
    type Names = &'static [&'static str];
    static NAMES: OnceLock<Mutex<HashMap<TypeId, Names>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    names.entry(TypeId::of::<T>()).or_insert_with(|| {
        let schema = generator().into_root_schema_for::<T>();
        let list: Vec<&'static str> = parameters(&schema)
            .into_iter()
            .map(|(name, _, _)| &*Box::leak(name.into_boxed_str()))
            .collect();
        // one small list per query type, for the life of the process
        Box::leak(list.into_boxed_slice())
    })
}

/// `limit`: a page's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(pub u32);

/// `page`: a 1-based page number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageNumber(pub u32);

/// `cursor`: where the previous page ended, sealed (opened by `http/cursor.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor(pub String);

impl Default for Limit {
    fn default() -> Self {
        Self(100)
    }
}

impl Default for PageNumber {
    fn default() -> Self {
        Self(1)
    }
}

/// An integer parameter within `min..=max`.
fn int(name: &str, raw: &str, min: u32, max: u32) -> Result<u32, ApiError> {
    raw.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "query parameter '{name}' must be an integer from {min} to {max}"
            ))
        })
}

impl QueryValue for Limit {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        int("limit", raw, 1, 200).map(Self)
    }

    fn schema() -> Schema {
        schemars::json_schema!({"type": "integer", "minimum": 1, "maximum": 200, "default": 100, "description": "Page size."})
    }
}

impl QueryValue for PageNumber {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        int("page", raw, 1, u32::MAX).map(Self)
    }

    fn schema() -> Schema {
        schemars::json_schema!({"type": "integer", "minimum": 1, "maximum": u32::MAX, "default": 1, "description": "1-based page."})
    }
}

impl QueryValue for Cursor {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        Ok(Self(raw.to_string()))
    }

    fn schema() -> Schema {
        schemars::json_schema!({"type": "string", "description": "Instead of `page`: the `pagination.nextCursor` of the previous page. Opaque; valid only for the same list and filters."})
    }
}

/// `updated_after`: a time, RFC 3339.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdatedAfter(pub crate::domain::time::Timestamp);

impl QueryValue for UpdatedAfter {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        crate::domain::time::Timestamp::parse(raw)
            .map(Self)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "query parameter 'updated_after': '{raw}' is not an RFC 3339 time"
                ))
            })
    }

    fn schema() -> Schema {
        schemars::json_schema!({"type": "string", "format": "date-time", "description": "Only entities whose hierarchy `updatedAt` is later."})
    }
}

query_values!(Limit, PageNumber, Cursor, UpdatedAfter);

/// The query of a paged list without filters, and the paging part of others'.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct PageParams {
    #[serde(default)]
    pub limit: Limit,
    #[serde(default)]
    pub page: PageNumber,
}

/// A comma-separated list (items trimmed, empty ones dropped): given empty, it is empty.
pub fn comma_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)], allowed: &[&str]) -> Result<Query, ApiError> {
        let owned: Vec<_> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        Query::parse(&owned, allowed)
    }

    #[test]
    fn unknown_and_repeated_parameters_are_refused() {
        assert_eq!(
            q(&[("x", "1")], &["limit"]).unwrap_err().message,
            "unknown query parameter 'x'"
        );
        assert_eq!(
            q(&[("limit", "1"), ("limit", "2")], &["limit"])
                .unwrap_err()
                .message,
            "query parameter 'limit' is given more than once"
        );
    }

    #[derive(Debug, serde::Deserialize, JsonSchema)]
    struct Paged {
        #[serde(default)]
        limit: Limit,
        page: Option<PageNumber>,
        /// Required here.
        cursor: Cursor,
    }

    #[test]
    fn values_are_read_into_the_type_and_refused_in_the_apis_words() {
        let typed = |pairs: &[(&str, &str)]| {
            q(pairs, &["limit", "page", "cursor"]).and_then(|q| q.typed::<Paged>())
        };
        assert_eq!(
            typed(&[("limit", "0"), ("cursor", "c")])
                .unwrap_err()
                .message,
            "query parameter 'limit' must be an integer from 1 to 200"
        );
        assert_eq!(
            typed(&[("page", "x")]).unwrap_err().message,
            "query parameter 'page' must be an integer from 1 to 4294967295"
        );
        assert_eq!(
            typed(&[("page", "2")]).unwrap_err().message,
            "query parameter 'cursor' is required"
        );
        let read = typed(&[("page", " 2"), ("cursor", "c")]).unwrap();
        assert_eq!((read.limit, read.page), (Limit(100), Some(PageNumber(2))));
        assert_eq!(read.cursor, Cursor("c".into()));
    }

    #[test]
    fn the_names_and_parameters_come_from_the_type() {
        assert_eq!(
            (QueryDoc::of::<Paged>().names)(),
            ["cursor", "limit", "page"]
        );
        let schema = generator().into_root_schema_for::<Paged>();
        let params = parameters(&schema);
        let page = params.iter().find(|p| p.0 == "page").unwrap();
        assert_eq!(
            page.1,
            serde_json::json!({"type": "integer", "minimum": 1, "maximum": u32::MAX, "default": 1, "description": "1-based page."})
        );
        assert!(!page.2);
        let cursor = params.iter().find(|p| p.0 == "cursor").unwrap();
        assert_eq!(
            (cursor.1["description"].as_str(), cursor.2),
            (Some("Required here."), true)
        );
    }

    #[test]
    fn lists_split_on_commas() {
        assert_eq!(comma_list("variants, skus"), vec!["variants", "skus"]);
        assert_eq!(comma_list(""), Vec::<String>::new());
    }
}
