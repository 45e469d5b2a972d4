//! What each organization uses (requests, refused calls, DynamoDB capacity, webhook
//! delivery attempts): counted in memory by every process as it serves, added now and then
//! to one item per organization and day (`GET /usage` reads them), and published as
//! CloudWatch metrics in the embedded metric format: the deployment's totals, per
//! organization, or not at all (`CATALOG_ORG_METRICS`, `emf.rs`).

mod emf;
mod meter;

pub use crate::domain::usage::Tally;
pub use emf::Metrics;
pub use meter::{today, Meter};
