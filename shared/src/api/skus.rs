//! `/skus` routes: SKUs addressed without their parents (via their identity item), with the
//! product's and variant's attributes merged in.

use super::include::{DetailParams, SkuInclude};
use super::lists;
use super::lists::ListParams;
use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::error::ApiError;
use crate::http::doc::{QueryDoc, NO_QUERY};
use crate::http::render;
use crate::http::schema::request;
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::store::items::EntityKind;
use crate::usecases::product_write;
use crate::usecases::tree_delete::{self, find_sku};
use crate::usecases::tree_patch::{self, SkuPatchBody};

use super::include::with_included;
use crate::usecases::etags;

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/skus",
            Scope::CatalogRead,
            Doc::new(
                "List SKUs",
                QueryDoc::of::<ListParams<SkuInclude>>(),
                None,
                200,
                Body::List("Sku"),
            )
            .included(),
        ),
        handler!(list),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/skus/{identifier}",
            Scope::CatalogRead,
            Doc::new(
                "Get a SKU",
                QueryDoc::of::<DetailParams<SkuInclude>>(),
                None,
                200,
                Body::Single("Sku"),
            )
            .included(),
        ),
        handler!(get),
    ),
    Endpoint::new(
        Route::new(
            "PATCH",
            "/skus/{identifier}",
            Scope::CatalogWrite,
            Doc::new(
                "Update a SKU",
                NO_QUERY,
                Some(request::<SkuPatchBody>),
                200,
                Body::Single("WriteResult"),
            ),
        ),
        handler!(patch),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/skus/{identifier}",
            Scope::CatalogWrite,
            Doc::delete("Delete a SKU (409 while a bundle holds it)"),
        ),
        handler!(delete),
    ),
    super::history::SKUS[0],
    super::history::SKUS[1],
];

pub const API: Api = Api {
    function: "skus",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::LISTS,
};

/// GET /skus/{identifier}: identity GetItem, then one BatchGetItem of product, variant, SKU.
async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "sku")?;
    let (include, selection) = call.query.typed::<DetailParams<SkuInclude>>()?.parts()?;
    let tree = find_sku(app, call.org(), id).await?;
    let response = ApiResponse::single(200, render::sku(&tree, &selection))
        .with_etag(etags::entity(&tree.skus[0]));
    with_included(&app.store, call.org(), response, include.metaobjects).await
}

/// GET /skus: index → page → one round trip of BatchGetItem for SKUs, variants, products.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let page = lists::page(
        app,
        call,
        EntityKind::Sku,
        call.query.typed::<ListParams<SkuInclude>>()?,
        None,
    )
    .await?;
    let trees = app.store.sku_page(call.org(), &page.entries).await?;
    let result = trees
        .iter()
        .map(|t| render::sku(t, &page.req.selection))
        .collect();
    lists::respond(app, call, &page, result).await
}

/// PATCH /skus/{identifier}: `name` and `values` of an existing SKU (404 otherwise); the
/// variant's and product's tree timestamps move in the same transaction.
async fn patch(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "sku")?;
    let body: SkuPatchBody = call.body(app)?;
    let sku_patch = tree_patch::parse_sku_patch(app, call.org(), id, &body).await?;
    let written = product_write::patch_sku(&call.writer(app), id, &sku_patch).await?;
    Ok(super::written(written))
}

/// DELETE /skus/{identifier}: the SKU; its variant's and product's `updatedAt` move.
async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "sku")?;
    tree_delete::delete_sku(&call.writer(app), id).await?;
    Ok(ApiResponse::single(200, render::deleted(id)))
}
