//! Lambda behind the API's catch-all route (`$default`, and the local router's `/{*path}`):
//! builds the app once, then answers what no function serves with the JSON 404 or 405.

use lambda_http::Error;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let api = catalog::api::fallback::api();
    let app = catalog::App::from_env(api).await;
    app.run(api).await
}
