//! What changed, for subscriptions with `payload: "changes"` (decisions.md, "Subscription
//! filters and change payloads"): an entity's own state (its name and stored values) read
//! off a stream image, and the delta between the state before the first change a delivery
//! coalesces and after the last: `{"name": {"old", "new"}, "attributes": {"<entity>.<key>":
//! {"old": [entries], "new": [entries]}}}`, only what differs, entries as GET answers show
//! them (`old` null for a created entity, `new` null for a deleted one).

use crate::domain::values::{render_entries, StoredValues};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// Largest body a delivery carries its changes in; past it, `changesOmitted: true`.
pub const MAX_BODY_BYTES: usize = 200_000;
/// Largest state a coalescing window keeps of each side (an item holds at most 400 KB):
/// a larger one is marked omitted in the window.
pub const MAX_STATE_BYTES: usize = 180_000;

/// What a subscription's deliveries carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PayloadKind {
    /// The notice alone (the seed's body).
    #[default]
    Thin,
    /// The notice and `changes`.
    Changes,
}

impl PayloadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadKind::Thin => "thin",
            PayloadKind::Changes => "changes",
        }
    }

    /// The `payload` field of a request body.
    pub fn parse(value: &Value) -> Result<Self, String> {
        match value.as_str() {
            Some("thin") => Ok(PayloadKind::Thin),
            Some("changes") => Ok(PayloadKind::Changes),
            _ => Err(format!(
                "field 'payload' must be \"thin\" (the notice alone) or \"changes\" (with the old and new values); got {value}"
            )),
        }
    }
}

/// An entity's own state as a change payload compares it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "StoredValues::is_empty")]
    pub vals: StoredValues,
}

/// The state in a stream image: its `name` and `vals` (an image that has neither, or whose
/// values do not decode, is an entity with no name and no values).
pub fn state_of(image: &serde_dynamo::Item) -> State {
    decode_fields(image, &["name", "vals"]).unwrap_or_default()
}

