//! The `search` filter of the list endpoints: the operator matrix (`operators.rs`), parsing
//! and validation (`parse.rs`), evaluation against stored values (`eval.rs`), and which
//! entities a list returns across levels and with completeness (`select.rs`), and the list
//! engine port the handlers call (`engine.rs`).

pub(crate) mod engine;
pub(crate) mod eval;
pub(crate) mod operators;
pub mod parse;
pub(crate) mod select;
