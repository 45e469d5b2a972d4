//! The endpoints a delivery process saw answer lately: a batch's messages to one of them go
//! at once instead of a first one alone ahead of the others.

use super::Endpoint;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an endpoint seen answering counts as answering.
pub(super) const FRESH: Duration = Duration::from_secs(5);
/// Endpoints remembered at most (the stale ones go first; past it, new ones are not kept).
const KEPT: usize = 1_000;

/// The endpoints this process saw answer, and when last.
#[derive(Default)]
pub(super) struct Answered(Mutex<HashMap<Endpoint, Instant>>);

impl Answered {
    /// Whether `endpoint` answered an attempt of this process in the last [`FRESH`].
    pub fn lately(&self, endpoint: &Endpoint) -> bool {
        let seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.get(endpoint).is_some_and(|at| at.elapsed() < FRESH)
    }

    /// Notes whether `endpoint` answered the attempt just made (a failure forgets it).
    pub fn note(&self, endpoint: Endpoint, ok: bool) {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !ok {
            seen.remove(&endpoint);
            return;
        }
        if seen.len() >= KEPT {
            seen.retain(|_, at| at.elapsed() < FRESH);
        }
        if seen.len() < KEPT || seen.contains_key(&endpoint) {
            seen.insert(endpoint, Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(n: usize) -> Endpoint {
        ("org".into(), format!("wh{n}"))
    }

    #[test]
    fn an_answer_counts_until_a_failure_and_the_memory_is_bounded() {
        let a = Answered::default();
        assert!(!a.lately(&endpoint(0)));
        a.note(endpoint(0), true);
        assert!(a.lately(&endpoint(0)));
        a.note(endpoint(0), false);
        assert!(!a.lately(&endpoint(0)));
        for n in 0..KEPT + 10 {
            a.note(endpoint(n), true);
        }
        assert_eq!(a.0.lock().unwrap().len(), KEPT);
        assert!(!a.lately(&endpoint(KEPT + 5)));
    }
}
