//! JSON responses and the envelopes of the spec: `{"result": ...}` for one object,
//! `{"result": [...], "pagination": {...}}` for lists, `{"error": "..."}` for errors.

use crate::error::ApiError;
use crate::http::query::PageParams;
use lambda_http::{Body, Response};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Value,
    /// The body with every credential it shows `null` (see [`ApiResponse::shown`]), when it
    /// shows any: the only form of it that may be kept.
    kept: Option<Value>,
}

impl ApiResponse {
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body,
            kept: None,
        }
    }

    /// `{"result": value}`.
    pub fn single(status: u16, result: Value) -> Self {
        Self::json(status, json!({ "result": result }))
    }

    /// `{"result": answer}` for an answer type that may carry a
    /// [`Credential`](super::credential::Credential): shown in this answer, `null` in
    /// [`ApiResponse::keepable_body`].
    pub fn shown(status: u16, answer: &impl Serialize) -> Self {
        let (result, kept) = super::credential::shown(answer);
        Self {
            kept: kept.map(|k| json!({ "result": k })),
            ..Self::single(status, result)
        }
    }

    /// The body as it may be kept at rest: with no credential.
    pub fn keepable_body(&self) -> &Value {
        self.kept.as_ref().unwrap_or(&self.body)
    }

    /// The response with one more header.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The response with `ETag: <tag>` (a single entity's read or write).
    pub fn with_etag(mut self, tag: String) -> Self {
        self.headers.push(("etag", tag));
        self
    }

    pub fn error(err: &ApiError) -> Self {
        Self {
            status: err.status,
            headers: err.headers.clone(),
            body: json!({ "error": err.message }),
            kept: None,
        }
    }

    pub fn into_lambda(self, extra: &[(&'static str, String)]) -> Response<Body> {
        // `nosniff`: a browser never reads an answer as anything but the JSON it says it is
        let mut builder = Response::builder()
            .status(self.status)
            .header("content-type", "application/json")
            .header("x-content-type-options", "nosniff");
        for (name, value) in self.headers.iter().chain(extra) {
            builder = builder.header(*name, value.as_str());
        }
        builder
            .body(Body::Text(self.body.to_string()))
            .expect("status and headers are valid")
    }
}

/// `limit` and `page` of a list request, checked (1..=200, default 100; page >= 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    pub limit: u32,
    pub page: u32,
}

impl From<PageParams> for Paging {
    fn from(p: PageParams) -> Self {
        Self {
            limit: p.limit.0,
            page: p.page.0,
        }
    }
}

impl Paging {
    /// The `limit` and `page` of a route whose query type is [`PageParams`].
    pub fn from_query(query: &crate::http::Query) -> Result<Self, ApiError> {
        Ok(query.typed::<PageParams>()?.into())
    }

    /// The positions of this page among `total` results (empty past the last page).
    pub fn range(&self, total: usize) -> std::ops::Range<usize> {
        let start = (self.page as usize - 1)
            .saturating_mul(self.limit as usize)
            .min(total);
        start..(start + self.limit as usize).min(total)
    }

    /// This page of `all`, rendered, in the list envelope with the true totals.
    pub fn envelope<T>(&self, all: &[T], render: impl Fn(&T) -> Value) -> ApiResponse {
        let result: Vec<Value> = all[self.range(all.len())].iter().map(render).collect();
        self.page_response(result, all.len())
    }

    /// The list envelope of an already cut page.
    pub fn page_response(&self, result: Vec<Value>, total: usize) -> ApiResponse {
        ApiResponse::json(
            200,
            json!({"result": result, "pagination": pagination(self.limit, self.page, total as u64)}),
        )
    }
}

/// The list envelope's `pagination` object.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    #[schemars(range(min = 1, max = 200))]
    pub limit: u32,
    /// null on a page reached by cursor
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    pub total_pages: u64,
    pub total_results: u64,
    /// Lists of products, variants, SKUs, assets, deletions and exports: the cursor of the next page; null on the last
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub next_cursor: Option<Option<String>>,
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[super::doc::RequestSchema] = &[super::schema::answer::<Pagination>];

/// The `pagination` of a page-numbered list: `totalPages = ceil(total / limit)`.
pub fn pagination(limit: u32, page: u32, total: u64) -> Pagination {
    Pagination {
        limit,
        page: Some(page),
        total_pages: total.div_ceil(u64::from(limit)),
        total_results: total,
        next_cursor: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_ranges_stay_inside_the_results() {
        let p = |limit, page| Paging { limit, page };
        assert_eq!(p(2, 1).range(5), 0..2);
        assert_eq!(p(2, 3).range(5), 4..5);
        assert_eq!(p(2, 4).range(5), 5..5);
        assert_eq!(p(200, u32::MAX).range(3), 3..3);
    }

    #[test]
    fn pagination_totals() {
        assert_eq!(pagination(100, 1, 0).total_pages, 0);
        assert_eq!(pagination(100, 3, 201).total_pages, 3);
        assert_eq!(pagination(100, 1, 200).total_pages, 2);
        assert_eq!(
            serde_json::to_value(pagination(100, 3, 201)).unwrap(),
            json!({"limit": 100, "page": 3, "totalPages": 3, "totalResults": 201})
        );
    }

    #[test]
    fn errors_become_error_envelopes() {
        let r = ApiResponse::error(&ApiError::unauthorized());
        assert_eq!(
            r.body,
            json!({"error": "Unauthorized - missing or invalid authentication"})
        );
        let l = r.into_lambda(&[]);
        assert_eq!(l.status(), 401);
        assert_eq!(l.headers()["www-authenticate"], "Bearer");
        assert_eq!(l.headers()["content-type"], "application/json");
        assert_eq!(l.headers()["x-content-type-options"], "nosniff");
    }
}
