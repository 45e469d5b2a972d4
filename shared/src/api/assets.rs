//! `/assets` routes, and the asset links of products (`/products/{identifier}/assets`) and
//! variants (`/variants/{identifier}/assets`, the assets of the variant's product).

use super::shelf_pages;
use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::cursor::{CursorPageParams, CursorPaging, Start};
use crate::http::doc::{QueryDoc, NO_QUERY, PAGE};
use crate::http::query::{query_values, QueryValue};
use crate::http::render::{to_json, Attributes};
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Doc, Paging, Route};
use crate::search::flat::{PageQuery, Seek};
use crate::store::flat_lists::Mark;
use crate::store::resources::{ResourceItem, Shelf};
use crate::store::settings::WriteContext;
use crate::usecases::asset_input::{
    create_asset, patch_asset, AssetCreate, AssetFields, AssetItem, RawAsset, MAX_LINKS,
};
use crate::usecases::etags;
use crate::usecases::links;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/assets",
            Scope::CatalogRead,
            Doc::new(
                "List assets",
                QueryDoc::of::<AssetListParams>(),
                None,
                200,
                Body::List("Asset"),
            ),
        ),
        handler!(list),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/assets",
            Scope::CatalogWrite,
            Doc::new(
                "Create an asset (409 when the identifier exists)",
                NO_QUERY,
                Some(request::<AssetCreate>),
                201,
                Body::Single("Asset"),
            ),
        ),
        handler!(create),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/assets/{identifier}",
            Scope::CatalogRead,
            Doc::new("Get an asset", NO_QUERY, None, 200, Body::Single("Asset")),
        ),
        handler!(get),
    ),
    Endpoint::new(
        Route::new(
            "PATCH",
            "/assets/{identifier}",
            Scope::CatalogWrite,
            Doc::new(
                "Update an asset; omitted fields are unchanged",
                NO_QUERY,
                Some(request::<AssetFields>),
                200,
                Body::Single("Asset"),
            ),
        ),
        handler!(patch),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/assets/{identifier}",
            Scope::CatalogWrite,
            Doc::delete("Delete an asset, unlinking it everywhere"),
        ),
        handler!(delete),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/products/{identifier}/assets",
            Scope::CatalogRead,
            Doc::new(
                "List a product's assets, in link order",
                PAGE,
                None,
                200,
                Body::List("Asset"),
            ),
        ),
        handler!(product_assets),
    ),
    Endpoint::new(
        Route::new(
            "PUT",
            "/products/{identifier}/assets",
            Scope::CatalogWrite,
            Doc::new(
                "Make the given assets the complete set, in order",
                NO_QUERY,
                Some(request::<AssetLinks>),
                200,
                Body::List("Asset"),
            ),
        ),
        handler!(replace_links),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/products/{identifier}/assets",
            Scope::CatalogWrite,
            Doc::new(
                "Add assets without replacing (already linked: no duplicate)",
                NO_QUERY,
                Some(request::<AssetLinksAdd>),
                200,
                Body::List("Asset"),
            ),
        ),
        handler!(add_links),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/variants/{identifier}/assets",
            Scope::CatalogRead,
            Doc::new(
                "List a variant's assets (its product's)",
                PAGE,
                None,
                200,
                Body::List("Asset"),
            ),
        ),
        handler!(variant_assets),
    ),
    super::history::ASSETS[0],
    super::history::ASSETS[1],
];

pub const API: Api = Api {
    function: "assets",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::NONE,
};

/// The media type an asset URL suggests by its extension, when none was given.
fn mime_from_url(url: &str) -> &'static str {
    let path = url::Url::parse(url)
        .map(|u| u.path().to_ascii_lowercase())
        .unwrap_or_default();
    let ext = path.rsplit_once('.').map(|(_, e)| e).unwrap_or_default();
    match ext {
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "avif" => "image/avif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "txt" => "text/plain",
        "csv" => "text/csv",
        "json" => "application/json",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

/// An asset as served.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Asset")]
struct AssetView<'a> {
    identifier: &'a str,
    name: &'a str,
    url: &'a str,
    /// As given, or guessed from the URL's file extension
    mime_type: &'a str,
    attributes: Attributes<'a>,
    updated_at: Timestamp,
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] = &[schema::answer::<AssetView>];

