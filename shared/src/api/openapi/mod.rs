//! The OpenAPI 3.1 document of the whole API, built from the route tables (every served route
//! has exactly one operation; a test holds the two equal) and written to `docs/openapi.yaml`
//! and `document.json` by `make generate` (tests hold both equal to this). Served
//! unauthenticated at `GET /v1/openapi.json`, from `document.json`.

use super::samples::{self, Sample};
use crate::app::{handler, App, Call, Endpoint};
use crate::domain::attributes::TargetEntity;
use crate::error::ApiError;
use crate::http::doc::NO_QUERY;
use crate::http::{ApiResponse, Body, Doc, Route};
use schemars::SchemaGenerator;
use serde_json::{json, Map, Value};

mod schemas;

use schemas::*;

#[cfg(test)]
mod tests;

/// The one route served without authentication (by the `products` function).
pub const ENDPOINT: Endpoint = Endpoint::new(
    Route::public(
        "GET",
        "/openapi.json",
        Doc::new(
            "This document (no authentication)",
            NO_QUERY,
            None,
            200,
            Body::Document,
        ),
    ),
    handler!(serve),
);

/// The document as served: [`document`] rendered ahead of time (`make generate`, kept equal
/// by a unit test), so that the `products` binary links neither the other functions'
/// handlers nor the document's builder.
const SERVED: &str = include_str!("document.json");

/// GET /openapi.json: this document (no key, no storage).
async fn serve(_app: &App, _call: &Call) -> Result<ApiResponse, ApiError> {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    // a unit test holds the file equal to the generated document, so it parses
    let doc = DOC.get_or_init(|| serde_json::from_str(SERVED).expect("document.json is JSON"));
    Ok(ApiResponse::json(200, doc.clone()))
}

/// The text of `document.json`: the whole document, compact, with a final newline.
pub fn json() -> String {
    format!("{}\n", document())
}

fn param(name: &str, location: &str, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": location, "required": location == "path", "schema": schema, "description": description})
}

fn parameters() -> Value {
    let mut all = Value::Object(query_parameters().0);
    all["If-Match"] = json!({"name": "If-Match", "in": "header", "required": false, "schema": string(), "description": "Write only if the entity's current ETag is one of these (or `*`: it exists); else 412."});
    all["Idempotency-Key"] = json!({"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7e]+$"}, "description": "Sent again with the same request by the same API key within 24 h: the first answer is replayed (a secret it carried, null) and nothing is written; with another request or from another key: 422; while the first runs: 409."});
    for (name, example) in samples::query_examples() {
        all[name]["example"] = example;
    }
    all
}

/// The query parameters of every route as the document's components, derived from the
/// routes' query types, and the components two routes derive differently (a test holds
/// that list empty).
fn query_parameters() -> (Map<String, Value>, Vec<String>) {
    let mut all = Map::new();
    let mut differ = Vec::new();
    for api in super::FUNCTIONS {
        for route in api.routes() {
            for (name, param) in query_params(route) {
                let component = query_component(route.path, &name);
                match all.get(&component) {
                    Some(seen) if seen != &param => {
                        differ.push(format!("{component} ({} {})", route.method, route.path))
                    }
                    Some(_) => {}
                    None => {
                        all.insert(component, param);
                    }
                }
            }
        }
    }
    (all, differ)
}

/// The query parameters `route`'s query type derives, by name: its description and `x-`
/// extensions at the parameter's level, the rest its schema.
fn query_params(route: &Route) -> Vec<(String, Value)> {
    use crate::http::query;
    let schema = (route.doc.query.schema)(&mut query::generator());
    query::parameters(&schema)
        .into_iter()
        .map(|(name, mut schema, required)| {
            let mut param = json!({"name": name, "in": "query", "required": required});
            if let Some(fields) = schema.as_object_mut() {
                let lifted: Vec<String> = fields
                    .keys()
                    .filter(|k| *k == "description" || k.starts_with("x-"))
                    .cloned()
                    .collect();
                for key in lifted {
                    if let Some(value) = fields.remove(&key) {
                        param[key] = value;
                    }
                }
            }
            param["schema"] = schema;
            (name, param)
        })
        .collect()
}

