//! The catalog's use cases: typed, validated inputs turned into the writes of one attempt
//! (plans) and committed through the store, retried on a lost condition. Handlers and the
//! import worker call them with a [`Context`](crate::context::Context) and an organization;
//! nothing here knows the HTTP pipeline.

pub(crate) mod asset_input;
pub(crate) mod bulk;
pub(crate) mod bundles;
pub(crate) mod categories;
pub(crate) mod etags;
pub(crate) mod export;
pub(crate) mod links;
pub(crate) mod listing;
pub(crate) mod metaobjects;
pub(crate) mod product_write;
pub(crate) mod quotas;
pub(crate) mod references;
pub(crate) mod retry;
pub(crate) mod settings;
pub(crate) mod subscriptions;
pub(crate) mod tree_delete;
pub mod tree_patch;
pub(crate) mod write_plan;
