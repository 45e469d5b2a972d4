//! Tenants cannot reach or hurt each other (issue 27's findings), through the real binaries:
//! cursors cannot be forged outside local mode, a process without a cursor secret refuses
//! to start.

use catalog_e2e::{binary, encode, send_to, stack, Org, Request, TABLE};
use serde_json::json;
use std::process::Command;

/// Before, the template set no `CATALOG_CURSOR_KEY` and cursors were sealed with a hash of
/// the table name: anyone who knew it could forge one.
#[tokio::test]
async fn cursors_sealed_with_the_table_name_are_refused_outside_local_mode() {
    let org = Org::new().await;
    let strict_key = org.strict_key().await;
    for id in ["a", "b", "c"] {
        assert_eq!(
            org.patch(&format!("/v1/products/{id}"), json!({}))
                .await
                .status,
            201
        );
    }
    let first = send_to(
        "products@strict",
        Request::new("GET", "/v1/products?limit=1").bearer(&strict_key),
    )
    .await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    let next = first.body["pagination"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    let page = send_to(
        "products@strict",
        Request::new(
            "GET",
            &format!("/v1/products?limit=1&cursor={}", encode(&next)),
        )
        .bearer(&strict_key),
    )
    .await;
    assert_eq!(page.body["result"][0]["identifier"], json!("b"));
    // the same list's cursor sealed with the key local mode derives from the table name (as
    // every deployment did): a local-mode process hands it out
    let local = org.get("/v1/products?limit=1").await;
    let forged = local.body["pagination"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    let r = send_to(
        "products@strict",
        Request::new(
            "GET",
            &format!("/v1/products?limit=1&cursor={}", encode(&forged)),
        )
        .bearer(&strict_key),
    )
    .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            json!({"error": "query parameter 'cursor': not a cursor of this list (edited, or made for other filters)"})
        )
    );
}

