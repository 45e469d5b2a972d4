//! Write shapes (`--write-shapes N`): what the storage charges for the same items written
//! in each shape a write path could use: unconditional BatchWriteItem (the raw floor),
//! single PutItem with and without a condition, TransactWriteItems of puts with and without
//! conditions, and the bulk route's own packed transactions (`TreeWrite`, `Store::commit`)
//! at 1, 3 and 11 trees per transaction. N fresh trees per shape, each into an empty
//! organization; every shape runs twice, in rounds (the first round also warms up DynamoDB
//! Local's JIT), so that drift shows as the difference between the rounds. The ingestion
//! figures' raw floor and raw transactions rows are two of these shapes.

use super::{define_catalog, rate, tree};
use aws_sdk_dynamodb::types::{Put, PutRequest, TransactWriteItem, WriteRequest};
use catalog::store::writes::{Origin, PackedWrites, TreeWrite};
use catalog_e2e::{stack, Org};
use futures_util::stream::{self, StreamExt};
use std::time::{Duration, Instant};

/// How a shape writes one group of items.
#[derive(Clone, Copy)]
pub enum Shape {
    /// BatchWriteItem of 25 puts.
    Batch,
    /// One PutItem per item; conditioned on the item's absence or not.
    Put { conditional: bool },
    /// TransactWriteItems of `per` puts; conditioned on each item's absence or not.
    Transaction { per: usize, conditional: bool },
    /// The bulk route's own transactions: `trees` trees' writes in one `Store::commit`.
    Trees { trees: usize },
    /// The bulk route's own packing (`PackedWrites`) and commit (`Store::commit_packed`).
    Packed,
}

const PARALLEL: usize = 16;

/// What a fresh tree stores: 5 entities, and the identity items of its variant and 3 SKUs.
const ITEMS_PER_TREE: usize = 9;

/// A transaction of `per` puts, each conditioned on its item's absence or not.
const fn transaction(per: usize, conditional: bool) -> Shape {
    Shape::Transaction { per, conditional }
}

#[rustfmt::skip]
const SHAPES: &[(&str, Shape, usize)] = &[
    ("BatchWriteItem, 25 puts", Shape::Batch, PARALLEL),
    ("PutItem, no condition", Shape::Put { conditional: false }, PARALLEL),
    ("PutItem, attribute_not_exists", Shape::Put { conditional: true }, PARALLEL),
    ("TransactWriteItems, 99 puts, no condition", transaction(99, false), PARALLEL),
    ("TransactWriteItems, 99 puts, attribute_not_exists", transaction(99, true), PARALLEL),
    ("TransactWriteItems, 25 puts, attribute_not_exists", transaction(25, true), PARALLEL),
    ("the bulk route's transactions, 1 tree each", Shape::Trees { trees: 1 }, PARALLEL),
    ("the bulk route's transactions, 3 trees each", Shape::Trees { trees: 3 }, PARALLEL),
    ("the bulk route's transactions, 11 trees each", Shape::Trees { trees: 11 }, PARALLEL),
    ("the bulk route's transactions, 11 trees each", Shape::Trees { trees: 11 }, 4),
];

/// The plans of fresh trees `range`, as the bulk route makes them (the library's own
/// parsing, validation and planner), for the rows that write without the API.
async fn fresh_plans(
    org: &Org,
    range: std::ops::Range<usize>,
) -> Vec<catalog::usecases::tree_patch::Plan> {
    use catalog::domain::attributes::TargetEntity;
    let store = stack().await.store();
    let mut wanted = Vec::new();
    for (e, k) in [
        (TargetEntity::Product, "brand"),
        (TargetEntity::Product, "color"),
        (TargetEntity::Product, "price"),
        (TargetEntity::Product, "material"),
        (TargetEntity::Product, "weight"),
        (TargetEntity::Variant, "size"),
        (TargetEntity::Sku, "price"),
        (TargetEntity::Sku, "ean"),
    ] {
        wanted.push((e, k.to_string()));
    }
    let ctx = store
        .write_context(&org.id, &wanted, &[])
        .await
        .expect("context");
    range
        .map(|i| {
            let mut body = tree(i);
            let id = body["identifier"].as_str().unwrap().to_string();
            body.as_object_mut().unwrap().remove("identifier");
            let body: catalog::usecases::tree_patch::ProductBody =
                serde_json::from_value(body).expect("a product body");
            let raw = catalog::usecases::tree_patch::RawProductPatch::new(&id, &body).unwrap();
            let patch = raw.validate(&ctx).unwrap();
            catalog::usecases::tree_patch::plan(&org.id, &id, None, &patch, true).unwrap()
        })
        .collect()
}

