//! The domain's one error: an input that breaks a rule, with a message naming the problem.
//! The domain knows nothing of HTTP; the edge (`error.rs`) maps it to a 400.

use std::fmt;

/// A rule broken by an input; the message names the field and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub message: String,
}

impl Invalid {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Invalid {}

/// How many characters of a client's value an error message repeats.
const EXCERPT_CHARS: usize = 32;

/// `value` as an error message repeats it: whole when short, else its first 32 characters
/// and `…` (a refused value can be megabytes long).
pub fn excerpt(value: &str) -> std::borrow::Cow<'_, str> {
    match value.char_indices().nth(EXCERPT_CHARS) {
        Some((end, _)) => format!("{}…", &value[..end]).into(),
        None => value.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_cut_long_values_on_a_character_boundary() {
        assert_eq!(excerpt("color"), "color");
        assert_eq!(excerpt(&"x".repeat(32)), "x".repeat(32));
        assert_eq!(excerpt(&"é".repeat(1000)), format!("{}…", "é".repeat(32)));
    }
}
