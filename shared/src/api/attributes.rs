//! `/attributes` routes: attribute definitions.

use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::attributes::{
    is_valid_key, AttributeDefinition, AttributeType, TargetEntity, ValueShape,
};
use crate::domain::names;
use crate::error::{ApiError, Failure};
use crate::http::body::present;
use crate::http::doc::{QueryDoc, NO_QUERY};
use crate::http::query::PageParams;
use crate::http::query::{query_values, QueryValue};
use crate::http::render::to_json;
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Doc, JsonBody, Paging, Route};
use crate::store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/attributes",
            Scope::CatalogRead,
            Doc::new(
                "List attribute definitions",
                QueryDoc::of::<AttributeListParams>(),
                None,
                200,
                Body::List("AttributeDefinition"),
            ),
        ),
        handler!(list),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/attributes",
            Scope::CatalogWrite,
            Doc::new(
                "Create an attribute definition",
                NO_QUERY,
                Some(request::<NewDefinition>),
                201,
                Body::Single("AttributeDefinition"),
            ),
        ),
        handler!(create),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/attributes/{key}",
            Scope::CatalogRead,
            Doc::new(
                "Get an attribute definition (`<entity>.<key>`)",
                NO_QUERY,
                None,
                200,
                Body::Bare("AttributeDefinition"),
            ),
        ),
        handler!(get),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/attributes/{key}",
            Scope::CatalogWrite,
            Doc::delete("Delete an attribute definition (409 while values exist)"),
        ),
        handler!(delete),
    ),
];

pub const API: Api = Api {
    function: "attributes",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::NONE,
};

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] = &[schema::answer::<DefinitionView>];

/// An attribute definition as served.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AttributeDefinition")]
struct DefinitionView<'a> {
    /// Fully qualified: `<entity>.<key>`.
    #[schemars(example = "product.color")]
    key: String,
    name: &'a str,
    #[serde(rename = "type")]
    #[schemars(schema_with = "schema::attribute_type")]
    type_name: &'static str,
    #[schemars(schema_with = "schema::target_entity")]
    target_entity: &'static str,
    is_localized: bool,
    is_multi: bool,
    is_channel_scoped: bool,
    /// Select attributes only: `manual`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "manual")]
    options_source: Option<&'static str>,
    /// Select attributes only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    options: Option<&'a [String]>,
    /// Metaobject attributes only: the definition its values reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    metaobject_definition: Option<&'a str>,
}

fn manual(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"const": "manual"})
}

/// The definition as served: `key` fully qualified.
pub fn render(def: &AttributeDefinition) -> Value {
    let select = def.shape.attr_type == AttributeType::Select;
    to_json(DefinitionView {
        key: def.qualified_key(),
        name: &def.name,
        type_name: def.shape.attr_type.as_str(),
        target_entity: def.target_entity.as_str(),
        is_localized: def.shape.is_localized,
        is_multi: def.shape.is_multi,
        is_channel_scoped: def.is_channel_scoped,
        options_source: select.then_some("manual"),
        options: select.then_some(def.shape.options.as_slice()),
        metaobject_definition: def.metaobject_definition.as_deref(),
    })
}

/// The body of POST /attributes.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "AttributeCreate", transform = schema::SelectOptions(&["options", "presets"]))]
struct NewDefinition {
    #[schemars(schema_with = "schema::name")]
    display_name: String,
    #[schemars(schema_with = "schema::key")]
    key: String,
    #[schemars(schema_with = "schema::target_entity")]
    target_entity: String,
    #[serde(rename = "type")]
    #[schemars(schema_with = "schema::attribute_type")]
    type_name: String,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    is_channel_scoped: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    is_localized: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    is_multi: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::options")]
    options: Option<Vec<Value>>,
    /// The deprecated alias of `options`.
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::options", extend("deprecated" = true))]
    presets: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String")]
    metaobject_definition: Option<String>,
}

