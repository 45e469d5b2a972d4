//! Lambda on the table's stream: builds its context once, then turns each batch of records into
//! coalesced webhook deliveries (partial batch failures reported).

use aws_lambda_events::event::dynamodb::Event;
use catalog::workers::feed::ChangeFeed;
use lambda_runtime::{run, service_fn, Error, LambdaEvent};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let feed: &'static ChangeFeed = Box::leak(Box::new(ChangeFeed {
        cx: catalog::Context::leaked(catalog::Parts::NONE).await,
    }));
    run(service_fn(|event: LambdaEvent<Event>| async move {
        Ok::<_, Error>(feed.handle(event.payload).await)
    }))
    .await
}
