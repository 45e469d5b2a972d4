//! The `include` parameter: relations to embed (`variants`, `skus`, `metaobjects`).

use crate::domain::selection::Selection;
use crate::error::ApiError;
use crate::http::Query;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Include {
    pub variants: bool,
    pub skus: bool,
    pub metaobjects: bool,
}

impl Include {
    /// Parses `include` for an endpoint that accepts `allowed` relations. On products,
    /// `skus` needs `variants`.
    pub fn parse(list: Option<Vec<String>>, allowed: &[&str]) -> Result<Self, ApiError> {
        let mut inc = Self::default();
        for item in list.unwrap_or_default() {
            if !allowed.contains(&item.as_str()) {
                return Err(ApiError::bad_request(format!(
                    "include: unknown value '{item}' (allowed: {})",
                    allowed.join(", ")
                )));
            }
            match item.as_str() {
                "variants" => inc.variants = true,
                "skus" => inc.skus = true,
                _ => inc.metaobjects = true,
            }
        }
        if inc.skus && allowed.contains(&"variants") && !inc.variants {
            return Err(ApiError::bad_request("include: 'skus' requires 'variants'"));
        }
        Ok(inc)
    }
}

/// The query of a detail read (`include`, `attributes`, `exclude_attributes`), checked.
pub fn detail_query(query: &Query, allowed: &[&str]) -> Result<(Include, Selection), ApiError> {
    let include = Include::parse(query.list("include"), allowed)?;
    let selection = Selection::parse(query.list("attributes"), query.list("exclude_attributes"))?;
    Ok((include, selection))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRODUCT: &[&str] = &["variants", "skus", "metaobjects"];

    fn parse(s: &str, allowed: &[&str]) -> Result<Include, ApiError> {
        Include::parse(Some(s.split(',').map(str::to_string).collect()), allowed)
    }

    #[test]
    fn product_includes() {
        assert!(parse("variants,skus", PRODUCT).unwrap().skus);
        assert_eq!(
            parse("skus", PRODUCT).unwrap_err().message,
            "include: 'skus' requires 'variants'"
        );
        assert_eq!(
            parse("assets", PRODUCT).unwrap_err().message,
            "include: unknown value 'assets' (allowed: variants, skus, metaobjects)"
        );
        assert!(parse("skus", &["skus", "metaobjects"]).unwrap().skus);
    }
}
