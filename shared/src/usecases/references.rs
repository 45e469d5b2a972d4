//! Metaobject references: a value that names a metaobject must name an existing one (checked
//! on write), `include=metaobjects` sideloads the referenced metaobjects (one batched read per
//! response), and a metaobject still referenced cannot be deleted: the reference counters
//! (`store/counters.rs`) decide in the delete's transaction; the index check below names a
//! referrer first, and is the only guard of references stored before counting existed.

use super::retry::Retry;
use crate::context::Context;
use crate::domain::time::Timestamp;
use crate::domain::values::{referenced_identifiers, StoredValues, ValueChange};
use crate::error::Failure;
use crate::http::render::{to_json, Attributes};
use crate::store::parallel::try_all;
use crate::store::resources::{ResourceItem, Shelf};
use crate::store::{Store, StoreError};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// A metaobject reference: (definition, identifier).
type Ref = (String, String);

/// The metaobjects `changes` set, each with the path that names it in errors. `changes`
/// pairs each entity's changes with its path prefix (`""`, `"variants[0]."`).
fn wanted_refs(changes: &[(String, &[ValueChange])]) -> Vec<(String, Ref)> {
    let mut wanted: Vec<(String, Ref)> = Vec::new();
    for (at, list) in changes {
        for change in list.iter() {
            if let Some((key, def, ids)) = change.metaobject_refs() {
                for id in ids {
                    wanted.push((format!("{at}values.{key}"), (def.to_string(), id)));
                }
            }
        }
    }
    wanted
}

/// Which of `refs` exist: one BatchGetItem round (none for no refs).
async fn existing<'a>(
    store: &Store,
    org: &str,
    refs: impl Iterator<Item = &'a Ref>,
) -> Result<BTreeSet<Ref>, Failure> {
    let keys: Vec<_> = refs
        .map(|(def, id)| Shelf::metaobjects(def).key(org, id))
        .collect();
    if keys.is_empty() {
        return Ok(BTreeSet::new());
    }
    Ok(store
        .get_resources(keys)
        .await?
        .into_iter()
        .filter_map(|m| Some((m.def?, m.id)))
        .collect())
}

fn first_missing(wanted: &[(String, Ref)], found: &BTreeSet<Ref>) -> Result<(), Failure> {
    match wanted.iter().find(|(_, r)| !found.contains(r)) {
        Some((at, (def, id))) => Err(Failure::invalid(format!(
            "{at}: metaobject '{id}' of definition '{def}' does not exist"
        ))),
        None => Ok(()),
    }
}

/// Checks that every metaobject the changes set exists: one BatchGetItem, none when no
/// change names a metaobject.
pub async fn check_exist(
    store: &Store,
    org: &str,
    changes: &[(String, &[ValueChange])],
) -> Result<(), Failure> {
    let wanted = wanted_refs(changes);
    let found = existing(store, org, wanted.iter().map(|(_, r)| r)).await?;
    first_missing(&wanted, &found)
}

/// A commit's failure as a write's answer: a reference to a metaobject deleted since
/// [`check_exist`] (the counters refused it) is that check's 400, naming the field of
/// `changes` that sets it; anything else as usual.
pub fn named(e: StoreError, changes: &[(String, &[ValueChange])]) -> Retry {
    match missing(&e, changes) {
        Some(answer) => Retry::Fail(answer),
        None => Retry::from(e),
    }
}

/// The 400 of a reference to a deleted metaobject (`StoreError::NoMetaobject`), naming the
/// field of `changes` that sets it; `None` for any other failure.
pub fn missing(e: &StoreError, changes: &[(String, &[ValueChange])]) -> Option<Failure> {
    let StoreError::NoMetaobject(def, id) = e else {
        return None;
    };
    let at = wanted_refs(changes)
        .into_iter()
        .find(|(_, (d, i))| d == def && i == id)
        .map_or_else(|| "values".to_string(), |(at, _)| at);
    Some(Failure::invalid(format!(
        "{at}: metaobject '{id}' of definition '{def}' does not exist"
    )))
}

/// [`check_exist`] for many independent writes at once (a bulk request): one BatchGetItem
/// round for all of them, and each write's own outcome.
pub async fn check_exist_each(
    store: &Store,
    org: &str,
    writes: &[Vec<(String, &[ValueChange])>],
) -> Result<Vec<Result<(), Failure>>, Failure> {
    let wanted: Vec<Vec<(String, Ref)>> = writes.iter().map(|w| wanted_refs(w)).collect();
    let found = existing(store, org, wanted.iter().flatten().map(|(_, r)| r)).await?;
    Ok(wanted.iter().map(|w| first_missing(w, &found)).collect())
}

