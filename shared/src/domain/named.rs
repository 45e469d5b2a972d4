//! `named_enum!`: an enum of wire names declared from one list, so its variants, their names
//! (serde and `as_str`), `ALL`, `NAMES` and `parse` cannot disagree: a variant added to the
//! list is accepted and listed everywhere the type is read from, and the compiler asks for
//! its rules wherever a `match` over the type decides.

/// Declares `pub enum $name` from `Variant => "name"` pairs, with `ALL` (declaration
/// order), `NAMES` (the same order), `as_str`, `parse` and `names()` (`a, b, c`, for error
/// messages). Extra derives and docs go before `pub enum`.
macro_rules! named_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize,
        )]
        pub enum $name {
            $(#[serde(rename = $wire)] $variant),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$(Self::$variant),+];
            /// Every variant's name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($wire),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire),+
                }
            }

            /// The variant `as_str` names.
            pub fn parse(s: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s)
            }

            /// The names, comma-separated in declaration order: for error messages.
            pub fn names() -> String {
                Self::NAMES.join(", ")
            }
        }
    };
}
pub(crate) use named_enum;
