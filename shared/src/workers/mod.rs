//! The functions that serve no HTTP: the change feed on the table's stream, the webhook
//! delivery worker and the import worker on their queues. They run on a
//! [`Context`](crate::context::Context), never on the HTTP app or its handlers.

pub mod deliver;
pub(crate) mod export;
pub mod feed;
pub mod import;
