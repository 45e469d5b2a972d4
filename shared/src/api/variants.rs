//! `/variants` routes: variants addressed without their product (via their identity item),
//! with the product's attributes merged in.

use super::include::{DetailParams, VariantInclude};
use super::lists;
use super::lists::ListParams;
use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::error::ApiError;
use crate::http::doc::QueryDoc;
use crate::http::render;
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::store::items::EntityKind;
use crate::usecases::tree_delete::{self, find_variant};

use super::include::with_included;
use crate::usecases::etags;

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/variants",
            Scope::CatalogRead,
            Doc::new(
                "List variants",
                QueryDoc::of::<ListParams<VariantInclude>>(),
                None,
                200,
                Body::List("Variant"),
            )
            .included(),
        ),
        handler!(list),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/variants/{identifier}",
            Scope::CatalogRead,
            Doc::new(
                "Get a variant",
                QueryDoc::of::<DetailParams<VariantInclude>>(),
                None,
                200,
                Body::Single("Variant"),
            )
            .included(),
        ),
        handler!(get),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/variants/{identifier}",
            Scope::CatalogWrite,
            Doc::delete("Delete a variant with its SKUs"),
        ),
        handler!(delete),
    ),
    super::history::VARIANTS[0],
    super::history::VARIANTS[1],
];

pub const API: Api = Api {
    function: "variants",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::LISTS,
};

/// GET /variants/{identifier}: identity GetItem, then one request for product and variant
/// (BatchGetItem) or, with `include=skus`, one filtered Query of the tree.
async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "variant")?;
    let (include, selection) = call
        .query
        .typed::<DetailParams<VariantInclude>>()?
        .parts()?;
    let tree = find_variant(app, call.org(), id, include.skus).await?;
    let result = render::variant(&tree, include.skus, &selection);
    let response = ApiResponse::single(200, result).with_etag(etags::entity(&tree.variants[0]));
    with_included(&app.store, call.org(), response, include.metaobjects).await
}

/// GET /variants: index → page → one round trip for variants, products (and SKUs).
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let page = lists::page(
        app,
        call,
        EntityKind::Variant,
        call.query.typed::<ListParams<VariantInclude>>()?,
        None,
    )
    .await?;
    let skus = page.req.include.skus;
    let trees = app
        .store
        .variant_page(call.org(), &page.entries, skus)
        .await?;
    lists::check_embedded(trees.iter().map(|t| t.skus.len()).sum())?;
    let result = trees
        .iter()
        .map(|t| render::variant(t, skus, &page.req.selection))
        .collect();
    lists::respond(app, call, &page, result).await
}

/// DELETE /variants/{identifier}: the variant and its SKUs; the product's `updatedAt`
/// moves (a deletion below it is a change of its tree).
async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "variant")?;
    tree_delete::delete_variant(&call.writer(app), id).await?;
    Ok(ApiResponse::single(200, render::deleted(id)))
}
