//! Lambda on the import queue: builds its context and clients once, then runs the imports each
//! batch names from their checkpoints (a run that fails is reported for retry).

use aws_lambda_events::event::sqs::SqsEvent;
use catalog::workers::deadline_from;
use catalog::workers::import::Importer;
use lambda_runtime::{run, service_fn, Error, LambdaEvent};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    catalog::telemetry::init();
    let importer: &'static Importer = Box::leak(Box::new(
        Importer::from_env(catalog::Context::leaked(catalog::Parts::LISTS).await).await,
    ));
    run(service_fn(|event: LambdaEvent<SqsEvent>| async move {
        let deadline = deadline_from(event.context.deadline);
        Ok::<_, Error>(importer.handle(event.payload, deadline).await)
    }))
    .await
}
