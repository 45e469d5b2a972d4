//! `/products` routes.

use super::include::with_included;
use super::include::{DetailParams, Include, ProductInclude};
use super::lists::{self, ProductListParams};
use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::error::ApiError;
use crate::http::doc::{QueryDoc, NO_QUERY};
use crate::http::render::{self, Embed};
use crate::http::schema::request;
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::store::items::EntityKind;
use crate::store::products::TreeDepth;
use crate::usecases::etags;
use crate::usecases::tree_delete;
use crate::usecases::tree_patch::{self, ProductBody, ProductBulk};

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new("GET", "/products", Scope::CatalogRead, Doc::new("List products", QueryDoc::of::<ProductListParams>(), None, 200, Body::List("Product")).included()),
        handler!(list_products),
    ),
    Endpoint::new(
        Route::new("PATCH", "/products", Scope::CatalogWrite, Doc::new("Create or update up to 1,000 products in one call (JSON array or NDJSON): a status per line, each item atomic and independent", NO_QUERY, Some(request::<ProductBulk>), 200, Body::Lines("BulkLine"))),
        handler!(super::bulk::patch_products),
    ),
    Endpoint::new(
        Route::new("GET", "/products/{identifier}", Scope::CatalogRead, Doc::new("Get a product", QueryDoc::of::<DetailParams<ProductInclude>>(), None, 200, Body::Single("Product")).included()),
        handler!(get_product),
    ),
    Endpoint::new(
        Route::new("PATCH", "/products/{identifier}", Scope::CatalogWrite, Doc::new("Create (201) or update (200) a product, its variants, SKUs, asset links and categories", NO_QUERY, Some(request::<ProductBody>), 200, Body::Single("WriteResult")).creates()),
        handler!(patch_product),
    ),
    Endpoint::new(
        Route::new("DELETE", "/products/{identifier}", Scope::CatalogWrite, Doc::delete("Delete a product with its variants and SKUs")),
        handler!(delete_product),
    ),
    super::deletions::ENDPOINT,
    super::openapi::ENDPOINT,
    super::history::PRODUCTS[0],
    super::history::PRODUCTS[1],
];

pub const API: Api = Api {
    function: "products",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::LISTS,
};

/// GET /products/{identifier}: one DynamoDB request whatever `include` asks.
async fn get_product(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "product")?;
    let (include, selection) = call
        .query
        .typed::<DetailParams<ProductInclude>>()?
        .parts()?;
    let tree = app
        .store
        .get_product_tree(call.org(), id, depth(include))
        .await?
        .ok_or_else(|| ApiError::entity_not_found("product", id))?;
    let result = render::product(&tree, embed(include), &selection);
    let response = ApiResponse::single(200, result).with_etag(etags::entity(&tree.product));
    with_included(&app.store, call.org(), response, include.metaobjects).await
}

fn depth(include: Include) -> TreeDepth {
    match (include.variants, include.skus) {
        (true, true) => TreeDepth::Skus,
        (true, false) => TreeDepth::Variants,
        _ => TreeDepth::Product,
    }
}

fn embed(include: Include) -> Embed {
    Embed {
        variants: include.variants,
        skus: include.skus,
    }
}

/// GET /products: the index gives the page's identifiers and the true totals, then one
/// round trip reads the page (BatchGetItem, or a Query per product tree with include).
async fn list_products(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let params = call.query.typed::<ProductListParams>()?;
    let completeness = params.completeness.check()?;
    let page = lists::page(app, call, EntityKind::Product, params.list, completeness).await?;
    let req = &page.req;
    let depth = depth(req.include);
    let trees = app
        .store
        .product_page(call.org(), &page.entries, depth)
        .await?;
    lists::check_embedded(trees.iter().map(|t| t.variants.len() + t.skus.len()).sum())?;
    let result = trees
        .iter()
        .map(|t| render::product(t, embed(req.include), &req.selection))
        .collect();
    lists::respond(app, call, &page, result).await
}

/// PATCH /products/{identifier}: upsert of the product and the variants and SKUs it names;
/// 201 when the product was created, 200 otherwise. The whole body is validated first.
async fn patch_product(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "product")?;
    let body: ProductBody = call.body(app)?;
    let patch = tree_patch::parse_product_patch(app, call.org(), id, &body).await?;
    let written =
        crate::usecases::product_write::upsert_product(&call.writer(app), id, &patch, None).await?;
    Ok(super::written(written))
}

/// DELETE /products/{identifier}: the product, its variants and SKUs (and their identity
/// items), through `usecases/tree_delete.rs`.
async fn delete_product(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "product")?;
    tree_delete::delete_product(&call.writer(app), id).await?;
    Ok(ApiResponse::single(200, render::deleted(id)))
}
