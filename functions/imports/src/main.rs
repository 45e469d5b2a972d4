//! Lambda for the `/v1/imports` routes: builds the app once, then serves requests.

use lambda_http::{run, service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let app = catalog::App::from_env().await;
    run(service_fn(|req| {
        app.serve(&catalog::api::imports::API, req)
    }))
    .await
}