/// Only `fields` of an item image decoded as `T` (an item has many more; `None`: they do
/// not decode).
pub fn decode_fields<T: serde::de::DeserializeOwned>(
    image: &serde_dynamo::Item,
    fields: &[&str],
) -> Option<T> {
    let own: std::collections::HashMap<String, serde_dynamo::AttributeValue> = fields
        .iter()
        .filter_map(|k| image.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    serde_dynamo::from_item(serde_dynamo::Item::from(own)).ok()
}

/// A side of a window as the table keeps it: the state's JSON (`null`: the entity did not
/// exist), or `None` when it is too large to keep.
pub fn kept(state: Option<&State>) -> Option<String> {
    let text = serde_json::to_string(&state).ok()?;
    (text.len() <= MAX_STATE_BYTES).then_some(text)
}

/// A kept side back.
pub fn unkept(text: &str) -> Option<Option<State>> {
    serde_json::from_str(text).ok()
}

fn entries(vals: &StoredValues, key: &str) -> Value {
    match vals.get(key) {
        Some(attr) => json!(render_entries(attr)),
        None => json!([]),
    }
}

/// The delta from `old` to `new` of an entity of type `kind` (`None`: it did not exist).
pub fn delta(kind: &str, old: Option<&State>, new: Option<&State>) -> Value {
    let mut out = Map::new();
    let name = |s: Option<&State>| s.and_then(|s| s.name.clone());
    if name(old) != name(new) || old.is_none() != new.is_none() {
        out.insert("name".into(), json!({"old": name(old), "new": name(new)}));
    }
    let empty = StoredValues::new();
    let (ov, nv) = (
        old.map_or(&empty, |s| &s.vals),
        new.map_or(&empty, |s| &s.vals),
    );
    let mut keys: Vec<&String> = ov.keys().chain(nv.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut attributes = Map::new();
    for key in keys {
        if ov.get(key) == nv.get(key) {
            continue;
        }
        let side = |s: Option<&State>, vals: &StoredValues| match s {
            None => Value::Null,
            Some(_) => entries(vals, key),
        };
        attributes.insert(
            format!("{kind}.{key}"),
            json!({"old": side(old, ov), "new": side(new, nv)}),
        );
    }
    if !attributes.is_empty() {
        out.insert("attributes".into(), Value::Object(attributes));
    }
    Value::Object(out)
}

/// Applies a delta to what a consumer holds: `name` and the entries of each attribute, by
/// `<entity>.<key>` (the way a consumer keeps an entity from its deliveries).
pub fn apply(held: &mut Map<String, Value>, delta: &Value) {
    if let Some(name) = delta.get("name") {
        held.insert("name".into(), name["new"].clone());
    }
    if let Some(Value::Object(attributes)) = delta.get("attributes") {
        for (key, change) in attributes {
            match &change["new"] {
                Value::Array(a) if a.is_empty() => {
                    held.remove(key);
                }
                Value::Null => {
                    held.remove(key);
                }
                new => {
                    held.insert(key.clone(), new.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::attributes::AttributeType;
    use crate::domain::values::StoredAttribute;
    use proptest::prelude::*;

    fn text(v: &str) -> StoredAttribute {
        StoredAttribute::single(AttributeType::Text, v)
    }

    fn state(name: Option<&str>, vals: &[(&str, &str)]) -> State {
        State {
            name: name.map(String::from),
            vals: vals.iter().map(|(k, v)| (k.to_string(), text(v))).collect(),
        }
    }

    /// What a consumer holds of a state: its name and each attribute's entries.
    fn held(s: &State, kind: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("name".into(), json!(s.name));
        for key in s.vals.keys() {
            m.insert(format!("{kind}.{key}"), entries(&s.vals, key));
        }
        m
    }

    #[test]
    fn an_update_carries_only_what_differs() {
        let old = state(Some("Chair"), &[("color", "red"), ("size", "L")]);
        let new = state(
            Some("Chair"),
            &[("color", "blue"), ("size", "L"), ("wood", "oak")],
        );
        let d = delta("product", Some(&old), Some(&new));
        assert_eq!(d.get("name"), None);
        let attrs = d["attributes"].as_object().unwrap();
        assert_eq!(
            attrs.keys().collect::<Vec<_>>(),
            vec!["product.color", "product.wood"]
        );
        assert_eq!(attrs["product.color"]["old"][0]["value"], json!("red"));
        assert_eq!(attrs["product.color"]["new"][0]["data"], json!("blue"));
        assert_eq!(attrs["product.wood"]["old"], json!([]));
    }

    #[test]
    fn a_create_has_no_old_and_a_delete_no_new() {
        let s = state(Some("Chair"), &[("color", "red")]);
        let created = delta("sku", None, Some(&s));
        assert_eq!(created["name"], json!({"old": null, "new": "Chair"}));
        assert_eq!(created["attributes"]["sku.color"]["old"], Value::Null);
        let deleted = delta("sku", Some(&s), None);
        assert_eq!(deleted["name"], json!({"old": "Chair", "new": null}));
        assert_eq!(deleted["attributes"]["sku.color"]["new"], Value::Null);
    }

    #[test]
    fn a_state_is_read_off_a_stream_image_and_kept_within_its_bound() {
        let image: serde_dynamo::Item = serde_dynamo::to_item(json!({
            "PK": "O#a#P#chair", "name": "Chair",
            "vals": {"color": {"t": "text", "e": [{"v": "red"}]}}
        }))
        .unwrap();
        let s = state_of(&image);
        assert_eq!(s, state(Some("Chair"), &[("color", "red")]));
        let text = kept(Some(&s)).unwrap();
        assert_eq!(unkept(&text), Some(Some(s)));
        assert_eq!(unkept(&kept(None).unwrap()), Some(None));
        let huge = state(Some("x"), &[("blob", &"x".repeat(MAX_STATE_BYTES))]);
        assert_eq!(kept(Some(&huge)), None);
    }

    fn arb_state() -> impl Strategy<Value = Option<State>> {
        let name = proptest::option::of("[a-c]{1,2}");
        let vals = proptest::collection::btree_map("[a-d]", "[x-z]{1,2}", 0..4);
        proptest::option::of((name, vals).prop_map(|(name, vals)| State {
            name,
            vals: vals.into_iter().map(|(k, v)| (k, text(&v))).collect(),
        }))
    }

    proptest! {
        /// Applying each delivery's delta in order to the first state gives the last.
        #[test]
        fn deltas_applied_in_order_rebuild_the_last_state(states in proptest::collection::vec(arb_state(), 1..6)) {
            let empty = State::default();
            let mut holding = held(states[0].as_ref().unwrap_or(&empty), "product");
            for pair in states.windows(2) {
                apply(&mut holding, &delta("product", pair[0].as_ref(), pair[1].as_ref()));
                let want = held(pair[1].as_ref().unwrap_or(&empty), "product");
                prop_assert_eq!(&holding, &want);
            }
        }
    }
}
