//! `/metaobject-definitions` and `/metaobjects` routes: structured values (a color with its
//! hex code and names per language, say) that attributes of type `metaobject` reference by
//! identifier.

use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::attributes::{is_valid_key, AttributeType, ValueShape};
use crate::domain::names;
use crate::error::{ApiError, Failure};
use crate::http::body::present;
use crate::http::doc::{NO_QUERY, PAGE};
use crate::http::render::to_json;
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Doc, JsonBody, Paging, Route};
use crate::store::metaobjects::{MetaField, MetaobjectDefinition};
use crate::store::metrics::in_parallel;
use crate::store::resources::Shelf;
use crate::store::StoreError;
use crate::usecases::etags;
use crate::usecases::metaobjects::{self, definition_not_found, not_found};
use crate::usecases::references::render_metaobject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/metaobject-definitions",
            Scope::CatalogRead,
            Doc::new(
                "List metaobject definitions",
                PAGE,
                None,
                200,
                Body::List("MetaobjectDefinition"),
            ),
        ),
        handler!(list_definitions),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/metaobject-definitions",
            Scope::CatalogWrite,
            Doc::new(
                "Create a metaobject definition",
                NO_QUERY,
                Some(request::<NewMetaDefinition>),
                201,
                Body::Single("MetaobjectDefinition"),
            ),
        ),
        handler!(create_definition),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/metaobject-definitions/{name}",
            Scope::CatalogRead,
            Doc::new(
                "Get a metaobject definition",
                NO_QUERY,
                None,
                200,
                Body::Single("MetaobjectDefinition"),
            ),
        ),
        handler!(get_definition),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/metaobjects/{definition}",
            Scope::CatalogRead,
            Doc::new(
                "List the metaobjects of a definition",
                PAGE,
                None,
                200,
                Body::List("Metaobject"),
            ),
        ),
        handler!(list),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/metaobjects/{definition}/{identifier}",
            Scope::CatalogRead,
            Doc::new(
                "Get a metaobject",
                NO_QUERY,
                None,
                200,
                Body::Single("Metaobject"),
            ),
        ),
        handler!(get),
    ),
    Endpoint::new(
        Route::new(
            "PUT",
            "/metaobjects/{definition}/{identifier}",
            Scope::CatalogWrite,
            Doc::new(
                "Create (201) or replace (200) a metaobject",
                NO_QUERY,
                Some(request::<MetaobjectFields>),
                200,
                Body::Single("Metaobject"),
            )
            .creates(),
        ),
        handler!(put),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/metaobjects/{definition}/{identifier}",
            Scope::CatalogWrite,
            Doc::delete("Delete a metaobject (409 while referenced)"),
        ),
        handler!(delete),
    ),
];

pub const API: Api = Api {
    function: "metaobjects",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::LISTS,
};

/// Most fields one definition has.
pub const MAX_FIELDS: usize = 100;

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] = &[schema::answer::<DefinitionView>];

/// A metaobject definition as served.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "MetaobjectDefinition")]
struct DefinitionView<'a> {
    #[schemars(schema_with = "schema::key")]
    name: &'a str,
    display_name: &'a str,
    fields: Vec<FieldView<'a>>,
}

/// A field of a metaobject definition as served.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "MetaobjectField")]
struct FieldView<'a> {
    key: &'a str,
    #[serde(rename = "type")]
    #[schemars(schema_with = "schema::attribute_type")]
    type_name: &'static str,
    is_localized: bool,
    is_multi: bool,
    /// Select fields only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    options: Option<&'a [String]>,
}

fn render_definition(d: &MetaobjectDefinition) -> Value {
    let fields = d
        .fields
        .iter()
        .map(|f| FieldView {
            key: &f.key,
            type_name: f.shape.attr_type.as_str(),
            is_localized: f.shape.is_localized,
            is_multi: f.shape.is_multi,
            options: (f.shape.attr_type == AttributeType::Select)
                .then_some(f.shape.options.as_slice()),
        })
        .collect();
    to_json(DefinitionView {
        name: &d.name,
        display_name: &d.display_name,
        fields,
    })
}