/// The routes of one entity that carry its `ETag` (reads and writes of the entity itself).
fn tagged(route: &Route) -> bool {
    const ENTITIES: &[&str] = &[
        "/products/{identifier}",
        "/variants/{identifier}",
        "/skus/{identifier}",
        "/assets/{identifier}",
        "/categories/{identifier}",
        "/bundles/{identifier}",
        "/metaobjects/{definition}/{identifier}",
        "/webhooks/{id}",
    ];
    ENTITIES.contains(&route.path)
        || matches!(
            (route.method, route.path),
            ("POST", "/assets") | ("POST", "/webhooks") | ("POST", "/webhooks/{id}/rotate-secret")
        )
}

/// The component holding query parameter `name` (a route's `Doc::query` holds the names the
/// parser checks) on `path`: `include` allows different relations on products, variants and
/// SKUs, and a few names mean another thing on one route.
fn query_component(path: &str, name: &str) -> String {
    let component = match (name, path) {
        ("include", p) if p.starts_with("/variants") => "variant_include",
        ("include", p) if p.starts_with("/skus") => "sku_include",
        ("updated_after", "/deletions") => "deletions_after",
        ("search", "/assets") => "asset_search",
        ("status", p) if p.ends_with("/deliveries") => "delivery_status",
        ("event", p) if p.ends_with("/deliveries") => "delivery_event",
        _ => name,
    };
    component.to_string()
}

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": r("Error")}}})
}

/// The IETF rate-limit fields every answer to an authenticated call carries.
fn rate_limit_headers() -> Map<String, Value> {
    let mut h = Map::new();
    h.insert("RateLimit-Policy".into(), json!({"schema": {"type": "string", "pattern": "^\"org\";q=\\d+;w=\\d+$"}, "description": "The organization's bucket: q tokens (the burst), refilled in w seconds (draft-ietf-httpapi-ratelimit-headers). A call costs 1 token, a bulk write 1 per started group of 10 lines."}));
    h.insert("RateLimit".into(), json!({"schema": {"type": "string", "pattern": "^\"org\";r=\\d+;t=\\d+$"}, "description": "r tokens left, t seconds until the bucket is full again."}));
    h
}

fn responses() -> Value {
    let mut unauthorized =
        error_response("Authorization missing, not Bearer, or the key unknown or revoked.");
    unauthorized["headers"] = json!({"WWW-Authenticate": {"schema": {"const": "Bearer"}}});
    let mut unavailable = error_response("Storage throttled or unavailable after retries; nothing was written. With `Catalog-Partially-Applied: true`, a write of several storage transactions stopped after committing some of them (storage failed, or concurrent writers won every retry): part of it is stored, and repeating the same request completes it.");
    unavailable["headers"] = json!({
        "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds"},
        "Catalog-Partially-Applied": {"schema": {"const": "true"}, "description": "Only on the answer of a partially applied write"}
    });
    let mut not_allowed = error_response("Known path, wrong method.");
    not_allowed["headers"] = json!({"Allow": {"schema": string()}});
    json!({
        "BadRequest": error_response("Invalid parameter, body or value; the error names it."),
        "Unauthorized": unauthorized,
        "Forbidden": error_response("API access disabled for the organization, or the key lacks the scope."),
        "NotFound": error_response("No such entity or route."),
        "MethodNotAllowed": not_allowed,
        "Conflict": error_response("The identifier exists, the resource is still in use, or concurrent writers won."),
        "TooManyRequests": {"description": "The organization's rate limit is exceeded (the error names it; Retry-After says when to retry; nothing was done). As a last guard, API Gateway's stage throttling (far above any organization's limit) answers with its own body, {\"message\": \"Too Many Requests\"}.",
            "headers": {
                "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds"},
                "RateLimit-Policy": rate_limit_headers()["RateLimit-Policy"],
                "RateLimit": rate_limit_headers()["RateLimit"]
            },
            "content": {"application/json": {"schema": {"anyOf": [r("Error"), object(&[("message", string(), true)])]},
                "example": {"error": "rate limit exceeded: the organization's limit is 100 requests per second with bursts of 200; retry after 1 s"}}}},
        "PayloadTooLarge": error_response("Body over 1 MiB, or a bulk request over one of its limits (see the limits table); nothing was written."),
        "PreconditionFailed": error_response("If-Match named no current tag of the entity, or the entity does not exist; nothing was written."),
        "KeyReused": error_response("The Idempotency-Key was used before with another method, path, body or API key."),
        "UnsupportedMediaType": error_response("Body sent with a content type other than application/json."),
        "InternalError": {"description": "A failure of the service; details only in its logs.",
            "content": {"application/json": {"schema": r("Error"), "example": {"error": "Internal server error"}}}},
        "Unavailable": unavailable,
    })
}

