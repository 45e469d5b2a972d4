//! The operator matrix of decisions.md: which operators each attribute category accepts and
//! what value shape each operator takes.

use crate::domain::attributes::AttributeType;

/// Attribute categories of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Text,
    Preset,
    Numeric,
    Datetime,
}

impl Category {
    pub fn of(t: AttributeType) -> Self {
        use AttributeType::*;
        match t {
            Text | Html | Url | Color | Image => Self::Text,
            Select | Boolean | Metaobject => Self::Preset,
            Number | Price | Weight => Self::Numeric,
            Datetime => Self::Datetime,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Preset => "preset",
            Self::Numeric => "numeric",
            Self::Datetime => "datetime",
        }
    }

    pub fn operators(self) -> &'static [Operator] {
        use Operator::*;
        match self {
            Self::Text => &[
                Equals,
                NotEquals,
                Contains,
                NotContains,
                In,
                NotIn,
                Empty,
                NotEmpty,
            ],
            Self::Preset => &[Equals, NotEquals, In, NotIn, Empty, NotEmpty],
            Self::Numeric => &[Equals, NotEquals, GreaterThan, LessThan, Empty, NotEmpty],
            Self::Datetime => &[
                Before,
                After,
                GreaterThan,
                LessThan,
                InTheLast,
                NotInTheLast,
                Empty,
                NotEmpty,
            ],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Equals,
    NotEquals,
    Contains,
    NotContains,
    In,
    NotIn,
    Empty,
    NotEmpty,
    GreaterThan,
    LessThan,
    Before,
    After,
    InTheLast,
    NotInTheLast,
}

/// What an operator's `value` must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperandShape {
    /// No value (absent or null).
    None,
    /// One scalar.
    One,
    /// A non-empty array of scalars.
    Many,
    /// A duration such as `7d`, `24h`, `30m`.
    Duration,
}

impl Operator {
    pub const ALL: [Operator; 14] = [
        Self::Equals,
        Self::NotEquals,
        Self::Contains,
        Self::NotContains,
        Self::In,
        Self::NotIn,
        Self::Empty,
        Self::NotEmpty,
        Self::GreaterThan,
        Self::LessThan,
        Self::Before,
        Self::After,
        Self::InTheLast,
        Self::NotInTheLast,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Equals => "EQUALS",
            Self::NotEquals => "NOT_EQUALS",
            Self::Contains => "CONTAINS",
            Self::NotContains => "NOT_CONTAINS",
            Self::In => "IN",
            Self::NotIn => "NOT_IN",
            Self::Empty => "EMPTY",
            Self::NotEmpty => "NOT_EMPTY",
            Self::GreaterThan => "GREATER_THAN",
            Self::LessThan => "LESS_THAN",
            Self::Before => "BEFORE",
            Self::After => "AFTER",
            Self::InTheLast => "IN_THE_LAST",
            Self::NotInTheLast => "NOT_IN_THE_LAST",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == s)
    }

    pub fn shape(self) -> OperandShape {
        match self {
            Self::Empty | Self::NotEmpty => OperandShape::None,
            Self::In | Self::NotIn => OperandShape::Many,
            Self::InTheLast | Self::NotInTheLast => OperandShape::Duration,
            _ => OperandShape::One,
        }
    }

    /// The operator this one negates, if it is a negation (`NOT_EQUALS` → `EQUALS`).
    pub fn negates(self) -> Option<Self> {
        match self {
            Self::NotEquals => Some(Self::Equals),
            Self::NotContains => Some(Self::Contains),
            Self::NotIn => Some(Self::In),
            Self::NotEmpty => Some(Self::Empty),
            _ => None,
        }
    }
}

/// `"7d"`, `"24h"`, `"30m"`, `"45s"`, `"2w"` → milliseconds.
pub fn parse_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    let unit = s.chars().last()?;
    let n: i64 = s[..s.len() - unit.len_utf8()]
        .parse()
        .ok()
        .filter(|n| *n > 0)?;
    let ms = match unit {
        's' => 1_000,
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        'w' => 604_800_000,
        _ => return None,
    };
    n.checked_mul(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_matches_the_decisions() {
        assert!(Category::Text.operators().contains(&Operator::Contains));
        assert!(!Category::Numeric.operators().contains(&Operator::Contains));
        assert!(Category::Numeric
            .operators()
            .contains(&Operator::GreaterThan));
        assert!(!Category::Preset
            .operators()
            .contains(&Operator::GreaterThan));
        assert!(Category::Datetime
            .operators()
            .contains(&Operator::InTheLast));
        assert_eq!(Category::of(AttributeType::Price), Category::Numeric);
        assert_eq!(Category::of(AttributeType::Metaobject), Category::Preset);
        for op in Operator::ALL {
            assert_eq!(Operator::parse(op.name()), Some(op));
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("7d"), Some(7 * 86_400_000));
        assert_eq!(parse_duration("24h"), Some(86_400_000));
        assert_eq!(parse_duration("30m"), Some(1_800_000));
        for bad in ["", "d", "7", "-1d", "0h", "7y", "1.5d"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
