//! Webhooks: subscriptions' topics and URL rules, the event catalog, signatures and the
//! delivery queue. The change feed and the delivery worker that run on them are in
//! `workers/`. See docs/webhooks.md.

pub mod changed_fields;
pub mod config;
pub(crate) mod event_types;
pub mod filters;
pub mod queue;
pub mod signature;
pub mod topics;
pub mod url_guard;

pub use config::WebhookConfig;
