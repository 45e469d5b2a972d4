//! A subscription's `changedFields` (decisions.md, "Subscription filters and change
//! payloads"): `name` and attribute selectors in the `attributes` grammar (`product.color`,
//! `sku.price_*`). An `*.updated` event is delivered only when one of them changed; created
//! and deleted events are not affected.

use crate::domain::selection::Selection;
use serde_json::Value;

/// Most fields one subscription may name.
pub const MAX_CHANGED_FIELDS: usize = 50;
/// The field of an entity's own name.
pub const NAME: &str = "name";

/// The body field as sent: `None` when absent, `Some(None)` for `null` (no filter: every
/// update is delivered), else the distinct fields, in order.
pub fn parse(value: Option<&Value>) -> Result<Option<Option<Vec<String>>>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    if value.is_null() {
        return Ok(Some(None));
    }
    let shape = || {
        format!("field 'changedFields' must be null or an array of 1 to {MAX_CHANGED_FIELDS} fields: 'name' or attribute selectors like 'product.color' or 'sku.price_*'")
    };
    let items = value
        .as_array()
        .filter(|a| (1..=MAX_CHANGED_FIELDS).contains(&a.len()))
        .ok_or_else(shape)?;
    let mut fields: Vec<String> = Vec::new();
    for item in items {
        let field = item.as_str().ok_or_else(shape)?;
        if field != NAME {
            selection(std::slice::from_ref(&field.to_string())).map_err(|e| e.message)?;
        }
        if !fields.iter().any(|f| f == field) {
            fields.push(field.to_string());
        }
    }
    Ok(Some(Some(fields)))
}

/// The field's JSON Schema: null, or 1 to [`MAX_CHANGED_FIELDS`] fields (repeats are dropped).
pub fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    use crate::http::schema::{matching, selector};
    let field = matching(&format!("{NAME}|{}", selector()));
    schemars::json_schema!({"type": ["array", "null"], "items": field, "minItems": 1, "maxItems": MAX_CHANGED_FIELDS})
}

fn selection(fields: &[String]) -> Result<Selection, crate::domain::Invalid> {
    Selection::of_field("field 'changedFields'", fields)
}

/// Whether an update that changed `changed` (`name` and `<entity>.<key>`, as the change
/// feed reads them off the stream's images) is one that `fields` asks for.
pub fn any_changed(fields: &[String], changed: &[String]) -> bool {
    fields.iter().any(|field| {
        if field == NAME {
            return changed.iter().any(|c| c == NAME);
        }
        selection(std::slice::from_ref(field))
            .is_ok_and(|s| changed.iter().any(|c| c != NAME && s.keeps(c)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Result<Option<Option<Vec<String>>>, String> {
        parse(Some(&v))
    }

    #[test]
    fn fields_are_the_name_and_attribute_selectors() {
        assert_eq!(parse(None), Ok(None));
        assert_eq!(fields(json!(null)), Ok(Some(None)));
        assert_eq!(
            fields(json!(["name", "sku.price_*", "name"])),
            Ok(Some(Some(vec!["name".into(), "sku.price_*".into()])))
        );
        let shape = "field 'changedFields' must be null or an array of 1 to 50 fields: 'name' or attribute selectors like 'product.color' or 'sku.price_*'";
        assert_eq!(fields(json!([])), Err(shape.into()));
        assert_eq!(fields(json!("name")), Err(shape.into()));
        assert_eq!(fields(json!([1])), Err(shape.into()));
        assert_eq!(
            fields(json!(["color"])),
            Err("field 'changedFields': invalid selector 'color': expected <entity>.<key>, e.g. product.color or sku.price_*".into())
        );
    }

    #[test]
    fn an_update_is_asked_for_when_a_named_field_changed() {
        let asked = |f: &[&str], c: &[&str]| {
            let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
            any_changed(&own(f), &own(c))
        };
        assert!(asked(&["name"], &["name", "product.color"]));
        assert!(!asked(&["name"], &["product.color"]));
        assert!(asked(&["sku.price_*"], &["sku.price_eur"]));
        assert!(!asked(&["sku.price_*"], &["sku.weight", "name"]));
        assert!(asked(&["product.color", "name"], &["product.color"]));
        assert!(!asked(&["product.color"], &[]));
    }
}
