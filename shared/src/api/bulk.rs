//! `PATCH /products` (the collection): many product upserts in one call, each atomic and
//! independent, answered with a status per line. The handler bounds the request, charges
//! the organization's rate limit by its size and takes a bulk-work slot; the writing is the
//! `usecases::bulk` use case, which imports share.

use crate::app::{App, Call};
use crate::domain::limits::MAX_BULK_ENTITIES;
use crate::domain::limits::MAX_BULK_ITEMS;
use crate::error::ApiError;
use crate::http::ApiResponse;
use crate::json_text::BulkItem;
use crate::usecases::bulk::{write_items, LineOutcome};
use serde_json::{json, Value};

/// PATCH /products: up to [`MAX_BULK_ITEMS`] product upserts (a JSON array or NDJSON),
/// answered 200 with one `{line, identifier, status, error?}` per item, in input order.
pub async fn patch_products(app: &'static App, call: &Call) -> Result<ApiResponse, ApiError> {
    let items = call
        .request
        .json_items(app.config.max_bulk_body_bytes, MAX_BULK_ITEMS)?;
    let entities: usize = items.iter().map(tree_entities).sum();
    if entities > MAX_BULK_ENTITIES {
        return Err(ApiError::new(
            413,
            format!(
                "a bulk request writes at most {MAX_BULK_ENTITIES} variants and SKUs in all; this one names {entities}"
            ),
        ));
    }
    // A bulk write costs a token per started group of 10 lines; the call paid one already.
    app.charge(call, crate::domain::rate::lines_cost(items.len()).max(1))
        .await?;
    let deadline = call.request.write_deadline(app.config.write_budget);
    let outcomes = app
        .in_bulk_slot(call, async {
            Ok(write_items(app, call.org(), items, None, &call.origin(), deadline).await?)
        })
        .await?;
    let lines: Vec<Value> = outcomes.iter().map(LineOutcome::render).collect();
    let answer = ApiResponse::json(200, json!({ "result": lines }));
    // Lines the call had no time for: the client sends them again, after a second.
    Ok(if outcomes.iter().any(|o| o.status == 503) {
        answer.with_header("retry-after", "1")
    } else {
        answer
    })
}

/// The variants and SKUs an item's body names.
fn tree_entities(item: &BulkItem) -> usize {
    let Ok(body) = &item.body else { return 0 };
    let Some(Value::Array(variants)) = body.get("variants") else {
        return 0;
    };
    variants.len()
        + variants
            .iter()
            .filter_map(|v| v.get("skus").and_then(Value::as_array))
            .map(Vec::len)
            .sum::<usize>()
}
