//! Display names (`name`, `displayName`) of settings and resources: one rule, one message.

use super::Invalid;

pub const MAX_NAME_CHARS: usize = 255;

/// Checks the display name in body field `field`: 1 to 255 characters, not blank, no
/// control characters.
pub fn validate(field: &str, name: &str) -> Result<(), Invalid> {
    if name.trim().is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(Invalid::new(format!(
            "field '{field}' must be 1 to {MAX_NAME_CHARS} characters, not blank"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Invalid::new(format!(
            "field '{field}' must not contain control characters"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_1_to_255_characters_and_not_blank() {
        for ok in ["a", " Oak chair ", &"ä".repeat(255)] {
            assert!(validate("name", ok).is_ok(), "{ok}");
        }
        for bad in ["", "  \t", &"a".repeat(256)] {
            let e = validate("displayName", bad).unwrap_err();
            assert_eq!(
                e.message,
                "field 'displayName' must be 1 to 255 characters, not blank"
            );
        }
        assert_eq!(
            validate("name", "a\nb").unwrap_err().message,
            "field 'name' must not contain control characters"
        );
    }
}
