//! Lambda for the workspace settings (`/v1/families`, `/v1/channels`, `/v1/languages`,
//! `/v1/completeness-profiles`, `/v1/api-keys`, `/v1/usage`): builds the app once, then
//! serves requests.

use lambda_http::Error;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let api = &catalog::api::settings::API;
    let app = catalog::App::from_env(api).await;
    app.run(api).await
}
