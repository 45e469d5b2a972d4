//! The asset input model shared by the asset routes and product writes that create or link
//! assets: an asset object's shape check, its validation, how it applies to an asset item,
//! and the link limits and identifier lists of product links.

use super::etags;
use super::references;
use super::retry::Retry;
use super::write_plan::{WritePlan, Writer};
use crate::domain::attributes::TargetEntity;
use crate::domain::identifier;
use crate::domain::names;
use crate::domain::time::Timestamp;
use crate::domain::values::{self, ScopeRules, ValueChange};
use crate::error::Failure;
use crate::http::body::present;
use crate::http::schema;
use crate::store::resources::{ResourceItem, Shelf};
use crate::store::settings::WriteContext;
use crate::store::writes::{Expect, TreeWrite};
use crate::store::StoreError;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Most assets, or categories, one product links.
pub const MAX_LINKS: usize = 100;

/// An asset's fields from a request body, shape-checked; values not yet validated.
pub struct RawAsset<'a> {
    /// Where the object is in the body, for errors (`""` or `"assets[2]."`).
    pub at: String,
    pub identifier: Option<&'a str>,
    pub fields: AssetFieldsRef<'a>,
}

/// A validated asset write: the fields given, and value changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssetInput {
    pub identifier: String,
    pub name: Option<String>,
    pub url: Option<String>,
    pub mime_type: Option<String>,
    pub values: Vec<ValueChange>,
}

fn is_media_type(s: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.len() <= 127
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
    };
    s.split_once('/').is_some_and(|(a, b)| token(a) && token(b))
}

/// Declares an asset body type: `$identifier` fields first, then the fields every asset
/// body has, and `fields()` to read those.
macro_rules! asset_body {
    ($(#[$doc:meta])* $name:ident { $($identifier:tt)* }) => {
        #[derive(Debug, Default, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        $(#[$doc])*
        pub struct $name {
            $($identifier)*
            #[serde(default, deserialize_with = "present")]
            #[schemars(schema_with = "schema::http_url")]
            pub url: Option<String>,
            #[serde(default, deserialize_with = "present")]
            #[schemars(schema_with = "schema::name")]
            pub name: Option<String>,
            #[serde(default, deserialize_with = "present")]
            #[schemars(schema_with = "schema::media_type")]
            pub mime_type: Option<String>,
            #[serde(default)]
            #[schemars(schema_with = "schema::values")]
            pub values: Option<Map<String, Value>>,
        }

        impl $name {
            /// The asset's fields, borrowed.
            pub fn fields(&self) -> AssetFieldsRef<'_> {
                AssetFieldsRef {
                    url: self.url.as_deref(),
                    name: self.name.as_deref(),
                    mime_type: self.mime_type.as_deref(),
                    values: self.values.as_ref(),
                }
            }
        }
    };
}

asset_body!(
    /// An asset object in a product body's `assets` (linked, and created or updated as
    /// given), or the body of POST /assets. A new asset needs its `url`.
    #[schemars(rename = "ProductAsset")]
    AssetItem {
        #[schemars(schema_with = "schema::an_identifier")]
        pub identifier: String,
    }
);

schema::requiring!(
    /// The body of POST /assets: an asset with its `url`.
    AssetCreate = AssetItem, ["url"]
);

asset_body!(
    /// The body of PATCH /assets/{identifier}: the fields given change.
    #[schemars(rename = "AssetPatch")]
    AssetFields {}
);

/// The fields of an asset body, borrowed.
#[derive(Clone, Copy, Default)]
pub struct AssetFieldsRef<'a> {
    pub url: Option<&'a str>,
    pub name: Option<&'a str>,
    pub mime_type: Option<&'a str>,
    pub values: Option<&'a Map<String, Value>>,
}

impl<'a> RawAsset<'a> {
    /// Checks an asset's fields (`at` prefixes errors: `""` or `"assets[2]: "`).
    pub fn new(
        at: String,
        identifier: Option<&'a str>,
        fields: AssetFieldsRef<'a>,
    ) -> Result<Self, Failure> {
        let bad = |m: String| Failure::invalid(format!("{at}{m}"));
        if let Some(id) = identifier {
            identifier::validate("asset", id).map_err(|e| bad(e.message))?;
        }
        if let Some(n) = fields.name {
            names::validate("name", n).map_err(|e| bad(e.message))?;
        }
        if let Some(u) = fields.url {
            let ok = url::Url::parse(u)
                .is_ok_and(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some());
            if !ok || u.len() > 2048 {
                return Err(bad(format!(
                    "field 'url': '{u}' is not an absolute http(s) URL of at most 2048 characters"
                )));
            }
        }
        if let Some(m) = fields.mime_type.filter(|m| !is_media_type(m)) {
            return Err(bad(format!(
                "field 'mimeType': '{m}' is not a media type like image/png"
            )));
        }
        Ok(RawAsset {
            at,
            identifier,
            fields,
        })
    }
}

impl RawAsset<'_> {
    /// The asset attribute keys its values name.
    pub fn wanted(&self) -> impl Iterator<Item = (TargetEntity, String)> + '_ {
        self.fields.values.into_iter().flat_map(|m| {
            // a key too long for any attribute is not looked up (validation calls it unknown)
            m.keys()
                .filter(|k| k.len() <= 64)
                .map(|k| (TargetEntity::Asset, k.clone()))
        })
    }

    /// Validates the values against the asset attribute definitions of `ctx`.
    pub fn validate(&self, id: &str, ctx: &WriteContext) -> Result<AssetInput, Failure> {
        let languages = ctx.scopes.language_codes();
        let channels = ctx.scopes.channel_ids();
        let rules = ScopeRules {
            languages: Some(&languages),
            channels: Some(&channels),
        };
        let values = match self.fields.values {
            None => Vec::new(),
            Some(m) => values::parse_values("asset", m, &ctx.defs_of(TargetEntity::Asset), &rules)
                .map_err(|e| Failure::invalid(format!("{}{}", self.at, e.message)))?,
        };
        Ok(AssetInput {
            identifier: id.to_string(),
            name: self.fields.name.map(str::to_string),
            url: self.fields.url.map(str::to_string),
            mime_type: self.fields.mime_type.map(str::to_string),
            values,
        })
    }
}

