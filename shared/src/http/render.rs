//! Rendering entities into response objects: attributes with the selection applied,
//! embedded children, and the hierarchy-aware `updatedAt`.

use crate::domain::selection::Selection;
use crate::domain::time::Timestamp;
use crate::domain::values::{render_entries, StoredValues};
use crate::store::items::EntityItem;
use crate::store::products::ProductTree;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The `attributes` object: keys are fully qualified `<entity>.<key>`.
pub fn attributes(entity: &str, vals: &StoredValues, sel: &Selection) -> Map<String, Value> {
    vals.iter()
        .filter_map(|(key, attr)| {
            let qualified = format!("{entity}.{key}");
            sel.keeps(&qualified)
                .then(|| (qualified, Value::Array(render_entries(attr))))
        })
        .collect()
}

/// Every attribute of a resource (asset, bundle, metaobject): no selection applies.
pub fn all_attributes(entity: &str, vals: &StoredValues) -> Map<String, Value> {
    attributes(entity, vals, &Selection::default())
}

fn entity_object(
    item: &EntityItem,
    attrs: Map<String, Value>,
    updated: Timestamp,
) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("identifier".into(), json!(item.id));
    obj.insert("name".into(), json!(item.name));
    obj.insert("attributes".into(), Value::Object(attrs));
    obj.insert("selfUpdatedAt".into(), json!(item.self_updated_at));
    obj.insert("updatedAt".into(), json!(updated));
    obj
}

/// What a product response embeds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Embed {
    pub variants: bool,
    pub skus: bool,
}

/// An embedded SKU: its own attributes only.
fn embedded_sku(s: &EntityItem, v: &EntityItem, p: &EntityItem, sel: &Selection) -> Value {
    Value::Object(entity_object(
        s,
        attributes("sku", &s.values, sel),
        sku_updated(p, v, s),
    ))
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

fn reference(item: &EntityItem) -> Value {
    json!({"identifier": item.id, "name": item.name})
}

/// A product with its embedded variants (and their SKUs) as the tree and `embed` say.
/// Embedded entities carry only their own attributes.
pub fn product(tree: &ProductTree, embed: Embed, sel: &Selection) -> Value {
    let p = &tree.product;
    let mut obj = entity_object(p, attributes("product", &p.values, sel), p.updated_at);
    obj.insert("familyId".into(), json!(p.family_id));
    if let Some(categories) = &p.categories {
        obj.insert("categories".into(), json!(categories));
    }
    if embed.variants {
        let variants: Vec<Value> = tree
            .variants
            .iter()
            .map(|v| {
                let mut vo = entity_object(
                    v,
                    attributes("variant", &v.values, sel),
                    variant_updated(p, v),
                );
                if embed.skus {
                    let skus = skus_of(tree, v)
                        .map(|s| embedded_sku(s, v, p, sel))
                        .collect();
                    vo.insert("skus".into(), Value::Array(skus));
                }
                Value::Object(vo)
            })
            .collect();
        obj.insert("variants".into(), Value::Array(variants));
    }
    Value::Object(obj)
}

/// A variant on the variant endpoints: the product's attributes merged in, a `product`
/// reference, and its SKUs (own attributes only) when `with_skus`. `tree` holds the product
/// and this variant first in `variants`.
pub fn variant(tree: &ProductTree, with_skus: bool, sel: &Selection) -> Value {
    let p = &tree.product;
    let v = &tree.variants[0];
    let mut attrs = attributes("product", &p.values, sel);
    attrs.extend(attributes("variant", &v.values, sel));
    let mut obj = entity_object(v, attrs, variant_updated(p, v));
    obj.insert("product".into(), reference(p));
    if with_skus {
        let skus = skus_of(tree, v)
            .map(|s| embedded_sku(s, v, p, sel))
            .collect();
        obj.insert("skus".into(), Value::Array(skus));
    }
    Value::Object(obj)
}

/// A SKU on the SKU endpoints: product and variant attributes merged in, with `product`
/// and `variant` references. `tree` holds the product, the variant and the SKU.
pub fn sku(tree: &ProductTree, sel: &Selection) -> Value {
    let p = &tree.product;
    let v = &tree.variants[0];
    let s = &tree.skus[0];
    let mut attrs = attributes("product", &p.values, sel);
    attrs.extend(attributes("variant", &v.values, sel));
    attrs.extend(attributes("sku", &s.values, sel));
    let mut obj = entity_object(s, attrs, sku_updated(p, v, s));
    obj.insert("product".into(), reference(p));
    obj.insert("variant".into(), reference(v));
    Value::Object(obj)
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[super::doc::RequestSchema] = &[
    super::schema::answer::<Deleted>,
    super::schema::answer::<WriteResult>,
];

/// What a DELETE answers.
#[derive(Serialize, JsonSchema)]
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
    serde_json::to_value(Deleted {
        identifier: id,
        deleted: true,
    })
    .unwrap_or_default()
}

/// The short result of a product or SKU write.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WriteResult<'a> {
    identifier: &'a str,
    name: &'a str,
    #[schemars(schema_with = "super::schema::time")]
    self_updated_at: Timestamp,
    /// The hierarchy's latest change
    #[schemars(schema_with = "super::schema::time")]
    updated_at: Timestamp,
}

/// The short result of a write: `{identifier, name, selfUpdatedAt, updatedAt}`.
pub fn write_result(item: &EntityItem, updated: Timestamp) -> Value {
    serde_json::to_value(WriteResult {
        identifier: &item.id,
        name: &item.name,
        self_updated_at: item.self_updated_at,
        updated_at: updated,
    })
    .unwrap_or_default()
}
