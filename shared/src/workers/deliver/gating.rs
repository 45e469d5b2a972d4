//! When a delivery may try its endpoint: sent to a known-good one, probing an unknown or failing one whose time has come, or waiting; and the reason text of a disable.

use super::*;

/// What a delivery may do, given what is known of its endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// The endpoint answered lately: attempt.
    Send,
    /// Nothing is known, or the endpoint's probe time has come: claim the probe.
    Claim,
    /// Another delivery is probing, or the failing endpoint's next probe is later.
    Wait(Duration),
}

/// The gate for a delivery to an endpoint in state `health` at `now` (unix millis).
pub fn gate(health: Option<&Health>, now: i64) -> Gate {
    let Some(h) = health else {
        return Gate::Claim;
    };
    if known_good(Some(h), now) {
        return Gate::Send;
    }
    match h.probe_at {
        Some(p) if p.millis() > now => {
            let until = (p.millis() - now) as u64;
            Gate::Wait(if probe_is_young(Some(h), now) {
                Duration::from_secs(1)
            } else {
                Duration::from_millis(until)
            })
        }
        _ => Gate::Claim,
    }
}

/// Whether a first-contact probe of the endpoint (not one of a failing streak, whose
/// answer is likely a failure again) started less than [`YOUNG_PROBE_MS`] before `now`.
pub(super) fn probe_is_young(health: Option<&Health>, now: i64) -> bool {
    health
        .filter(|h| h.failing_since.is_none())
        .and_then(|h| h.probe_started_at)
        .is_some_and(|s| now - s.millis() < YOUNG_PROBE_MS)
}

/// Whether the endpoint is known to answer at `at` (unix millis).
pub(super) fn known_good(health: Option<&Health>, at: i64) -> bool {
    health
        .is_some_and(|h| h.failing_since.is_none() && h.good_until.is_some_and(|g| g.millis() > at))
}

/// Why a subscription was disabled automatically.
pub fn disabled_reason(failing_since: Timestamp, period: Duration) -> String {
    format!(
        "disabled automatically: every delivery failed for {} (since {failing_since}); \
         PATCH it with enabled: true to enable it again",
        human(period)
    )
}

/// A period in the largest whole unit that fits: `5 days`, `20 seconds`.
pub(super) fn human(period: Duration) -> String {
    let secs = period.as_secs();
    let (n, unit) = match secs {
        s if s >= 86_400 && s % 86_400 == 0 => (s / 86_400, "day"),
        s if s >= 3_600 && s % 3_600 == 0 => (s / 3_600, "hour"),
        s if s >= 60 && s % 60 == 0 => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}