#[test]
fn a_function_outside_local_mode_without_a_cursor_secret_refuses_to_start() {
    let out = Command::new(binary("products"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_REGION", "us-east-1")
        .env("CATALOG_TABLE", TABLE)
        .env("CATALOG_LOCAL_MODE", "0")
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:1")
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to start: CATALOG_CURSOR_KEY must be set to a secret of at least 32 bytes outside local mode"),
        "{stderr}"
    );
}

/// The first refusal of a series of calls on `functions` (in turn) for `key`: how many were
/// admitted before it, the refusal, and the seconds it all took.
async fn until_refused(
    key: &str,
    functions: &[(&str, &str)],
) -> (usize, catalog_e2e::Response, f64) {
    let started = std::time::Instant::now();
    for n in 0..100 {
        let (function, path) = functions[n % functions.len()];
        let r = send_to(function, Request::new("GET", path).bearer(key)).await;
        if r.status == 429 {
            return (n, r, started.elapsed().as_secs_f64());
        }
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert_eq!(
            r.header("ratelimit-policy"),
            Some("\"org\";q=5;w=5"),
            "every answer carries the policy"
        );
        assert!(r.header("ratelimit").unwrap().starts_with("\"org\";r="));
    }
    panic!("never refused");
}

/// The refusal's answer: 429, the body naming the limit, `Retry-After`, both fields.
fn assert_refused(r: &catalog_e2e::Response) {
    assert_eq!(
        (
            r.status,
            &r.body,
            r.header("retry-after"),
            r.header("ratelimit-policy")
        ),
        (
            429,
            &json!({"error": "rate limit exceeded: the organization's limit is 1 requests per second with bursts of 5; retry after 1 s"}),
            Some("1"),
            Some("\"org\";q=5;w=5")
        )
    );
    let fields = r.header("ratelimit").unwrap();
    let reset = fields.strip_prefix("\"org\";r=0;t=");
    assert!(matches!(reset, Some("4" | "5")), "{fields}");
}

/// Before, the only throttle was the stage's, shared by every organization. Now each
/// organization has a bucket in the table that every function instance takes from: two
/// processes (two functions) share it, and another organization is not touched by it.
#[tokio::test]
async fn each_organization_has_one_bucket_across_every_function_instance() {
    let noisy = Org::new().await;
    let quiet = Org::new().await;
    let (admitted, refused, secs) = until_refused(
        &noisy.key,
        &[
            ("products@limited", "/v1/products"),
            ("variants@limited", "/v1/variants"),
        ],
    )
    .await;
    assert_refused(&refused);
    // the process that saw the bucket empty refuses the next calls itself, with no request
    // (no other process takes tokens meanwhile, so it asks the table only when one is there)
    let functions = [
        ("products@limited", "/v1/products"),
        ("variants@limited", "/v1/variants"),
    ];
    let (function, path) = functions[admitted % 2];
    for _ in 0..3 {
        let again = send_to(function, Request::new("GET", path).bearer(&noisy.key)).await;
        if again.status == 429 {
            assert_eq!(
                again.ddb_requests(),
                0,
                "a refusal known locally reads nothing"
            );
        }
    }
    // the burst, plus what refilled meanwhile (1 per second): never two buckets' worth
    let most = 5 + secs.ceil() as usize;
    assert!(
        (5..=most).contains(&admitted),
        "{admitted} admitted in {secs:.1} s"
    );
    // the other organization has its whole burst
    let (admitted, _, _) = until_refused(&quiet.key, &[("products@limited", "/v1/products")]).await;
    assert!(admitted >= 5, "{admitted}");
    // a refused write does no work
    let r = send_to(
        "products@limited",
        Request::new("PATCH", "/v1/products/nope")
            .bearer(&noisy.key)
            .json(json!({})),
    )
    .await;
    if r.status == 429 {
        assert_eq!(noisy.get("/v1/products/nope").await.status, 404);
    }
}

/// A bulk write costs a token per started group of 10 lines; one that costs more than the
/// whole burst is refused before anything is written.
#[tokio::test]
async fn a_bulk_write_costs_its_lines() {
    let org = Org::new().await;
    let lines: Vec<_> = (0..60)
        .map(|i| json!({"identifier": format!("bulk{i}")}))
        .collect();
    let r = send_to(
        "products@limited",
        Request::new("PATCH", "/v1/products")
            .bearer(&org.key)
            .json(json!(lines)),
    )
    .await;
    assert_eq!(
        (r.status, &r.body, r.header("ratelimit-policy")),
        (
            429,
            &json!({"error": "rate limit exceeded: this call costs 6 tokens (one per 10 lines), more than the organization's burst of 5; send fewer lines per request"}),
            Some("\"org\";q=5;w=5")
        )
    );
    assert_eq!(
        org.get("/v1/products/bulk0").await.status,
        404,
        "nothing written"
    );
    // 40 lines cost 4 of the 5: one call's token is left, then the bucket is empty
    let r = send_to(
        "products@limited",
        Request::new("PATCH", "/v1/products")
            .bearer(&org.key)
            .json(json!(lines[..40])),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(org.get("/v1/products/bulk39").await.status, 200);
}

/// `catalog-admin set-limits` gives one organization its own limit (and `--rate 0` takes it
/// away); the deployment's defaults stay for every other.
#[tokio::test]
async fn an_organization_can_have_its_own_limit() {
    let org = Org::new().await;
    let store = catalog_e2e::stack().await.store();
    let set = catalog::admin::set_limits(&store, &org.id, 1, Some(2))
        .await
        .unwrap();
    assert_eq!(set.map(|l| (l.rate, l.burst)), Some((1, 2)));
    let mut admitted = 0;
    let refused = loop {
        let r = org.get("/v1/products").await;
        if r.status == 429 {
            break r;
        }
        assert_eq!(r.header("ratelimit-policy"), Some("\"org\";q=2;w=2"));
        admitted += 1;
        assert!(admitted < 10, "never refused");
    };
    assert!((2..=4).contains(&admitted), "{admitted}");
    assert_eq!(
        refused.body,
        json!({"error": "rate limit exceeded: the organization's limit is 1 requests per second with bursts of 2; retry after 1 s"})
    );
    assert_eq!(
        catalog::admin::set_limits(&store, "nosuch", 1, None).await,
        Err("organization 'nosuch' not found".to_string())
    );
    assert_eq!(
        catalog::admin::set_limits(&store, &org.id, 0, None).await,
        Ok(None)
    );
}

/// What an organization creates through settings is bounded, each quota named in its 409:
/// before, completeness profiles and subscriptions to one URL were unbounded.
#[tokio::test]
async fn settings_an_organization_creates_are_bounded() {
    let org = Org::new().await;
    org.define(json!({"displayName": "T", "key": "t", "targetEntity": "product", "type": "text"}))
        .await;
    for i in 0..100 {
        let r = org
            .post(
                "/v1/completeness-profiles",
                json!({"identifier": format!("p{i}"), "name": "P", "requiredAttributes": ["product.t"]}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    let r = org
        .post(
            "/v1/completeness-profiles",
            json!({"identifier": "p100", "name": "P", "requiredAttributes": ["product.t"]}),
        )
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            409,
            json!({"error": "quota exceeded: an organization may have at most 100 completeness profiles"})
        )
    );
    assert_eq!(org.get("/v1/completeness-profiles/p100").await.status, 404);

    let url = "http://127.0.0.1:9/same";
    let mut ids = Vec::new();
    for _ in 0..5 {
        let r = org
            .post("/v1/webhooks", json!({"url": url, "topics": ["*"]}))
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        ids.push(r.body["result"]["id"].as_str().unwrap().to_string());
    }
    let quota = json!({"error": "quota exceeded: an organization may have at most 5 webhook subscriptions to one receiver (scheme, host and port)"});
    let r = org
        .post("/v1/webhooks", json!({"url": url, "topics": ["*"]}))
        .await;
    assert_eq!((r.status, &r.body), (409, &quota));
    // another path on the same host is the same receiver: before, 50 subscriptions could
    // target one host, each with its own path
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:9/another-path", "topics": ["*"]}),
        )
        .await;
    assert_eq!((r.status, &r.body), (409, &quota));
    assert_eq!(
        org.get("/v1/webhooks").await.body["pagination"]["totalResults"],
        json!(5)
    );
    // moving another subscription onto the URL counts too; keeping its own URL does not
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:8/other", "topics": ["*"]}),
        )
        .await;
    let other = r.body["result"]["id"].as_str().unwrap().to_string();
    let r = org
        .patch(&format!("/v1/webhooks/{other}"), json!({"url": url}))
        .await;
    assert_eq!((r.status, &r.body), (409, &quota));
    let r = org
        .patch(&format!("/v1/webhooks/{}", ids[0]), json!({"url": url}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        org.get("/v1/webhooks").await.body["pagination"]["totalResults"],
        json!(6)
    );
}

/// Guessing the secret of a real key id is rate limited, in a bucket of its own: before,
/// wrong-secret calls spent the organization's own tokens, so anyone who knew a key id
/// (even a revoked one) could lock every key and console session of it out with 429s.
#[tokio::test]
async fn failed_authentications_with_a_real_key_id_never_spend_the_organizations_tokens() {
    let org = Org::new().await;
    let (prefix, _) = org.key.rsplit_once('_').unwrap();
    // a guess that could be right: a wrong secret with the key id's tag (one without it is
    // refused before anything is read or counted, console.rs)
    let key_id = &prefix["cat_".len()..];
    let tags = catalog::domain::credential_tags::CredentialTags::for_table(TABLE);
    let wrong = format!("{prefix}_{}", tags.issue("key", key_id, &"x".repeat(40)));
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let r = send_to(
            "products@limited",
            Request::new("GET", "/v1/products").bearer(&wrong),
        )
        .await;
        statuses.push(r.status);
        if r.status == 429 {
            assert_eq!(r.header("retry-after"), Some("1"));
            break;
        }
        assert_eq!(
            r.body,
            json!({"error": "Unauthorized - missing or invalid authentication"})
        );
    }
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    assert!(statuses.len() >= 6, "the burst of 5 first: {statuses:?}");
    // the organization's valid callers still have their whole burst, on every function
    for (function, path) in [
        ("products@limited", "/v1/products"),
        ("settings@limited", "/v1/usage"),
        ("products@limited", "/v1/products"),
    ] {
        let r = send_to(function, Request::new("GET", path).bearer(&org.key)).await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
    }
    // unknown key ids cost no token of anyone's: always 401
    for _ in 0..15 {
        let r = send_to(
            "products@limited",
            Request::new("GET", "/v1/products")
                .bearer(&format!("cat_zzzzzzzzzzzz_{}", "y".repeat(40))),
        )
        .await;
        assert_eq!(r.status, 401);
    }
}

/// Before, nothing told an organization (or an operator) what it used: `GET /usage` counts
/// its calls by outcome and the DynamoDB capacity they consumed, today and this month, and
/// only its own.
#[tokio::test]
async fn usage_counts_an_organizations_own_calls_and_capacity() {
    let org = Org::new().await;
    let other = Org::new().await;
    assert_eq!(org.patch("/v1/products/u1", json!({})).await.status, 201);
    assert_eq!(org.get("/v1/products/u1").await.status, 200);
    assert_eq!(org.get("/v1/products/nope").await.status, 404);
    let r = org.get("/v1/usage").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let result = &r.body["result"];
    let today = &result["today"];
    let date = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(today["date"], json!(date));
    assert_eq!(result["month"]["month"], json!(&date[..7]));
    assert_eq!(result["updatedEverySeconds"], json!(0));
    let counts = |t: &serde_json::Value| {
        [
            "requests",
            "refused",
            "clientErrors",
            "serverErrors",
            "deliveryAttempts",
            "failedAttempts",
        ]
        .map(|f| t[f].as_u64().unwrap())
    };
    assert_eq!(counts(today), [3, 0, 1, 0, 0, 0]);
    assert_eq!(counts(&result["month"]), [3, 0, 1, 0, 0, 0]);
    let capacity = today["capacityUnits"].as_f64().unwrap();
    assert!(capacity > 0.0, "the calls consumed capacity: {today}");
    // the first read of usage is counted too, with what it consumed
    let again = org.get("/v1/usage").await.body["result"]["today"].clone();
    assert_eq!(counts(&again), [4, 0, 1, 0, 0, 0]);
    assert!(again["capacityUnits"].as_f64().unwrap() > capacity);
    // another organization's usage holds none of it
    let theirs = other.get("/v1/usage").await.body["result"]["today"].clone();
    assert_eq!(counts(&theirs), [0, 0, 0, 0, 0, 0]);
    assert_eq!(theirs["capacityUnits"], json!(0.0));
    // usage is a settings read
    let reader = org.key_with(&[catalog::auth::Scope::CatalogRead]).await;
    let r = Request::new("GET", "/v1/usage")
        .bearer(&reader)
        .send()
        .await;
    r.assert_lacks("settings:manage");
}

/// Calls refused by the rate limit are counted as refused.
#[tokio::test]
async fn refused_calls_are_counted_in_usage() {
    let org = Org::new().await;
    let mut refused = 0;
    for _ in 0..15 {
        let r = send_to(
            "products@limited",
            Request::new("GET", "/v1/products").bearer(&org.key),
        )
        .await;
        assert!(matches!(r.status, 200 | 429), "{:?}", r.body);
        refused += u64::from(r.status == 429);
    }
    assert!(
        refused >= 1,
        "a burst of 5 at 1/s refuses some of 15 quick calls"
    );
    let today = org.get("/v1/usage").await.body["result"]["today"].clone();
    assert_eq!(
        (today["requests"].as_u64(), today["refused"].as_u64()),
        (Some(15), Some(refused))
    );
}

/// Before, one organization could run any number of bulk writes at once and take every
/// function instance: at most four run at once per organization, across the fleet.
#[tokio::test]
async fn an_organization_runs_at_most_four_bulk_writes_at_once() {
    use catalog::domain::limits::MAX_CONCURRENT_BULK_WRITES;
    let org = Org::new().await;
    let other = Org::new().await;
    let store = stack().await.store();
    let hold = std::time::Duration::from_secs(60);
    // four bulk writes of the organization are running (on other instances)
    let mut running = Vec::new();
    for _ in 0..MAX_CONCURRENT_BULK_WRITES {
        let slot = store
            .take_slot(&org.id, "bulk", MAX_CONCURRENT_BULK_WRITES, hold)
            .await;
        running.push(slot.unwrap().expect("a free slot"));
    }
    let r = org
        .patch("/v1/products", json!([{"identifier": "b1"}]))
        .await;
    assert_eq!(
        (r.status, r.body.clone()),
        (
            429,
            json!({"error": "too many concurrent bulk writes: at most 4 run at once per organization; retry after 1 s"})
        )
    );
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(
        org.get("/v1/products/b1").await.status,
        404,
        "nothing written"
    );
    // single writes and other organizations' bulk writes go on
    assert_eq!(org.patch("/v1/products/s1", json!({})).await.status, 201);
    let theirs = other
        .patch("/v1/products", json!([{"identifier": "b1"}]))
        .await;
    assert_eq!(
        (theirs.status, &theirs.body["result"][0]["status"]),
        (200, &json!(201))
    );
    // one finishes: the next bulk write runs, and gives its slot back when done
    store.give_back_slot(&running.pop().unwrap()).await;
    for id in ["b1", "b2"] {
        let r = org.patch("/v1/products", json!([{"identifier": id}])).await;
        assert_eq!(
            (r.status, &r.body["result"][0]["status"]),
            (200, &json!(201)),
            "{id}"
        );
    }
}

/// A lease's unused tokens go back to the bucket: before, each process leased a chunk
/// (burst/20) per call and the tokens it did not use lapsed after a second, so a tenant
/// spread over many instances was refused while under its limit. Ten processes, burst 60
/// (chunks of 3) at 1 per second, four rounds of one call each, every lease lapsed between
/// rounds: before, the bucket paid 3 tokens per call (2 lost), 90 by the third round, and
/// refused it; now it pays the 40 calls plus the 20 tokens still leased, within the burst.
#[tokio::test]
async fn leased_tokens_a_process_did_not_use_go_back_to_the_bucket() {
    let org = Org::new().await;
    let store = stack().await.store();
    catalog::admin::set_limits(&store, &org.id, 1, Some(60))
        .await
        .expect("limits set");
    let processes: Vec<String> = (0..10).map(|i| format!("products@lease{i}")).collect();
    let call = |function: String| {
        let key = org.key.clone();
        async move {
            send_to(
                &function,
                Request::new("GET", "/v1/products?limit=1").bearer(&key),
            )
            .await
        }
    };
    for round in 1..=4 {
        for function in &processes {
            let r = call(function.clone()).await;
            assert_eq!(
                r.status,
                200,
                "round {round}, {function}: {:?} {:?}",
                r.body,
                r.header("ratelimit")
            );
        }
        // every process's lease lapses (it is valid one second)
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    }
}

/// Quotas are counted atomically with the create, on the receiver the URL names (its
/// scheme, host and port): before, ten concurrent creations to one URL made seven (limit
/// 5), and a query string or a fragment made another URL. Ten at once, through several processes, each with its own
/// query string: exactly five are created, the others are refused with the quota's 409;
/// re-pointing another subscription there (with a fragment) is refused too. The same holds
/// for settings: ten concurrent completeness profiles two short of the quota make two.
#[tokio::test]
async fn concurrent_creations_never_pass_a_quota() {
    let org = Org::new().await;
    let create = |i: usize| {
        send_to(
            "webhooks@fleet",
            Request::new("POST", "/v1/webhooks")
                .bearer(&org.key)
                .json(json!({"url": format!("http://127.0.0.1:9/same?n={i}"), "topics": ["*"]})),
        )
    };
    let answers = futures_util::future::join_all((0..10).map(create)).await;
    let quota = json!({"error": "quota exceeded: an organization may have at most 5 webhook subscriptions to one receiver (scheme, host and port)"});
    let created = answers.iter().filter(|r| r.status == 201).count();
    assert_eq!(
        created,
        5,
        "{:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for r in answers.iter().filter(|r| r.status != 201) {
        assert_eq!((r.status, &r.body), (409, &quota));
    }
    let r = org
        .post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:8/elsewhere", "topics": ["*"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let other = r.body["result"]["id"].as_str().unwrap().to_string();
    let r = org
        .patch(
            &format!("/v1/webhooks/{other}"),
            json!({"url": "http://127.0.0.1:9/same#again"}),
        )
        .await;
    assert_eq!((r.status, &r.body), (409, &quota));
    // refused on the quota's claim and the organization's subscriptions alone: the
    // subscription itself is not read
    assert_eq!(r.ddb_requests(), 2);
    assert_eq!(
        org.get("/v1/webhooks").await.body["pagination"]["totalResults"],
        json!(6)
    );

    // completeness profiles: 98 made one by one, then ten at once for the last two places
    org.define(json!({"displayName": "T", "key": "t", "targetEntity": "product", "type": "text"}))
        .await;
    let profile =
        |i: String| json!({"identifier": i, "name": "P", "requiredAttributes": ["product.t"]});
    for i in 0..98 {
        let r = org
            .post("/v1/completeness-profiles", profile(format!("p{i}")))
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    let last = |i: usize| {
        send_to(
            "settings@fleet",
            Request::new("POST", "/v1/completeness-profiles")
                .bearer(&org.key)
                .json(profile(format!("last{i}"))),
        )
    };
    let answers = futures_util::future::join_all((0..10).map(last)).await;
    let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        2,
        "{statuses:?}"
    );
    let quota = json!({"error": "quota exceeded: an organization may have at most 100 completeness profiles"});
    for r in answers.iter().filter(|r| r.status != 201) {
        assert_eq!((r.status, &r.body), (409, &quota));
    }
    assert_eq!(
        org.get("/v1/completeness-profiles").await.body["pagination"]["totalResults"],
        json!(100)
    );
}