/// One `fields` element of a definition body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "MetaobjectFieldCreate", transform = schema::SelectOptions(&["options"]))]
struct FieldInput {
    #[schemars(schema_with = "schema::key")]
    key: String,
    #[serde(rename = "type")]
    #[schemars(schema_with = "schema::attribute_type")]
    type_name: String,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    is_localized: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    is_multi: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::options")]
    options: Option<Vec<Value>>,
}

/// The body of POST /metaobject-definitions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "MetaobjectDefinitionCreate", transform = schema::Required(&["fields"]))]
struct NewMetaDefinition {
    #[schemars(schema_with = "schema::key")]
    name: String,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::name")]
    display_name: Option<String>,
    /// Each checked as it is read: errors name the field's index.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Vec<FieldInput>")]
    fields: Option<Vec<Value>>,
}

/// The body of PUT /metaobjects/{definition}/{identifier}.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MetaobjectPut")]
struct MetaobjectFields {
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::name")]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::values")]
    values: Option<Map<String, Value>>,
}

/// One `fields` element of a definition body, checked.
fn parse_field(i: usize, v: &Value) -> Result<MetaField, ApiError> {
    let bad = |m: String| ApiError::bad_request(format!("fields[{i}]: {m}"));
    let obj = v
        .as_object()
        .ok_or_else(|| bad("expected an object {key, type, ...}".into()))?;
    let body: FieldInput = JsonBody(obj.clone()).parse().map_err(|e| bad(e.message))?;
    let key = body.key.as_str();
    if !is_valid_key(key) {
        return Err(bad(format!("'{key}' must match [a-z][a-z0-9_]{{0,63}}")));
    }
    let type_name = body.type_name.as_str();
    let attr_type = AttributeType::parse(type_name)
        .filter(|t| *t != AttributeType::Metaobject)
        .ok_or_else(|| {
            bad(format!(
                "'{type_name}' is not a field type (the attribute types except metaobject)"
            ))
        })?;
    let mut options: Vec<String> = Vec::new();
    for o in body.options.as_deref().unwrap_or_default() {
        let s = o
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad("field 'options' must hold non-empty strings".into()))?;
        if options.iter().any(|x| x == s) {
            return Err(bad(format!("option '{s}' is given twice")));
        }
        options.push(s.to_string());
    }
    if !options.is_empty() && attr_type != AttributeType::Select {
        return Err(bad("field 'options' applies only to select fields".into()));
    }
    Ok(MetaField {
        key: key.to_string(),
        shape: ValueShape {
            attr_type,
            is_localized: body.is_localized.unwrap_or(false),
            is_multi: body.is_multi.unwrap_or(false),
            options,
        },
    })
}

/// POST /metaobject-definitions {name, displayName?, fields}: 201; 409 when the name exists.
async fn create_definition(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: NewMetaDefinition = call.body(app)?;
    let name = body.name.as_str();
    if !is_valid_key(name) {
        return Err(ApiError::bad_request(format!(
            "field 'name': '{name}' must match [a-z][a-z0-9_]{{0,63}}"
        )));
    }
    let display_name = body.display_name.as_deref().unwrap_or(name);
    names::validate("displayName", display_name)?;
    let list = body
        .fields
        .as_deref()
        .ok_or_else(|| ApiError::bad_request("field 'fields' is required"))?;
    if list.len() > MAX_FIELDS {
        return Err(ApiError::bad_request(format!(
            "field 'fields': a definition has at most {MAX_FIELDS} fields"
        )));
    }
    let mut fields: Vec<MetaField> = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let f = parse_field(i, v)?;
        if fields.iter().any(|x| x.key == f.key) {
            return Err(ApiError::bad_request(format!(
                "fields[{i}]: key '{}' is given twice",
                f.key
            )));
        }
        fields.push(f);
    }
    let def = MetaobjectDefinition {
        name: name.to_string(),
        display_name: display_name.to_string(),
        fields,
    };
    let quota = (
        crate::usecases::quotas::Counted::MetaobjectDefinitions,
        crate::usecases::quotas::MAX_METAOBJECT_DEFINITIONS,
        "metaobject definitions",
    );
    let new = &def;
    let create = |claim| async move {
        app.store
            .create_metaobject_definition(call.org(), new, call.guard(), Some(&claim))
            .await
    };
    let exists = |e| match e {
        StoreError::ConditionFailed => {
            Failure::conflict(format!("metaobject definition '{name}' already exists"))
        }
        e => e.into(),
    };
    crate::usecases::quotas::create_counted(app, call.org(), quota, create, exists).await?;
    Ok(ApiResponse::single(201, render_definition(&def)))
}