/// An asset as served.
pub fn render(a: &ResourceItem) -> Value {
    let url = a.url.as_deref().unwrap_or_default();
    let mime = a.mime_type.as_deref().unwrap_or_else(|| mime_from_url(url));
    to_json(AssetView {
        identifier: &a.id,
        name: &a.name,
        url,
        mime_type: mime,
        attributes: Attributes::all("asset", &a.values),
        updated_at: a.self_updated_at,
    })
}

/// Reads what validating `raws` needs: the asset definitions and the scopes (one
/// BatchGetItem), nothing when no values are given.
pub async fn context(
    app: &App,
    org: &str,
    raws: &[&RawAsset<'_>],
) -> Result<WriteContext, ApiError> {
    let wanted: Vec<_> = raws.iter().flat_map(|r| r.wanted()).collect();
    if wanted.is_empty() {
        return Ok(WriteContext::default());
    }
    Ok(app.store.write_context(org, &wanted, &[]).await?)
}

/// POST /assets: 201; 409 when the identifier exists (one conditional PutItem decides).
async fn create(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: AssetItem = call.body(app)?;
    if body.url.is_none() {
        return Err(ApiError::bad_request("field 'url' is required"));
    }
    let id = body.identifier.as_str();
    let raw = RawAsset::new(String::new(), Some(id), body.fields())?;
    let ctx = context(app, call.org(), &[&raw]).await?;
    let input = raw.validate(id, &ctx)?;
    let item = create_asset(&call.writer(app), &input).await?;
    Ok(ApiResponse::single(201, render(&item)).with_etag(etags::resource(&item)))
}

async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "asset")?;
    let asset = app
        .store
        .get_resource(call.org(), Shelf::ASSETS, id)
        .await?
        .ok_or_else(|| ApiError::entity_not_found("asset", id))?;
    Ok(ApiResponse::single(200, render(&asset)).with_etag(etags::resource(&asset)))
}

/// PATCH /assets/{identifier}: omitted fields unchanged; 404 when the asset does not exist.
async fn patch(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "asset")?;
    let body: AssetFields = call.body(app)?;
    let raw = RawAsset::new(String::new(), None, body.fields())?;
    let ctx = context(app, call.org(), &[&raw]).await?;
    let input = &raw.validate(id, &ctx)?;
    let asset = patch_asset(&call.writer(app), id, input).await?;
    Ok(ApiResponse::single(200, render(&asset)).with_etag(etags::resource(&asset)))
}

/// DELETE /assets/{identifier}: unlinked from every product, then deleted.
async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "asset")?;
    links::delete_everywhere(&call.writer(app), Shelf::ASSETS, id).await?;
    Ok(ApiResponse::single(200, crate::http::render::deleted(id)))
}

/// The query of `GET /assets`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct AssetListParams {
    search: Option<AssetSearch>,
    #[serde(flatten)]
    paging: CursorPageParams,
}

/// `search` on assets: text their names contain, ignoring case (folded here).
#[derive(Debug)]
struct AssetSearch(String);

impl QueryValue for AssetSearch {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        Ok(Self(raw.to_lowercase()))
    }

    fn schema() -> schemars::Schema {
        schemars::json_schema!({"type": "string", "description": "Free text matched against asset names, ignoring case."})
    }
}

query_values!(AssetSearch);

