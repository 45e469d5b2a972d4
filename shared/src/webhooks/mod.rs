//! Webhooks: subscriptions' topics and URL rules, signatures, the change feed that turns
//! table stream records into coalesced pending deliveries, and the delivery worker that
//! signs, sends and retries them through the queue. See docs/webhooks.md.

pub mod config;
pub mod deliver;
pub mod event_types;
pub mod feed;
pub mod queue;
pub mod signature;
pub mod topics;
pub mod url_guard;

pub use config::WebhookConfig;
