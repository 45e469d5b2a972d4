//! Unit tests of the parent module.

use super::*;
use crate::domain::attributes::TargetEntity;

fn defs(list: Vec<AttributeDefinition>) -> HashMap<String, AttributeDefinition> {
    list.into_iter().map(|d| (d.key.clone(), d)).collect()
}

fn def(key: &str, t: AttributeType) -> AttributeDefinition {
    AttributeDefinition::simple(TargetEntity::Product, key, t)
}

fn parse(
    input: Value,
    d: &HashMap<String, AttributeDefinition>,
) -> Result<Vec<ValueChange>, Invalid> {
    parse_values(
        "product",
        input.as_object().unwrap(),
        d,
        &ScopeRules::default(),
    )
}

#[test]
fn plain_text_sets_the_unscoped_value() {
    let d = defs(vec![def("color", AttributeType::Text)]);
    let changes = parse(json!({"color": "Blue"}), &d).unwrap();
    let mut vals = StoredValues::new();
    assert!(apply(&mut vals, &changes));
    let rendered = rendered(&vals["color"]);
    assert_eq!(
        rendered,
        vec![json!({"value": "Blue", "data": "Blue", "type": "text", "locale": null})]
    );
    assert!(
        !apply(&mut vals, &changes),
        "same value again changes nothing"
    );
}

#[test]
fn unknown_key_names_the_attribute() {
    let err = parse(json!({"size": "XL"}), &defs(vec![])).unwrap_err();
    assert_eq!(err.message, "values: unknown attribute 'product.size'");
}

#[test]
fn localized_values_need_a_locale_and_keep_one_entry_per_locale() {
    let mut d = def("title", AttributeType::Text);
    d.shape.is_localized = true;
    let d = defs(vec![d]);
    let err = parse(json!({"title": "Chair"}), &d).unwrap_err();
    assert_eq!(
        err.message,
        "values.title: the attribute is localized: a 'locale' is required"
    );
    let changes = parse(
        json!({"title": [{"locale": "en-US", "value": "Chair"}, {"locale": "de-DE", "value": "Stuhl"}]}),
        &d,
    )
    .unwrap();
    let mut vals = StoredValues::new();
    apply(&mut vals, &changes);
    let locales: Vec<_> = vals["title"]
        .entries
        .iter()
        .map(|e| e.locale.clone().unwrap())
        .collect();
    assert_eq!(locales, vec!["de-DE", "en-US"]);
    let clear = parse(json!({"title": {"locale": "de-DE", "value": null}}), &d).unwrap();
    apply(&mut vals, &clear);
    assert_eq!(vals["title"].entries.len(), 1);
    apply(&mut vals, &parse(json!({"title": null}), &d).unwrap());
    assert!(vals.is_empty());
}

#[test]
fn typed_data_per_decisions() {
    let mut multi = def("tags", AttributeType::Text);
    multi.shape.is_multi = true;
    let d = defs(vec![
        def("price", AttributeType::Price),
        def("weight", AttributeType::Weight),
        def("count", AttributeType::Number),
        def("active", AttributeType::Boolean),
        multi,
    ]);
    let changes = parse(
        json!({"price": "12.50 EUR", "weight": "1.5 kg", "count": 3, "active": true, "tags": ["a", "b"]}),
        &d,
    )
    .unwrap();
    let mut vals = StoredValues::new();
    apply(&mut vals, &changes);
    let data = |k: &str| rendered(&vals[k])[0]["data"].clone();
    assert_eq!(data("price"), json!({"amount": 12.5, "currency": "EUR"}));
    assert_eq!(data("weight"), json!({"value": 1.5, "unit": "kg"}));
    assert_eq!(data("count"), json!(3));
    assert_eq!(data("active"), json!(true));
    assert_eq!(data("tags"), json!(["a", "b"]));
    let tags = &rendered(&vals["tags"])[0];
    assert_eq!(tags["value"], json!("[\"a\",\"b\"]"));
    assert_eq!(tags["isMulti"], json!(true));
}

#[test]
fn invalid_values_name_the_problem() {
    let mut sel = def("size", AttributeType::Select);
    sel.shape.options = vec!["S".into(), "M".into()];
    let d = defs(vec![
        def("price", AttributeType::Price),
        def("color", AttributeType::Color),
        def("link", AttributeType::Url),
        def("count", AttributeType::Number),
        sel,
    ]);
    let cases = [
        (
            json!({"price": "12,50"}),
            "values.price: '12,50' is not a price like \"12.50 EUR\"",
        ),
        (
            json!({"color": "red"}),
            "values.color: 'red' is not a color like \"#1A2B3C\"",
        ),
        (
            json!({"link": "ftp://x"}),
            "values.link: 'ftp://x' is not an absolute http(s) URL",
        ),
        (json!({"count": "many"}), "values.count: expected a number"),
        (
            json!({"size": "XL"}),
            "values.size: 'XL' is not one of the options (S, M)",
        ),
        (
            json!({"count": [1]}),
            "values.count: the attribute is single-value: an array is not allowed",
        ),
    ];
    for (input, msg) in cases {
        assert_eq!(parse(input, &d).unwrap_err().message, msg);
    }
}

/// The entries of an attribute as an answer's JSON shows them.
fn rendered(attr: &StoredAttribute) -> Vec<Value> {
    render_entries(attr)
        .iter()
        .map(|e| serde_json::to_value(e).expect("an entry"))
        .collect()
}