/// The metaobject references in a rendered result: every attribute entry that carries a
/// `metaobjectDefinition`, at any depth (embedded variants and SKUs included).
fn collect(value: &Value, out: &mut BTreeSet<Ref>) {
    match value {
        Value::Object(obj) => {
            if let Some(Value::String(def)) = obj.get("metaobjectDefinition") {
                match obj.get("data") {
                    Some(Value::String(id)) => {
                        out.insert((def.clone(), id.clone()));
                    }
                    Some(Value::Array(ids)) => {
                        for id in ids.iter().filter_map(Value::as_str) {
                            out.insert((def.clone(), id.to_string()));
                        }
                    }
                    _ => {}
                }
                return;
            }
            obj.values().for_each(|v| collect(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        _ => {}
    }
}

/// A metaobject as served: in `included` and on the metaobject endpoints alike.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Metaobject")]
struct MetaobjectView<'a> {
    #[serde(rename = "type")]
    #[schemars(schema_with = "metaobject_const")]
    kind: &'static str,
    /// The metaobject definition it belongs to
    definition: &'a str,
    identifier: &'a str,
    name: &'a str,
    attributes: Attributes<'a>,
    updated_at: Timestamp,
}

fn metaobject_const(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"const": "metaobject"})
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] =
    &[crate::http::schema::answer::<MetaobjectView>];

/// A metaobject as served: in `included` and on the metaobject endpoints alike.
pub fn render_metaobject(m: &ResourceItem) -> Value {
    to_json(MetaobjectView {
        kind: "metaobject",
        definition: m.def.as_deref().unwrap_or_default(),
        identifier: &m.id,
        name: &m.name,
        attributes: Attributes::all("metaobject", &m.values),
        updated_at: m.self_updated_at,
    })
}

/// The metaobjects a rendered `result`'s (already selected) attributes reference, each once,
/// ordered by definition and identifier; `[]` when none. One BatchGetItem round trip when
/// anything is referenced, none otherwise.
pub async fn included(store: &Store, org: &str, result: &Value) -> Result<Value, Failure> {
    let mut refs = BTreeSet::new();
    collect(result, &mut refs);
    let keys = refs
        .iter()
        .map(|(def, id)| Shelf::metaobjects(def).key(org, id))
        .collect();
    let mut found = store.get_resources(keys).await?;
    found.sort_by(|a, b| (&a.def, &a.id).cmp(&(&b.def, &b.id)));
    Ok(Value::Array(found.iter().map(render_metaobject).collect()))
}

fn references(vals: &StoredValues, def: &str, id: &str) -> bool {
    vals.values().any(|a| {
        a.metaobject_definition.as_deref() == Some(def)
            && referenced_identifiers(a).iter().any(|r| r == id)
    })
}

/// The first entity whose values reference metaobject `def`/`id` (`"product 'p1'"`), if any:
/// products, variants and SKUs from the warm list snapshots, bundles and assets from their
/// partitions, read in one round trip.
pub async fn first_referrer(
    cx: &Context,
    org: &str,
    def: &str,
    id: &str,
) -> Result<Option<String>, Failure> {
    let (in_tree, shelves) = crate::store::metrics::in_parallel(async {
        futures_util::try_join!(
            cx.lists.referrer(org, def, id),
            try_all(
                [Shelf::BUNDLES, Shelf::ASSETS]
                    .into_iter()
                    .map(|s| cx.store.list_resources(org, s))
            )
        )
    })
    .await?;
    Ok(in_tree.or_else(|| {
        shelves
            .iter()
            .flatten()
            .find(|r| references(&r.values, def, id))
            .map(|r| format!("{} '{}'", r.kind, r.id))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn collects_references_at_any_depth_once() {
        let result = json!([
            {"attributes": {"product.color": [
                {"value": "red", "data": "red", "type": "metaobject", "metaobjectDefinition": "color"}
            ]}, "variants": [{"attributes": {"variant.tags": [
                {"value": "[\"red\",\"blue\"]", "data": ["red", "blue"], "type": "metaobject",
                 "metaobjectDefinition": "color", "isMulti": true}
            ], "variant.size": [{"value": "M", "data": "M", "type": "text"}]}}]}
        ]);
        let mut refs = BTreeSet::new();
        collect(&result, &mut refs);
        let refs: Vec<Ref> = refs.into_iter().collect();
        assert_eq!(
            refs,
            vec![
                ("color".to_string(), "blue".to_string()),
                ("color".to_string(), "red".to_string())
            ]
        );
    }
}
