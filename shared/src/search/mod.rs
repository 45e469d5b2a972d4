//! The `search` filter of the list endpoints: the operator matrix (`operators.rs`), parsing
//! and validation (`parse.rs`), and evaluation against stored values (`eval.rs`).

pub mod eval;
pub mod operators;
pub mod parse;
