//! List checkpoints (issue 30, issue 44 items 1-2; docs/scaling.md, "Checkpoints"): the
//! checkpoint builder (its own function, on a schedule) writes a checkpoint of each list a
//! serving process asked for after its full read; a serving process never writes one. A
//! cold process loads it and reads only the changes after it. Its lists equal, answer for
//! answer, those of a process that read the index in full, with deletes, renames, new
//! entities and descendant changes made between the checkpoint and the load; and its first
//! call costs the delta Queries instead of the full read. The builder writes the checkpoint
//! again once 5 % of a type changed, and never over a newer one. A warm process's reload
//! takes a checkpoint of a newer full read instead of reading the index again.

use catalog_e2e::imports::{imports, s3_client, BUCKET};
use catalog_e2e::local::scheduled_event;
use catalog_e2e::webhooks::moto;
use catalog_e2e::{encode, invoke, send_to, Org, Request, Response};
use serde_json::{json, Value};
use std::time::Duration;

/// The position of the checkpoint at `key` (its `synced` metadata), once there is one.
async fn synced(s3: &aws_sdk_s3::Client, key: &str) -> Option<i64> {
    let head = s3.head_object().bucket(BUCKET).key(key).send().await.ok()?;
    let synced = head
        .metadata()?
        .get(catalog::imports::checkpoints::SYNCED)?;
    synced.parse().ok()
}

/// Whether there is an object at `key`.
async fn exists(s3: &aws_sdk_s3::Client, key: &str) -> bool {
    s3.head_object()
        .bucket(BUCKET)
        .key(key)
        .send()
        .await
        .is_ok()
}

