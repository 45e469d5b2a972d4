//! What each organization uses (requests, refused calls, DynamoDB capacity, webhook
//! delivery attempts): counted in memory by every process as it serves, added now and then
//! to one item per organization and day (`GET /usage` reads them), and published per
//! organization as CloudWatch metrics in the embedded metric format.

mod emf;
mod meter;

pub use crate::domain::usage::Tally;
pub use meter::{today, Meter};
