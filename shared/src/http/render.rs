//! Rendering entities into response objects: attributes with the selection applied,
//! embedded children, and the hierarchy-aware `updatedAt`. Every answer here is a type
//! whose JSON Schema the OpenAPI document derives ([`ANSWERS`]).

use crate::domain::selection::Selection;
use crate::domain::time::Timestamp;
use crate::domain::values::{render_entries, AttributeEntry, StoredValues};
use crate::store::items::EntityItem;
use crate::store::products::ProductTree;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Fully qualified `<entity>.<key>` to the entries that hold a value.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Attributes<'a>(BTreeMap<String, Vec<AttributeEntry<'a>>>);

impl<'a> Attributes<'a> {
    /// The attributes of `vals` that `sel` keeps, qualified by `entity`.
    pub fn of(entity: &str, vals: &'a StoredValues, sel: &Selection) -> Self {
        Self(
            vals.iter()
                .filter_map(|(key, attr)| {
                    let qualified = format!("{entity}.{key}");
                    sel.keeps(&qualified)
                        .then(|| (qualified, render_entries(attr)))
                })
                .collect(),
        )
    }

    /// Every attribute of a resource (asset, bundle, metaobject): no selection applies.
    pub fn all(entity: &str, vals: &'a StoredValues) -> Self {
        Self::of(entity, vals, &Selection::default())
    }

    /// These and `more` (an ancestor's merged in).
    fn and(mut self, more: Self) -> Self {
        self.0.extend(more.0);
        self
    }
}

/// What a product response embeds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Embed {
    pub variants: bool,
    pub skus: bool,
}

/// `updatedAt` of a variant: its tree's changes and its product's own changes.
pub fn variant_updated(p: &EntityItem, v: &EntityItem) -> Timestamp {
    v.updated_at.max(p.self_updated_at)
}

/// `updatedAt` of a SKU: its own changes and its ancestors' own changes.
pub fn sku_updated(p: &EntityItem, v: &EntityItem, s: &EntityItem) -> Timestamp {
    s.updated_at.max(v.self_updated_at).max(p.self_updated_at)
}

fn skus_of<'a>(tree: &'a ProductTree, v: &'a EntityItem) -> impl Iterator<Item = &'a EntityItem> {
    tree.skus
        .iter()
        .filter(move |s| s.vid.as_deref() == Some(v.id.as_str()))
}

/// What every product, variant and SKU answer has.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Own<'a> {
    identifier: &'a str,
    name: &'a str,
    attributes: Attributes<'a>,
    /// The entity's own latest change
    self_updated_at: Timestamp,
    /// The latest change of the entity, its ancestors' own fields or (products and variants) anything below it
    updated_at: Timestamp,
}

impl<'a> Own<'a> {
    fn of(item: &'a EntityItem, attributes: Attributes<'a>, updated_at: Timestamp) -> Self {
        Self {
            identifier: &item.id,
            name: &item.name,
            attributes,
            self_updated_at: item.self_updated_at,
            updated_at,
        }
    }
}

/// A product as served.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Product")]
struct ProductView<'a> {
    #[serde(flatten)]
    own: Own<'a>,
    /// The product's family; null when it has none
    family_id: Option<i64>,
    /// Identifiers of the categories it is in; absent until it is put in one
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    categories: Option<&'a [String]>,
    /// With `include=variants` (their SKUs with `include=skus`)
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<VariantView<'a>>")]
    variants: Option<Vec<VariantView<'a>>>,
}

/// A variant: embedded, its own attributes; on the variant endpoints, its product's merged in and a `product` reference
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Variant")]
struct VariantView<'a> {
    #[serde(flatten)]
    own: Own<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Reference<'a>")]
    product: Option<Reference<'a>>,
    /// With `include=skus`
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<SkuView<'a>>")]
    skus: Option<Vec<SkuView<'a>>>,
}

/// A SKU: embedded, its own attributes; on the SKU endpoints, its ancestors' merged in and `product` and `variant` references
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Sku")]
struct SkuView<'a> {
    #[serde(flatten)]
    own: Own<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Reference<'a>")]
    product: Option<Reference<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Reference<'a>")]
    variant: Option<Reference<'a>>,
}

/// An entity's parent, named.
#[derive(Serialize, JsonSchema)]
struct Reference<'a> {
    identifier: &'a str,
    name: &'a str,
}