/// GET /assets: the assets index brought up to date (a delta Query per shard), the page
/// selected in memory (`search` matches names, ignoring case), then its items read.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let params = call.query.typed::<AssetListParams>()?;
    let needle = params.search.map(|s| s.0);
    let scope = format!("assets&search={}", needle.as_deref().unwrap_or_default());
    let paging = CursorPaging::open(&params.paging, &app.config.cursor_key, call.org(), scope)?;
    let org = call.org();
    app.lists
        .flat()
        .refresh(&shelf_pages::followed(org, Shelf::ASSETS))
        .await?;
    let needle = needle.filter(|n| !n.is_empty());
    let named = |m: &Mark| {
        let needle = needle.as_deref().unwrap_or_default();
        m.folded.as_deref().is_some_and(|n| n.contains(needle))
    };
    let from = match &paging.start {
        Start::Page(_) => Seek::Offset(paging.offset()),
        Start::After(id) => Seek::After(id),
    };
    let selection = PageQuery {
        floor: None,
        from,
        limit: paging.limit as usize,
        descending: false,
        filter: needle
            .is_some()
            .then_some(&named as &(dyn Fn(&Mark) -> bool + Sync)),
    };
    let (assets, page) = shelf_pages::read(app, org, Shelf::ASSETS, &selection).await?;
    let entries = assets.iter().map(|a| (render(a), a.id.clone())).collect();
    let next = page.more.then(|| page.keys.last()).flatten();
    paging.respond(entries, page.total, next.map(String::as_str))
}

/// The list envelope of linked assets, paged by the request's `limit` and `page`.
fn linked_envelope(call: &Call, assets: &[ResourceItem]) -> Result<ApiResponse, ApiError> {
    let paging = Paging::from_query(&call.query)?;
    Ok(paging.envelope(assets, render))
}

/// GET /products/{identifier}/assets: the product (GetItem), then its assets in link order
/// (one BatchGetItem).
async fn product_assets(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "product")?;
    let product = app
        .store
        .get_product(call.org(), id)
        .await?
        .ok_or_else(|| ApiError::entity_not_found("product", id))?;
    let assets = links::assets_in_order(&app.store, call.org(), &product.assets).await?;
    linked_envelope(call, &assets)
}

/// GET /variants/{identifier}/assets: a variant shows its product's assets, as it shows its
/// product's attributes (identity GetItem, product and variant BatchGetItem, assets).
async fn variant_assets(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "variant")?;
    let tree = crate::usecases::tree_delete::find_variant(app, call.org(), id, false).await?;
    let assets = links::assets_in_order(&app.store, call.org(), &tree.product.assets).await?;
    linked_envelope(call, &assets)
}

/// The body of a link request: `assets`, distinct asset identifiers.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AssetLinks {
    #[serde(default, deserialize_with = "crate::http::body::present")]
    #[schemars(schema_with = "links")]
    assets: Option<Vec<String>>,
}

schema::requiring!(
    /// The body of POST /products/{identifier}/assets: `assets` required.
    AssetLinksAdd = AssetLinks, ["assets"]
);

fn links(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schema::identifiers(MAX_LINKS)
}

/// PUT (`replace`) or POST /products/{identifier}/assets: the given assets become the
/// complete set, in order (PUT), or are appended unless already linked (POST). Every asset
/// must exist (400 otherwise). Reads the product, then the assets; one write of the product
/// and the assets' `linkedBy` sets.
/// PUT /products/{identifier}/assets: the given assets become the complete set, in order.
async fn replace_links(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    relink(app, call, true).await
}

/// POST /products/{identifier}/assets: adds the given assets (no duplicates).
async fn add_links(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    relink(app, call, false).await
}

async fn relink(app: &App, call: &Call, replace: bool) -> Result<ApiResponse, ApiError> {
    let pid = call.route.identifier(0, "product")?;
    let body: AssetLinks = call.body(app)?;
    let list = body.assets.as_deref().unwrap_or_default();
    let ids = &crate::usecases::asset_input::distinct_ids(list, "assets", "asset")?;
    if !replace && body.assets.is_none() {
        return Err(ApiError::bad_request("field 'assets' is required"));
    }
    let assets = links::relink_assets(&call.writer(app), pid, ids, replace).await?;
    let total = assets.len();
    Ok(Paging {
        limit: MAX_LINKS as u32,
        page: 1,
    }
    .page_response(assets.iter().map(render).collect(), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_guessed_from_urls() {
        assert_eq!(
            mime_from_url("https://cdn.example.com/a/B.JPG?x=1"),
            "image/jpeg"
        );
        assert_eq!(
            mime_from_url("https://cdn.example.com/file"),
            "application/octet-stream"
        );
    }
}
