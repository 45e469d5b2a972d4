//! Pure domain rules: no I/O, unit-tested here.

pub mod actor;
pub mod attributes;
pub mod changes;
pub mod credential_tags;
pub mod destinations;
pub mod entity_types;
pub mod identifier;
pub(crate) mod invalid;
pub mod limits;
pub(crate) mod named;
pub(crate) mod names;
pub(crate) mod rate;
pub mod selection;
pub mod time;
pub(crate) mod usage;
pub mod values;

pub use invalid::Invalid;
