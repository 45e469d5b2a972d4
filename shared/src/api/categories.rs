//! `/categories` routes: a tree of categories (each with an optional parent), which products
//! list in `categories` (set through PATCH /products).

use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::names;
use crate::domain::time::Timestamp;
use crate::error::ApiError;
use crate::http::doc::{NO_QUERY, PAGE};
use crate::http::render::to_json;
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::store::resources::{ResourceItem, Shelf};
use crate::usecases::categories::{put_category, CategoryInput};
use crate::usecases::etags;
use crate::usecases::links;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/categories",
            Scope::CatalogRead,
            Doc::new("List categories", PAGE, None, 200, Body::List("Category")),
        ),
        handler!(list),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/categories/{identifier}",
            Scope::CatalogRead,
            Doc::new(
                "Get a category",
                NO_QUERY,
                None,
                200,
                Body::Single("Category"),
            ),
        ),
        handler!(get),
    ),
    Endpoint::new(
        Route::new(
            "PUT",
            "/categories/{identifier}",
            Scope::CatalogWrite,
            Doc::new(
                "Create (201) or replace (200) a category",
                NO_QUERY,
                Some(request::<CategoryFields>),
                200,
                Body::Single("Category"),
            )
            .creates(),
        ),
        handler!(put),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/categories/{identifier}",
            Scope::CatalogWrite,
            Doc::delete("Delete a category (409 with subcategories), unlinking it from products"),
        ),
        handler!(delete),
    ),
];

pub const API: Api = Api {
    function: "categories",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::NONE,
};

/// A category as served.
pub fn render(c: &ResourceItem) -> Value {
    to_json(CategoryView {
        identifier: &c.id,
        name: &c.name,
        parent: c.parent.as_deref(),
        updated_at: c.self_updated_at,
    })
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] = &[schema::answer::<CategoryView>];

/// A category as served.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Category")]
struct CategoryView<'a> {
    identifier: &'a str,
    name: &'a str,
    /// The parent category; null at the top
    parent: Option<&'a str>,
    updated_at: Timestamp,
}

/// GET /categories: the categories index brought up to date, then the page's items.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    super::shelf_pages::list(app, call, Shelf::CATEGORIES, render).await
}

async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "category")?;
    let c = app
        .store
        .get_resource(call.org(), Shelf::CATEGORIES, id)
        .await?
        .ok_or_else(|| ApiError::entity_not_found("category", id))?;
    Ok(ApiResponse::single(200, render(&c)).with_etag(etags::resource(&c)))
}

/// The body of PUT /categories/{identifier}; `parent: null` is no parent.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CategoryPut")]
struct CategoryFields {
    #[schemars(schema_with = "schema::name")]
    name: String,
    /// The parent category's identifier.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    parent: Option<Value>,
}

/// PUT /categories/{identifier} {name, parent?}: creates (201) or replaces (200), through
/// `usecases/categories.rs` (one Query, one transaction).
async fn put(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "category")?;
    let body: CategoryFields = call.body(app)?;
    let name = body.name.as_str();
    names::validate("name", name)?;
    let parent = match &body.parent {
        None => None,
        Some(Value::String(p)) => {
            crate::domain::identifier::validate("category", p)
                .map_err(|e| ApiError::bad_request(format!("field 'parent': {}", e.message)))?;
            Some(p.as_str())
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "field 'parent' must be a category identifier or null",
            ))
        }
    };
    let input = CategoryInput { name, parent };
    let (created, item) = put_category(&call.writer(app), id, &input).await?;
    Ok(super::saved(created, render(&item), etags::resource(&item)))
}

/// DELETE /categories/{identifier}: 409 while it has subcategories; otherwise unlinked from
/// every product and deleted.
async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "category")?;
    links::delete_everywhere(&call.writer(app), Shelf::CATEGORIES, id).await?;
    Ok(ApiResponse::single(200, crate::http::render::deleted(id)))
}
