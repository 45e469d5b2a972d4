//! Many product upserts, each atomic and independent, with a status per line: the bulk
//! PATCH's and an import batch's use case. The single PATCH is its one-item case: the
//! same parsing, validation and write (`tree_patch`, `product_write::upsert_product`); what
//! the bulk path adds is that reads are shared (definitions, scopes, families and referenced
//! metaobjects in one round for the whole request, the product items in one batched read so
//! that a new product costs no tree read) and items are written concurrently.

use super::links;
use super::product_write::{known_tree, plan_write, read, upsert_product};
use super::references;
use super::retry::Retry;
use super::tree_patch::{self, Plan, ProductBody, ProductPatch, RawProductPatch};
use super::write_plan::Writer;
use crate::context::Context;
use crate::domain::identifier;
use crate::error::Failure;
use crate::http::body::typed;
use crate::http::render::to_json;
use crate::json_text::BulkItem;
use crate::store::items::EntityItem;
use crate::store::metrics::in_parallel;
use crate::store::settings::WriteContext;
use crate::store::writes::Origin;
use crate::store::writes::{Committed, PackedWrites};
use futures_util::StreamExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use crate::domain::limits::MAX_ATTRIBUTE_KEYS_PER_WRITE;

/// One line of the answer.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "BulkLine")]
pub struct LineOutcome {
    #[schemars(range(min = 1))]
    pub line: usize,
    /// As sent; null when the line has no string `identifier`
    pub identifier: Option<String>,
    /// What PATCH /products/{identifier} would have answered: 201, 200 or an error status;
    /// 503 when the request ran out of time before this line's write started (nothing of it
    /// is written: send it again, in a new request; the answer then has Retry-After)
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub error: Option<String>,
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] =
    &[crate::http::schema::answer::<LineOutcome>];

impl LineOutcome {
    /// The line as the answer shows it.
    pub fn render(&self) -> Value {
        to_json(self)
    }
}

/// One item of a bulk request by its line: its identifier and body, or why it is refused
/// with the `identifier` it was sent (echoed in the answer when it is a string).
pub type ParsedLine = (
    usize,
    Result<(String, ProductBody), (Option<String>, Failure)>,
);

/// Parses each item: the required `identifier` (checked like a path identifier) taken out,
/// the rest read as a PATCH /products/{identifier} body.
pub fn parse_lines(items: Vec<BulkItem>) -> Vec<ParsedLine> {
    items
        .into_iter()
        .map(|BulkItem { line, body }| {
            let mut body = match body {
                Ok(b) => b,
                Err(e) => return (line, Err((None, e))),
            };
            let Some(Value::String(id)) = body.remove("identifier") else {
                let e = Failure::invalid("field 'identifier' is required and must be a string");
                return (line, Err((None, e)));
            };
            let parsed = identifier::validate("product", &id)
                .map_err(Failure::from)
                .and_then(|()| typed(body));
            match parsed {
                Ok(body) => (line, Ok((id, body))),
                Err(e) => (line, Err((Some(id), e))),
            }
        })
        .collect()
}

/// Structural checks of every parsed item, and the later line of a repeated identifier
/// refused naming the earlier one. Keeps input order.
pub fn shape(
    lines: &[ParsedLine],
) -> Vec<(usize, Option<&str>, Result<RawProductPatch<'_>, Failure>)> {
    let mut first_line: HashMap<&str, usize> = HashMap::new();
    lines
        .iter()
        .map(|(line, parsed)| {
            let (id, body) = match parsed {
                Ok((id, body)) => (id.as_str(), body),
                Err((id, e)) => return (*line, id.as_deref(), Err(e.clone())),
            };
            if let Some(first) = first_line.get(id) {
                let e =
                    Failure::invalid(format!("product '{id}' is given on line {first} already"));
                return (*line, Some(id), Err(e));
            }
            first_line.insert(id, *line);
            (*line, Some(id), RawProductPatch::new(id, body))
        })
        .collect()
}

