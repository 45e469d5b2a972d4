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
