//! Completeness profiles: which attributes, locales and channels make an entity complete.

use super::*;

/// The body of POST /completeness-profiles.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CompletenessProfileCreate", transform = schema::Required(&["requiredAttributes"]))]
pub(super) struct NewProfile {
    #[schemars(schema_with = "schema::an_identifier")]
    identifier: String,
    #[schemars(schema_with = "schema::name")]
    name: String,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "required_keys")]
    required_attributes: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::language_tags")]
    locales: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::strings")]
    channels: Option<Vec<Value>>,
}

fn required_keys(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut keys = schema::qualified_keys(TREE_ENTITIES);
    keys.insert("minItems".into(), 1.into());
    keys
}

/// A completeness profile as served.
// (without the internal `builtinNames`)
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CompletenessProfile")]
pub(super) struct ProfileView<'a> {
    identifier: &'a str,
    name: &'a str,
    required_attributes: &'a [String],
    locales: &'a [String],
    channels: &'a [String],
}

fn render_profile(p: &CompletenessProfile) -> Value {
    to_json(ProfileView {
        identifier: &p.identifier,
        name: &p.name,
        required_attributes: &p.required_attributes,
        locales: &p.locales,
        channels: &p.channels,
    })
}

/// A body array of distinct strings, each one of `known` (`what` names them in errors).
fn known_strings(
    list: Option<&[Value]>,
    field: &str,
    known: &[String],
    what: &str,
) -> Result<Vec<String>, ApiError> {
    let mut out: Vec<String> = Vec::new();
    for v in list.unwrap_or_default() {
        let Some(s) = v.as_str() else {
            return Err(ApiError::bad_request(format!(
                "field '{field}': {v} is not a string"
            )));
        };
        if !known.iter().any(|k| k == s) {
            return Err(ApiError::bad_request(format!(
                "field '{field}': {what} '{s}' does not exist"
            )));
        }
        if out.iter().any(|o| o == s) {
            return Err(ApiError::bad_request(format!(
                "field '{field}': '{s}' is given twice"
            )));
        }
        out.push(s.to_string());
    }
    Ok(out)
}

/// POST /completeness-profiles {identifier, name, requiredAttributes, locales?, channels?}:
/// 201; 409 when the identifier exists. Required attributes must exist, except
/// `<entity>.name`, which names the entity's own name when no attribute `name` is defined.
pub(super) async fn create_profile(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: NewProfile = call.body(app)?;
    let identifier = body.identifier;
    crate::domain::identifier::validate("identifier", &identifier)?;
    names::validate("name", &body.name)?;
    let name = body.name;
    if body.required_attributes.as_ref().is_none_or(Vec::is_empty) {
        return Err(ApiError::bad_request(
            "field 'requiredAttributes' must be a non-empty array of attribute keys",
        ));
    }
    let keys = attribute_keys(
        body.required_attributes.as_deref(),
        "requiredAttributes",
        TREE_ENTITIES,
    )?;
    let wanted: Vec<_> = keys.iter().map(|(e, k, _)| (*e, k.clone())).collect();
    let ctx = app.store.write_context(call.org(), &wanted, &[]).await?;
    let mut builtin_names = Vec::new();
    for (entity, k, key) in &keys {
        if defined(&ctx, *entity, k) {
            continue;
        }
        if k == "name" {
            builtin_names.push(key.clone());
        } else {
            return Err(missing_attribute("requiredAttributes", key));
        }
    }
    let profile = CompletenessProfile {
        identifier,
        name,
        required_attributes: keys.into_iter().map(|(_, _, key)| key).collect(),
        locales: known_strings(
            body.locales.as_deref(),
            "locales",
            &ctx.scopes.language_codes(),
            "language",
        )?,
        channels: known_strings(
            body.channels.as_deref(),
            "channels",
            &ctx.scopes.channel_ids(),
            "channel",
        )?,
        builtin_names,
    };
    let quota = (
        crate::usecases::quotas::Counted::CompletenessProfiles,
        crate::usecases::quotas::MAX_PROFILES,
        "completeness profiles",
    );
    let new = &profile;
    let create = |claim| async move {
        app.store
            .create_profile(call.org(), new, call.guard(), Some(&claim))
            .await
    };
    crate::usecases::quotas::create_counted(app, call.org(), quota, create, Failure::from).await?;
    Ok(ApiResponse::single(201, render_profile(&profile)))
}

pub(super) async fn get_profile(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "completeness profile")?;
    let profile = app
        .store
        .get_profile(call.org(), id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("completeness profile '{id}' not found")))?;
    Ok(ApiResponse::single(200, render_profile(&profile)))
}

pub(super) async fn list_profiles(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let paging = Paging::from_query(&call.query)?;
    let profiles = app.store.list_profiles(call.org()).await?;
    Ok(paging.envelope(&profiles, render_profile))
}