/// Validates a POST /attributes body into a definition.
fn parse_definition(body: JsonBody) -> Result<AttributeDefinition, ApiError> {
    let body: NewDefinition = body.parse()?;
    let bad = |m: String| ApiError::bad_request(m);
    let name = body.display_name.as_str();
    names::validate("displayName", name)?;
    let key = body.key.as_str();
    if !is_valid_key(key) {
        return Err(bad(format!(
            "field 'key': '{key}' must match [a-z][a-z0-9_]{{0,63}}"
        )));
    }
    let target = body.target_entity.as_str();
    let target_entity = TargetEntity::parse(target).ok_or_else(|| {
        bad(format!(
            "field 'targetEntity': '{target}' is not one of {}",
            TargetEntity::names()
        ))
    })?;
    let type_name = body.type_name.as_str();
    let attr_type = AttributeType::parse(type_name).ok_or_else(|| {
        let all: Vec<&str> = AttributeType::ALL.iter().map(|t| t.as_str()).collect();
        bad(format!(
            "field 'type': '{type_name}' is not one of {}",
            all.join(", ")
        ))
    })?;
    let (options_field, list) = match (body.options, body.presets) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "give 'options' or its deprecated alias 'presets', not both".into(),
            ))
        }
        (None, Some(presets)) => ("presets", Some(presets)),
        (options, None) => ("options", options),
    };
    let options: Vec<String> = match list {
        None => Vec::new(),
        Some(list) => {
            let mut out: Vec<String> = Vec::new();
            for v in list {
                let s = v.as_str().filter(|s| !s.is_empty()).ok_or_else(|| {
                    bad(format!(
                        "field '{options_field}' must hold non-empty strings"
                    ))
                })?;
                if out.iter().any(|o| o == s) {
                    return Err(bad(format!(
                        "field '{options_field}': '{s}' is given twice"
                    )));
                }
                out.push(s.to_string());
            }
            out
        }
    };
    if !options.is_empty() && attr_type != AttributeType::Select {
        return Err(bad(format!(
            "field '{options_field}' applies only to select attributes"
        )));
    }
    let metaobject_definition = body.metaobject_definition;
    match (attr_type, &metaobject_definition) {
        (AttributeType::Metaobject, None) => {
            return Err(bad(
                "field 'metaobjectDefinition' is required for metaobject attributes".into(),
            ))
        }
        (AttributeType::Metaobject, Some(d)) if !is_valid_key(d) => {
            return Err(bad(format!(
                "field 'metaobjectDefinition': '{d}' is not a definition name"
            )))
        }
        (t, Some(_)) if t != AttributeType::Metaobject => {
            return Err(bad(
                "field 'metaobjectDefinition' applies only to metaobject attributes".into(),
            ))
        }
        _ => {}
    }
    Ok(AttributeDefinition {
        target_entity,
        key: key.to_string(),
        name: name.to_string(),
        shape: ValueShape {
            attr_type,
            is_localized: body.is_localized.unwrap_or(false),
            is_multi: body.is_multi.unwrap_or(false),
            options,
        },
        is_channel_scoped: body.is_channel_scoped.unwrap_or(false),
        metaobject_definition,
    })
}

/// POST /attributes: 201, or 409 when the key exists for the target entity.
async fn create(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body = JsonBody::from_request(&call.request, app.config.max_body_bytes)?;
    let def = parse_definition(body)?;
    if let Some(name) = &def.metaobject_definition {
        if app
            .store
            .get_metaobject_definition(call.org(), name)
            .await?
            .is_none()
        {
            return Err(ApiError::bad_request(format!(
                "field 'metaobjectDefinition': metaobject definition '{name}' does not exist"
            )));
        }
    }
    let quota = (
        crate::usecases::quotas::Counted::AttributeDefinitions,
        crate::usecases::quotas::MAX_ATTRIBUTES,
        "attribute definitions",
    );
    let new = &def;
    let create = |claim| async move {
        app.store
            .put_definition(call.org(), new, call.guard(), Some(&claim))
            .await
    };
    let exists = |e| match e {
        StoreError::ConditionFailed => Failure::conflict(format!(
            "attribute '{}' already exists",
            def.qualified_key()
        )),
        e => e.into(),
    };
    crate::usecases::quotas::create_counted(app, call.org(), quota, create, exists).await?;
    Ok(ApiResponse::single(201, render(&def)))
}

/// Splits `<entity>.<key>` from the path.
fn qualified(call: &Call) -> Result<(TargetEntity, String), ApiError> {
    let raw = &call.route.params[0];
    raw.split_once('.')
        .and_then(|(e, k)| Some((TargetEntity::parse(e)?, k)))
        .filter(|(_, k)| is_valid_key(k))
        .map(|(e, k)| (e, k.to_string()))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "attribute key '{raw}' must be <entity>.<key>, e.g. product.color"
            ))
        })
}