/// Writes `n` fresh trees into a new organization in `shape`, `parallel` requests at once;
/// the time the writes took (the planning before them not counted).
pub async fn write(n: usize, shape: Shape, parallel: usize) -> Duration {
    let store = stack().await.store();
    let org = Org::new().await;
    define_catalog(&org).await;
    let plans = fresh_plans(&org, 0..n).await;
    let table = store.table().to_string();
    if let Shape::Packed = shape {
        let mut packed = PackedWrites::new();
        for (i, plan) in plans.into_iter().enumerate() {
            packed
                .add(i, plan.write)
                .expect("a tree fits a transaction");
        }
        let started = Instant::now();
        let committed = store
            .commit_packed(packed, parallel, &Origin::none(), None)
            .await;
        assert!(
            committed
                .iter()
                .all(|(_, done)| *done == catalog::store::writes::Committed::Yes),
            "a transaction failed"
        );
        return started.elapsed();
    }
    if let Shape::Trees { trees } = shape {
        let mut writes: Vec<TreeWrite> = Vec::new();
        for (i, plan) in plans.into_iter().enumerate() {
            if i % trees == 0 {
                writes.push(TreeWrite::new());
            }
            writes.last_mut().expect("a write").append(plan.write);
        }
        let started = Instant::now();
        stream::iter(writes)
            .map(|w| {
                let store = store.clone();
                async move {
                    store
                        .commit(&w, &Origin::none())
                        .await
                        .expect("a transaction")
                }
            })
            .buffer_unordered(parallel)
            .collect::<Vec<()>>()
            .await;
        return started.elapsed();
    }
    let items: Vec<_> = plans.iter().flat_map(|p| p.write.put_items()).collect();
    assert_eq!(items.len(), n * ITEMS_PER_TREE, "the items of a tree");
    let per = match shape {
        Shape::Batch => 25,
        Shape::Put { .. } => 1,
        Shape::Transaction { per, .. } => per,
        Shape::Trees { .. } | Shape::Packed => unreachable!("written above"),
    };
    let absent = |conditional: bool| conditional.then_some("attribute_not_exists(pk)");
    let started = Instant::now();
    stream::iter(items.chunks(per).map(<[_]>::to_vec))
        .map(|group| {
            let client = store.client().clone();
            let table = table.clone();
            async move {
                match shape {
                    Shape::Batch => {
                        let mut puts: Vec<WriteRequest> = group
                            .into_iter()
                            .map(|item| {
                                let put = PutRequest::builder().set_item(Some(item));
                                WriteRequest::builder()
                                    .put_request(put.build().expect("a put"))
                                    .build()
                            })
                            .collect();
                        while !puts.is_empty() {
                            let out = client
                                .batch_write_item()
                                .request_items(&table, puts)
                                .send()
                                .await
                                .expect("BatchWriteItem");
                            puts = out
                                .unprocessed_items
                                .and_then(|mut left| left.remove(&table))
                                .unwrap_or_default();
                        }
                    }
                    Shape::Put { conditional } => {
                        let item = group.into_iter().next().expect("an item");
                        client
                            .put_item()
                            .table_name(&table)
                            .set_item(Some(item))
                            .set_condition_expression(absent(conditional).map(str::to_string))
                            .send()
                            .await
                            .expect("PutItem");
                    }
                    Shape::Transaction { conditional, .. } => {
                        let actions = group
                            .into_iter()
                            .map(|item| {
                                let put = Put::builder()
                                    .table_name(&table)
                                    .set_item(Some(item))
                                    .set_condition_expression(
                                        absent(conditional).map(str::to_string),
                                    );
                                TransactWriteItem::builder()
                                    .put(put.build().expect("a put"))
                                    .build()
                            })
                            .collect();
                        client
                            .transact_write_items()
                            .set_transact_items(Some(actions))
                            .send()
                            .await
                            .expect("TransactWriteItems");
                    }
                    Shape::Trees { .. } | Shape::Packed => unreachable!("written above"),
                }
            }
        })
        .buffer_unordered(parallel)
        .collect::<Vec<()>>()
        .await;
    started.elapsed()
}

/// Prints the table of write shapes for `n` trees each.
pub async fn write_shapes(n: usize) {
    println!("## Write shapes\n");
    println!(
        "The same fresh trees ({n} per row: {ITEMS_PER_TREE} items each, 5 entities and 4 identity items) written in each shape, into an empty organization per row; every row twice, in two rounds.\n"
    );
    let mut rounds = [Vec::new(), Vec::new()];
    for round in rounds.iter_mut() {
        for (_, shape, parallel) in SHAPES {
            round.push(write(n, *shape, *parallel).await);
        }
    }
    println!("| Shape | in parallel | round 1 entities/s | round 2 entities/s |");
    println!("|---|---|---|---|");
    for (i, (name, _, parallel)) in SHAPES.iter().enumerate() {
        println!(
            "| {name} | {parallel} | {} | {} |",
            rate(n, rounds[0][i]),
            rate(n, rounds[1][i])
        );
    }
    println!();
}
