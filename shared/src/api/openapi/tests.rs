//! Unit tests of the parent module.

use super::*;

#[test]
fn every_route_is_served_once_and_documented() {
    let doc = document();
    let mut documented = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.push(format!("{} {path}", method.to_uppercase()));
        }
    }
    let mut served: Vec<String> = super::super::FUNCTIONS
        .iter()
        .flat_map(|a| a.routes().map(|r| format!("{} {}", r.method, r.path)))
        .collect();
    documented.sort();
    served.sort();
    assert_eq!(documented, served);
    assert!(served.contains(&"GET /openapi.json".to_string()));
}

fn served() -> Vec<Route> {
    super::super::FUNCTIONS
        .iter()
        .flat_map(|a| a.routes().copied())
        .collect()
}

#[test]
fn every_sample_is_a_served_route_with_a_body_exactly_when_it_writes() {
    let routes = served();
    let mut names = std::collections::HashSet::new();
    for s in samples::writes().into_iter().chain(samples::reads()) {
        let m = crate::http::routes::find(&routes, s.method, &format!("/v1{}", s.path))
            .unwrap_or_else(|e| panic!("{} {}: {}", s.method, s.path, e.message));
        let writes = matches!(s.method, "POST" | "PUT" | "PATCH");
        assert_eq!(s.body.is_some(), writes, "{} {}", s.method, s.path);
        assert!(
            names.insert((s.method, m.route.path, s.name)),
            "{} twice",
            s.name
        );
    }
}

/// Webhook, import, export and API key ids are generated, so the document cannot name one; every other operation
/// with a path parameter or a body has examples of them.
#[test]
fn every_operation_but_those_of_a_webhook_id_has_examples() {
    let doc = document();
    for route in served() {
        let op = &doc["paths"][route.path][route.method.to_ascii_lowercase()];
        if route.path.starts_with("/webhooks/{id}")
            || route.path == "/imports/{id}"
            || route.path == "/exports/{id}"
            || route.path == "/api-keys/{id}"
            // a sign-in token is made for one exchange: no example could be sent
            || route.path == "/console-sessions/exchange"
        {
            continue;
        }
        for p in op["parameters"].as_array().unwrap() {
            if p["in"] == "path" {
                assert!(p["examples"].is_object(), "{} {}", route.method, route.path);
            }
        }
        if op.get("requestBody").is_some() {
            let body = &op["requestBody"]["content"]["application/json"];
            assert!(
                body["examples"].is_object(),
                "{} {}",
                route.method,
                route.path
            );
        }
    }
}

#[test]
fn yaml_is_block_style_and_quoted() {
    let y = yaml();
    assert!(y.contains("\"openapi\": \"3.1.0\"\n"));
    assert!(y.contains("\"/products/{identifier}\":\n"));
}

#[test]
fn the_served_document_is_the_generated_one() {
    assert!(
        include_str!("document.json") == super::json(),
        "shared/src/api/openapi/document.json is stale: run `make generate`"
    );
}

/// `search` carries the operator matrix the parser checks: every attribute type and every
/// system filter with its category's operators, each of which the parser accepts for it.
#[test]
fn the_search_parameter_lists_the_operators_the_parser_accepts() {
    use crate::domain::attributes::AttributeType;
    let doc = document();
    let ops = &doc["components"]["parameters"]["search"]["x-operators"];
    let types = ops["types"].as_object().unwrap();
    let mut listed: Vec<&str> = types.keys().map(String::as_str).collect();
    let mut all = AttributeType::NAMES.to_vec();
    listed.sort();
    all.sort();
    assert_eq!(listed, all);
    assert_eq!(
        types["price"],
        json!([
            "EQUALS",
            "NOT_EQUALS",
            "GREATER_THAN",
            "LESS_THAN",
            "EMPTY",
            "NOT_EMPTY"
        ])
    );
    assert_eq!(
        types["metaobject"],
        json!(["EQUALS", "NOT_EQUALS", "IN", "NOT_IN", "EMPTY", "NOT_EMPTY"])
    );
    let system = ops["system"].as_object().unwrap();
    let keys: Vec<&str> = system.keys().map(String::as_str).collect();
    assert_eq!(keys, ["_family", "_identifier", "_updated_at"]);
    assert_eq!(system["_identifier"], types["text"]);
    assert_eq!(system["_updated_at"], types["datetime"]);
    assert_eq!(system["_family"], types["select"]);
    assert!(types["datetime"]
        .as_array()
        .unwrap()
        .contains(&json!("IN_THE_LAST")));
}

/// A query parameter component is derived from the routes' query types: every route that
/// refers to one derives the same parameter (a name meaning another thing on one route has
/// a component of its own), and a required one says so.
#[test]
fn every_query_component_is_derived_alike_by_each_route_using_it() {
    let (components, differ) = query_parameters();
    assert_eq!(differ, Vec::<String>::new());
    assert_eq!(components["entity_type"]["required"], true);
    assert_eq!(components["limit"]["schema"]["maximum"], 200);
    assert_eq!(
        components["deletions_after"]["description"],
        "Only deletions later than this; at most 30 days back."
    );
    let names: Vec<&String> = components.keys().collect();
    assert_eq!(names.len(), 20, "{names:?}");
}

/// The pipeline checks only a query's names before an `Idempotency-Key` is claimed and the
/// handler reads the values: that holds only while no route that can claim a key (POST,
/// PATCH, PUT) takes a query parameter.
#[test]
fn no_route_that_claims_an_idempotency_key_takes_a_query() {
    for api in super::super::FUNCTIONS {
        for route in api.routes() {
            if matches!(route.method, "POST" | "PATCH" | "PUT") {
                let names = (route.doc.query.names)();
                assert!(
                    names.is_empty(),
                    "{} {}: {names:?}",
                    route.method,
                    route.path
                );
            }
        }
    }
}