fn definition_name(call: &Call) -> Result<&str, ApiError> {
    let name = call.route.params[0].as_str();
    if is_valid_key(name) {
        Ok(name)
    } else {
        Err(definition_not_found(name).into())
    }
}

async fn get_definition(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let name = definition_name(call)?;
    let def = app
        .store
        .get_metaobject_definition(call.org(), name)
        .await?
        .ok_or_else(|| definition_not_found(name))?;
    Ok(ApiResponse::single(200, render_definition(&def)))
}

async fn list_definitions(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let paging = Paging::from_query(&call.query)?;
    let defs = app.store.list_metaobject_definitions(call.org()).await?;
    Ok(paging.envelope(&defs, render_definition))
}

/// GET /metaobjects/{definition}: the definition (404 when unknown) and the definition's
/// index brought up to date, in parallel, then the page's metaobjects, in identifier order.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let paging = Paging::from_query(&call.query)?;
    let name = definition_name(call)?;
    let org = call.org();
    let shelf = Shelf::metaobjects(name);
    let list = super::shelf_pages::followed(org, shelf);
    let (def, ()) = in_parallel(async {
        futures_util::try_join!(
            app.store.get_metaobject_definition(org, name),
            app.lists.flat().refresh(&list)
        )
    })
    .await?;
    def.ok_or_else(|| definition_not_found(name))?;
    let (all, page) =
        super::shelf_pages::read(app, org, shelf, &super::shelf_pages::by_page(paging)).await?;
    Ok(paging.page_response(all.iter().map(render_metaobject).collect(), page.total))
}

async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let name = definition_name(call)?;
    let id = call.route.identifier(1, "metaobject")?;
    let m = app
        .store
        .get_resource(call.org(), Shelf::metaobjects(name), id)
        .await?
        .ok_or_else(|| not_found(name, id))?;
    Ok(ApiResponse::single(200, render_metaobject(&m)).with_etag(etags::resource(&m)))
}

/// PUT /metaobjects/{definition}/{identifier} {name?, values?}: creates (201) or replaces
/// (200) the metaobject: `name` (the identifier when omitted) and the complete set of values,
/// validated against the definition's fields. Reads the definition, the scopes and the
/// metaobject in one round trip, then one conditional PutItem (none when nothing changed).
async fn put(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let name = definition_name(call)?;
    let id = call.route.identifier(1, "metaobject")?;
    let body: MetaobjectFields = call.body(app)?;
    let display = body.name.as_deref().unwrap_or(id);
    names::validate("name", display)?;
    let (created, item) =
        metaobjects::put(&call.writer(app), name, id, display, body.values.as_ref()).await?;
    let status = if created { 201 } else { 200 };
    Ok(ApiResponse::single(status, render_metaobject(&item)).with_etag(etags::resource(&item)))
}

/// DELETE /metaobjects/{definition}/{identifier}: 409 while any product, variant, SKU,
/// bundle or asset value references it. The reference counters decide, in the delete's
/// transaction (`store/counters.rs`); the index check before it names a referrer when the
/// index already shows one, and is the only guard of references stored before counting.
async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let name = definition_name(call)?;
    let id = call.route.identifier(1, "metaobject")?;
    metaobjects::delete(&call.writer(app), name, id).await?;
    Ok(ApiResponse::single(200, crate::http::render::deleted(id)))
}
