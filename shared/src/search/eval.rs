//! Evaluating validated conditions against stored values: a localized or multi-value
//! attribute matches when any of its values matches; a negated operator (`NOT_EQUALS`,
//! `NOT_CONTAINS`, `NOT_IN`, `NOT_EMPTY`) matches exactly where its positive does not, so an
//! entity without a value matches `NOT_EQUALS`; `NOT_IN_THE_LAST` needs a value older than
//! the duration.

use super::operators::Operator;
use super::parse::{grams, Condition, Operand};
use crate::domain::attributes::AttributeType;
use crate::domain::time::Timestamp;
use crate::domain::values::{parse_price, parse_weight, raw_scalars};
use crate::search::packed::Attr;
use std::borrow::Cow;

/// The raw scalar values of a stored attribute (multi-value arrays unpacked), borrowed
/// where they need no unpacking.
pub fn scalars(attr: Option<Attr<'_>>) -> Vec<Cow<'_, str>> {
    let mut out = Vec::new();
    let Some(attr) = attr else {
        return out;
    };
    for v in attr.values() {
        if attr.is_multi {
            out.extend(raw_scalars(true, v.value).into_iter().map(Cow::Owned));
        } else {
            out.push(Cow::Borrowed(v.value));
        }
    }
    out
}

/// A stored scalar as a number: prices in major units with their currency, weights in grams.
fn number(t: AttributeType, raw: &str) -> Option<(f64, Option<&str>)> {
    match t {
        AttributeType::Price => {
            let (amount, currency) = parse_price(raw)?;
            Some((amount.as_f64()?, Some(currency)))
        }
        AttributeType::Weight => {
            let (value, unit) = parse_weight(raw)?;
            Some((grams(value.as_f64()?, unit)?, None))
        }
        _ => raw.trim().parse::<f64>().ok().map(|n| (n, None)),
    }
}

/// Whether `values` (raw scalars of a field of type `t`) satisfy `cond` at time `now`.
pub fn matches<S: AsRef<str>>(
    cond: &Condition,
    t: AttributeType,
    values: &[S],
    now: Timestamp,
) -> bool {
    match cond.op.negates() {
        Some(positive) => !holds(positive, &cond.operand, t, values, now),
        None => holds(cond.op, &cond.operand, t, values, now),
    }
}

/// Whether `hay`, lowercased, contains `needle` (already lowercased), in time linear in
/// both: the standard library's substring search (two-way) over a lowercased copy, never a
/// comparison at every offset (which is quadratic on text such as `aaaa…ab`).
fn contains_lowercase(hay: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    if hay.is_ascii() {
        return hay.to_ascii_lowercase().contains(needle);
    }
    hay.to_lowercase().contains(needle)
}

/// Whether `values` satisfy a positive operator.
fn holds<S: AsRef<str>>(
    op: Operator,
    operand: &Operand,
    t: AttributeType,
    values: &[S],
    now: Timestamp,
) -> bool {
    let times = || values.iter().filter_map(|v| Timestamp::parse(v.as_ref()));
    let numbers = |value: f64, currency: &Option<String>, cmp: fn(f64, f64) -> bool| {
        values
            .iter()
            .filter_map(|v| number(t, v.as_ref()))
            .any(|(n, c)| (currency.is_none() || c == currency.as_deref()) && cmp(n, value))
    };
    match (op, operand) {
        (Operator::Empty, _) => values.is_empty(),
        (Operator::Equals, Operand::Text(s)) => values.iter().any(|v| v.as_ref() == s),
        (Operator::Equals, Operand::Number { value, currency }) => {
            numbers(*value, currency, |a, b| (a - b).abs() < 1e-9)
        }
        (Operator::Contains, Operand::Text(s)) => {
            let needle = s.to_lowercase();
            values
                .iter()
                .any(|v| contains_lowercase(v.as_ref(), &needle))
        }
        (Operator::In, Operand::Texts(set)) => {
            values.iter().any(|v| set.iter().any(|s| s == v.as_ref()))
        }
        (Operator::GreaterThan, Operand::Number { value, currency }) => {
            numbers(*value, currency, |a, b| a > b)
        }
        (Operator::LessThan, Operand::Number { value, currency }) => {
            numbers(*value, currency, |a, b| a < b)
        }
        (Operator::GreaterThan | Operator::After, Operand::Time(at)) => times().any(|x| x > *at),
        (Operator::LessThan | Operator::Before, Operand::Time(at)) => times().any(|x| x < *at),
        (Operator::InTheLast, Operand::Duration(ms)) => {
            let since = Timestamp::from_millis(now.millis() - ms);
            times().any(|x| x >= since && x <= now)
        }
        (Operator::NotInTheLast, Operand::Duration(ms)) => {
            let since = Timestamp::from_millis(now.millis() - ms);
            times().next().is_some() && !times().any(|x| x >= since && x <= now)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(op: Operator, operand: Operand) -> Condition {
        Condition { op, operand }
    }
    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }
    fn num(value: f64, currency: Option<&str>) -> Operand {
        Operand::Number {
            value,
            currency: currency.map(str::to_string),
        }
    }

    #[test]
    fn contains_ignores_case_in_ascii_and_beyond() {
        assert!(contains_lowercase("Brand 12", "brand 1"));
        assert!(contains_lowercase("Brand 12", ""));
        assert!(!contains_lowercase("Bra", "brand"));
        assert!(contains_lowercase("GROẞE Größe", "größe"));
        assert!(contains_lowercase("ÄPFEL", "äpfel"));
        assert!(!contains_lowercase("Apfel", "äpfel"));
    }

    #[test]
    fn contains_is_linear_on_text_that_almost_matches_everywhere() {
        // the probe's shape: a long operand that matches at every offset but the last
        // character, over long text (quadratic search: billions of byte comparisons)
        let hay = "a".repeat(99_000);
        let needle = format!("{}b", "a".repeat(999));
        assert!(!contains_lowercase(&hay, &needle));
        assert!(contains_lowercase(&format!("{hay}b"), &needle));
        let accented = "ä".repeat(40_000);
        assert!(!contains_lowercase(
            &accented,
            &format!("{}b", "ä".repeat(999))
        ));
    }

    #[test]
    fn text_operators() {
        let now = Timestamp::now();
        let t = AttributeType::Text;
        let blue = v(&["Dark Blue", "Blau"]);
        assert!(matches(
            &c(Operator::Contains, Operand::Text("blue".into())),
            t,
            &blue,
            now
        ));
        assert!(!matches(
            &c(Operator::NotContains, Operand::Text("BLUE".into())),
            t,
            &blue,
            now
        ));
        assert!(matches(
            &c(Operator::Equals, Operand::Text("Blau".into())),
            t,
            &blue,
            now
        ));
        assert!(!matches(
            &c(Operator::Equals, Operand::Text("blau".into())),
            t,
            &blue,
            now
        ));
        assert!(matches(
            &c(Operator::NotEquals, Operand::Text("x".into())),
            t,
            &[] as &[String],
            now
        ));
        assert!(matches(
            &c(Operator::In, Operand::Texts(v(&["a", "Blau"]))),
            t,
            &blue,
            now
        ));
        assert!(matches(
            &c(Operator::NotIn, Operand::Texts(v(&["a"]))),
            t,
            &blue,
            now
        ));
        assert!(matches(
            &c(Operator::Empty, Operand::None),
            t,
            &[] as &[String],
            now
        ));
        assert!(matches(
            &c(Operator::NotEmpty, Operand::None),
            t,
            &blue,
            now
        ));
    }

    #[test]
    fn numeric_operators_convert_units() {
        let now = Timestamp::now();
        let prices = v(&["12.50 EUR", "9.00 USD"]);
        let p = AttributeType::Price;
        assert!(matches(
            &c(Operator::GreaterThan, num(12.0, None)),
            p,
            &prices,
            now
        ));
        assert!(!matches(
            &c(Operator::GreaterThan, num(10.0, Some("USD"))),
            p,
            &prices,
            now
        ));
        assert!(matches(
            &c(Operator::LessThan, num(10.0, Some("USD"))),
            p,
            &prices,
            now
        ));
        assert!(matches(
            &c(Operator::Equals, num(12.5, Some("EUR"))),
            p,
            &prices,
            now
        ));
        let w = AttributeType::Weight;
        assert!(matches(
            &c(Operator::GreaterThan, num(1000.0, None)),
            w,
            &v(&["1.5 kg"]),
            now
        ));
        assert!(matches(
            &c(Operator::LessThan, num(500.0, None)),
            w,
            &v(&["1 lb"]),
            now
        ));
        let n = AttributeType::Number;
        assert!(matches(
            &c(Operator::Equals, num(3.0, None)),
            n,
            &v(&["3"]),
            now
        ));
        assert!(!matches(
            &c(Operator::GreaterThan, num(3.0, None)),
            n,
            &[] as &[String],
            now
        ));
    }

    #[test]
    fn datetime_operators() {
        let now = Timestamp::parse("2026-11-21T12:00:00Z").unwrap();
        let d = AttributeType::Datetime;
        let vals = v(&["2026-11-20T12:00:00.000Z"]);
        let at = |s: &str| Operand::Time(Timestamp::parse(s).unwrap());
        assert!(matches(
            &c(Operator::After, at("2026-11-20T00:00:00Z")),
            d,
            &vals,
            now
        ));
        assert!(matches(
            &c(Operator::Before, at("2026-11-21T00:00:00Z")),
            d,
            &vals,
            now
        ));
        assert!(!matches(
            &c(Operator::GreaterThan, at("2026-11-20T12:00:00Z")),
            d,
            &vals,
            now
        ));
        let days = |n: i64| Operand::Duration(n * 86_400_000);
        assert!(matches(&c(Operator::InTheLast, days(2)), d, &vals, now));
        assert!(!matches(
            &c(Operator::InTheLast, Operand::Duration(3_600_000)),
            d,
            &vals,
            now
        ));
        assert!(matches(
            &c(Operator::NotInTheLast, Operand::Duration(3_600_000)),
            d,
            &vals,
            now
        ));
        assert!(!matches(
            &c(Operator::NotInTheLast, days(1)),
            d,
            &[] as &[String],
            now
        ));
    }
}
