//! The query of a detail read: `include` (relations to embed: `variants`, `skus`,
//! `metaobjects`, per entity) and the attribute selectors.

use crate::domain::selection::Selection;
use crate::error::ApiError;
use crate::http::query::{comma_list, query_values, QueryValue};
use crate::http::schema;
use schemars::Schema;
use serde_json::json;

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

/// `response` with `included` when `wanted`: the metaobjects its result references
/// (`usecases/references.rs`).
pub async fn with_included(
    store: &crate::store::Store,
    org: &str,
    mut response: crate::http::ApiResponse,
    wanted: bool,
) -> Result<crate::http::ApiResponse, ApiError> {
    if wanted {
        let included =
            crate::usecases::references::included(store, org, &response.body["result"]).await?;
        response.body["included"] = included;
    }
    Ok(response)
}

/// `include` of one entity's read or list: the relations it may embed.
pub trait Relations: QueryValue + Default {
    fn include(&self) -> Include;
}

/// `include` on products: variants, skus (with variants), metaobjects.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProductInclude(Include);

/// `include` on variants: skus, metaobjects.
#[derive(Debug, Clone, Copy, Default)]
pub struct VariantInclude(Include);

/// `include` on SKUs: metaobjects.
#[derive(Debug, Clone, Copy, Default)]
pub struct SkuInclude(Include);

macro_rules! relations {
    ($($t:ident: [$($relation:literal),+], $schema:expr, $description:literal;)+) => {$(
        impl QueryValue for $t {
            fn parse(raw: &str) -> Result<Self, ApiError> {
                Include::parse(Some(comma_list(raw)), &[$($relation),+]).map(Self)
            }

            fn schema() -> Schema {
                described($schema, $description)
            }
        }

        impl Relations for $t {
            fn include(&self) -> Include {
                self.0
            }
        }
    )+};
}

relations! {
    ProductInclude: ["variants", "skus", "metaobjects"], product_include(), "Comma-separated relations to embed: variants, skus (needs variants), metaobjects (sideloaded under `included`).";
    VariantInclude: ["skus", "metaobjects"], schema::comma_list("skus|metaobjects"), "Comma-separated relations to embed: skus, metaobjects (sideloaded under `included`).";
    SkuInclude: ["metaobjects"], schema::comma_list("metaobjects"), "metaobjects: sideload the referenced metaobjects under `included`.";
}

/// `include` on products: `skus` only beside `variants` (either no `skus`, or a `variants`).
fn product_include() -> Schema {
    let any = "variants|skus|metaobjects";
    let without_skus = "(?:(?:variants|metaobjects)(?:,(?:variants|metaobjects))*)?";
    let with_variants = format!("(?:(?:{any}),)*variants(?:,(?:{any}))*");
    schema::matching(&format!("(?:{without_skus}|{with_variants})"))
}

/// `schema` with the parameter's `description`.
pub(super) fn described(mut schema: Schema, description: &str) -> Schema {
    schema.insert("description".into(), json!(description));
    schema
}

/// `attributes`: the attributes to keep.
#[derive(Debug, Clone, Default)]
pub struct Attributes(Vec<String>);

/// `exclude_attributes`: the attributes to leave out.
#[derive(Debug, Clone, Default)]
pub struct ExcludeAttributes(Vec<String>);

impl QueryValue for Attributes {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        Ok(Self(comma_list(raw)))
    }

    fn schema() -> Schema {
        described(schema::selectors(), "Comma-separated selectors `<entity>.<key>` or prefixes ending in `*`; empty selects none.")
    }
}

impl QueryValue for ExcludeAttributes {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        Ok(Self(comma_list(raw)))
    }

    fn schema() -> Schema {
        described(
            schema::selectors(),
            "Selectors to omit after inclusion; exclusion wins.",
        )
    }
}

query_values!(
    ProductInclude,
    VariantInclude,
    SkuInclude,
    Attributes,
    ExcludeAttributes
);

/// The query of a detail read of an entity whose relations are `R`.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct DetailParams<R> {
    pub include: Option<R>,
    pub attributes: Option<Attributes>,
    pub exclude_attributes: Option<ExcludeAttributes>,
}

impl<R: Relations> DetailParams<R> {
    /// The relations to embed and the attributes to keep, checked.
    pub fn parts(self) -> Result<(Include, Selection), ApiError> {
        let include = self.include.unwrap_or_default().include();
        let selection = Selection::parse(
            self.attributes.map(|a| a.0),
            self.exclude_attributes.map(|e| e.0),
        )?;
        Ok((include, selection))
    }
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