/// Writes `n` products, `name(i)` giving each its identifier and name, in one bulk call.
async fn seed(org: &Org, n: usize, name: impl Fn(usize) -> (String, String)) {
    let items: Vec<Value> = (0..n)
        .map(|i| {
            let (identifier, name) = name(i);
            json!({"identifier": identifier, "name": name})
        })
        .collect();
    let r = org.patch("/v1/products", Value::Array(items)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// Deletes the note at `key`, as the bucket's lifecycle does a day after its last refresh.
async fn forget_note(s3: &aws_sdk_s3::Client, key: &str) {
    s3.delete_object()
        .bucket(BUCKET)
        .key(key)
        .send()
        .await
        .expect("the note deleted");
}

/// Runs the checkpoint builder over `org`'s lists, as its schedule does over every
/// organization's; its report.
async fn build(org: &Org) -> Value {
    let mut event = scheduled_event();
    event["org"] = json!(org.id);
    invoke("checkpoint-builder@ckpt", event).await
}

/// Copies `from`'s product checkpoint, once built, over `to`'s (its metadata with it).
async fn copy_product_checkpoint(from: &Org, to: &Org) {
    let s3 = s3_client(moto());
    let key = |org: &Org| format!("checkpoints/{}/product/2", org.id);
    written(&s3, &key(from)).await;
    s3.copy_object()
        .bucket(BUCKET)
        .copy_source(format!("{BUCKET}/{}", key(from)))
        .key(key(to))
        .send()
        .await
        .expect("copied");
}

/// The position of the checkpoint at `key` once a build is over: it must be there.
async fn written(s3: &aws_sdk_s3::Client, key: &str) -> i64 {
    synced(s3, key)
        .await
        .unwrap_or_else(|| panic!("no checkpoint at {key}"))
}

/// Product `i` with a variant and two SKUs, colored by `i`.
fn tree(i: usize) -> Value {
    let p = format!("c{i:03}");
    let color = ["red", "blue", "green"][i % 3];
    json!({"identifier": p, "name": format!("Chair {i}"),
           "values": {"color": color},
           "variants": [{"identifier": format!("{p}-v"), "skus": [
               {"identifier": format!("{p}-s0"), "values": {"size": "S"}},
               {"identifier": format!("{p}-s1"), "values": {"size": "M"}}]}]})
}

async fn get(org: &Org, function: &str, path: &str) -> Response {
    let r = send_to(function, Request::new("GET", path).bearer(&org.key)).await;
    assert_eq!(r.status, 200, "{function} {path}: {:?}", r.body);
    r
}

/// `get`, once `function`'s process has loaded the list, with the DynamoDB requests of
/// every call it took: a full read of 5-item pages can take more than one call's budget on
/// a busy machine, each answered 503 until it is done.
async fn loaded(org: &Org, function: &str, path: &str) -> (Response, u32) {
    let mut requests = 0;
    for _ in 0..60 {
        let r = send_to(function, Request::new("GET", path).bearer(&org.key)).await;
        requests += r.ddb_requests();
        if r.status != 503 {
            assert_eq!(r.status, 200, "{function} {path}: {:?}", r.body);
            return (r, requests);
        }
    }
    panic!("{function} {path}: still loading after 60 calls");
}

/// Every list the test compares, on `function`'s process.
async fn lists(org: &Org, function: &str) -> Vec<Value> {
    let red =
        encode(&json!({"product.color": [{"operator": "EQUALS", "value": "red"}]}).to_string());
    let mut out = Vec::new();
    for path in [
        "/v1/products?limit=200".to_string(),
        "/v1/products?limit=200&page=2".into(),
        format!("/v1/products?limit=200&search={red}"),
        "/v1/variants?limit=200".into(),
        "/v1/skus?limit=200".into(),
        "/v1/skus?limit=200&page=2".into(),
        format!("/v1/skus?limit=200&search={red}"),
    ] {
        let function = if path.starts_with("/v1/products") {
            function.to_string()
        } else {
            function.replacen(
                "products",
                if path.starts_with("/v1/variants") {
                    "variants"
                } else {
                    "skus"
                },
                1,
            )
        };
        out.push(loaded(org, &function, &path).await.0.body);
    }
    out
}

#[tokio::test]
async fn a_cold_process_starts_from_the_checkpoint_and_lists_what_a_full_read_does() {
    imports().await;
    let org = Org::new().await;
    for (key, entity) in [("color", "product"), ("size", "sku")] {
        org.define(json!({"key": key, "displayName": key, "targetEntity": entity, "type": "text"}))
            .await;
    }
    let items: Vec<Value> = (0..300).map(tree).collect();
    let r = org.patch("/v1/products", Value::Array(items)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);

    // a first process reads the index in full and asks for checkpoints, writing none
    let first = lists(&org, "products@ckpt-a").await;
    assert_eq!(first[0]["pagination"]["totalResults"], json!(300));
    let s3 = s3_client(moto());
    let key = |kind: &str| format!("checkpoints/{}/{kind}/2", org.id);
    for kind in ["product", "variant", "sku"] {
        let wanted = format!("checkpoints/{}/{kind}/wanted", org.id);
        assert!(exists(&s3, &wanted).await, "no note at {wanted}");
        assert_eq!(
            synced(&s3, &key(kind)).await,
            None,
            "a serving process wrote {kind}'s"
        );
    }
    // the builder writes them: each list read in full (there was no checkpoint)
    let run = build(&org).await;
    assert_eq!(
        (
            &run["lists"],
            &run["built"],
            &run["written"],
            &run["readInFull"],
            &run["failed"]
        ),
        (&json!(3), &json!(3), &json!(3), &json!(3), &json!(0)),
        "{run}"
    );
    let product_at = written(&s3, &key("product")).await;
    for kind in ["variant", "sku"] {
        written(&s3, &key(kind)).await;
    }
    // nothing changed since: built again, nothing written
    let run = build(&org).await;
    assert_eq!(
        (&run["built"], &run["written"]),
        (&json!(3), &json!(0)),
        "{run}"
    );
    assert_eq!(written(&s3, &key("product")).await, product_at);
    // a list no serving process noted (its note expired after a day) is not built; the
    // cold processes below note theirs again as they load
    for kind in ["product", "variant", "sku"] {
        forget_note(&s3, &format!("checkpoints/{}/{kind}/wanted", org.id)).await;
    }
    let run = build(&org).await;
    assert_eq!(run["lists"], json!(0), "{run}");

    // changes after the checkpoint: deletes, a rename, new trees, descendant changes
    for id in ["c000", "c150", "c299"] {
        assert_eq!(org.delete(&format!("/v1/products/{id}")).await.status, 200);
    }
    assert_eq!(org.delete("/v1/skus/c007-s1").await.status, 200);
    let r = org
        .patch(
            "/v1/products/c010",
            json!({"name": "Renamed", "values": {"color": "red"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = org
        .patch("/v1/skus/c020-s0", json!({"values": {"size": "XL"}}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let news: Vec<Value> = (300..310).map(tree).collect();
    assert_eq!(
        org.patch("/v1/products", Value::Array(news)).await.status,
        200
    );

    // a cold process with the checkpoints, and one without: the same answers
    let from_checkpoint = get(&org, "products@ckpt-b", "/v1/products?limit=200").await;
    let (full_read, full_cost) = loaded(&org, "products@fullread", "/v1/products?limit=200").await;
    assert_eq!(from_checkpoint.body, full_read.body);
    assert_eq!(
        from_checkpoint.body["pagination"]["totalResults"],
        json!(307)
    );
    // the checkpoint's first call read the deltas (16 shards per type) and the page, not
    // the index in 5-item pages
    assert!(
        from_checkpoint.ddb_requests() < full_cost,
        "{} requests from the checkpoint, {full_cost} for a full read",
        from_checkpoint.ddb_requests(),
    );
    assert_eq!(
        lists(&org, "products@ckpt-b").await,
        lists(&org, "products@fullread").await
    );

    // 16 of 307 products changed since the checkpoint (the deletes, the rename, the new
    // trees, and the SKU change and delete that move their products' tree time): over 5 %,
    // so the builder writes the product checkpoint again, from the one there and the
    // changes after it, and a cold process from the new one lists the same
    let run = build(&org).await;
    assert_eq!(
        (&run["readInFull"], &run["failed"]),
        (&json!(0), &json!(0)),
        "{run}"
    );
    let product_at_2 = written(&s3, &key("product")).await;
    assert!(product_at_2 > product_at, "{run}");
    // one change more (1 of 307): not written again
    let r = org
        .patch("/v1/products/c011", json!({"name": "Again"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let run = build(&org).await;
    assert_eq!(written(&s3, &key("product")).await, product_at_2, "{run}");
    let from_new = get(&org, "products@ckpt-c", "/v1/products?limit=200&page=2").await;
    let full_read = get(&org, "products@fullread", "/v1/products?limit=200&page=2").await;
    assert_eq!(from_new.body, full_read.body);
    assert_eq!(from_new.body["pagination"]["totalResults"], json!(307));
}

/// A checkpoint is written only over an older one, through S3's conditional writes (moto's
/// here): an older or equal one leaves a newer checkpoint as it was. A large checkpoint reads back whole through the parallel ranged reads.
#[tokio::test]
async fn a_checkpoint_is_written_only_over_an_older_one_and_read_back_in_parts() {
    use catalog::domain::time::Timestamp;
    use catalog::imports::checkpoints::S3Checkpoints;
    use catalog::search::snapshot::{CheckpointStore, Stamp};
    imports().await;
    let store = S3Checkpoints {
        client: s3_client(moto()),
        bucket: BUCKET.to_string(),
    };
    let org = Org::new().await;
    let key = format!("checkpoints/{}/product/2", org.id);
    let at = |ms| Stamp {
        synced: Timestamp::from_millis(ms),
        full: Timestamp::from_millis(ms - 1),
    };
    assert_eq!(store.get(&key).await, Ok(None));
    assert_eq!(
        store.put_newer(&key, b"100".to_vec(), at(100)).await,
        Ok(true)
    );
    assert_eq!(
        store.put_newer(&key, b"50".to_vec(), at(50)).await,
        Ok(false)
    );
    assert_eq!(
        store.put_newer(&key, b"100 again".to_vec(), at(100)).await,
        Ok(false)
    );
    assert_eq!(
        store.get(&key).await.map(|o| o.map(|(b, _)| b)),
        Ok(Some(b"100".to_vec()))
    );
    assert_eq!(store.stamp(&key).await, Ok(Some(at(100))));
    assert_eq!(
        store.put_newer(&key, b"208".to_vec(), at(208)).await,
        Ok(true)
    );
    // the object and the full read it descends from, from one read
    let full = Timestamp::from_millis(207);
    assert_eq!(store.get(&key).await, Ok(Some((b"208".to_vec(), full))));
    assert_eq!(synced(&s3_client(moto()), &key).await, Some(208));
    // 20 MiB: three ranged parts, fetched in parallel, put back in order
    let big: Vec<u8> = (0..20 << 20).map(|i: u32| (i % 251) as u8).collect();
    assert_eq!(store.put_newer(&key, big.clone(), at(300)).await, Ok(true));
    match store.get(&key).await {
        Ok(Some((bytes, full))) => {
            let differs = bytes.iter().zip(&big).position(|(a, b)| a != b);
            assert!(
                bytes.len() == big.len() && differs.is_none(),
                "the parts do not make the object: {} of {} bytes, first difference at {differs:?}",
                bytes.len(),
                big.len()
            );
            assert_eq!(full, Timestamp::from_millis(299));
        }
        other => panic!(
            "the parts were not read: {:?}",
            other.map(|o| o.map(|(b, f)| (b.len(), f)))
        ),
    }
}

/// Makes the first `stale` answers to a read of an object's first part (a ranged GET from
/// byte 0) carry an ETag no version has: as if a newer checkpoint replaced the object
/// between its first part and the later ones.
#[derive(Debug)]
struct ReplacedAfterFirstPart {
    stale: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl aws_sdk_s3::config::Intercept for ReplacedAfterFirstPart {
    fn name(&self) -> &'static str {
        "ReplacedAfterFirstPart"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut aws_sdk_s3::config::interceptors::BeforeDeserializationInterceptorContextMut<
            '_,
        >,
        _: &aws_sdk_s3::config::RuntimeComponents,
        _: &mut aws_sdk_s3::config::ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        use std::sync::atomic::Ordering;
        let first_part = context
            .response()
            .headers()
            .get("content-range")
            .is_some_and(|v| v.starts_with("bytes 0-"));
        let stale = first_part
            && self
                .stale
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        if stale {
            context
                .response_mut()
                .headers_mut()
                .insert("etag", "\"0000000000000000000000000000000\"");
        }
        Ok(())
    }
}

/// A checkpoint replaced while it is read in parts is read again, whole, from the newer
/// version. Before, the first later part refused with 412 failed the load (moto answered
/// so under load when it computed a new object's ETag in two threads at once), and the
/// process fell back to a full read of the index. A checkpoint replaced during every read
/// fails after 3 of them, naming why.
#[tokio::test]
async fn a_checkpoint_replaced_between_its_parts_is_read_again() {
    use catalog::domain::time::Timestamp;
    use catalog::imports::checkpoints::S3Checkpoints;
    use catalog::search::snapshot::{CheckpointStore, Stamp};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    imports().await;
    let org = Org::new().await;
    let key = format!("checkpoints/{}/product/2", org.id);
    let stamp = Stamp {
        synced: Timestamp::from_millis(300),
        full: Timestamp::from_millis(299),
    };
    let big: Vec<u8> = (0..20 << 20).map(|i: u32| (i % 241) as u8).collect();
    let plain = S3Checkpoints {
        client: s3_client(moto()),
        bucket: BUCKET.to_string(),
    };
    assert_eq!(plain.put_newer(&key, big.clone(), stamp).await, Ok(true));
    let replaced = |times| {
        let stale = Arc::new(AtomicUsize::new(times));
        let config = s3_client(moto())
            .config()
            .to_builder()
            .interceptor(ReplacedAfterFirstPart {
                stale: stale.clone(),
            })
            .build();
        let store = S3Checkpoints {
            client: aws_sdk_s3::Client::from_conf(config),
            bucket: BUCKET.to_string(),
        };
        (store, stale)
    };
    let (once, left) = replaced(1);
    match once.get(&key).await {
        Ok(Some((bytes, full))) => {
            assert!(bytes == big, "read {} of {} bytes", bytes.len(), big.len());
            assert_eq!(full, Timestamp::from_millis(299));
        }
        other => panic!(
            "not read again: {:?}",
            other.map(|o| o.map(|(b, f)| (b.len(), f)))
        ),
    }
    assert_eq!(left.load(Ordering::SeqCst), 0);
    let (always, _) = replaced(usize::MAX);
    assert_eq!(
        always.get(&key).await.map(|o| o.map(|(b, _)| b.len())),
        Err(format!("{key} was replaced during each of 3 reads"))
    );
}

/// A checkpoint is bound to its organization, type and deployment: before, organization A's
/// checkpoint copied to C's key was trusted, and C's cold process listed A's totals and
/// identifiers (and later wrote them back as C's). Now it is refused: C's cold process reads
/// its own index and lists only its own products.
#[tokio::test]
async fn a_checkpoint_copied_to_another_organization_is_refused() {
    imports().await;
    let (a, c) = (Org::new().await, Org::new().await);
    seed(&a, 30, |i| (format!("a{i:02}"), format!("A's {i}"))).await;
    assert_eq!(
        c.patch("/v1/products/c-own", json!({"name": "C's own"}))
            .await
            .status,
        201
    );
    // A's process reads its index in full; the builder saves its checkpoint
    get(&a, "products@ckpt-copy-a", "/v1/products?limit=200").await;
    build(&a).await;
    copy_product_checkpoint(&a, &c).await;
    // C's first list on a cold process: its own product, none of A's
    let r = get(&c, "products@ckpt-copy-c", "/v1/products?limit=200").await;
    assert_eq!(
        r.body["pagination"]["totalResults"],
        json!(1),
        "{:?}",
        r.body
    );
    assert_eq!(r.body["result"][0]["identifier"], json!("c-own"));
}

/// A warm process whose snapshot is due for its reload (every 2 s here, 15 minutes as
/// deployed) no longer reads the index again: it takes the builder's checkpoint of a newer
/// full read (or, without one, keeps its snapshot with the deltas), so the reloading call
/// costs what any warm call costs. Before, every reload read the whole index again, and
/// that call cost the full read's Queries.
#[tokio::test]
async fn a_due_reload_takes_a_newer_checkpoint_instead_of_reading_the_index_again() {
    imports().await;
    let org = Org::new().await;
    seed(&org, 100, |i| (format!("r{i:03}"), format!("Reload {i}"))).await;
    let path = "/v1/products?limit=10";
    let function = "products@ckptreload";
    // the first call reads the index in full (5-item pages) and asks for a checkpoint
    let first = get(&org, function, path).await;
    let warm = get(&org, function, path).await;
    assert!(
        first.ddb_requests() > warm.ddb_requests(),
        "the full read: {} requests, a warm call {}",
        first.ddb_requests(),
        warm.ddb_requests()
    );
    // the builder's full read: newer than the one the process's snapshot comes from
    let run = build(&org).await;
    assert_eq!(
        (&run["written"], &run["readInFull"]),
        (&json!(1), &json!(1)),
        "{run}"
    );
    let renamed = org
        .patch("/v1/products/r050", json!({"name": "Renamed"}))
        .await;
    assert_eq!(renamed.status, 200, "{:?}", renamed.body);
    // each reload notes the list again (a note keeps its checkpoint built)
    let s3 = s3_client(moto());
    let wanted = format!("checkpoints/{}/product/wanted", org.id);
    for round in 0..2 {
        forget_note(&s3, &wanted).await;
        // the reload is due after 2 s: the snapshot's age, not a synchronization
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        let reloaded = get(&org, function, path).await;
        assert_eq!(
            reloaded.ddb_requests(),
            warm.ddb_requests(),
            "round {round}: a reload read more than a warm call"
        );
        let page = get(&org, function, "/v1/products?limit=200").await;
        assert_eq!(page.body["pagination"]["totalResults"], json!(100));
        assert_eq!(page.body["result"][50]["name"], json!("Renamed"));
        assert!(
            exists(&s3, &wanted).await,
            "round {round}: the reload noted nothing"
        );
    }
}

/// A reload whose new copy would not fit in the snapshot budget beside the serving one
/// releases the serving rows first, so one copy is enough (issue 44, item 4): the reload
/// from a newer checkpoint still costs a warm call and lists right; and when the newer
/// checkpoint cannot be loaded (another organization's, copied over), the call answers 503
/// instead of serving from nothing, and the next calls load the list as a first call does.
/// Before, the serving rows stayed beside the new copy, and that call answered 200 from
/// the old snapshot.
#[tokio::test]
async fn a_reload_without_room_for_two_copies_swaps_them() {
    imports().await;
    let (org, other) = (Org::new().await, Org::new().await);
    seed(&org, 30, |i| (format!("w{i:02}"), format!("Swap {i}"))).await;
    seed(&other, 5, |i| (format!("o{i:02}"), format!("Other {i}"))).await;
    let (path, function) = ("/v1/products?limit=200", "products@ckptswap");
    get(&org, function, path).await;
    let warm = get(&org, function, path).await;
    build(&org).await;
    let renamed = org
        .patch("/v1/products/w07", json!({"name": "Swapped"}))
        .await;
    assert_eq!(renamed.status, 200, "{:?}", renamed.body);
    // the reload is due after 2 s: the snapshot's age, not a synchronization
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let reloaded = get(&org, function, path).await;
    assert_eq!(reloaded.ddb_requests(), warm.ddb_requests());
    assert_eq!(reloaded.body["pagination"]["totalResults"], json!(30));
    assert_eq!(reloaded.body["result"][7]["name"], json!("Swapped"));
    // a newer checkpoint that is not the organization's: refused after the release
    get(&other, "products@ckpt-swap-other", path).await;
    build(&other).await;
    copy_product_checkpoint(&other, &org).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let call = || send_to(function, Request::new("GET", path).bearer(&org.key));
    let refused = call().await;
    assert_eq!(refused.status, 503, "{:?}", refused.body);
    assert_eq!(
        refused.headers.get("retry-after").map(String::as_str),
        Some("1")
    );
    let (again, _) = loaded(&org, function, path).await;
    assert_eq!(again.body["pagination"]["totalResults"], json!(30));
    assert_eq!(again.body["result"][7]["name"], json!("Swapped"));
}

/// A list whose last build failed waits out its backoff while the others are built, and
/// its note goes once a build succeeds: before, a list that could not be built kept the
/// oldest checkpoint and was tried first on every run, so no other list was built again.
#[tokio::test]
async fn a_list_whose_build_failed_waits_out_its_backoff() {
    imports().await;
    let (stuck, fine) = (Org::new().await, Org::new().await);
    for org in [&stuck, &fine] {
        seed(org, 10, |i| (format!("p{i}"), format!("P {i}"))).await;
        get(org, "products@ckpt-backoff", "/v1/products?limit=200").await;
    }
    let s3 = s3_client(moto());
    // the note the builder leaves after a failed build, just now
    let note = format!("checkpoints/{}/product/failed-1", stuck.id);
    s3.put_object()
        .bucket(BUCKET)
        .key(&note)
        .body(b"Query: throttled".to_vec().into())
        .send()
        .await
        .expect("noted");
    let counts = |run: &Value| {
        (
            run["lists"].clone(),
            run["built"].clone(),
            run["waiting"].clone(),
            run["failed"].clone(),
        )
    };
    let run = build(&stuck).await;
    assert_eq!(
        counts(&run),
        (json!(1), json!(0), json!(1), json!(0)),
        "{run}"
    );
    let key = |org: &Org| format!("checkpoints/{}/product/2", org.id);
    assert_eq!(synced(&s3, &key(&stuck)).await, None);
    let run = build(&fine).await;
    assert_eq!(
        counts(&run),
        (json!(1), json!(1), json!(0), json!(0)),
        "{run}"
    );
    written(&s3, &key(&fine)).await;
    // an old note (its backoff over): the list is built, and the note removed
    s3.delete_object()
        .bucket(BUCKET)
        .key(&note)
        .send()
        .await
        .expect("deleted");
    let old = format!("checkpoints/{}/product/failed-0", stuck.id);
    s3.put_object()
        .bucket(BUCKET)
        .key(&old)
        .body(b"Query: throttled".to_vec().into())
        .send()
        .await
        .expect("noted");
    let run = build(&stuck).await;
    assert_eq!(
        counts(&run),
        (json!(1), json!(1), json!(0), json!(0)),
        "{run}"
    );
    written(&s3, &key(&stuck)).await;
    assert!(!exists(&s3, &old).await, "the note of the failures stayed");
}
