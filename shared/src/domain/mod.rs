//! Pure domain rules: no I/O, unit-tested here.

pub mod attributes;
pub mod identifier;
pub mod invalid;
pub mod limits;
pub mod names;
pub mod rate;
pub mod selection;
pub mod time;
pub mod usage;
pub mod values;

pub use invalid::Invalid;
