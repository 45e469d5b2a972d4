//! One organization's counts over a period, and how they are named in the table and in
//! the API: one list of fields, so the two never drift apart.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

/// Counts over a period. Capacity is in thousandths of a unit, so that every field adds
/// up exactly (DynamoDB `ADD` on integers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Authenticated calls answered (refused ones included).
    pub requests: u64,
    /// Calls refused by the rate limit (429).
    pub refused: u64,
    /// Other 4xx answers.
    pub client_errors: u64,
    /// 5xx answers.
    pub server_errors: u64,
    /// DynamoDB read and write capacity units the calls consumed, in thousandths.
    pub capacity_milli: u64,
    /// Webhook delivery attempts (each POST to an endpoint).
    pub delivery_attempts: u64,
    /// Attempts that failed (no 2xx in time).
    pub failed_attempts: u64,
}

/// A tally as the API shows it (`GET /usage`); its names are the metrics' too ([`Tally::named`]).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "UsageCounts")]
pub struct Counts {
    /// Authenticated calls answered, refused ones included
    pub requests: u64,
    /// Calls refused by the rate limit (429)
    pub refused: u64,
    /// Other 4xx answers
    pub client_errors: u64,
    /// 5xx answers
    pub server_errors: u64,
    /// DynamoDB read and write capacity units the calls consumed
    pub capacity_units: f64,
    /// Webhook delivery attempts
    pub delivery_attempts: u64,
    /// Delivery attempts that failed
    pub failed_attempts: u64,
}

/// Each field: its attribute in the table, its name in the API, and its value.
type Field = (&'static str, &'static str, fn(&mut Tally) -> &mut u64);

const FIELDS: [Field; 7] = [
    ("rq", "requests", |t| &mut t.requests),
    ("rf", "refused", |t| &mut t.refused),
    ("ce", "clientErrors", |t| &mut t.client_errors),
    ("se", "serverErrors", |t| &mut t.server_errors),
    ("cu", "capacityUnits", |t| &mut t.capacity_milli),
    ("da", "deliveryAttempts", |t| &mut t.delivery_attempts),
    ("fa", "failedAttempts", |t| &mut t.failed_attempts),
];

impl Tally {
    /// One answered call: its status and the capacity it consumed.
    pub fn request(status: u16, capacity_milli: u64) -> Self {
        Self {
            requests: 1,
            refused: u64::from(status == 429),
            client_errors: u64::from((400..500).contains(&status) && status != 429),
            server_errors: u64::from(status >= 500),
            capacity_milli,
            ..Self::default()
        }
    }

    /// One webhook delivery attempt.
    pub fn delivery(ok: bool) -> Self {
        Self {
            delivery_attempts: 1,
            failed_attempts: u64::from(!ok),
            ..Self::default()
        }
    }

    pub fn add(&mut self, other: &Tally) {
        let mut other = *other;
        for (_, _, field) in FIELDS {
            *field(self) += *field(&mut other);
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `(attribute, value)` of every non-zero field, as the table keeps them.
    pub fn attributes(&self) -> Vec<(&'static str, u64)> {
        let mut me = *self;
        FIELDS
            .iter()
            .map(|(attr, _, field)| (*attr, *field(&mut me)))
            .filter(|(_, v)| *v > 0)
            .collect()
    }

    /// Reads a tally back from the table's attributes (`value` of an attribute, 0 if absent).
    pub fn from_attributes(value: impl Fn(&str) -> u64) -> Self {
        let mut t = Self::default();
        for (attr, _, field) in FIELDS {
            *field(&mut t) = value(attr);
        }
        t
    }

    /// `(API name, value)` of every field, capacity in units.
    pub fn named(&self) -> Vec<(&'static str, Value)> {
        let mut me = *self;
        FIELDS
            .iter()
            .map(|(attr, name, field)| {
                let v = *field(&mut me);
                let value = if *attr == "cu" {
                    json!(v as f64 / 1000.0)
                } else {
                    json!(v)
                };
                (*name, value)
            })
            .collect()
    }

    /// The API's counts.
    pub fn counts(&self) -> Counts {
        Counts {
            requests: self.requests,
            refused: self.refused,
            client_errors: self.client_errors,
            server_errors: self.server_errors,
            capacity_units: self.capacity_milli as f64 / 1000.0,
            delivery_attempts: self.delivery_attempts,
            failed_attempts: self.failed_attempts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_counts_by_its_status() {
        assert_eq!(
            Tally::request(200, 1500).attributes(),
            [("rq", 1), ("cu", 1500)]
        );
        assert_eq!(Tally::request(429, 0).attributes(), [("rq", 1), ("rf", 1)]);
        assert_eq!(Tally::request(404, 0).attributes(), [("rq", 1), ("ce", 1)]);
        assert_eq!(Tally::request(503, 0).attributes(), [("rq", 1), ("se", 1)]);
        assert_eq!(Tally::delivery(false).attributes(), [("da", 1), ("fa", 1)]);
    }

    #[test]
    fn tallies_add_and_read_back() {
        let mut t = Tally::request(200, 500);
        t.add(&Tally::request(429, 0));
        t.add(&Tally::delivery(true));
        let kept: std::collections::HashMap<_, _> = t.attributes().into_iter().collect();
        let back = Tally::from_attributes(|a| kept.get(a).copied().unwrap_or(0));
        assert_eq!(back, t);
        assert_eq!(
            serde_json::to_value(back.counts()).unwrap(),
            json!({"requests": 2, "refused": 1, "clientErrors": 0, "serverErrors": 0,
                   "capacityUnits": 0.5, "deliveryAttempts": 1, "failedAttempts": 0})
        );
        // the metrics' names are the API's
        let named: Vec<(&str, Value)> = back.named();
        let rendered = serde_json::to_value(back.counts()).unwrap();
        let rendered = rendered.as_object().expect("an object");
        assert_eq!(named.len(), rendered.len());
        for (name, value) in named {
            assert_eq!(rendered.get(name), Some(&value), "{name}");
        }
    }
}
