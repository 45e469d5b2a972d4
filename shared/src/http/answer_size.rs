//! What a list page may hold in bytes: Lambda answers at most 6 MB, counted on its
//! response as API Gateway receives it, where the body is a JSON string (each `"` and `\`
//! of the body escaped once more). A page's entries are measured so, and the page is cut
//! (a cursor's) or refused with the `limit` that fits (a page number's) before it is sent.

/// The escaped bytes a page's entries may take: 6,000,000 bytes of answer less 1,000,000
/// for the envelope, the pagination, the headers and the metaobjects sideloaded with it.
pub use crate::domain::limits::MAX_PAGE_ENTRY_BYTES as PAGE_ENTRY_BYTES;

/// The bytes `value` takes in the answer: its JSON, and one more for each `"` and `\`
/// (escaped in the response's body string), and a separating comma.
pub fn answer_bytes(value: &serde_json::Value) -> usize {
    let text = value.to_string();
    let escapes = text.bytes().filter(|b| matches!(b, b'"' | b'\\')).count();
    text.len() + escapes + 1
}

/// How many of the leading entries of `sizes` fit in `budget` bytes together.
pub fn fitting(sizes: &[usize], budget: usize) -> usize {
    let mut used = 0usize;
    sizes
        .iter()
        .take_while(|s| {
            used = used.saturating_add(**s);
            used <= budget
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_counts_its_escapes_and_a_page_stops_at_the_budget() {
        // {"a":"x\"y"} is 12 bytes, with 5 quotes and 1 backslash: 12 + 6 + 1
        assert_eq!(answer_bytes(&json!({"a": "x\"y"})), 19);
        assert_eq!(fitting(&[4, 4, 4], 8), 2);
        assert_eq!(fitting(&[4, 4, 4], 12), 3);
        assert_eq!(fitting(&[9, 1], 8), 0);
        assert_eq!(fitting(&[], 8), 0);
    }
}
