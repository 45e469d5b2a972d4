//! The wire format of a product tree write: the bodies of PATCH /products/{identifier}, of
//! each line of the bulk PATCH and of an import, and of PATCH /skus/{identifier}. Parsed whole
//! (unknown fields refused, errors naming the field's path); the OpenAPI schemas are derived
//! from these types.

use crate::domain::limits::MAX_BULK_ITEMS;
use crate::domain::limits::{MAX_SKUS_PER_PRODUCT, MAX_VARIANTS_PER_PRODUCT};
use crate::http::body::present;
use crate::http::schema;
use crate::usecases::asset_input::{AssetItem, MAX_LINKS};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};
use serde_json::{json, Map, Value};

/// The body of PATCH /products/{identifier}: every field optional, the given ones change.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "ProductPatch")]
pub struct ProductBody {
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::name")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::values")]
    pub values: Option<Map<String, Value>>,
    /// `null` removes the family.
    #[serde(default, deserialize_with = "family_id")]
    #[schemars(with = "Option<u32>", range(min = 1))]
    pub family_id: Option<Option<i64>>,
    /// Variants created or updated as given (the others are kept).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Vec<VariantBody>", length(max = MAX_VARIANTS_PER_PRODUCT))]
    pub variants: Option<Vec<VariantBody>>,
    /// The complete set of linked assets, in order, each created or updated as given.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Vec<AssetItem>", length(max = MAX_LINKS))]
    pub assets: Option<Vec<AssetItem>>,
    /// The complete set of categories.
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "categories")]
    pub categories: Option<Vec<String>>,
}

/// Declares the body of an entity below the product: its `identifier`, `name` and `values`
/// (`name` and `values` may be `null`: a new entity is named after its identifier), then
/// `$more`.
macro_rules! child_body {
    ($(#[$doc:meta])* $name:ident { $($more:tt)* }) => {
        #[derive(Debug, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        #[schemars(transform = schema::Required(&["identifier"]))]
        $(#[$doc])*
        pub struct $name {
            // Required: read as any value, so that a missing or non-string one is refused
            // in one message (`variants[0]: field 'identifier' is required and must be a
            // string`).
            #[serde(default)]
            #[schemars(schema_with = "schema::an_identifier")]
            pub identifier: Option<Value>,
            #[serde(default)]
            #[schemars(schema_with = "schema::name")]
            pub name: Option<String>,
            #[serde(default)]
            #[schemars(schema_with = "schema::values")]
            pub values: Option<Map<String, Value>>,
            $($more)*
        }
    };
}

child_body!(
    /// A variant of a product body.
    #[schemars(rename = "VariantInput")]
    VariantBody {
        /// SKUs created or updated under this variant (at most 500 over the product).
        #[serde(default)]
        #[schemars(length(max = MAX_SKUS_PER_PRODUCT))]
        pub skus: Option<Vec<SkuBody>>,
    }
);

child_body!(
    /// A SKU of a variant in a product body.
    #[schemars(rename = "SkuInput")]
    SkuBody {}
);

/// The body of PATCH /skus/{identifier}.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SkuPatch")]
pub struct SkuPatchBody {
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::name")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::values")]
    pub values: Option<Map<String, Value>>,
}

/// `familyId`: a positive integer, or `null` (`Some(None)`).
fn family_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<i64>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(Some(None)),
        v => match v.as_i64().filter(|n| *n > 0) {
            Some(n) => Ok(Some(Some(n))),
            None => Err(serde::de::Error::invalid_type(
                serde::de::Unexpected::Other(&v.to_string()),
                &"a positive integer or null",
            )),
        },
    }
}

fn categories(_: &mut SchemaGenerator) -> Schema {
    schema::identifiers(MAX_LINKS)
}

/// The body of the bulk PATCH /products: product bodies, each with its `identifier`.
pub struct ProductBulk;

impl JsonSchema for ProductBulk {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ProductBulk".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let mut line = ProductBody::json_schema(g);
        if let Some(props) = line.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert("identifier".into(), schema::identifier().to_value());
        }
        line.insert("required".into(), json!(["identifier"]));
        line.remove("description");
        schemars::json_schema!({
            "type": "array",
            "maxItems": MAX_BULK_ITEMS,
            "description": "PATCH /products/{identifier} bodies, each with its `identifier`; or the same objects as NDJSON (`Content-Type: application/x-ndjson`, one per line). At most 1,000 items and 6 MiB (413 beyond, nothing written).",
            "items": line,
        })
    }
}
