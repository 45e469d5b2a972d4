//! Lambda behind the API's catch-all route (`$default`, and the local router's `/{*path}`):
//! builds the app once, then answers what no function serves with the JSON 404 or 405.

use lambda_http::Error;

#[tokio::main]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let app = catalog::App::from_env().await;
    let api = catalog::api::fallback::api();
    app.run(api).await
}