/// Distinct attribute keys one bulk request (or import batch) may name over all its items:
/// each is one definition read.
const MAX_BULK_ATTRIBUTE_KEYS: usize = 4 * MAX_ATTRIBUTE_KEYS_PER_WRITE;

/// Validates and writes bulk items (the bulk route's body, an import's batch), each atomic
/// and independent; one outcome per item, in order. `source` (an import id) marks the
/// products its lines create, so that a line applied again reports the same status. No
/// write starts after `deadline`: a line not written by then answers [`NOT_STARTED`]'s 503,
/// so the answer always says exactly what was written.
pub async fn write_items(
    cx: &Context,
    org: &str,
    items: Vec<BulkItem>,
    source: Option<&str>,
    origin: &Origin<'_>,
    deadline: Option<Instant>,
) -> Result<Vec<LineOutcome>, Failure> {
    let lines = parse_lines(items);
    let shaped = shape(&lines);

    // One read of everything the valid items name: definitions, scopes, families.
    let mut wanted = Vec::new();
    let mut families = BTreeSet::new();
    let mut shaped = shaped;
    for (_, _, raw) in shaped.iter_mut() {
        if let Ok(r) = raw {
            match tree_patch::distinct_keys(r.wanted()) {
                Ok(keys) => {
                    wanted.extend(keys);
                    families.extend(r.family_id());
                }
                Err(e) => *raw = Err(e),
            }
        }
    }
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.len() > MAX_BULK_ATTRIBUTE_KEYS {
        return Err(Failure::TooLarge(format!(
            "a bulk request (or import batch) names at most {MAX_BULK_ATTRIBUTE_KEYS} distinct attribute keys over all its items; this one names {}",
            wanted.len()
        )));
    }
    let families: Vec<i64> = families.into_iter().collect();
    let ctx = if wanted.is_empty() && families.is_empty() {
        WriteContext::default()
    } else {
        cx.store.write_context(org, &wanted, &families).await?
    };
    let mut checked: Vec<(usize, Option<&str>, Result<ProductPatch, Failure>)> = shaped
        .into_iter()
        .map(|(line, id, raw)| {
            let patch = raw.and_then(|r| r.validate(&ctx)).map(|mut p| {
                p.source = source.map(|s| format!("{s}#{line}"));
                p
            });
            (line, id, patch)
        })
        .collect();

    // One read of every metaobject the valid items reference.
    let valid: Vec<usize> = (0..checked.len())
        .filter(|i| checked[*i].2.is_ok())
        .collect();
    let changes: Vec<_> = valid
        .iter()
        .map(|i| match &checked[*i].2 {
            Ok(p) => p.value_changes(),
            Err(_) => Vec::new(),
        })
        .collect();
    let exist = references::check_exist_each(&cx.store, org, &changes).await?;
    drop(changes);
    for (i, outcome) in valid.into_iter().zip(exist) {
        if let Err(e) = outcome {
            checked[i].2 = Err(e);
        }
    }

    // One batched read of the valid items' product items: a new product needs no tree read.
    let ids: Vec<&str> = checked
        .iter()
        .filter(|(_, _, p)| p.is_ok())
        .filter_map(|(_, id, _)| *id)
        .collect();
    let mut found: HashMap<String, EntityItem> = cx
        .store
        .get_products(org, &ids)
        .await?
        .into_iter()
        .map(|p| (p.id.clone(), p))
        .collect();

    // Every valid line is read (the batched read above has each product item: a line needs
    // a read of its own only for its variants or link targets, all of them in one parallel
    // round), planned, and packed into shared transactions (`PackedWrites`) that the store
    // commits in one call. Each line stays all or nothing. A line whose read or plan fails,
    // whose write is too big for one transaction, or whose transaction fails for any reason
    // (a lost condition, an identifier another line of it also claims) is written again on
    // its own, read to commit, as the single PATCH writes it and answers it.
    let mut outcomes: Vec<Option<LineOutcome>> = vec![None; checked.len()];
    let mut reads = Vec::new();
    // What the batched read found of each line, kept for a line too big to share a
    // transaction: its own write needs no second read of it.
    let mut known: Vec<Option<Option<EntityItem>>> = vec![None; checked.len()];
    let mut reading = false;
    for (i, (line, id, patch)) in checked.iter().enumerate() {
        let (Some(id), Ok(patch)) = (id, patch) else {
            outcomes[i] = Some(refused(*line, *id, patch));
            continue;
        };
        let item = found.remove(*id);
        let first = known_tree(Some(item.clone()), patch);
        reading |= first.is_none() || links::names_any(patch);
        known[i] = Some(item);
        reads.push(async move {
            // A plan refused on what was just read is the line's answer; a failed read, or
            // a lost condition met while planning, is left to the line's own write.
            let plan = match read(cx, org, id, patch, first).await {
                Ok((tree, targets)) => {
                    plan_write(org, id, patch, tree, &targets).map_err(|e| match e {
                        Retry::Fail(e) => Some(e),
                        Retry::Again | Retry::AgainAfterPartial => None,
                    })
                }
                Err(_) => Err(None),
            };
            (i, plan)
        });
    }
    let planning = futures_util::stream::iter(reads)
        .buffer_unordered(cx.config.bulk_concurrency)
        .collect();
    let planned: Vec<(usize, Result<Plan, Option<Failure>>)> = if reading {
        in_parallel(planning).await
    } else {
        planning.await
    };
    let mut packed = PackedWrites::new();
    let mut created = vec![false; checked.len()];
    let mut alone: Vec<(usize, Option<Option<EntityItem>>)> = Vec::new();
    for (i, plan) in planned {
        let plan = match plan {
            Ok(plan) => plan,
            Err(Some(e)) => {
                let (line, id, _) = &checked[i];
                outcomes[i] = Some(failed(*line, *id, e));
                continue;
            }
            Err(None) => {
                alone.push((i, None));
                continue;
            }
        };
        created[i] = plan.created;
        if plan.write.is_empty() {
            outcomes[i] = Some(written(&checked[i], plan.created));
        } else if packed.add(i, plan.write).is_err() {
            alone.push((i, known[i].take()));
        }
    }
    let committed = cx
        .store
        .commit_packed(packed, cx.config.bulk_concurrency, origin, deadline)
        .await;
    for (i, done) in committed {
        match done {
            Committed::Yes => outcomes[i] = Some(written(&checked[i], created[i])),
            Committed::Failed => alone.push((i, None)),
            Committed::NotStarted => outcomes[i] = Some(not_started(&checked[i])),
        }
    }
    alone.sort_by_key(|(i, _)| *i);
    let mut writes = Vec::with_capacity(alone.len());
    for (i, known) in alone {
        let entry = &checked[i];
        let (line, id, patch) = entry;
        writes.push(async move {
            if past(deadline) {
                return (i, not_started(entry));
            }
            (
                i,
                write_line(cx, org, *line, *id, patch, known, origin).await,
            )
        });
    }
    let written: Vec<(usize, LineOutcome)> = futures_util::stream::iter(writes)
        .buffer_unordered(cx.config.bulk_concurrency)
        .collect()
        .await;
    for (i, outcome) in written {
        outcomes[i] = Some(outcome);
    }
    Ok(outcomes
        .into_iter()
        .zip(&checked)
        .map(|(o, (line, id, patch))| o.unwrap_or_else(|| refused(*line, *id, patch)))
        .collect())
}