fn content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

fn success(op: &Doc) -> Value {
    let included = ("included", array(r("Metaobject")), false);
    let schema = match op.body {
        Body::Document => document_answer(),
        Body::Bare(name) => r(name),
        Body::Lines(name) => object(&[("result", array(r(name)), true)]),
        Body::Single(name) => {
            let mut fields = vec![("result", r(name), true)];
            if op.included {
                fields.push(included);
            }
            object(&fields)
        }
        Body::List(name) => {
            let mut fields = vec![
                ("result", array(r(name)), true),
                ("pagination", r("Pagination"), true),
            ];
            if op.included {
                fields.push(included);
            }
            object(&fields)
        }
    };
    json!({"description": "Success", "content": content(schema)})
}

fn operation(route: &Route, tag: &str, g: &mut SchemaGenerator) -> Value {
    let op = &route.doc;
    let samples = samples_of(route);
    let mut params: Vec<Value> = route
        .path
        .split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .enumerate()
        .map(|(i, name)| {
            let schema = match name {
                "definition" | "name" => matching(KEY),
                "key" => {
                    let entities = TargetEntity::NAMES.join("|");
                    matching(&format!("({entities})\\.{KEY}"))
                }
                "id" if route.path.starts_with("/families") => matching("[1-9][0-9]{0,9}"),
                _ => identifier(),
            };
            let mut p = param(name, "path", schema, "Percent-encoded path segment");
            if !samples.is_empty() {
                p["examples"] = samples
                    .iter()
                    .map(|(s, values)| (s.name.to_string(), json!({"value": values[i]})))
                    .collect::<Map<_, _>>()
                    .into();
            }
            p
        })
        .collect();
    params.extend(query_params(route).into_iter().map(|(name, _)| {
        json!({"$ref": format!("#/components/parameters/{}", query_component(route.path, &name))})
    }));
    let tagged = tagged(route);
    let conditional = tagged && matches!(route.method, "PATCH" | "PUT" | "DELETE");
    let idempotent = matches!(route.method, "POST" | "PATCH" | "PUT") && route.scope.is_some();
    if conditional {
        params.push(json!({"$ref": "#/components/parameters/If-Match"}));
    }
    if idempotent {
        params.push(json!({"$ref": "#/components/parameters/Idempotency-Key"}));
    }
    let with_headers = |mut r: Value| {
        let mut headers = Map::new();
        if tagged {
            headers.insert(
                "ETag".into(),
                json!({"schema": string(), "description": "The entity's tag, for If-Match"}),
            );
        }
        if idempotent {
            headers.insert("Idempotent-Replayed".into(), json!({"schema": {"const": "true"}, "description": "Present on the replay of a request sent before with the same Idempotency-Key"}));
        }
        if route.scope.is_some() {
            headers.extend(rate_limit_headers());
        }
        if !headers.is_empty() {
            r["headers"] = headers.into();
        }
        r
    };
    let mut responses = Map::new();
    let status = op.status.to_string();
    responses.insert(status, with_headers(success(op)));
    if op.creates {
        let mut created = success(op);
        created["description"] = json!("Created");
        responses.insert("201".into(), with_headers(created));
    }
    let reference = |name: &str| json!({"$ref": format!("#/components/responses/{name}")});
    let mut errors = vec![("400", "BadRequest"), ("500", "InternalError")];
    if route.scope.is_some() {
        errors.extend([
            ("401", "Unauthorized"),
            ("403", "Forbidden"),
            ("429", "TooManyRequests"),
            ("503", "Unavailable"),
        ]);
    } else if op.request.is_some() {
        // the console's sign-in exchange: public, but it checks a token in storage
        errors.extend([("401", "Unauthorized"), ("503", "Unavailable")]);
    }
    if route.path.contains('{') {
        errors.push(("404", "NotFound"));
    }
    if route.method != "GET" {
        errors.push(("409", "Conflict"));
    }
    if op.request.is_some() {
        errors.extend([("413", "PayloadTooLarge"), ("415", "UnsupportedMediaType")]);
    }
    if conditional {
        errors.push(("412", "PreconditionFailed"));
    }
    if idempotent {
        errors.extend([("409", "Conflict"), ("422", "KeyReused")]);
    }
    for (code, name) in errors {
        responses.insert(code.into(), reference(name));
    }
    let mut v = json!({
        "operationId": operation_id(route),
        "summary": op.summary,
        "tags": [tag],
        "parameters": params,
        "responses": responses,
    });
    match route.scope {
        Some(scope) => v["x-required-scope"] = json!(scope.as_str()),
        None => v["security"] = json!([]),
    }
    if let Some(schema) = op.request {
        let schema = Value::from(schema(g));
        let name = schema["$ref"].as_str().and_then(|r| r.rsplit('/').next());
        // A body whose every field is optional may be left out.
        let required = !name.is_some_and(|n| OPTIONAL_BODIES.contains(&n));
        let mut body = content(schema);
        let examples: Map<String, Value> = samples
            .iter()
            .filter_map(|(s, _)| Some((s.name.to_string(), json!({"value": s.body.clone()?}))))
            .collect();
        if !examples.is_empty() {
            body["application/json"]["examples"] = examples.into();
        }
        v["requestBody"] = json!({"required": required, "content": body});
    }
    v
}

