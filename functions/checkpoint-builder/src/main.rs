//! Lambda on a schedule: builds its context and clients once, then on every invocation builds
//! the list checkpoints that are due (`catalog::workers::checkpoints`); `{"org": "<id>"}`
//! builds one organization's only.

use catalog::workers::checkpoints::Builder;
use catalog::workers::deadline_from;
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let builder = Builder::from_env(catalog::Context::leaked(catalog::Parts::NONE).await).await;
    let builder: &'static Builder = Box::leak(Box::new(builder));
    run(service_fn(|event: LambdaEvent<Value>| async move {
        let deadline = deadline_from(event.context.deadline);
        // the schedule's event names no organization: every list
        let only = event.payload["org"].as_str();
        let run = builder.run(deadline, only).await?;
        Ok::<_, Error>(serde_json::to_value(run)?)
    }))
    .await
}
