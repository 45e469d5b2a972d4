//! The function behind API Gateway's `$default` route and the local router's catch-all: a
//! request that no function's route matches gets the answer a function gives for a path or
//! a method it does not serve, after the same authentication (401 without a valid key), so
//! that routing answers alike on AWS and locally (decisions.md, "Unknown routes"): 404
//! `no route for <METHOD> <path>`, or 405 with `Allow` when the path is served with other
//! methods. It matches against every function's routes (`served.rs`, generated from their
//! tables without the handlers, which the fallback's binary therefore does not link), so
//! `Allow` lists the methods of the whole API.

use crate::app::{handler, Api, App, Call, Endpoint};
use crate::error::ApiError;
use crate::http::ApiResponse;
use std::sync::OnceLock;

/// The function's name, in the template, the local router and the tests' gateway.
pub const FUNCTION: &str = "fallback";

/// The local router's (`cargo lambda watch`) catch-all entries: the root, and every path no
/// other entry matches (matchit gives static and parameter segments priority over `{*path}`).
pub const ROUTER_PATHS: &[&str] = &["/", "/{*path}"];

/// Every route of every function, each answering 404. API Gateway hands the fallback only
/// requests that no route of the deployed API matched, so a pattern that matches here all
/// the same (a stage segment before `/v1`) is a path this deployment does not serve; a
/// path matched with another method is the pipeline's 405.
pub fn api() -> &'static Api {
    static API: OnceLock<Api> = OnceLock::new();
    API.get_or_init(|| {
        let endpoints: Vec<Endpoint> = super::served::SERVED
            .iter()
            .map(|route| Endpoint::new(*route, handler!(unrouted)))
            .collect();
        Api {
            function: FUNCTION,
            endpoints: Box::leak(endpoints.into_boxed_slice()),
            parts: crate::context::Parts::NONE,
        }
    })
}

async fn unrouted(_app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    Err(ApiError::not_found(format!(
        "no route for {} {}",
        call.request.method, call.request.path
    )))
}

#[cfg(test)]
mod tests {
    use crate::http::routes;

    #[test]
    fn allow_lists_the_methods_of_every_function() {
        let api = super::api();
        let served: usize = super::super::FUNCTIONS
            .iter()
            .map(|a| a.endpoints.len())
            .sum();
        assert_eq!(api.endpoints.len(), served);
        let e = routes::find(api.endpoints, "POST", "/v1/products/p1").unwrap_err();
        assert_eq!(
            (e.status, e.headers),
            (405, vec![("allow", "GET, PATCH, DELETE".to_string())])
        );
        let e = routes::find(api.endpoints, "GET", "/v1/nothing").unwrap_err();
        assert_eq!(
            (e.status, e.message.as_str()),
            (404, "no route for GET /v1/nothing")
        );
    }
}