/// The error of a line whose write had not started when the call's time ran out.
pub const NOT_STARTED: &str =
    "not written: the request ran out of time before this line's write started; send it again";

/// Whether `deadline` has passed.
fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The outcome of a valid line whose write never started: busy, nothing of it written.
fn not_started(
    (line, id, _): &(usize, Option<&str>, Result<ProductPatch, Failure>),
) -> LineOutcome {
    failed(*line, *id, Failure::Busy(NOT_STARTED.to_string()))
}

/// The outcome of an item refused before any write.
fn refused(line: usize, id: Option<&str>, patch: &Result<ProductPatch, Failure>) -> LineOutcome {
    let e = match patch {
        Err(e) => e.clone(),
        Ok(_) => Failure::Internal,
    };
    failed(line, id, e)
}

/// The outcome of an item refused with `e`.
fn failed(line: usize, id: Option<&str>, e: Failure) -> LineOutcome {
    LineOutcome {
        line,
        identifier: id.map(str::to_string),
        status: e.status(),
        error: Some(e.message().to_string()),
    }
}

/// The outcome of a line whose write committed (or had nothing to change).
fn written(
    (line, id, _): &(usize, Option<&str>, Result<ProductPatch, Failure>),
    created: bool,
) -> LineOutcome {
    LineOutcome {
        line: *line,
        identifier: id.map(str::to_string),
        status: if created { 201 } else { 200 },
        error: None,
    }
}

