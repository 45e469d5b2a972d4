//! `/variants` routes: variants addressed without their product (via their identity item),
//! with the product's attributes merged in.

use super::include::{DetailParams, VariantInclude};
use super::lists;
use super::lists::ListParams;
use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::doc::QueryDoc;
use crate::http::render;
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::store::items::EntityKind;
use crate::store::products::ProductTree;
use crate::store::writes::{Expect, TreeWrite};
use crate::usecases::retry::{with_retries, Retry};

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
    super::history::VARIANTS,
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
    let tree = find(app, call.org(), id, include.skus).await?;
    let result = render::variant(&tree, include.skus, &selection);
    let response = ApiResponse::single(200, result).with_etag(etags::entity(&tree.variants[0]));
    with_included(&app.store, call.org(), response, include.metaobjects).await
}

/// The variant `id` with its product (and its SKUs when `with_skus`), or 404: the identity
/// GetItem, then one request for the path.
pub async fn find(
    app: &App,
    org: &str,
    id: &str,
    with_skus: bool,
) -> Result<ProductTree, ApiError> {
    let not_found = || ApiError::entity_not_found("variant", id);
    let identity = app
        .store
        .identity(org, EntityKind::Variant, id)
        .await?
        .ok_or_else(not_found)?;
    app.store
        .get_variant_path(org, &identity.pid, id, with_skus)
        .await?
        .ok_or_else(not_found)
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
    let org = call.org();
    let if_match = call.request.if_match.as_deref();
    with_retries(&format!("variant '{id}'"), move || async move {
        let tree = find(app, org, id, true).await;
        let tree = etags::checked(if_match, tree, |t| etags::entity(&t.variants[0]), "variant")?;
        let variant = &tree.variants[0];
        let mut write = TreeWrite::new();
        for s in tree.skus.iter().filter(|s| s.vid.as_deref() == Some(id)) {
            write.delete(org, s).map_err(Retry::from)?;
        }
        write.delete(org, variant).map_err(Retry::from)?;
        let mut product = tree.product.clone();
        let expect = Expect::Version(product.ver);
        product.touch_tree(Timestamp::next_after([
            product.updated_at,
            variant.updated_at,
        ]));
        write.put(org, &product, expect).map_err(Retry::from)?;
        app.store.commit(&write, &call.origin()).await?;
        Ok(ApiResponse::single(200, render::deleted(id)))
    })
    .await
}
