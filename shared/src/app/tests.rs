//! Unit tests of the parent module.

use super::*;
use crate::http::doc::NO_QUERY;
use crate::http::{Body, Doc};

async fn boom(_app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    panic!("a bug in the handler of {}", call.route.route.path);
}

const DOC: Doc = Doc::new("", NO_QUERY, None, 200, Body::Document);
const ENDPOINTS: &[Endpoint] = &[Endpoint::new(
    Route::public("GET", "/boom", DOC),
    handler!(boom),
)];
const API: Api = Api {
    function: "test",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::NONE,
};

fn app() -> &'static App {
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .build();
    let store = Store::new(aws_sdk_dynamodb::Client::from_conf(conf), "t");
    Box::leak(Box::new(App::new(Config::default(), store)))
}

fn get(path: &str) -> ApiRequest {
    ApiRequest {
        method: "GET".into(),
        path: path.into(),
        ..Default::default()
    }
}

/// A handler that panics answers the generic 500, and the process goes on serving.
#[tokio::test]
async fn a_panic_becomes_the_generic_500() {
    let app = app();
    for _ in 0..2 {
        let r = app.handle(&API, get("/v1/boom")).await;
        assert_eq!(
            (r.status, r.body.clone()),
            (500, serde_json::json!({"error": "Internal server error"}))
        );
    }
    let r = app.handle(&API, get("/v1/nothing")).await;
    assert_eq!(r.status, 401, "an unknown path needs a key first");
}