/// Writes one item on its own: read (unless `known` has what the first attempt needs),
/// plan, commit, retry.
async fn write_line(
    cx: &Context,
    org: &str,
    line: usize,
    id: Option<&str>,
    patch: &Result<ProductPatch, Failure>,
    known: Option<Option<EntityItem>>,
    origin: &Origin<'_>,
) -> LineOutcome {
    let (Some(id), Ok(patch)) = (id, patch) else {
        return refused(line, id, patch);
    };
    let w = Writer {
        cx,
        org,
        if_match: None,
        origin: origin.clone(),
    };
    match upsert_product(&w, id, patch, known).await {
        Ok(written) => LineOutcome {
            line,
            identifier: Some(id.to_string()),
            status: written.status(),
            error: None,
        },
        Err(e) => failed(line, Some(id), e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bodies(items: Value) -> Vec<ParsedLine> {
        let items = items
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, v)| BulkItem {
                line: i + 1,
                body: match v {
                    Value::Object(m) => Ok(m.clone()),
                    _ => Err(Failure::invalid("item must be a JSON object")),
                },
            })
            .collect();
        parse_lines(items)
    }

    #[test]
    fn shape_checks_identifiers_duplicates_and_fields() {
        let b = bodies(json!([
            {"identifier": "p1", "name": "A"},
            {"name": "no id"},
            {"identifier": "p1"},
            {"identifier": "p2", "colour": 1},
            {"identifier": " bad"},
            7,
            {"identifier": "p3", "variants": [{"identifier": "v"}, {"identifier": "v"}]},
            {"identifier": "p4", "name": 7}
        ]));
        let shaped = shape(&b);
        let errors: Vec<Option<String>> = shaped
            .iter()
            .map(|(_, _, r)| r.as_ref().err().map(|e| e.message().to_string()))
            .collect();
        assert_eq!(errors[0], None);
        assert_eq!(
            errors[1].as_deref(),
            Some("field 'identifier' is required and must be a string")
        );
        assert_eq!(
            errors[2].as_deref(),
            Some("product 'p1' is given on line 1 already")
        );
        assert!(errors[3]
            .as_deref()
            .unwrap()
            .starts_with("unknown field 'colour'"));
        assert!(errors[4].is_some());
        assert_eq!(errors[5].as_deref(), Some("item must be a JSON object"));
        assert_eq!(
            errors[6].as_deref(),
            Some("variants[1]: variant 'v' is given twice")
        );
        assert_eq!(errors[7].as_deref(), Some("field 'name' must be a string"));
        let ids: Vec<Option<&str>> = shaped.iter().map(|(_, id, _)| *id).collect();
        assert_eq!(
            ids,
            vec![
                Some("p1"),
                None,
                Some("p1"),
                Some("p2"),
                Some(" bad"),
                None,
                Some("p3"),
                Some("p4")
            ]
        );
    }

    #[test]
    fn lines_render_without_error_when_written() {
        let ok = LineOutcome {
            line: 1,
            identifier: Some("p1".into()),
            status: 201,
            error: None,
        };
        assert_eq!(
            ok.render(),
            json!({"line": 1, "identifier": "p1", "status": 201})
        );
        let bad = LineOutcome {
            line: 2,
            identifier: None,
            status: 400,
            error: Some("x".into()),
        };
        assert_eq!(
            bad.render(),
            json!({"line": 2, "identifier": null, "status": 400, "error": "x"})
        );
    }
}