/// Request schemas whose body may be omitted (an empty body means all defaults).
const OPTIONAL_BODIES: &[&str] = &["WebhookRotate"];

/// The sample requests of `route`, in order, with their decoded path parameters.
fn samples_of(route: &Route) -> Vec<(Sample, Vec<String>)> {
    samples::writes()
        .into_iter()
        .chain(samples::reads())
        .filter(|s| s.method == route.method)
        .filter_map(|s| {
            let matched = crate::http::routes::find(&[*route], s.method, &format!("/v1{}", s.path));
            matched.ok().map(|m| (s, m.params))
        })
        .collect()
}

/// `GET /products/{identifier}/assets` → `getProductsIdentifierAssets`.
fn operation_id(route: &Route) -> String {
    let mut id = route.method.to_ascii_lowercase();
    for part in route
        .path
        .split(['/', '-', '.', '{', '}'])
        .filter(|s| !s.is_empty())
    {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            id.push(first.to_ascii_uppercase());
            id.extend(chars);
        }
    }
    id
}

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    // Request schemas are derived from the types the handlers parse, collected here.
    let mut g = crate::http::schema::generator(false);
    for api in super::FUNCTIONS {
        for route in api.routes() {
            let key = route.path.to_string();
            let entry = paths.entry(key).or_insert_with(|| json!({}));
            entry[route.method.to_ascii_lowercase()] = operation(route, api.function, &mut g);
        }
    }
    let mut schemas = schemas();
    if let Value::Object(all) = &mut schemas {
        all.extend(g.take_definitions(true));
        all.extend(answers());
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Catalog API",
            "version": "1.0.0",
            "description": format!("Product catalog (PIM) REST API: products, variants and SKUs with typed attributes, assets, metaobjects, categories, bundles, and signed webhooks. Every route needs `Authorization: Bearer <API key>` (or the web console's session cookie) except this document and the console's sign-in exchange.\n\n## Limits\n\nEvery limit is checked before anything is read or written; beyond it the answer names the limit.\n\n{}", crate::domain::limits::markdown()),
        },
        "servers": [{"url": "/v1", "description": "The API's base URL ends in /v1"}],
        "security": [{"bearer": []}, {"consoleSession": []}],
        "paths": paths,
        "webhooks": {
            "catalogEvent": {"post": {
                "summary": "An entity was created, updated or deleted; fetch it by `identifier` (404 after a delete).",
                "parameters": [
                    {"name": "X-Catalog-Webhook-Id", "in": "header", "required": true, "schema": string(), "description": "The delivery id, as in the body"},
                    {"name": "X-Catalog-Signature", "in": "header", "required": true,
                     "schema": matching("t=[0-9]+(,v1=[0-9a-f]{64}){1,2}"),
                     "description": "t=<unix seconds>,v1=hex(HMAC-SHA256(secret, \"<t>.<raw body>\")); a second v1 (the previous secret) during a rotation's overlap"},
                    {"name": "webhook-id", "in": "header", "required": true, "schema": string(), "description": "Standard Webhooks: the delivery id"},
                    {"name": "webhook-timestamp", "in": "header", "required": true, "schema": matching("[0-9]+"), "description": "Standard Webhooks: unix seconds"},
                    {"name": "webhook-signature", "in": "header", "required": true,
                     "schema": matching("v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})?"),
                     "description": "Standard Webhooks: v1,base64(HMAC-SHA256(base64-decoded secret after whsec_, \"<webhook-id>.<webhook-timestamp>.<raw body>\")), space-separated, two during a rotation's overlap; verify with the official standardwebhooks libraries"},
                    {"name": "User-Agent", "in": "header", "required": true, "schema": {"const": "Catalog-Webhooks/1.0"}},
                ],
                "requestBody": {"required": true, "content": content(r("WebhookPayload"))},
                "responses": {"2XX": {"description": "Received; any other answer (or none within 15 s) is retried with the same id."}},
            }},
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "cat_<12 char id>_<secret>"},
                "consoleSession": {"type": "apiKey", "in": "cookie", "name": "__Host-catalog_console", "description": "The web console's session (POST /console-sessions/exchange sets it; `catalog_console` in local mode). It acts as the API key that made its sign-in link; a call that is not a read also sends the session's `X-CSRF-Token` header."},
            },
            "schemas": schemas,
            "parameters": parameters(),
            "responses": responses(),
        },
    })
}

