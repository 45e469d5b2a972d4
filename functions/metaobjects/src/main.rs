//! Lambda for the `/v1/metaobject-definitions` and `/v1/metaobjects` routes: builds the app once, then serves requests.

use lambda_http::Error;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let api = &catalog::api::metaobjects::API;
    let app = catalog::App::from_env(api).await;
    app.run(api).await
}