impl<'a> Reference<'a> {
    fn to(item: &'a EntityItem) -> Self {
        Self {
            identifier: &item.id,
            name: &item.name,
        }
    }
}

/// An embedded SKU: its own attributes only.
fn embedded_sku<'a>(
    s: &'a EntityItem,
    v: &EntityItem,
    p: &EntityItem,
    sel: &Selection,
) -> SkuView<'a> {
    SkuView {
        own: Own::of(
            s,
            Attributes::of("sku", &s.values, sel),
            sku_updated(p, v, s),
        ),
        product: None,
        variant: None,
    }
}

/// The JSON of an answer type. Answer types have only string keys, so this never fails.
pub fn to_json(answer: impl Serialize) -> Value {
    serde_json::to_value(answer).unwrap_or_default()
}

/// A product with its embedded variants (and their SKUs) as the tree and `embed` say.
/// Embedded entities carry only their own attributes.
pub fn product(tree: &ProductTree, embed: Embed, sel: &Selection) -> Value {
    let p = &tree.product;
    let variants = embed.variants.then(|| {
        tree.variants
            .iter()
            .map(|v| VariantView {
                own: Own::of(
                    v,
                    Attributes::of("variant", &v.values, sel),
                    variant_updated(p, v),
                ),
                product: None,
                skus: embed.skus.then(|| {
                    skus_of(tree, v)
                        .map(|s| embedded_sku(s, v, p, sel))
                        .collect()
                }),
            })
            .collect()
    });
    to_json(ProductView {
        own: Own::of(p, Attributes::of("product", &p.values, sel), p.updated_at),
        family_id: p.family_id,
        categories: p.categories.as_deref(),
        variants,
    })
}

/// A variant on the variant endpoints: the product's attributes merged in, a `product`
/// reference, and its SKUs (own attributes only) when `with_skus`. `tree` holds the product
/// and this variant first in `variants`.
pub fn variant(tree: &ProductTree, with_skus: bool, sel: &Selection) -> Value {
    let p = &tree.product;
    let v = &tree.variants[0];
    let attributes =
        Attributes::of("product", &p.values, sel).and(Attributes::of("variant", &v.values, sel));
    to_json(VariantView {
        own: Own::of(v, attributes, variant_updated(p, v)),
        product: Some(Reference::to(p)),
        skus: with_skus.then(|| {
            skus_of(tree, v)
                .map(|s| embedded_sku(s, v, p, sel))
                .collect()
        }),
    })
}

/// A SKU on the SKU endpoints: product and variant attributes merged in, with `product`
/// and `variant` references. `tree` holds the product, the variant and the SKU.
pub fn sku(tree: &ProductTree, sel: &Selection) -> Value {
    let p = &tree.product;
    let v = &tree.variants[0];
    let s = &tree.skus[0];
    let attributes = Attributes::of("product", &p.values, sel)
        .and(Attributes::of("variant", &v.values, sel))
        .and(Attributes::of("sku", &s.values, sel));
    to_json(SkuView {
        own: Own::of(s, attributes, sku_updated(p, v, s)),
        product: Some(Reference::to(p)),
        variant: Some(Reference::to(v)),
    })
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[super::doc::RequestSchema] = &[
    super::schema::answer::<ProductView>,
    super::schema::answer::<VariantView>,
    super::schema::answer::<SkuView>,
    super::schema::answer::<Deleted>,
    super::schema::answer::<WriteResult>,
];

/// What a DELETE answers (as the schema `DeleteResult`: a generated client names its model
/// after the schema, and a model named like its `deleted` field is code that does not type).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "DeleteResult")]
struct Deleted<'a> {
    identifier: &'a str,
    #[schemars(schema_with = "always")]
    deleted: bool,
}

fn always(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"const": true})
}

/// `{"result": {"identifier": ..., "deleted": true}}`.
pub fn deleted(id: &str) -> Value {
    to_json(Deleted {
        identifier: id,
        deleted: true,
    })
}

/// The short result of a product or SKU write.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WriteResult<'a> {
    identifier: &'a str,
    name: &'a str,
    self_updated_at: Timestamp,
    /// The hierarchy's latest change
    updated_at: Timestamp,
}

/// The short result of a write: `{identifier, name, selfUpdatedAt, updatedAt}`.
pub fn write_result(item: &EntityItem, updated: Timestamp) -> Value {
    to_json(WriteResult {
        identifier: &item.id,
        name: &item.name,
        self_updated_at: item.self_updated_at,
        updated_at: updated,
    })
}
