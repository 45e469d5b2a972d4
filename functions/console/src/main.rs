//! Lambda for the web console: its pages (`/console/`, files built into the binary) and its
//! sign-in routes (`/v1/console-sessions`): builds the app and the site once, then serves.

use catalog::api::console::Site;
use lambda_http::Error;

/// The console's files, as `(name under assets/, text)` (listed by build.rs).
const FILES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/assets.rs"));

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let api = &catalog::api::console::API;
    let app = catalog::App::from_env(api).await;
    let site: &'static Site = Box::leak(Box::new(Site::from_env(FILES)));
    app.run_with_site(api, site).await
}
