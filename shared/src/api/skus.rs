//! `/skus` routes: SKUs addressed without their parents (via their identity item), with the
//! product's and variant's attributes merged in.

use super::include::{DetailParams, SkuInclude};
use super::lists;
use super::lists::ListParams;
use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::doc::{QueryDoc, NO_QUERY};
use crate::http::render;
use crate::http::schema::request;
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::store::items::EntityKind;
use crate::store::writes::{Expect, TreeWrite};
use crate::usecases::retry::{with_retries, Retry};
use crate::usecases::tree_patch::{self, ProductPatch, SkuPatchBody, VariantPatch};

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
    super::history::SKUS,
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
    let tree = sku_path(app, call.org(), id).await?;
    let response = ApiResponse::single(200, render::sku(&tree, &selection))
        .with_etag(etags::entity(&tree.skus[0]));
    with_included(&app.store, call.org(), response, include.metaobjects).await
}

/// The SKU with its variant and product, or 404.
async fn sku_path(
    app: &App,
    org: &str,
    id: &str,
) -> Result<crate::store::products::ProductTree, ApiError> {
    let not_found = || ApiError::entity_not_found("sku", id);
    let identity = app
        .store
        .identity(org, EntityKind::Sku, id)
        .await?
        .ok_or_else(not_found)?;
    let vid = identity.vid.as_deref().unwrap_or_default();
    app.store
        .get_sku_path(org, &identity.pid, vid, id)
        .await?
        .ok_or_else(not_found)
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
    let org = call.org();
    let sku_patch = &sku_patch;
    let if_match = call.request.if_match.as_deref();
    with_retries(&format!("sku '{id}'"), move || async move {
        let tree = sku_path(app, org, id).await;
        let tree = etags::checked(if_match, tree, |t| etags::entity(&t.skus[0]), "sku")?;
        let patch = ProductPatch {
            variants: vec![VariantPatch {
                entity: tree_patch::EntityPatch {
                    id: tree.variants[0].id.clone(),
                    ..Default::default()
                },
                skus: vec![sku_patch.clone()],
            }],
            ..Default::default()
        };
        let pid = tree.product.id.clone();
        let (v, s) = (tree.variants[0].clone(), tree.skus[0].clone());
        let plan = tree_patch::plan(org, &pid, Some(tree), &patch, false)?;
        if !plan.write.is_empty() {
            app.store
                .commit(&plan.write, &call.origin())
                .await
                .map_err(|e| {
                    crate::usecases::references::named(e, &[(String::new(), &sku_patch.values)])
                })?;
        }
        let v = plan.item(EntityKind::Variant, &v.id).unwrap_or(&v);
        let s = plan.item(EntityKind::Sku, id).unwrap_or(&s);
        let updated = render::sku_updated(&plan.product, v, s);
        Ok(super::written(tree_patch::written(&plan, s, updated)))
    })
    .await
}

/// DELETE /skus/{identifier}: the SKU; its variant's and product's `updatedAt` move.
async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "sku")?;
    let org = call.org();
    let if_match = call.request.if_match.as_deref();
    with_retries(&format!("sku '{id}'"), move || async move {
        let tree = sku_path(app, org, id).await;
        let tree = etags::checked(if_match, tree, |t| etags::entity(&t.skus[0]), "sku")?;
        let s = &tree.skus[0];
        let at = Timestamp::next_after([
            tree.product.updated_at,
            tree.variants[0].updated_at,
            s.updated_at,
        ]);
        let mut write = TreeWrite::new();
        write.delete(org, s).map_err(Retry::from)?;
        for parent in [&tree.variants[0], &tree.product] {
            let mut parent = parent.clone();
            let expect = Expect::Version(parent.ver);
            parent.touch_tree(at);
            write.put(org, &parent, expect).map_err(Retry::from)?;
        }
        app.store.commit(&write, &call.origin()).await?;
        Ok(ApiResponse::single(200, render::deleted(id)))
    })
    .await
}
