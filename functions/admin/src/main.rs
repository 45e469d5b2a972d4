//! Lambda for operators, invoked directly (`aws lambda invoke`, never through API Gateway):
//! creates organizations and keys, lists, revokes, and turns API access on and off. See
//! `catalog::admin_invoke` for the events it takes.

use catalog::store::Store;
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let config = catalog::Config::from_env();
    let store: &'static Store = Box::leak(Box::new(config.store(Store::client_from_env().await)));
    run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<_, Error>(catalog::admin_invoke::handle(store, event.payload).await)
    }))
    .await
}
