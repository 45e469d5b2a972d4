//! Metaobject writes: a PUT creates or replaces one against its definition's fields, and a
//! DELETE is refused while anything references it. The handlers answer what they did.

use super::etags;
use super::references::first_referrer;
use super::retry::Retry;
use super::write_plan::{WritePlan, Writer};
use crate::domain::time::Timestamp;
use crate::domain::values::{self, ScopeRules, StoredValues};
use crate::error::Failure;
use crate::store::metaobjects::MetaobjectDefinition;
use crate::store::metrics::in_parallel;
use crate::store::resources::{ResourceItem, Shelf};
use crate::store::settings::Scopes;
use crate::store::writes::{Either, Expect, ResourcePut, TreeWrite};
use serde_json::{Map, Value};

/// The 404 of a definition that does not exist.
pub fn definition_not_found(name: &str) -> Failure {
    Failure::NotFound(format!("metaobject definition '{name}' not found"))
}

/// The 404 of a metaobject that does not exist.
pub fn not_found(def: &str, id: &str) -> Failure {
    Failure::NotFound(format!("metaobject '{id}' of definition '{def}' not found"))
}

/// Creates or replaces the metaobject `id` of definition `def`: `display` its name and
/// `input` the complete set of its values, validated against the definition's fields and
/// the organization's languages; whether it was created, and the metaobject as stored.
/// Reads the definition, the scopes and the metaobject in one round trip, then one
/// conditional PutItem (none when nothing changed; a transaction when it is created, which
/// opens its reference counters).
pub async fn put(
    w: &Writer<'_>,
    def: &str,
    id: &str,
    display: &str,
    input: Option<&Map<String, Value>>,
) -> Result<(bool, ResourceItem), Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    let shelf = Shelf::metaobjects(def);
    let read = || async move {
        in_parallel(async {
            futures_util::try_join!(
                cx.store.get_metaobject_definition(org, def),
                cx.store.get_scopes(org),
                cx.store.get_resource(org, shelf, id)
            )
        })
        .await
    };
    let plan = |(found, scopes, existing): (
        Option<MetaobjectDefinition>,
        Scopes,
        Option<ResourceItem>,
    )| {
        let found = found.ok_or_else(|| definition_not_found(def))?;
        etags::check(
            if_match,
            existing.as_ref().map(etags::resource).as_deref(),
            "metaobject",
        )?;
        let languages = scopes.language_codes();
        let rules = ScopeRules {
            languages: Some(&languages),
            channels: Some(&[]),
        };
        let mut vals = StoredValues::new();
        if let Some(m) = input {
            let changes =
                values::parse_values("metaobject", m, &found.field_definitions(), &rules)?;
            values::apply(&mut vals, &changes);
        }
        let at = Timestamp::next_after(existing.as_ref().map(|m| m.updated_at));
        let (mut item, expect) = match existing {
            Some(m) => {
                let ver = m.ver;
                (m, Expect::Version(ver))
            }
            None => (
                ResourceItem::new(org, shelf, id, display, at),
                Expect::Absent,
            ),
        };
        let created = expect == Expect::Absent;
        if !created && item.name == display && item.values == vals {
            return Ok(WritePlan {
                write: Either::Left(TreeWrite::new()),
                outcome: (false, item),
            });
        }
        item.name = display.to_string();
        item.values = vals;
        item.touch(at);
        let outcome = (created, item.clone());
        let write = if created {
            // a deleted metaobject of this identifier left its counters closed
            let mut write = TreeWrite::new();
            write.put_resource(org, &item, expect)?;
            write.open_counters(org, &item)?;
            Either::Left(write)
        } else {
            Either::Right(ResourcePut { item, expect })
        };
        Ok(WritePlan { write, outcome })
    };
    let what = format!("metaobject '{def}/{id}'");
    w.run(&what, read, plan, Retry::from).await
}

/// Deletes the metaobject `id` of definition `def`: 409 while any product, variant, SKU,
/// bundle or asset value references it. The reference counters decide, in the delete's
/// transaction (`store/counters.rs`); the index check before it names a referrer when the
/// index already shows one, and is the only guard of references stored before counting.
pub async fn delete(w: &Writer<'_>, def: &str, id: &str) -> Result<(), Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    // the referrer is looked for only once the metaobject and If-Match are known to hold
    let read = || async move {
        let m = cx
            .store
            .get_resource(org, Shelf::metaobjects(def), id)
            .await?
            .ok_or_else(|| not_found(def, id));
        let m = etags::checked(if_match, m, etags::resource, "metaobject")?;
        let by = first_referrer(cx, org, def, id).await?;
        Ok::<_, Failure>((m, by))
    };
    let plan = |(m, by): (ResourceItem, Option<String>)| {
        if let Some(by) = by {
            return Err(Failure::conflict(format!(
                "metaobject '{id}' of definition '{def}' is still referenced by {by}; remove the references first"
            )));
        }
        let mut write = TreeWrite::new();
        write.delete_metaobject(org, &m)?;
        Ok(WritePlan { write, outcome: () })
    };
    let what = format!("metaobject '{def}/{id}'");
    w.run(&what, read, plan, Retry::from).await
}
