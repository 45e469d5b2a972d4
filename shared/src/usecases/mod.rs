//! The catalog's use cases: typed, validated inputs turned into the writes of one attempt
//! (plans) and committed through the store, retried on a lost condition. Handlers and the
//! import worker call them with a [`Context`](crate::context::Context) and an organization;
//! nothing here knows the HTTP pipeline.

pub mod asset_input;
pub mod bulk;
pub mod etags;
pub mod links;
pub mod product_write;
pub mod references;
pub mod retry;
pub mod tree_patch;
