//! Identifier rules of decisions.md: 1 to 255 characters and at most 300 bytes of UTF-8 (so
//! every DynamoDB key built from one or two identifiers fits the key limits), no control
//! characters, no `/`, no leading or trailing space.

use super::Invalid;

pub const MAX_IDENTIFIER_CHARS: usize = 255;

/// The longest identifier in UTF-8 bytes. The longest key the store builds from identifiers
/// is a SKU's sort key `L3/<variant>/<sku>` (3 + 300 + 1 + 300 bytes), under DynamoDB's
/// 1,024-byte limit for sort keys; every partition key stays far below 2,048.
pub const MAX_IDENTIFIER_BYTES: usize = 300;

/// Checks `value` as the identifier of a `what` (e.g. "product"), naming the problem.
pub fn validate(what: &str, value: &str) -> Result<(), Invalid> {
    let problem = if value.is_empty() {
        Some("must not be empty")
    } else if value.chars().count() > MAX_IDENTIFIER_CHARS {
        Some("must be at most 255 characters")
    } else if value.len() > MAX_IDENTIFIER_BYTES {
        Some("must be at most 300 bytes of UTF-8")
    } else if value.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else if value.contains('/') {
        Some("must not contain '/'")
    } else if value.starts_with(char::is_whitespace) || value.ends_with(char::is_whitespace) {
        Some("must not start or end with a space")
    } else {
        None
    };
    match problem {
        Some(p) => Err(Invalid::new(format!("{what} identifier {p}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_identifiers() {
        for ok in [
            "p1",
            "SKU#12 blue",
            "ä-ü",
            &"x".repeat(255),
            &"ä".repeat(150),
        ] {
            assert!(validate("product", ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_each_rule_with_its_reason() {
        let cases = [
            ("", "product identifier must not be empty"),
            ("a/b", "product identifier must not contain '/'"),
            (
                "a\u{7}b",
                "product identifier must not contain control characters",
            ),
            (
                " a",
                "product identifier must not start or end with a space",
            ),
            (
                "a ",
                "product identifier must not start or end with a space",
            ),
        ];
        for (input, msg) in cases {
            let err = validate("product", input).unwrap_err();
            assert_eq!(err.message, msg);
        }
        assert!(validate("product", &"x".repeat(256)).is_err());
        // 100 three-byte characters fit, 101 do not: the limit is in bytes too
        assert!(validate("sku", &"€".repeat(100)).is_ok());
        assert_eq!(
            validate("sku", &"€".repeat(101)).unwrap_err().message,
            "sku identifier must be at most 300 bytes of UTF-8"
        );
    }
}
