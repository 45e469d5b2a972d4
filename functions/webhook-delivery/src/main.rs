//! Lambda on the delivery queue: builds its context and HTTP client once, then delivers each
//! batch (messages to retry are reported as batch item failures).

use aws_lambda_events::event::sqs::SqsEvent;
use catalog::workers::deliver::Deliverer;
use lambda_runtime::{run, service_fn, Error, LambdaEvent};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let deliverer: &'static Deliverer = Box::leak(Box::new(Deliverer::new(
        catalog::Context::leaked(catalog::Parts::NONE).await,
    )));
    run(service_fn(|event: LambdaEvent<SqsEvent>| async move {
        Ok::<_, Error>(deliverer.handle(event.payload).await)
    }))
    .await
}
