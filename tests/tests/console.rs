//! The web console's sign-in and session (decisions.md, "Console, test events, event
//! catalog"; docs/console.md): a link signs in once, the session cookie acts as the key
//! that made the link, state-changing calls need the CSRF token, signing out and turning
//! the organization's API access off end it; and the console's pages are served with their
//! security and caching headers. Through the real `console` function and the others.

use catalog::auth::Scope;
use catalog::domain::credential_tags::CredentialTags;
use catalog::domain::time::Timestamp;
use catalog::store::console::ConsoleItem;
use catalog_e2e::console::{exchange, link, sign_in, token_of, Session};
use catalog_e2e::{send_to, stack, Org, Request, Response};
use serde_json::{json, Value};

fn error(r: &Response) -> &str {
    r.body["error"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_link_signs_in_once_and_its_session_acts_as_the_key() {
    let org = Org::new().await;
    let made = link(&org.key).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let url = made.body["result"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("http://catalog.test:9000/console#token=csl_"),
        "{url}"
    );
    let expires = Timestamp::parse(made.body["result"]["expiresAt"].as_str().unwrap()).unwrap();
    let left = expires.millis() - Timestamp::now().millis();
    assert!(
        (590_000..=600_000).contains(&left),
        "valid 10 minutes: {left} ms"
    );

    let token = token_of(&made);
    let r = exchange(&token).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let set = r.header("set-cookie").unwrap();
    let cookie = set.split(';').next().unwrap();
    assert!(cookie.starts_with("catalog_console=css_"), "{set}");
    assert_eq!(
        &set[cookie.len()..],
        "; Path=/; Max-Age=28800; HttpOnly; SameSite=Strict",
        "local mode: no Secure (plain HTTP)"
    );
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let result = &r.body["result"];
    assert_eq!(result["org"], json!(org.id));
    assert_eq!(
        result["scopes"],
        json!(["catalog:read", "catalog:write", "settings:manage"])
    );
    let csrf = result["csrfToken"].as_str().unwrap();
    assert_eq!(csrf.len(), 32);

    // once only
    let again = exchange(&token).await;
    assert_eq!(again.status, 401);
    assert_eq!(
        error(&again),
        "this sign-in link is invalid, used or expired: make a new one"
    );
    assert_eq!(again.header("set-cookie"), None);

    let session = Session {
        cookie: cookie.to_string(),
        csrf: csrf.to_string(),
    };
    let current = session.get("/v1/console-sessions/current").await;
    assert_eq!(current.status, 200, "{:?}", current.body);
    assert_eq!(current.body["result"]["csrfToken"], json!(csrf));
    assert_eq!(current.body["result"]["org"], json!(org.id));
    let listed = session.get("/v1/api-keys").await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    assert_eq!(listed.body["result"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn state_changing_calls_need_the_session_s_csrf_token_and_change_nothing_without_it() {
    let org = Org::new().await;
    let s = sign_in(&org.key).await;
    for csrf in [
        None,
        Some("x".repeat(32)),
        Some(s.csrf.replace(|_| true, "A")),
    ] {
        let mut req = s
            .request("PATCH", "/v1/products/lamp")
            .json(json!({"name": "Lamp"}));
        if let Some(c) = &csrf {
            req = req.header("x-csrf-token", c);
        }
        let r = req.send().await;
        assert_eq!(r.status, 403, "{csrf:?}: {:?}", r.body);
        assert_eq!(
            error(&r),
            "a state-changing call of a console session needs the session's X-CSRF-Token header"
        );
    }
    assert_eq!(org.get("/v1/products/lamp").await.status, 404);
    let r = s
        .request("PATCH", "/v1/products/lamp")
        .header("x-csrf-token", &s.csrf)
        .json(json!({"name": "Lamp"}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(
        s.get("/v1/products/lamp").await.body["result"]["name"],
        json!("Lamp")
    );
}

#[tokio::test]
async fn signing_out_ends_the_session_everywhere() {
    let org = Org::new().await;
    let s = sign_in(&org.key).await;
    let refused = s
        .request("DELETE", "/v1/console-sessions/current")
        .send()
        .await;
    assert_eq!(refused.status, 403);
    let out = s
        .request("DELETE", "/v1/console-sessions/current")
        .header("x-csrf-token", &s.csrf)
        .send()
        .await;
    assert_eq!(out.status, 200, "{:?}", out.body);
    assert_eq!(
        out.body,
        json!({"result": {"identifier": "current", "deleted": true}})
    );
    assert_eq!(
        out.header("set-cookie"),
        Some("catalog_console=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
    );
    for path in [
        "/v1/console-sessions/current",
        "/v1/products",
        "/v1/api-keys",
    ] {
        let r = s.get(path).await;
        assert_eq!(r.status, 401, "{path}: {:?}", r.body);
    }
}

#[tokio::test]
async fn turning_api_access_off_or_revoking_the_key_ends_its_sessions() {
    let org = Org::new().await;
    let other = org
        .key_with(&[Scope::SettingsManage, Scope::CatalogRead])
        .await;
    let s = sign_in(&other).await;
    assert_eq!(s.get("/v1/products").await.status, 200);
    let store = stack().await.store();
    store.set_api_enabled(&org.id, false).await.unwrap();
    let off = s.get("/v1/products").await;
    assert_eq!(off.status, 403);
    assert_eq!(error(&off), "API access is disabled for this organization");
    store.set_api_enabled(&org.id, true).await.unwrap();
    assert_eq!(s.get("/v1/products").await.status, 200);
    let key_id = &other["cat_".len().."cat_".len() + 12];
    assert_eq!(
        org.delete(&format!("/v1/api-keys/{key_id}")).await.status,
        200
    );
    assert_eq!(s.get("/v1/products").await.status, 401);
}

#[tokio::test]
async fn a_session_has_its_key_s_scopes_and_only_settings_keys_make_links() {
    let org = Org::new().await;
    let reader = org.key_with(&[Scope::CatalogRead]).await;
    let r = link(&reader).await;
    assert_eq!(r.status, 403, "{:?}", r.body);
    let settings_only = org.key_with(&[Scope::SettingsManage]).await;
    let s = sign_in(&settings_only).await;
    assert_eq!(s.get("/v1/api-keys").await.status, 200);
    let r = s.get("/v1/products").await;
    assert_eq!(r.status, 403, "{:?}", r.body);
}

#[tokio::test]
async fn a_wrong_secret_leaves_the_link_usable_and_bad_tokens_are_named() {
    let org = Org::new().await;
    let token = token_of(&link(&org.key).await);
    let last = token.chars().last().unwrap();
    let wrong = format!(
        "{}{}",
        &token[..token.len() - 1],
        if last == 'A' { 'B' } else { 'A' }
    );
    assert_eq!(exchange(&wrong).await.status, 401);
    assert_eq!(exchange(&token).await.status, 201);

    let malformed = exchange("cat_nothing").await;
    assert_eq!(malformed.status, 400);
    assert_eq!(
        error(&malformed),
        "field 'token' is not a console sign-in link's token"
    );
    let missing = Request::new("POST", "/v1/console-sessions/exchange")
        .json(json!({}))
        .send()
        .await;
    assert_eq!(
        (missing.status, error(&missing)),
        (400, "field 'token' is required")
    );
}

#[tokio::test]
async fn an_expired_link_or_session_is_refused() {
    let org = Org::new().await;
    let store = stack().await.store();
    let key_id = &org.key["cat_".len().."cat_".len() + 12];
    let past = Timestamp::from_millis(Timestamp::now().millis() - 1000);
    let id = format!("{key_id}expired1");
    // tagged as this stack issues them, so that only the expiry refuses them
    let tags = CredentialTags::for_table(catalog_e2e::TABLE);
    let secret = tags.issue("csl_", &id, &"A".repeat(40));
    let hash = catalog::auth::apikey::hash_secret(&secret);
    let scopes = vec!["settings:manage".to_string()];
    store
        .put_console_item(&ConsoleItem::new(
            &org.id,
            &id,
            key_id,
            hash.clone(),
            scopes.clone(),
            past,
            None,
        ))
        .await
        .unwrap();
    assert_eq!(exchange(&format!("csl_{id}_{secret}")).await.status, 401);
    let secret = tags.issue("css_", &id, &"A".repeat(40));
    let hash = catalog::auth::apikey::hash_secret(&secret);
    store
        .put_console_item(&ConsoleItem::new(
            &org.id,
            &id,
            key_id,
            hash,
            scopes,
            past,
            Some("c".repeat(32)),
        ))
        .await
        .unwrap();
    let s = Session {
        cookie: format!("catalog_console=css_{id}_{secret}"),
        csrf: "c".repeat(32),
    };
    assert_eq!(s.get("/v1/console-sessions/current").await.status, 401);
}

#[tokio::test]
async fn a_session_costs_one_read_and_a_key_wins_over_a_cookie() {
    let org = Org::new().await;
    let s = sign_in(&org.key).await;
    // warm both: the key's resolution is cached, the session is read on every call
    org.get("/v1/api-keys").await;
    let by_key = org.get("/v1/api-keys").await;
    let by_session = s.get("/v1/api-keys").await;
    assert_eq!((by_key.status, by_session.status), (200, 200));
    assert_eq!(by_session.ddb_requests(), by_key.ddb_requests() + 1);
    assert_eq!(by_session.ddb_round_trips(), by_key.ddb_round_trips() + 1);
    // with both, the key decides: a session's cookie never widens a key
    let reader = org.key_with(&[Scope::CatalogRead]).await;
    let r = s
        .request("GET", "/v1/api-keys")
        .bearer(&reader)
        .send()
        .await;
    assert_eq!(r.status, 403);
    // and the session routes are the console's: an API key is told so
    let r = org.get("/v1/console-sessions/current").await;
    assert_eq!(r.status, 400);
    assert_eq!(
        error(&r),
        "this route is the console's: call it with the console session's cookie, not an API key"
    );
}

fn text(r: &Response) -> &str {
    match &r.body {
        Value::String(s) => s,
        _ => panic!("not a page: {:?}", r.body),
    }
}

#[tokio::test]
async fn the_pages_are_served_with_a_strict_policy_and_hashed_long_cached_assets() {
    let page = Request::new("GET", "/console/").send().await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self'; style-src 'self';"),
        "{csp}"
    );
    assert!(csp.ends_with("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    let html = text(&page);
    assert!(!html.contains("{{ASSETS}}"));
    assert!(
        !html.contains("<script>") && !html.contains(" style="),
        "nothing inline"
    );
    let script = html
        .split("src=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("a script");
    assert!(
        script.starts_with("assets/") && script.ends_with("/app.js"),
        "{script}"
    );
    let folder = script.split('/').nth(1).unwrap();
    assert_eq!(folder.len(), 12);
    let js = Request::new("GET", &format!("/console/{script}"))
        .send()
        .await;
    assert_eq!(js.status, 200);
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(
        js.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    let stale = Request::new("GET", "/console/assets/000000000000/app.js")
        .send()
        .await;
    assert_eq!(stale.status, 404);
    // the page's address is `/console`, which API Gateway routes: its folder is named from there
    let page = Request::new("GET", "/console").send().await;
    assert_eq!(page.status, 200);
    assert!(
        text(&page).contains(&format!("src=\"console/{script}\"")),
        "{}",
        text(&page)
    );
}

/// Operators make links too: the CLI (`make dev`, `make console-link`) with a key, the admin
/// function with a key id; each signs in once, and a key without `settings:manage` is refused.
#[tokio::test]
async fn the_cli_and_the_admin_function_make_links_that_sign_in() {
    let org = Org::new().await;
    let out = std::process::Command::new(catalog_e2e::binary("catalog-admin"))
        .args([
            "console-link",
            "--key",
            &org.key,
            "--url",
            "http://localhost:9000/console",
        ])
        .envs(stack().await.aws_env())
        .output()
        .expect("catalog-admin runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8(out.stdout).unwrap();
    let token = url
        .trim()
        .strip_prefix("http://localhost:9000/console#token=")
        .expect("a link to the console");
    assert_eq!(exchange(token).await.status, 201);
    assert_eq!(exchange(token).await.status, 401);

    let key_id = &org.key["cat_".len().."cat_".len() + 12];
    let made = catalog_e2e::invoke(
        "admin",
        json!({"op": "console-link", "org": org.id, "keyId": key_id, "url": "https://x.test/console"}),
    )
    .await;
    let url = made["url"].as_str().expect("a url");
    let token = url.strip_prefix("https://x.test/console#token=").unwrap();
    assert_eq!(exchange(token).await.status, 201);

    let reader = org.key_with(&[Scope::CatalogRead]).await;
    let refused = catalog_e2e::invoke(
        "admin",
        json!({"op": "console-link", "org": org.id, "keyId": &reader["cat_".len().."cat_".len() + 12], "url": "https://x.test/console"}),
    )
    .await;
    assert_eq!(
        refused,
        json!({"error": "a console link needs a key with settings:manage"})
    );
}

/// A link opens nothing once its key is revoked or its organization's API access is off,
/// and the session answers with the key's current scopes.
#[tokio::test]
async fn a_link_of_a_revoked_key_or_a_disabled_organization_opens_nothing() {
    let org = Org::new().await;
    let other = org.key_with(&[Scope::SettingsManage]).await;
    let token = token_of(&link(&other).await);
    let key_id = &other["cat_".len().."cat_".len() + 12];
    assert_eq!(
        org.delete(&format!("/v1/api-keys/{key_id}")).await.status,
        200
    );
    let r = exchange(&token).await;
    assert_eq!((r.status, r.header("set-cookie")), (401, None));

    let token = token_of(&link(&org.key).await);
    let store = stack().await.store();
    store.set_api_enabled(&org.id, false).await.unwrap();
    let r = exchange(&token).await;
    store.set_api_enabled(&org.id, true).await.unwrap();
    assert_eq!((r.status, r.header("set-cookie")), (401, None));
    assert_eq!(
        error(&r),
        "this sign-in link is invalid, used or expired: make a new one"
    );
    // the refused exchange took nothing: once API access is back, the link signs in, once
    assert_eq!(exchange(&token).await.status, 201);
    assert_eq!(exchange(&token).await.status, 401);
}

/// Issue 40, item 7: before, a made-up key (an id of the organization, or a real id with
/// another secret), session cookie or sign-in token cost one or two reads of the named
/// organization's partition each, without limit. Every secret issued now ends in its id's
/// tag, keyed by the deployment: one without it was never issued, and costs no request.
#[tokio::test]
async fn credentials_never_issued_are_refused_without_a_read() {
    let org = Org::new().await;
    let key_id = &org.key["cat_".len().."cat_".len() + 12];
    let s = sign_in(&org.key).await;
    assert_eq!(s.get("/v1/api-keys").await.status, 200);
    let made_up = "A".repeat(46);
    // A process that knows the key (rate limits on): a wrong secret of it takes from the
    // failed-authentication bucket, but one without its tag cannot be a guess that works.
    let limited = |key: &str| {
        catalog_e2e::send_to(
            "products@limited",
            Request::new("GET", "/v1/products").bearer(key),
        )
    };
    assert_eq!(limited(&org.key).await.status, 200);
    // nor one of the length of secrets issued before tags: this key was issued with one
    for secret in [made_up.clone(), "U".repeat(40)] {
        let r = limited(&format!("cat_{key_id}_{secret}")).await;
        assert_eq!((r.status, r.ddb_requests()), (401, 0), "{secret}");
    }
    for key in [
        format!("cat_{}zzzzzz_{made_up}", org.id),
        format!("cat_{key_id}_{made_up}"),
        format!("cat_{key_id}_{}", "B".repeat(64)),
    ] {
        let r = Request::new("GET", "/v1/products")
            .bearer(&key)
            .send()
            .await;
        assert_eq!((r.status, r.ddb_requests()), (401, 0), "{key}");
    }
    let forged = Session {
        cookie: format!("catalog_console=css_{key_id}abcdefgh_{made_up}"),
        csrf: s.csrf.clone(),
    };
    let r = forged.get("/v1/console-sessions/current").await;
    assert_eq!((r.status, r.ddb_requests()), (401, 0));
    // a real session's id with a made-up secret
    let real_id = s
        .cookie
        .split_once("css_")
        .unwrap()
        .1
        .split_once('_')
        .unwrap()
        .0;
    let forged = Session {
        cookie: format!("catalog_console=css_{real_id}_{made_up}"),
        csrf: s.csrf.clone(),
    };
    let r = forged.get("/v1/console-sessions/current").await;
    assert_eq!((r.status, r.ddb_requests()), (401, 0));
    let r = exchange(&format!("csl_{key_id}abcdefgh_{made_up}")).await;
    assert_eq!(
        (r.status, r.ddb_requests(), error(&r)),
        (
            401,
            0,
            "this sign-in link is invalid, used or expired: make a new one"
        )
    );
    // what was issued still works
    assert_eq!(org.get("/v1/products").await.status, 200);
    assert_eq!(s.get("/v1/console-sessions/current").await.status, 200);
}

/// Keys issued before tags (a 40-character secret) still authenticate, with a read; made-up
/// ids of that shape are read at most 20 times a second per organization and process (a
/// window of a second), then refused with 429 and no request.
#[tokio::test]
async fn untagged_keys_still_work_and_their_reads_are_bounded() {
    let org = Org::new().await;
    let store = stack().await.store();
    let key_id = format!("{}legacy", org.id);
    let secret = "L".repeat(40);
    // a key as the store issued it before tags: its secret carries no tag
    let mut untagged = catalog::store::items::KeyItem::issued(
        &org.id,
        &key_id,
        &catalog::auth::apikey::hash_secret(&secret),
        "before tags",
        vec!["catalog:read".into()],
    );
    untagged.tagged = false;
    store.put_key(&untagged, None, None).await.unwrap();
    // as an organization made before tags: its keys issued then, counted
    assert_eq!(store.count_untagged_keys(&org.id).await.unwrap(), 1);
    let legacy = format!("cat_{key_id}_{secret}");
    let r = Request::new("GET", "/v1/products")
        .bearer(&legacy)
        .send()
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    // made-up ids of that shape, 25 at a time (back to back in the one process) until a 429
    let started = std::time::Instant::now();
    let (mut reads, mut refused, mut sent) = (0, 0, 0);
    while refused == 0 && sent < 200 {
        let batch = futures_util::future::join_all((sent..sent + 25).map(|i| {
            let made_up = format!("cat_{}mk{i:04}_{}", org.id, "M".repeat(40));
            async move {
                Request::new("GET", "/v1/products")
                    .bearer(&made_up)
                    .send()
                    .await
            }
        }))
        .await;
        sent += 25;
        for r in batch {
            match r.status {
                401 => reads += r.ddb_requests(),
                429 => {
                    assert_eq!(r.ddb_requests(), 0);
                    assert_eq!(r.header("retry-after"), Some("1"));
                    refused += 1;
                }
                other => panic!("{other}: {:?}", r.body),
            }
        }
    }
    // the count is per window of a second from the process's first read (the legacy call's,
    // at the latest), so calls within `seconds` started seconds can meet one window more:
    // a busy machine, slow between that call and these, puts a window's end among them
    let seconds = started.elapsed().as_secs() as u32 + 1;
    assert!(
        refused > 0 && reads <= 20 * (seconds + 1),
        "{reads} reads and {refused} refusals of {sent} calls in {seconds} started seconds"
    );
}

/// An organization with no key issued before tags (every one made since) answers a secret
/// of that shape with 401 and no read, once the process has read its item: before, each
/// such made-up credential cost a read (20 a second per organization and process). Its
/// count falls when its last untagged key is revoked.
#[tokio::test]
async fn an_organization_without_untagged_keys_refuses_them_without_a_read() {
    let org = Org::new().await;
    let store = stack().await.store();
    let untagged = |i: usize| format!("cat_{}mk{i:04}_{}", org.id, "M".repeat(40));
    let send = |bearer: String| async move {
        send_to(
            "products@untagged-free",
            Request::new("GET", "/v1/products").bearer(&bearer),
        )
        .await
    };
    // the process reads the organization's item with its key
    let r = send(org.key.clone()).await;
    assert_eq!((r.status, r.ddb_requests() > 0), (200, true));
    for i in 0..30 {
        let r = send(untagged(i)).await;
        assert_eq!(
            (r.status, r.ddb_requests(), &r.body),
            (
                401,
                0,
                &json!({"error": catalog::error::UNAUTHORIZED_MESSAGE})
            ),
            "{i}"
        );
    }
    // an organization made before tags, with one such key: counted, then revoked
    let key_id = format!("{}legacy", org.id);
    let mut legacy = catalog::store::items::KeyItem::issued(
        &org.id,
        &key_id,
        &catalog::auth::apikey::hash_secret(&"L".repeat(40)),
        "before tags",
        vec!["catalog:read".into()],
    );
    legacy.tagged = false;
    store.put_key(&legacy, None, None).await.unwrap();
    assert_eq!(store.count_untagged_keys(&org.id).await.unwrap(), 1);
    assert_eq!(
        org.delete(&format!("/v1/api-keys/{key_id}")).await.status,
        200
    );
    assert_eq!(
        store.get_org(&org.id).await.unwrap().unwrap().untagged_keys,
        Some(0)
    );
}
