//! Catalog's shared library: every Lambda binary is a thin `main.rs` over this crate.
//!
//! Layout (hexagonal): `domain` holds pure rules (identifiers, timestamps, values),
//! `store` is the DynamoDB single-table adapter, `auth` resolves API keys, `http` turns
//! API Gateway events into requests and results into JSON responses, and `api` holds the
//! route handlers each function serves.

pub mod admin;
pub mod admin_invoke;
pub mod api;
pub mod app;
pub mod auth;
pub mod config;
pub mod domain;
pub mod error;
pub mod http;
pub mod imports;
pub mod search;
pub mod store;
pub mod telemetry;
pub mod usage;
pub mod webhooks;

pub use app::App;
pub use config::Config;
pub use error::ApiError;
