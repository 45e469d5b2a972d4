//! Route matching. Each function declares its routes once (an entry per route with its
//! scope, OpenAPI description and handler, see `app::Endpoint`); the same tables feed dispatch,
//! the OpenAPI document, the local router, the tests' router and the route-coverage checks.

use super::Doc;
use crate::auth::Scope;
use crate::domain::identifier;
use crate::error::ApiError;
use crate::http::doc::NO_QUERY;
use percent_encoding::percent_decode_str;

/// One route a function serves.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: &'static str,
    /// Pattern under `/v1`, with `{name}` segments: `/products/{identifier}`.
    pub path: &'static str,
    /// The scope a key needs; `None` for the one public route (the OpenAPI document),
    /// served without authentication.
    pub scope: Option<Scope>,
    /// Its OpenAPI description.
    pub doc: Doc,
}

impl Route {
    pub const fn new(method: &'static str, path: &'static str, scope: Scope, doc: Doc) -> Self {
        Self {
            method,
            path,
            scope: Some(scope),
            doc,
        }
    }

    /// A route that another function serves, as the fallback matches it (`api/served.rs`):
    /// method, path and scope, with no description of its own.
    pub const fn served(method: &'static str, path: &'static str, scope: Option<Scope>) -> Self {
        Self {
            method,
            path,
            scope,
            doc: Doc::new("", NO_QUERY, None, 404, super::Body::Document),
        }
    }

    pub const fn public(method: &'static str, path: &'static str, doc: Doc) -> Self {
        Self {
            method,
            path,
            scope: None,
            doc,
        }
    }
}

impl AsRef<Route> for Route {
    fn as_ref(&self) -> &Route {
        self
    }
}

/// A matched route with its decoded path parameters, in pattern order.
#[derive(Debug, Clone)]
pub struct RouteMatch {
    pub route: Route,
    /// The matched entry's position in the table searched.
    pub index: usize,
    pub params: Vec<String>,
}

impl RouteMatch {
    /// The parameter at `index`, checked as the identifier of a `what`.
    pub fn identifier(&self, index: usize, what: &str) -> Result<&str, ApiError> {
        let value = self.params[index].as_str();
        identifier::validate(what, value)?;
        Ok(value)
    }
}

/// The path's segments after `/v1` (a leading stage segment is skipped), still encoded.
fn api_segments(path: &str) -> Option<Vec<&str>> {
    let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    let start = segments.iter().position(|s| *s == "v1")?;
    (start <= 1).then(|| segments[start + 1..].to_vec())
}

fn matches(pattern: &str, segments: &[&str]) -> Option<Vec<String>> {
    let parts: Vec<&str> = pattern.trim_start_matches('/').split('/').collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut params = Vec::new();
    for (part, seg) in parts.iter().zip(segments) {
        if part.starts_with('{') {
            params.push(percent_decode_str(seg).decode_utf8().ok()?.into_owned());
        } else if part != seg {
            return None;
        }
    }
    Some(params)
}

/// Finds the route for `method` and `path`: 404 when no pattern matches the path, 405 with
/// `Allow` when patterns match but none for this method.
pub fn find<T: AsRef<Route>>(
    routes: &[T],
    method: &str,
    path: &str,
) -> Result<RouteMatch, ApiError> {
    let not_found = || ApiError::not_found(format!("no route for {method} {path}"));
    let segments = api_segments(path).ok_or_else(not_found)?;
    let mut allowed = Vec::new();
    for (index, route) in routes.iter().map(AsRef::as_ref).enumerate() {
        if let Some(params) = matches(route.path, &segments) {
            if route.method.eq_ignore_ascii_case(method) {
                return Ok(RouteMatch {
                    route: *route,
                    index,
                    params,
                });
            }
            if !allowed.contains(&route.method) {
                allowed.push(route.method);
            }
        }
    }
    if allowed.is_empty() {
        Err(not_found())
    } else {
        Err(ApiError::method_not_allowed(method, &allowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: Doc = Doc::new("", NO_QUERY, None, 200, super::super::Body::Document);
    const ROUTES: &[Route] = &[
        Route::new("GET", "/products/{identifier}", Scope::CatalogRead, DOC),
        Route::new("PATCH", "/products/{identifier}", Scope::CatalogWrite, DOC),
        Route::new("GET", "/products", Scope::CatalogRead, DOC),
    ];

    #[test]
    fn decodes_path_parameters() {
        let m = find(ROUTES, "GET", "/v1/products/a%20b%2Fc").unwrap();
        assert_eq!(m.params, vec!["a b/c"]);
        assert_eq!(m.identifier(0, "product").unwrap_err().status, 400);
        let staged = find(ROUTES, "GET", "/prod/v1/products").unwrap();
        assert_eq!(staged.route.path, "/products");
    }

    #[test]
    fn unknown_paths_are_404_and_wrong_methods_405() {
        assert_eq!(find(ROUTES, "GET", "/v1/nothing").unwrap_err().status, 404);
        assert_eq!(find(ROUTES, "GET", "/v2/products").unwrap_err().status, 404);
        assert_eq!(
            find(ROUTES, "GET", "/v1/products/p1/").unwrap_err().status,
            404
        );
        let e = find(ROUTES, "DELETE", "/v1/products/p1").unwrap_err();
        assert_eq!(e.status, 405);
        assert_eq!(e.headers, vec![("allow", "GET, PATCH".to_string())]);
    }
}
