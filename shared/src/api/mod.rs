//! Route handlers, one module per function, plus the rendering they share.

pub(crate) mod api_keys;
pub mod assets;
pub mod attributes;
pub(crate) mod bulk;
pub mod bundles;
pub mod categories;
pub mod console;
pub(crate) mod deletions;
pub(crate) mod exports;
pub mod fallback;
pub(crate) mod history;
pub mod imports;
pub(crate) mod include;
pub(crate) mod lists;
pub mod metaobjects;
pub mod openapi;
pub mod products;
pub mod samples;
mod served;
pub mod settings;
pub(crate) mod shelf_pages;
pub mod skus;
pub(crate) mod usage;
pub mod variants;
pub mod webhooks;

use crate::app::Api;

/// Every function and its routes: feeds the local router and the route-coverage tests.
pub const FUNCTIONS: &[&Api] = &[
    &products::API,
    &variants::API,
    &skus::API,
    &attributes::API,
    &settings::API,
    &webhooks::API,
    &assets::API,
    &categories::API,
    &bundles::API,
    &metaobjects::API,
    &imports::API,
    &console::API,
];

/// The `[workspace.metadata.lambda.watch.router]` entries: one line per path (matchit
/// syntax), mapped to the function that serves it, and the fallback's catch-all, sorted.
pub fn router_toml() -> String {
    let mut lines: Vec<String> = FUNCTIONS
        .iter()
        .flat_map(|api| {
            api.routes()
                .map(move |r| format!("\"/v1{}\" = \"{}\"\n", r.path, api.function))
        })
        .chain(
            console::PAGE_PATHS
                .iter()
                .map(|p| format!("\"{p}\" = \"{}\"\n", console::API.function)),
        )
        .chain(
            fallback::ROUTER_PATHS
                .iter()
                .map(|p| format!("\"{p}\" = \"{}\"\n", fallback::FUNCTION)),
        )
        .collect();
    lines.sort();
    lines.dedup();
    lines.concat()
}

/// The text of `served.rs`: every function's routes as the fallback matches them (method,
/// path, scope), without their handlers, so that the fallback's binary links none of them.
pub fn served_rs() -> String {
    let mut out = String::from(SERVED_HEADER);
    for route in FUNCTIONS.iter().flat_map(|api| api.routes()) {
        let scope = route
            .scope
            .map_or("None".to_string(), |s| format!("Some(Scope::{s:?})"));
        out.push_str(&format!(
            "    Route::served(\"{}\", \"{}\", {scope}),\n",
            route.method, route.path
        ));
    }
    out.push_str("];\n");
    out
}

const SERVED_HEADER: &str = "\
//! Every function's routes as the fallback matches them: generated from the route tables
//! (`make generate`, which runs `catalog-admin served-rs`); a test keeps them equal.

use crate::auth::Scope;
use crate::http::Route;

#[rustfmt::skip]
pub const SERVED: &[Route] = &[
";

/// The answer of a write that creates or replaces: 201 when it created, else 200, with the
/// tag of the entity it answers for.
fn saved(created: bool, result: serde_json::Value, etag: String) -> crate::http::ApiResponse {
    let status = if created { 201 } else { 200 };
    crate::http::ApiResponse::single(status, result).with_etag(etag)
}

/// The answer of a tree write ([`saved`]: 201 when it created the product).
fn written(w: crate::usecases::tree_patch::Written) -> crate::http::ApiResponse {
    saved(w.created, w.result, w.etag)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fallbacks_table_is_every_functions_routes() {
        assert!(
            include_str!("served.rs") == super::served_rs(),
            "shared/src/api/served.rs is stale: run `make generate`"
        );
    }

    #[test]
    fn every_path_belongs_to_one_function() {
        let toml = super::router_toml();
        let paths: Vec<&str> = toml
            .lines()
            .map(|l| l.split(" = ").next().unwrap())
            .collect();
        let mut unique = paths.clone();
        unique.dedup();
        assert_eq!(paths, unique, "a path is served by two functions");
    }
}