/// GET /attributes/{entity}.{key}: the definition itself, not wrapped in `result`.
async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let (entity, key) = qualified(call)?;
    let def = app
        .store
        .get_definition(call.org(), entity, &key)
        .await?
        .ok_or_else(|| {
            ApiError::entity_not_found("attribute", &format!("{}.{key}", entity.as_str()))
        })?;
    Ok(ApiResponse::json(200, render(&def)))
}

/// DELETE /attributes/{entity}.{key}: 409 while any entity holds a value of it.
async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let (entity, key) = qualified(call)?;
    let qualified_key = format!("{}.{key}", entity.as_str());
    if app
        .store
        .get_definition(call.org(), entity, &key)
        .await?
        .is_none()
    {
        return Err(ApiError::entity_not_found("attribute", &qualified_key));
    }
    if app.store.attribute_in_use(call.org(), entity, &key).await? {
        return Err(ApiError::conflict(format!(
            "attribute '{qualified_key}' still has values; remove them before deleting it"
        )));
    }
    match app.store.delete_definition(call.org(), entity, &key).await {
        Ok(()) => Ok(ApiResponse::single(
            200,
            crate::http::render::deleted(&qualified_key),
        )),
        Err(StoreError::ConditionFailed) => {
            Err(ApiError::entity_not_found("attribute", &qualified_key))
        }
        Err(e) => Err(e.into()),
    }
}

/// The query of `GET /attributes`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct AttributeListParams {
    #[serde(rename = "targetEntity")]
    target_entity: Option<TargetEntityParam>,
    #[serde(flatten)]
    paging: PageParams,
}

/// `targetEntity`: only the definitions of this entity.
#[derive(Debug)]
struct TargetEntityParam(TargetEntity);

impl QueryValue for TargetEntityParam {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        TargetEntity::parse(raw).map(Self).ok_or_else(|| {
            ApiError::bad_request(format!(
                "query parameter 'targetEntity': '{raw}' is not one of {}",
                TargetEntity::names()
            ))
        })
    }

    fn schema() -> schemars::Schema {
        let mut schema = crate::http::schema::target_entities();
        schema.insert(
            "description".into(),
            "Only definitions of this entity.".into(),
        );
        schema
    }
}

query_values!(TargetEntityParam);

/// GET /attributes: list envelope in key order, optional `targetEntity`.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let params = call.query.typed::<AttributeListParams>()?;
    let entity = params.target_entity.map(|t| t.0);
    let paging = Paging::from(params.paging);
    let defs = app.store.list_definitions(call.org(), entity).await?;
    Ok(paging.envelope(&defs, render))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<AttributeDefinition, ApiError> {
        parse_definition(JsonBody(v.as_object().unwrap().clone()))
    }

    #[test]
    fn presets_alias_options_and_not_both() {
        let base = json!({"displayName": "Size", "key": "size", "targetEntity": "variant", "type": "select"});
        let mut with_presets = base.clone();
        with_presets["presets"] = json!(["S", "M"]);
        assert_eq!(parse(with_presets).unwrap().shape.options, vec!["S", "M"]);
        let mut both = base.clone();
        both["presets"] = json!(["S"]);
        both["options"] = json!(["S"]);
        assert_eq!(
            parse(both).unwrap_err().message,
            "give 'options' or its deprecated alias 'presets', not both"
        );
    }

    #[test]
    fn each_required_field_is_named() {
        let cases = [
            (
                json!({"key": "a", "targetEntity": "product", "type": "text"}),
                "field 'displayName' is required",
            ),
            (
                json!({"displayName": "A", "key": "A", "targetEntity": "product", "type": "text"}),
                "field 'key': 'A' must match [a-z][a-z0-9_]{0,63}",
            ),
            (
                json!({"displayName": "A", "key": "a", "targetEntity": "order", "type": "text"}),
                "field 'targetEntity': 'order' is not one of product, variant, sku, bundle, asset",
            ),
            (
                json!({"displayName": "A", "key": "a", "targetEntity": "product", "type": "metaobject"}),
                "field 'metaobjectDefinition' is required for metaobject attributes",
            ),
            (
                json!({"displayName": "A", "key": "a", "targetEntity": "product", "type": "text", "options": ["x"]}),
                "field 'options' applies only to select attributes",
            ),
        ];
        for (body, msg) in cases {
            assert_eq!(parse(body).unwrap_err().message, msg);
        }
    }
}
