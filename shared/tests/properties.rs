//! Fuzz targets as property tests (proptest, stable Rust, a bounded number of cases so they
//! run in `make test`): every parser that sees client input, fed arbitrary input, never
//! panics, answers in bounded time, and keeps its stated guarantees. Raise the case count
//! with `PROPTEST_CASES=100000 cargo test -p catalog --test properties` for a longer run.

use catalog::api::FUNCTIONS;
use catalog::domain::attributes::{AttributeDefinition, AttributeType, TargetEntity};
use catalog::domain::identifier;
use catalog::domain::selection::Selection;
use catalog::domain::values::{self, render_entries, ScopeRules, StoredValues};
use catalog::http::{routes, ApiRequest, Query};
use catalog::search::parse::parse_json;
use catalog::webhooks::signature::{sign, verify, VerifyError};
use catalog::webhooks::url_guard::{self, is_public, UrlPolicy};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

/// Cases per property: enough to find shallow bugs in every CI run, quick on two cores.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(2048),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Arbitrary JSON, up to a few levels deep, with the strings and numbers that parsers trip on.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "\\PC{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("12.50 EUR"),
            Just("1.5 kg"),
            Just("#A0B1C2"),
            Just("https://x.example/a"),
            Just("2026-11-21T02:39:29.597Z"),
            Just("en-US"),
            Just("de-DE"),
            Just("web"),
            Just("EQUALS"),
            Just("CONTAINS"),
            Just("GREATER_THAN"),
            Just("IN_THE_LAST"),
            Just("7d"),
            Just("-0"),
            Just("1e999"),
            Just("NaN"),
            Just(""),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    "[a-z_]{1,8}".prop_map(String::from),
                    Just("locale".to_string()),
                    Just("channel".to_string()),
                    Just("value".to_string()),
                    Just("operator".to_string()),
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One definition of every type, in the four shapes (plain, multi, localized, channel).
fn definitions() -> HashMap<String, AttributeDefinition> {
    let mut defs = HashMap::new();
    for t in AttributeType::ALL.iter().copied() {
        for (suffix, multi, localized, channel) in [
            ("", false, false, false),
            ("_m", true, false, false),
            ("_l", false, true, false),
            ("_c", false, false, true),
        ] {
            let key = format!("{}{suffix}", t.as_str());
            let mut d = AttributeDefinition::simple(TargetEntity::Product, &key, t);
            d.shape.is_multi = multi;
            d.shape.is_localized = localized;
            d.is_channel_scoped = channel;
            if t == AttributeType::Select {
                d.shape.options = vec!["S".into(), "M".into()];
            }
            if t == AttributeType::Metaobject {
                d.metaobject_definition = Some("material".into());
            }
            defs.insert(key, d);
        }
    }
    defs
}

fn attribute_key() -> impl Strategy<Value = String> {
    let keys: Vec<String> = definitions().into_keys().collect();
    prop_oneof![
        prop::sample::select(keys),
        "[a-z_]{1,10}".prop_map(String::from)
    ]
}