/// The document as YAML (block style; every string double-quoted, so it reads back exactly).
pub fn yaml() -> String {
    let mut out = String::from(
        "# Generated by `catalog-admin openapi` from the route tables; do not edit.\n",
    );
    emit(&document(), 0, &mut out);
    out
}

fn scalar(v: &Value) -> String {
    v.to_string()
}

fn emit(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) => {
            for (k, val) in map {
                let key = serde_json::to_string(k).expect("a string");
                match val {
                    Value::Object(m) if !m.is_empty() => {
                        out.push_str(&format!("{pad}{key}:\n"));
                        emit(val, indent + 2, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push_str(&format!("{pad}{key}:\n"));
                        emit(val, indent + 2, out);
                    }
                    Value::Object(_) => out.push_str(&format!("{pad}{key}: {{}}\n")),
                    Value::Array(_) => out.push_str(&format!("{pad}{key}: []\n")),
                    _ => out.push_str(&format!("{pad}{key}: {}\n", scalar(val))),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        out.push_str(&format!("{pad}-\n"));
                        emit(item, indent + 2, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push_str(&format!("{pad}-\n"));
                        emit(item, indent + 2, out);
                    }
                    Value::Object(_) => out.push_str(&format!("{pad}- {{}}\n")),
                    Value::Array(_) => out.push_str(&format!("{pad}- []\n")),
                    _ => out.push_str(&format!("{pad}- {}\n", scalar(item))),
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}
