//! Lambda for the `/v1/webhooks` routes: builds the app once, then serves requests.

use lambda_http::Error;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let api = &catalog::api::webhooks::API;
    let app = catalog::App::from_env(api).await;
    app.run(api).await
}