proptest! {
    #![proptest_config(config())]

    /// `values` bodies: validation never panics; accepted changes apply and render, and
    /// applying them twice changes nothing the second time.
    #[test]
    fn values_parser_and_validator(input in prop::collection::btree_map(attribute_key(), json_value(), 0..6)) {
        let defs = definitions();
        let languages = vec!["en-US".to_string(), "de-DE".to_string()];
        let channels = vec!["web".to_string()];
        let rules = ScopeRules { languages: Some(&languages), channels: Some(&channels) };
        let map: Map<String, Value> = input.into_iter().collect();
        if let Ok(changes) = values::parse_values("product", &map, &defs, &rules) {
            let mut vals = StoredValues::new();
            values::apply(&mut vals, &changes);
            prop_assert!(!values::apply(&mut vals, &changes), "idempotent");
            for attr in vals.values() {
                for entry in render_entries(attr) {
                    let entry = serde_json::to_value(&entry).expect("an entry");
                    prop_assert!(entry["value"].is_string());
                    if attr.is_multi {
                        prop_assert!(entry["data"].is_array());
                    }
                }
            }
        }
    }

    /// `search`: any text, and any JSON, is parsed or refused with a 400; whatever parses is
    /// validated against the definitions or refused with a 400.
    #[test]
    fn search_parser(raw in "\\PC{0,64}", value in json_value()) {
        let defs = HashMap::from([(TargetEntity::Product, definitions())]);
        for text in [raw, value.to_string()] {
            match parse_json(&text) {
                Ok(search) => {
                    if let Err(e) = search.validate(&defs) {
                        prop_assert_eq!(e.status(), 400);
                    }
                }
                Err(e) => prop_assert_eq!(e.status(), 400),
            }
        }
    }

    /// Filters built from valid keys and operators with arbitrary values never panic.
    #[test]
    fn search_filters_of_known_keys(key in attribute_key(), op in prop::sample::select(vec![
        "EQUALS", "NOT_EQUALS", "CONTAINS", "NOT_CONTAINS", "IN", "NOT_IN", "EMPTY", "NOT_EMPTY",
        "GREATER_THAN", "LESS_THAN", "BEFORE", "AFTER", "IN_THE_LAST", "NOT_IN_THE_LAST", "LIKE",
    ]), value in json_value()) {
        let defs = HashMap::from([(TargetEntity::Product, definitions())]);
        let search = json!({format!("product.{key}"): [{"operator": op, "value": value}]});
        if let Ok(parsed) = parse_json(&search.to_string()) {
            if let Err(e) = parsed.validate(&defs) {
                prop_assert_eq!(e.status(), 400);
            }
        }
    }

    /// Attribute selectors: parsed or 400; an excluded exact key is never kept.
    #[test]
    fn selector_parser(include in prop::collection::vec("[a-z*._]{0,16}", 0..4),
                       exclude in prop::collection::vec("[a-z*._]{0,16}", 0..4),
                       probe in "[a-z]{1,8}\\.[a-z_]{1,8}") {
        match Selection::parse(Some(include), Some(exclude.clone())) {
            Ok(sel) => {
                let _ = sel.keeps(&probe);
                for e in exclude.iter().filter(|e| !e.contains('*')) {
                    prop_assert!(!sel.keeps(e));
                }
            }
            Err(e) => prop_assert!(!e.message.is_empty()),
        }
    }

    /// Signature headers: any header verifies or fails cleanly; a signed body verifies, and
    /// any change to the body, the secret or the time outside the tolerance fails.
    #[test]
    fn signature_header_parser_and_verifier(header in "\\PC{0,80}", body in prop::collection::vec(any::<u8>(), 0..64),
                                            t in 0i64..4_000_000_000, flip in any::<prop::sample::Index>()) {
        let _ = verify("whsec_x", &header, &body, t, 300);
        let signed = sign("whsec_x", t, &body);
        prop_assert_eq!(verify("whsec_x", &signed, &body, t + 10, 300), Ok(()));
        prop_assert_eq!(verify("whsec_y", &signed, &body, t, 300), Err(VerifyError::Mismatch));
        prop_assert_eq!(verify("whsec_x", &signed, &body, t + 301, 300), Err(VerifyError::Expired));
        if !body.is_empty() {
            let mut tampered = body.clone();
            let i = flip.index(tampered.len());
            tampered[i] ^= 1;
            prop_assert_eq!(verify("whsec_x", &signed, &tampered, t, 300), Err(VerifyError::Mismatch));
        }
    }

    /// Webhook URLs: any text is accepted or refused without panicking; an accepted literal
    /// IP is public; an IPv4 address and its IPv4-mapped IPv6 form get the same verdict.
    #[test]
    fn webhook_url_guard(raw in "\\PC{0,80}", host in "[a-z0-9.:\\[\\]-]{1,40}", v4 in any::<u32>()) {
        for policy in [UrlPolicy::default(), UrlPolicy { allow_loopback: true }] {
            let _ = url_guard::parse(&raw, policy);
            if let Ok(url) = url_guard::parse(&format!("https://{host}/hook"), policy) {
                match url.host() {
                    Some(url::Host::Ipv4(ip)) => prop_assert!(policy.allows(IpAddr::V4(ip))),
                    Some(url::Host::Ipv6(ip)) => prop_assert!(policy.allows(IpAddr::V6(ip))),
                    _ => {}
                }
            }
        }
        let ip = Ipv4Addr::from(v4);
        prop_assert_eq!(is_public(IpAddr::V4(ip)), is_public(IpAddr::V6(ip.to_ipv6_mapped())));
    }

    /// Path and query decoding: any path finds a route, 404 or 405; decoded identifiers are
    /// checked; any query is accepted or refused with a 400.
    #[test]
    fn request_path_and_query_decoding(path in "(/v1)?(/[a-zA-Z0-9%._~{}-]{0,12}){0,5}",
                                       method in prop::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
                                       pairs in prop::collection::vec(("[a-z_]{1,10}", "\\PC{0,20}"), 0..5)) {
        for api in FUNCTIONS {
            match routes::find(api.endpoints, method, &path) {
                Ok(m) => {
                    for (i, p) in m.params.iter().enumerate() {
                        if let Err(e) = m.identifier(i, "entity") {
                            prop_assert_eq!(e.status, 400);
                            prop_assert!(identifier::validate("entity", p).is_err());
                        }
                    }
                }
                Err(e) => prop_assert!(e.status == 404 || e.status == 405),
            }
        }
        let owned: Vec<(String, String)> = pairs;
        for route in FUNCTIONS.iter().flat_map(|api| api.routes()) {
            let query = &route.doc.query;
            if let Err(e) = query.read(&owned).and_then(|q| (query.check)(&q)) {
                prop_assert_eq!(e.status, 400);
            }
        }
        match Query::parse(&owned, &["limit", "page", "include", "attributes", "search"]) {
            Ok(_) => {}
            Err(e) => prop_assert_eq!(e.status, 400),
        }
    }

    /// Bodies: arbitrary bytes are a JSON object or a 400 (413 past the limit); nothing
    /// panics, however deep the nesting.
    #[test]
    fn request_body_decoding(bytes in prop::collection::vec(any::<u8>(), 0..256), depth in 0usize..5000) {
        let request = |body: Vec<u8>| ApiRequest {
            method: "POST".into(),
            path: "/v1/assets".into(),
            content_type: Some("application/json".into()),
            if_match: None,
            idempotency_key: None,
            body,
            ..ApiRequest::default()
        };
        if let Err(e) = request(bytes).json_object(1024) {
            prop_assert!(e.status == 400 || e.status == 413);
        }
        let nested = format!("{{\"a\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
        match request(nested.into_bytes()).json_object(1 << 20) {
            Ok(_) => prop_assert!(depth < 32),
            Err(e) => prop_assert_eq!(e.status, 400),
        }
    }
}
