//! Credentials an answer shows once (a new API key, a webhook signing secret, a console
//! sign-in link or session token, a presigned upload URL) have a type of their own, so that
//! no answer kept at rest (an `Idempotency-Key`'s record) can hold one, whichever route
//! built it: a [`Credential`] serializes as `null` except inside [`shown`], and [`shown`]
//! also gives the same answer with every credential `null`, the form that may be kept.

use serde::{Serialize, Serializer};
use serde_json::Value;
use std::cell::Cell;

thread_local! {
    /// Set while [`shown`] renders the answer that goes out.
    static SHOWING: Cell<bool> = const { Cell::new(false) };
    /// Credentials serialized since [`shown`] began.
    static SHOWN: Cell<u32> = const { Cell::new(0) };
}

/// A credential in an answer type. Its JSON is the string only in the answer [`shown`]
/// renders, and `null` everywhere else (a stored answer, a log line, any other `to_json`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Credential<'a>(pub &'a str);

impl std::fmt::Debug for Credential<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credential(..)")
    }
}

impl Serialize for Credential<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if SHOWING.with(Cell::get) {
            SHOWN.with(|n| n.set(n.get() + 1));
            s.serialize_str(self.0)
        } else {
            s.serialize_none()
        }
    }
}

/// Resets [`SHOWING`] when dropped, so a panicking serializer leaves no credential on.
struct Showing;

impl Drop for Showing {
    fn drop(&mut self) {
        SHOWING.with(|s| s.set(false));
    }
}

/// The JSON of `answer` as it goes out, credentials shown, and, when it carried any, the
/// same JSON with each of them `null`: what may be kept. Serialization is synchronous, so
/// the thread-local state never spans an `.await`.
pub fn shown(answer: &impl Serialize) -> (Value, Option<Value>) {
    let out = {
        let _on = Showing;
        SHOWING.with(|s| s.set(true));
        SHOWN.with(|n| n.set(0));
        serde_json::to_value(answer).unwrap_or_default()
    };
    let carried = SHOWN.with(Cell::get) > 0;
    let kept = carried.then(|| serde_json::to_value(answer).unwrap_or_default());
    (out, kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Serialize)]
    struct Answer<'a> {
        id: &'a str,
        key: Option<Credential<'a>>,
    }

    #[test]
    fn a_credential_is_shown_only_in_the_answer_that_goes_out() {
        let a = Answer {
            id: "k1",
            key: Some(Credential("cat_secret")),
        };
        let (out, kept) = shown(&a);
        assert_eq!(out, json!({"id": "k1", "key": "cat_secret"}));
        assert_eq!(kept, Some(json!({"id": "k1", "key": null})));
        // anywhere else it is null
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            json!({"id": "k1", "key": null})
        );
        // an answer without one has no second form
        let plain = Answer {
            id: "k2",
            key: None,
        };
        assert_eq!(shown(&plain), (json!({"id": "k2", "key": null}), None));
    }
}
