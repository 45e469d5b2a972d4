//! An export's line as an import line: a rendered product (its `attributes` entries,
//! `selfUpdatedAt` and `updatedAt`, and the same for its embedded variants and SKUs) turned
//! into the body `PATCH /products` takes (`values`), so that a product export with its
//! variants and SKUs imports unchanged (decisions.md, "Exports and gapless sync").

use serde_json::{Map, Value};

/// What a rendered entity carries that no write takes.
const READ_ONLY: &[&str] = &["selfUpdatedAt", "updatedAt"];

/// `body` in the write shape: a line with `selfUpdatedAt` is a rendered product (an export's
/// line) and is rewritten; any other is left as it is.
pub fn as_patch(mut body: Map<String, Value>) -> Map<String, Value> {
    if body.contains_key("selfUpdatedAt") {
        entity(&mut body);
    }
    body
}

fn entity(body: &mut Map<String, Value>) {
    for field in READ_ONLY {
        body.remove(*field);
    }
    if let Some(Value::Object(attributes)) = body.remove("attributes") {
        body.entry("values")
            .or_insert_with(|| Value::Object(values(attributes)));
    }
    for children in ["variants", "skus"] {
        if let Some(Value::Array(items)) = body.get_mut(children) {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                entity(item);
            }
        }
    }
}

/// `attributes` (`{"product.color": [entries]}`) as `values` (`{"color": …}`): the plain
/// value when the attribute has one unscoped entry, else an entry object per locale and
/// channel.
fn values(attributes: Map<String, Value>) -> Map<String, Value> {
    attributes
        .into_iter()
        .filter_map(|(key, entries)| {
            let name = key
                .split_once('.')
                .map_or(key.as_str(), |(_, k)| k)
                .to_string();
            let entries = entries.as_array()?;
            let scope = |e: &Value, field: &str| e.get(field).filter(|v| !v.is_null()).cloned();
            let unscoped = entries
                .iter()
                .all(|e| scope(e, "locale").is_none() && scope(e, "channel").is_none());
            let value = match entries.as_slice() {
                [one] if unscoped => written(one),
                _ => Value::Array(
                    entries
                        .iter()
                        .map(|e| {
                            let mut o = Map::new();
                            for field in ["locale", "channel"] {
                                if let Some(v) = scope(e, field) {
                                    o.insert(field.into(), v);
                                }
                            }
                            o.insert("value".into(), written(e));
                            Value::Object(o)
                        })
                        .collect(),
                ),
            };
            Some((name, value))
        })
        .collect()
}

/// An entry's value as written: numbers and booleans are their `data`; every other type
/// writes its raw `value` (prices `"12.50 EUR"`, weights `"1.5 kg"`, a metaobject's
/// identifier), a multi-value attribute the array its `value` encodes.
fn written(entry: &Value) -> Value {
    match entry["type"].as_str() {
        Some("number" | "boolean") => entry["data"].clone(),
        _ if entry["isMulti"] == Value::Bool(true) => entry["value"]
            .as_str()
            .and_then(|raw| serde_json::from_str(raw).ok())
            .unwrap_or(Value::Null),
        _ => entry["value"].clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_rendered_product_becomes_its_patch_body() {
        let line = json!({
            "identifier": "chair", "name": "Chair", "familyId": 1, "categories": ["seating"],
            "selfUpdatedAt": "2026-11-27T10:00:00.000Z", "updatedAt": "2026-11-27T10:00:01.000Z",
            "attributes": {
                "product.color": [{"value": "Blue", "data": "Blue", "type": "text", "locale": null}],
                "product.title": [
                    {"value": "Chair", "data": "Chair", "type": "text", "locale": "en-US"},
                    {"value": "Stuhl", "data": "Stuhl", "type": "text", "locale": "de-DE", "channel": "web"}
                ],
                "product.tags": [{"value": "[\"a\",\"b\"]", "data": ["a", "b"], "type": "text", "locale": null, "isMulti": true}],
                "product.weight": [{"value": "12.5", "data": 12.5, "type": "number", "locale": null}]
            },
            "variants": [{
                "identifier": "chair-m", "name": "M", "selfUpdatedAt": "x", "updatedAt": "y",
                "attributes": {"variant.size": [{"value": "M", "data": "M", "type": "select", "locale": null}]},
                "skus": [{
                    "identifier": "chair-m-1", "name": "1", "selfUpdatedAt": "x", "updatedAt": "y",
                    "attributes": {"sku.price": [{"value": "12.50 EUR", "data": {"amount": 12.5, "currency": "EUR"}, "type": "price", "locale": null}]}
                }]
            }]
        });
        assert_eq!(
            Value::Object(as_patch(object(line))),
            json!({
                "identifier": "chair", "name": "Chair", "familyId": 1, "categories": ["seating"],
                "values": {
                    "color": "Blue",
                    "title": [{"locale": "en-US", "value": "Chair"}, {"locale": "de-DE", "channel": "web", "value": "Stuhl"}],
                    "tags": ["a", "b"],
                    "weight": 12.5
                },
                "variants": [{
                    "identifier": "chair-m", "name": "M", "values": {"size": "M"},
                    "skus": [{"identifier": "chair-m-1", "name": "1", "values": {"price": "12.50 EUR"}}]
                }]
            })
        );
        // a patch body is left as it is
        let body = json!({"identifier": "p", "attributes": {"x": 1}, "values": {"color": "Red"}});
        assert_eq!(Value::Object(as_patch(object(body.clone()))), body);
    }
}
