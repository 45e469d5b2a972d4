//! `attributes` / `exclude_attributes` selectors: exact `<entity>.<key>` or a prefix ending
//! in `*`, at the level where the attribute is defined. Exclusion wins.

use super::attributes::{is_valid_key, TargetEntity};
use super::Invalid;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Selector {
    Exact(String),
    Prefix(String),
}

impl Selector {
    fn parse(param: &str, raw: &str) -> Result<Self, Invalid> {
        let bad = |why: &str| Invalid::new(format!("{param}: invalid selector '{raw}': {why}"));
        let (entity, rest) = raw
            .split_once('.')
            .ok_or_else(|| bad("expected <entity>.<key>, e.g. product.color or sku.price_*"))?;
        if TargetEntity::parse(entity).is_none() {
            return Err(bad("the entity must be product, variant, sku or bundle"));
        }
        match rest.strip_suffix('*') {
            Some(prefix) if !prefix.contains('*') => {
                if prefix.len() > 64 {
                    return Err(bad("a key holds at most 64 characters"));
                }
                let ok = prefix
                    .chars()
                    .all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'));
                if !ok {
                    return Err(bad("a key holds only a-z, 0-9 and _"));
                }
                Ok(Self::Prefix(format!("{entity}.{prefix}")))
            }
            _ if rest.contains('*') => Err(bad("'*' is allowed only at the end")),
            _ if is_valid_key(rest) => Ok(Self::Exact(raw.to_string())),
            _ => Err(bad("a key is [a-z][a-z0-9_]{0,63}")),
        }
    }

    fn matches(&self, qualified: &str) -> bool {
        match self {
            Self::Exact(k) => k == qualified,
            Self::Prefix(p) => qualified.starts_with(p.as_str()),
        }
    }
}

/// Which fully qualified attribute keys a response keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// `None`: every attribute (parameter absent); `Some(empty)`: none (`attributes=`).
    include: Option<Vec<Selector>>,
    exclude: Vec<Selector>,
}

impl Selection {
    pub fn parse(
        attributes: Option<Vec<String>>,
        exclude: Option<Vec<String>>,
    ) -> Result<Self, Invalid> {
        let parse_all = |param: &str, list: Vec<String>| {
            list.iter()
                .map(|s| Selector::parse(param, s))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            include: attributes.map(|l| parse_all("attributes", l)).transpose()?,
            exclude: parse_all("exclude_attributes", exclude.unwrap_or_default())?,
        })
    }

    /// The selectors of a body field (`param` names it in errors): what they select.
    pub fn of_field(param: &str, list: &[String]) -> Result<Self, Invalid> {
        let include = list
            .iter()
            .map(|s| Selector::parse(param, s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            include: Some(include),
            exclude: Vec::new(),
        })
    }

    pub fn keeps(&self, qualified: &str) -> bool {
        let selected = self
            .include
            .as_ref()
            .is_none_or(|sel| sel.iter().any(|s| s.matches(qualified)));
        selected && !self.exclude.iter().any(|s| s.matches(qualified))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(a: Option<&[&str]>, e: Option<&[&str]>) -> Result<Selection, Invalid> {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Selection::parse(a.map(own), e.map(own))
    }

    #[test]
    fn absent_selects_all_and_empty_selects_none() {
        assert!(sel(None, None).unwrap().keeps("product.color"));
        assert!(!sel(Some(&[]), None).unwrap().keeps("product.color"));
    }

    #[test]
    fn prefixes_exact_keys_and_exclusion_wins() {
        let s = sel(
            Some(&["sku.price_*", "product.name", "variant.*"]),
            Some(&["variant.size"]),
        )
        .unwrap();
        assert!(s.keeps("sku.price_eur") && s.keeps("sku.price_") && s.keeps("product.name"));
        assert!(s.keeps("variant.color") && !s.keeps("variant.size"));
        assert!(!s.keeps("sku.weight") && !s.keeps("product.name_long"));
    }

    #[test]
    fn bad_selectors_are_named() {
        assert_eq!(
            sel(Some(&["*.price"]), None).unwrap_err().message,
            "attributes: invalid selector '*.price': the entity must be product, variant, sku or bundle"
        );
        assert_eq!(
            sel(None, Some(&["sku.*price"])).unwrap_err().message,
            "exclude_attributes: invalid selector 'sku.*price': '*' is allowed only at the end"
        );
        assert!(sel(Some(&["color"]), None).is_err());
        assert!(sel(Some(&["product.Color"]), None).is_err());
    }

    #[test]
    fn a_prefix_is_at_most_a_key_long() {
        let long = format!("sku.{}*", "a".repeat(65));
        assert_eq!(
            sel(Some(&[long.as_str()]), None).unwrap_err().message,
            format!("attributes: invalid selector '{long}': a key holds at most 64 characters")
        );
        assert!(sel(Some(&[format!("sku.{}*", "a".repeat(64)).as_str()]), None).is_ok());
    }
}
