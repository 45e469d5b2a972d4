//! Query-string parameters with the checks every list and detail route shares.

use crate::error::ApiError;

/// Decoded query parameters; each name may appear at most once.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Refuses repeated and unknown parameters, naming them.
    pub fn parse(pairs: &[(String, String)], allowed: &[&str]) -> Result<Self, ApiError> {
        for (i, (name, _)) in pairs.iter().enumerate() {
            if !allowed.contains(&name.as_str()) {
                return Err(ApiError::bad_request(format!(
                    "unknown query parameter '{name}'"
                )));
            }
            if pairs[..i].iter().any(|(n, _)| n == name) {
                return Err(ApiError::bad_request(format!(
                    "query parameter '{name}' is given more than once"
                )));
            }
        }
        Ok(Self {
            pairs: pairs.to_vec(),
        })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// An integer parameter within `min..=max`, or `default` when absent.
    pub fn int(&self, name: &str, default: u32, min: u32, max: u32) -> Result<u32, ApiError> {
        match self.get(name) {
            None => Ok(default),
            Some(raw) => raw
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "query parameter '{name}' must be an integer from {min} to {max}"
                    ))
                }),
        }
    }

    /// A comma-separated list; `None` when absent, `Some(vec![])` when given empty.
    pub fn list(&self, name: &str) -> Option<Vec<String>> {
        self.get(name).map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)], allowed: &[&str]) -> Result<Query, ApiError> {
        let owned: Vec<_> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        Query::parse(&owned, allowed)
    }

    #[test]
    fn unknown_and_repeated_parameters_are_refused() {
        assert_eq!(
            q(&[("x", "1")], &["limit"]).unwrap_err().message,
            "unknown query parameter 'x'"
        );
        assert_eq!(
            q(&[("limit", "1"), ("limit", "2")], &["limit"])
                .unwrap_err()
                .message,
            "query parameter 'limit' is given more than once"
        );
    }

    #[test]
    fn integers_are_range_checked() {
        let query = q(&[("limit", "0"), ("page", "2")], &["limit", "page"]).unwrap();
        assert_eq!(
            query.int("limit", 100, 1, 200).unwrap_err().message,
            "query parameter 'limit' must be an integer from 1 to 200"
        );
        assert_eq!(query.int("page", 1, 1, u32::MAX).unwrap(), 2);
        assert_eq!(query.int("absent", 100, 1, 200).unwrap(), 100);
    }

    #[test]
    fn lists_split_on_commas() {
        let query = q(
            &[("include", "variants, skus"), ("attributes", "")],
            &["include", "attributes"],
        )
        .unwrap();
        assert_eq!(query.list("include").unwrap(), vec!["variants", "skus"]);
        assert_eq!(query.list("attributes").unwrap(), Vec::<String>::new());
        assert_eq!(query.list("exclude_attributes"), None);
    }
}
