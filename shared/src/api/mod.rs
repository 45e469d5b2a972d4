//! Route handlers, one module per function, plus the rendering they share.

pub mod include;
pub mod products;
pub mod render;

use crate::app::Api;

/// Every function and its routes: feeds the local router and the route-coverage tests.
pub const FUNCTIONS: &[&Api] = &[&products::API];
