//! Timestamps: RFC 3339, UTC, millisecond precision (`2026-11-21T02:39:29.597Z`). The fixed
//! width makes their strings sort in time order, which the `byChange` index relies on.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use std::fmt;

impl schemars::JsonSchema for Timestamp {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    /// RFC 3339 UTC with milliseconds, as the API writes every time.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "date-time", "example": "2026-11-21T02:39:29.597Z"})
    }
}

/// A point in time at millisecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub fn now() -> Self {
        Self(Utc::now().timestamp_millis())
    }

    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    /// Parses any RFC 3339 time (any offset); sub-millisecond digits are truncated.
    pub fn parse(s: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(s.trim())
            .ok()
            .map(|t| Self(t.with_timezone(&Utc).timestamp_millis()))
    }

    /// The next timestamp for a write that must never move time backwards: now, or just
    /// after the latest already recorded when the clock is not past it. Strictly after, so
    /// that every write of an entity moves its `su`: the change feed tells a change by it,
    /// and history keys its entries by it (two writes in one millisecond stay two).
    pub fn next_after(previous: impl IntoIterator<Item = Timestamp>) -> Self {
        previous
            .into_iter()
            .fold(Self::now(), |t, p| t.max(Self::from_millis(p.millis() + 1)))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = Utc
            .timestamp_millis_opt(self.0)
            .single()
            .unwrap_or_default();
        f.write_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).ok_or_else(|| serde::de::Error::custom("invalid RFC 3339 timestamp"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_milliseconds() {
        let t = Timestamp::parse("2026-11-21T03:39:29.597123+01:00").unwrap();
        assert_eq!(t.to_string(), "2026-11-21T02:39:29.597Z");
        assert_eq!(
            Timestamp::from_millis(0).to_string(),
            "1970-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn refuses_non_rfc3339() {
        for bad in ["", "yesterday", "2026-11-21", "2026-11-21T25:00:00Z"] {
            assert!(Timestamp::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn next_never_goes_backwards() {
        let future = Timestamp::from_millis(Timestamp::now().millis() + 60_000);
        // strictly after what is recorded, even when the clock is behind it
        let next = Timestamp::from_millis(future.millis() + 1);
        assert_eq!(Timestamp::next_after([future]), next);
        assert_eq!(
            Timestamp::next_after([future, next]),
            Timestamp::from_millis(next.millis() + 1)
        );
        assert!(Timestamp::next_after([Timestamp::from_millis(1)]) > Timestamp::from_millis(1));
    }

    #[test]
    fn string_order_is_time_order() {
        let a = Timestamp::parse("2026-01-02T00:00:00.001Z").unwrap();
        let b = Timestamp::parse("2026-01-10T00:00:00Z").unwrap();
        assert!(a < b && a.to_string() < b.to_string());
    }
}
