//! The list engine and the `search` filter of the list endpoints: the operator matrix
//! (`operators.rs`), parsing and validation (`parse.rs`), evaluation against stored values
//! (`eval.rs`), which entities a list returns across levels and with completeness
//! (`select.rs`), and the engine port the handlers call (`engine.rs`) with its embedded
//! adapter's data: the warm snapshots of the `byChange` index (`snapshot/`), their compact
//! entries (`entities.rs`, `packed.rs`) and the filtered lists kept over them
//! (`selections.rs`); and the flat lists' warm ordered indexes (`flat/`), served through the
//! same port.

pub mod engine;
pub(crate) mod entities;
pub(crate) mod eval;
pub mod flat;
pub(crate) mod operators;
pub(crate) mod packed;
pub mod parse;
pub(crate) mod select;
pub(crate) mod selections;
pub mod snapshot;
