//! `--history N`: the change feed's cost of history (issue 42). N product writes (a third
//! creations, a third updates, a third deletions) in an organization with no subscription,
//! so the feed's work per batch is its subscriptions Query and the history: its
//! BatchWriteItem requests and, for deletions, the tombstones' BatchGetItem. Summed from the
//! feed's `change-feed batch` log lines; then the cost of reading one product's history page.

use super::events::{feed_cost, log_len};
use catalog_e2e::webhooks::eventually;
use catalog_e2e::Org;
use futures_util::stream::{self, StreamExt};
use serde_json::json;
use std::time::Duration;

pub async fn history(n: usize, timeout: Duration) {
    let log = std::path::PathBuf::from(std::env::var("CATALOG_E2E_LOG_DIR").unwrap())
        .join("change-feed.log");
    println!("## History: {n} product writes, the change feed's cost\n");
    let org = Org::new().await;
    org.define(
        json!({"key": "color", "displayName": "Color", "targetEntity": "product", "type": "text"}),
    )
    .await;
    let from = log_len(&log);
    let third = (n / 3).max(1);
    let ids: Vec<String> = (0..third).map(|i| format!("h{i:06}")).collect();
    for (phase, what) in ["create", "update", "delete"].into_iter().enumerate() {
        stream::iter(&ids)
            .map(|id| {
                let org = &org;
                async move {
                    let path = format!("/v1/products/{id}");
                    let r = match phase {
                        0 => {
                            org.patch(&path, json!({"name": id, "values": {"color": "red"}}))
                                .await
                        }
                        1 => org.patch(&path, json!({"values": {"color": "blue"}})).await,
                        _ => org.delete(&path).await,
                    };
                    assert!(
                        r.status == 200 || r.status == 201,
                        "{what} {id}: {:?}",
                        r.body
                    );
                }
            })
            .buffer_unordered(4)
            .collect::<Vec<()>>()
            .await;
    }
    // every product's history holds its three entries once the last deletion's is written
    let last = ids.last().unwrap();
    eventually(
        "the last deletion's history",
        timeout.max(Duration::from_secs(120)),
        || async {
            let r = org.get(&format!("/v1/products/{last}/history")).await;
            (r.body["result"].as_array().map_or(0, Vec::len) == 3).then_some(())
        },
    )
    .await;
    // the feed may still log the batch it wrote that entry in: one moment for its line
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cost = feed_cost(&log, from);
    let per = |x: u64| x as f64 / cost.changes.max(1) as f64;
    // one organization: each batch with changes reads its subscriptions once; the rest is
    // the history's (BatchWriteItem, and BatchGetItem of tombstones for deletions)
    let history = cost.requests.saturating_sub(cost.batches);
    println!("| writes | changes | batches | history entries | DynamoDB requests per change (of them history's) | ms per change |\n|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {} | {} | {:.2} ({:.2}) | {:.2} |\n",
        3 * third,
        cost.changes,
        cost.batches,
        cost.history,
        per(cost.requests),
        per(history),
        per(cost.ms)
    );
    let r = org.get(&format!("/v1/products/{last}/history")).await;
    println!(
        "A product's history page (3 entries): {} DynamoDB request(s).\n",
        r.ddb_requests()
    );
}