/// Patches the asset `id` as `input` says (omitted fields unchanged; 404 when it does not
/// exist): the metaobjects its values reference are read, then one GetItem, then one
/// transaction when anything changed.
pub async fn patch_asset(
    w: &Writer<'_>,
    id: &str,
    input: &AssetInput,
) -> Result<ResourceItem, Failure> {
    let (cx, org, if_match) = (w.cx, w.org, w.if_match);
    references::check_exist(&cx.store, org, &[(String::new(), input.values.as_slice())]).await?;
    let read = || cx.store.get_resource(org, Shelf::ASSETS, id);
    let plan = |found: Option<ResourceItem>| {
        let found = found.ok_or_else(|| Failure::not_found("asset", id));
        let mut asset = etags::checked(if_match, found, etags::resource, "asset")?;
        let expect = Expect::Version(asset.ver);
        // the references the stored values hold, before the write changes them
        let read = crate::store::counters::refs_of(&asset.values);
        if !apply(&mut asset, input) {
            return Ok(WritePlan::unchanged(asset));
        }
        asset.touch(Timestamp::next_after([asset.updated_at]));
        let mut write = TreeWrite::new();
        write.put_resource_read(org, &asset, expect, Some(&read))?;
        Ok(WritePlan {
            write,
            outcome: asset,
        })
    };
    let failed = |e| references::named(e, &[(String::new(), &input.values)]);
    w.run(&format!("asset '{id}'"), read, plan, failed).await
}

/// Creates the asset `input` names (its `url` given): the metaobjects its values reference
/// are read first, then one conditional PutItem decides (409 when the identifier exists).
pub async fn create_asset(w: &Writer<'_>, input: &AssetInput) -> Result<ResourceItem, Failure> {
    let (cx, org) = (w.cx, w.org);
    let id = input.identifier.as_str();
    let changes = [(String::new(), input.values.as_slice())];
    let changes = &changes;
    let read = || references::check_exist(&cx.store, org, changes);
    let plan = |()| {
        let item = new_asset(org, input, Timestamp::now());
        let mut write = TreeWrite::new();
        write.put_resource(org, &item, Expect::Absent)?;
        Ok(WritePlan {
            write,
            outcome: item,
        })
    };
    // decided by its condition: never read and planned again
    let failed = |e| {
        Retry::Fail(match e {
            StoreError::ConditionFailed => {
                Failure::conflict(format!("asset '{id}' already exists"))
            }
            e => references::missing(&e, changes).unwrap_or_else(|| e.into()),
        })
    };
    w.run(&format!("asset '{id}'"), read, plan, failed).await
}

/// Applies an asset write; whether anything changed.
pub fn apply(item: &mut ResourceItem, input: &AssetInput) -> bool {
    let mut changed = values::apply(&mut item.values, &input.values);
    if let Some(n) = input.name.as_ref().filter(|n| **n != item.name) {
        item.name = n.clone();
        changed = true;
    }
    for (field, given) in [
        (&mut item.url, &input.url),
        (&mut item.mime_type, &input.mime_type),
    ] {
        if given.is_some() && field != given {
            field.clone_from(given);
            changed = true;
        }
    }
    changed
}

/// A new asset from `input` (its `url` is required), created at `at`.
pub fn new_asset(org: &str, input: &AssetInput, at: Timestamp) -> ResourceItem {
    let mut item = ResourceItem::new(org, Shelf::ASSETS, &input.identifier, &input.identifier, at);
    apply(&mut item, input);
    item.touch(at);
    item
}

/// A body array of distinct identifiers of `what` (at most `MAX_LINKS`).
pub fn distinct_ids(list: &[String], field: &str, what: &str) -> Result<Vec<String>, Failure> {
    if list.len() > MAX_LINKS {
        return Err(Failure::invalid(format!(
            "field '{field}': at most {MAX_LINKS} {what} identifiers"
        )));
    }
    let mut ids: Vec<String> = Vec::new();
    for id in list {
        identifier::validate(what, id)
            .map_err(|e| Failure::invalid(format!("field '{field}': {}", e.message)))?;
        if ids.contains(id) {
            return Err(Failure::invalid(format!(
                "field '{field}': {what} '{id}' is given twice"
            )));
        }
        ids.push(id.clone());
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_type_slash_subtype_tokens() {
        assert!(is_media_type("image/png") && is_media_type("application/vnd.ms-excel"));
        assert!(!is_media_type("png") && !is_media_type("image/") && !is_media_type("a b/c"));
    }

    #[test]
    fn apply_changes_only_given_fields() {
        let input = AssetInput {
            identifier: "a".into(),
            url: Some("https://x.example/a.png".into()),
            ..Default::default()
        };
        let mut item = new_asset("o", &input, Timestamp::from_millis(1));
        assert_eq!(item.name, "a");
        assert_eq!(item.ver, 1);
        let rename = AssetInput {
            name: Some("Logo".into()),
            ..input.clone()
        };
        assert!(apply(&mut item, &rename));
        assert_eq!(item.url.as_deref(), Some("https://x.example/a.png"));
        assert!(!apply(&mut item, &rename), "same again changes nothing");
    }
}
