//! Rendering entities into response objects: attributes with the selection applied,
//! embedded children, and the hierarchy-aware `updatedAt`.

use crate::domain::selection::Selection;
use crate::domain::time::Timestamp;
use crate::domain::values::{render_entries, StoredValues};
use crate::store::items::EntityItem;
use crate::store::products::ProductTree;
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

fn entity_object(
    item: &EntityItem,
    attrs: Map<String, Value>,
    updated: Timestamp,
) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("identifier".into(), json!(item.id));
    obj.insert("name".into(), json!(item.name));
    obj.insert("attributes".into(), Value::Object(attrs));
    obj.insert("selfUpdatedAt".into(), json!(item.su));
    obj.insert("updatedAt".into(), json!(updated));
    obj
}

/// What a product response embeds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Embed {
    pub variants: bool,
    pub skus: bool,
}

/// A product with its embedded variants (and their SKUs) as the tree and `embed` say.
/// Embedded entities carry only their own attributes.
pub fn product(tree: &ProductTree, embed: Embed, sel: &Selection) -> Value {
    let p = &tree.product;
    let mut obj = entity_object(p, attributes("product", &p.vals, sel), p.tu);
    obj.insert("familyId".into(), json!(p.family_id));
    if embed.variants {
        let variants: Vec<Value> = tree
            .variants
            .iter()
            .map(|v| {
                let mut vo = entity_object(v, attributes("variant", &v.vals, sel), v.tu.max(p.su));
                if embed.skus {
                    let skus: Vec<Value> = tree
                        .skus
                        .iter()
                        .filter(|s| s.vid.as_deref() == Some(v.id.as_str()))
                        .map(|s| {
                            let updated = s.tu.max(v.su).max(p.su);
                            Value::Object(entity_object(
                                s,
                                attributes("sku", &s.vals, sel),
                                updated,
                            ))
                        })
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

/// The short result of a write: `{identifier, name, selfUpdatedAt, updatedAt}`.
pub fn write_result(item: &EntityItem, updated: Timestamp) -> Value {
    json!({
        "identifier": item.id,
        "name": item.name,
        "selfUpdatedAt": item.su,
        "updatedAt": updated,
    })
}
