//! What an export holds and how its lines read: `POST /exports`'s body, checked into an
//! [`ExportSpec`] (as the lists check their query), and the walk's pages of lines
//! (`pages.rs`: read in identifier order, cut by the bytes they hold), each entity rendered
//! exactly as `GET /<entity>/{identifier}` shows it with the same include and selectors
//! (decisions.md, "Exports and gapless sync").

mod pages;

pub use pages::{read, Budget, Page};

use super::listing::{matching, Selecting};
use crate::context::Context;
use crate::domain::selection::Selection;
use crate::error::Failure;
use crate::http::render::Embed;
use crate::search::engine::Cut;
use crate::search::parse::parse_json;
use crate::store::items::EntityKind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an export lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExportEntity {
    Products,
    Variants,
    Skus,
}

/// `all` (every key must match) or `any`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    All,
    Any,
}

/// The body of `POST /exports`: the list's selection, include and selectors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "ExportCreate")]
pub struct ExportRequest {
    pub entity: ExportEntity,
    /// The lists' `search` filter: the object itself, or its JSON text
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_mode: Option<SearchMode>,
    /// Relations embedded in each line: `variants` and `skus` on products, `skus` on variants
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<String>>,
    /// Attribute selectors, as the lists' `attributes`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Vec<String>>,
    /// Attribute selectors, as the lists' `exclude_attributes`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_attributes: Option<Vec<String>>,
}

/// An export's request, checked: the list it walks and how each line renders.
#[derive(Debug)]
pub struct ExportSpec {
    pub entity: EntityKind,
    select: Selecting,
    embed: Embed,
    selection: Selection,
}

fn bad_field(name: &str, problem: impl std::fmt::Display) -> Failure {
    Failure::invalid(format!("field '{name}': {problem}"))
}

impl ExportRequest {
    /// Checks the request's shape (the definitions its filter names are checked when the
    /// list runs: [`page`]).
    pub fn spec(&self) -> Result<ExportSpec, Failure> {
        let (entity, allowed): (EntityKind, &[&str]) = match self.entity {
            ExportEntity::Products => (EntityKind::Product, &["variants", "skus"]),
            ExportEntity::Variants => (EntityKind::Variant, &["skus"]),
            ExportEntity::Skus => (EntityKind::Sku, &[]),
        };
        let mut embed = Embed {
            variants: false,
            skus: false,
        };
        for name in self.include.iter().flatten() {
            match name.as_str() {
                n if !allowed.contains(&n) => {
                    return Err(bad_field(
                        "include",
                        format!(
                        "'{n}' is not one of [{}] for {} (metaobjects are not embedded in exports)",
                        allowed.join(", "),
                        entity.as_str()
                    ),
                    ))
                }
                "variants" => embed.variants = true,
                _ => embed.skus = true,
            }
        }
        if entity == EntityKind::Product && embed.skus && !embed.variants {
            return Err(bad_field("include", "'skus' needs 'variants' on products"));
        }
        let search = match &self.search {
            None => None,
            Some(Value::String(text)) => Some(parse_json(text)?),
            Some(v) => Some(parse_json(&v.to_string())?),
        };
        Ok(ExportSpec {
            entity,
            select: Selecting {
                search,
                any: self.search_mode == Some(SearchMode::Any),
                ..Selecting::default()
            },
            embed,
            selection: Selection::parse(self.attributes.clone(), self.exclude_attributes.clone())?,
        })
    }
}

/// How many entities the export's list holds now; its filter checked against the
/// definitions as the list checks it (a refusal names the problem).
pub async fn count(cx: &Context, org: &str, spec: &ExportSpec) -> Result<u64, Failure> {
    let first = (Cut::Index(0), 0);
    let (_, total, _) = matching(
        cx,
        org,
        spec.entity,
        &spec.select,
        first,
        super::listing::Refresh::Now,
    )
    .await?;
    Ok(total as u64)
}

impl ExportSpec {
    /// Entities per page of `items` at most: a tenth of them when each line embeds a tree
    /// (a product's up to the tree limits); fewer when their bytes fill the walk's budget
    /// ([`Budget`]).
    pub fn page_size(&self, items: usize) -> usize {
        if self.embed.variants || self.embed.skus {
            (items / 10).max(1)
        } else {
            items
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(body: Value) -> Result<ExportSpec, String> {
        let req: ExportRequest = serde_json::from_value(body).map_err(|e| e.to_string())?;
        req.spec().map_err(|e| e.message().to_string())
    }

    #[test]
    fn requests_are_checked_as_the_lists_check_them() {
        let s = spec(json!({"entity": "products", "include": ["variants", "skus"]})).unwrap();
        assert_eq!(s.entity, EntityKind::Product);
        assert!(s.embed.variants && s.embed.skus);
        assert_eq!(s.page_size(200), 20);
        assert_eq!(s.page_size(5), 1);
        assert_eq!(
            spec(json!({"entity": "products", "include": ["skus"]})).unwrap_err(),
            "field 'include': 'skus' needs 'variants' on products"
        );
        assert_eq!(
            spec(json!({"entity": "skus", "include": ["metaobjects"]})).unwrap_err(),
            "field 'include': 'metaobjects' is not one of [] for sku (metaobjects are not embedded in exports)"
        );
        assert!(spec(json!({"entity": "assets"}))
            .unwrap_err()
            .contains("unknown variant `assets`"));
        assert!(spec(json!({"entity": "skus", "limit": 3}))
            .unwrap_err()
            .contains("unknown field `limit`"));
        let s = spec(json!({"entity": "variants", "search": "{\"name\":[{\"operator\":\"CONTAINS\",\"value\":\"x\"}]}", "searchMode": "any"})).unwrap();
        assert!(s.select.search.is_some() && s.select.any);
        assert_eq!(s.page_size(200), 200);
        assert!(spec(json!({"entity": "skus", "search": "{"}))
            .unwrap_err()
            .contains("not valid JSON"));
    }
}
