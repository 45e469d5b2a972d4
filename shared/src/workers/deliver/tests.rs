//! Unit tests of the parent module.

use super::*;

fn at(ms: i64) -> Option<Timestamp> {
    Some(Timestamp::from_millis(ms))
}

#[test]
fn an_unknown_endpoint_is_probed_and_a_good_one_is_sent_to() {
    let now = 1_000_000;
    assert_eq!(gate(None, now), Gate::Claim);
    let good = Health {
        good_until: at(now + 1),
        ..Health::default()
    };
    assert_eq!(gate(Some(&good), now), Gate::Send);
    // known good no longer: the next delivery probes it again
    let expired = Health {
        good_until: at(now),
        ..Health::default()
    };
    assert_eq!(gate(Some(&expired), now), Gate::Claim);
}

#[test]
fn deliveries_wait_for_a_probe_in_flight_and_for_a_failing_endpoints_next_probe() {
    let now = 1_000_000;
    let young = Health {
        probe_at: at(now + 16_000),
        probe_started_at: at(now - 500),
        ..Health::default()
    };
    assert_eq!(gate(Some(&young), now), Gate::Wait(Duration::from_secs(1)));
    let hanging = Health {
        probe_at: at(now + 10_000),
        probe_started_at: at(now - 7_000),
        ..Health::default()
    };
    assert_eq!(
        gate(Some(&hanging), now),
        Gate::Wait(Duration::from_millis(10_000))
    );
    let failing = Health {
        failing_since: at(now - 60_000),
        failures: 3,
        probe_at: at(now + 30_000),
        probe_started_at: at(now - 100),
        good_until: at(now + 60_000),
        ..Health::default()
    };
    // a failing streak outranks an old good mark, and its probes are not watched
    assert_eq!(
        gate(Some(&failing), now),
        Gate::Wait(Duration::from_millis(30_000))
    );
    // its probe time has come: probe
    let due = Health {
        probe_at: at(now),
        ..failing
    };
    assert_eq!(gate(Some(&due), now), Gate::Claim);
}

#[test]
fn the_disable_reason_names_the_period_and_the_start() {
    let since = Timestamp::parse("2026-11-19T10:00:00Z").unwrap();
    assert_eq!(
        disabled_reason(since, Duration::from_secs(5 * 86_400)),
        "disabled automatically: every delivery failed for 5 days (since \
         2026-11-19T10:00:00.000Z); PATCH it with enabled: true to enable it again"
    );
    assert_eq!(human(Duration::from_secs(30)), "30 seconds");
    assert_eq!(human(Duration::from_secs(3_600)), "1 hour");
}
