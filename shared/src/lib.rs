//! Catalog's shared library: every Lambda binary is a thin `main.rs` over this crate.
//!
//! Layout (layered; `docs/architecture.md` holds the layers and `scripts/check-layers.py`
//! checks them): `domain` holds pure rules, `store` is the DynamoDB single-table adapter,
//! `search` the filter and list engine, `http` and `auth` the request and key types,
//! `webhooks`, `imports` and `usage` the features' rules and adapters, `context` what every
//! function runs on, `usecases` the catalog's writes, `workers` the stream and queue
//! consumers, `app` the HTTP pipeline and `api` the route handlers each function serves.

pub mod admin;
pub mod admin_invoke;
pub mod api;
pub(crate) mod app;
pub mod auth;
pub(crate) mod config;
pub(crate) mod context;
pub mod domain;
pub mod error;
pub mod http;
pub mod imports;
pub(crate) mod json_text;
pub mod search;
pub mod store;
pub mod telemetry;
pub(crate) mod usage;
pub mod usecases;
pub mod webhooks;
pub mod workers;

pub use app::App;
pub use config::Config;
pub use context::{Context, Parts};
pub use error::ApiError;
