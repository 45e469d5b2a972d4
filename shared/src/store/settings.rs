//! Workspace settings that values are validated against: languages and channels (one small
//! item, so a write reads them in the same BatchGetItem as the attribute definitions) and
//! families (one partition, integer ids from an atomic counter).

use super::keys::{
    attribute_sk, attributes_pk, families_pk, family_sk, org_pk, profiles_pk, FAMILY_SEQ_SK,
    SCOPES_SK,
};
use super::ops::{item_key, Item};
use super::{Store, StoreError};
use crate::domain::attributes::{is_valid_key, AttributeDefinition, TargetEntity};
use crate::domain::identifier;
use crate::domain::time::Timestamp;
use crate::store::idempotency::Guard;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A language of the organization, as stored and served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Language {
    pub code: String,
    pub name: String,
    pub is_default: bool,
}

/// A channel of the organization, as stored and served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Channel {
    pub identifier: String,
    pub name: String,
    #[serde(default)]
    pub locales: Vec<String>,
    pub is_default: bool,
}

/// The languages and channels of an organization, versioned for conditional writes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scopes {
    #[serde(default)]
    pub languages: Vec<Language>,
    #[serde(default)]
    pub channels: Vec<Channel>,
    #[serde(default)]
    pub ver: u64,
}

impl Scopes {
    /// The language codes locales must be one of.
    pub fn language_codes(&self) -> Vec<String> {
        self.languages.iter().map(|l| l.code.clone()).collect()
    }

    /// The channel identifiers channels must be one of.
    pub fn channel_ids(&self) -> Vec<String> {
        self.channels.iter().map(|c| c.identifier.clone()).collect()
    }
}

#[derive(Serialize, Deserialize)]
struct ScopesItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    #[serde(flatten)]
    scopes: Scopes,
}

/// A family of the organization (its attributes), as stored and served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Family {
    pub id: i64,
    pub name: String,
    #[serde(default)]
    pub attributes: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct FamilyItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    #[serde(flatten)]
    family: Family,
    #[serde(rename = "createdAt")]
    created_at: Timestamp,
}

/// A completeness profile (decisions.md): the attributes a product, its variants and SKUs
/// need for the product to be complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletenessProfile {
    pub identifier: String,
    pub name: String,
    pub required_attributes: Vec<String>,
    #[serde(default)]
    pub locales: Vec<String>,
    #[serde(default)]
    pub channels: Vec<String>,
    /// Required keys `<entity>.name` that name the entity's own `name` (no attribute `name`
    /// was defined for that entity when the profile was created).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub builtin_names: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct ProfileItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    #[serde(flatten)]
    profile: CompletenessProfile,
    #[serde(rename = "createdAt")]
    created_at: Timestamp,
}

/// What validating a write (or a filtered list) needs, read in one BatchGetItem.
#[derive(Debug, Default)]
pub struct WriteContext {
    pub defs: HashMap<TargetEntity, HashMap<String, AttributeDefinition>>,
    pub scopes: Scopes,
    /// Those of the families asked for that exist.
    pub families: std::collections::BTreeSet<i64>,
    pub profile: Option<CompletenessProfile>,
}

impl WriteContext {
    pub fn defs_of(&self, entity: TargetEntity) -> HashMap<String, AttributeDefinition> {
        self.defs.get(&entity).cloned().unwrap_or_default()
    }
}

fn s(item: &Item, name: &str) -> String {
    match item.get(name) {
        Some(AttributeValue::S(v)) => v.clone(),
        _ => String::new(),
    }
}

impl Store {
    /// The organization's languages and channels (empty when none is configured).
    pub async fn get_scopes(&self, org: &str) -> Result<Scopes, StoreError> {
        let item: Option<ScopesItem> = self
            .get_item(item_key(org_pk(org), SCOPES_SK), "scopes")
            .await?;
        Ok(item.map(|i| i.scopes).unwrap_or_default())
    }

    /// Writes the scopes read at version `scopes.ver - 1` (the caller bumps `ver`);
    /// `ConditionFailed` when another writer got there first.
    pub async fn put_scopes(&self, org: &str, scopes: &Scopes) -> Result<(), StoreError> {
        let item = ScopesItem {
            pk: org_pk(org),
            sk: SCOPES_SK.into(),
            scopes: scopes.clone(),
        };
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(
                serde_dynamo::to_item(&item).map_err(|e| StoreError::serde("scopes", e))?,
            ));
        put = if scopes.ver <= 1 {
            put.condition_expression("attribute_not_exists(PK)")
        } else {
            put.condition_expression("ver = :v")
                .expression_attribute_values(":v", AttributeValue::N((scopes.ver - 1).to_string()))
        };
        put.send()
            .await
            .map_err(|e| StoreError::from_sdk("PutItem", e))?;
        Ok(())
    }

    /// Definitions of `wanted` (entity, unprefixed key), the scopes, and which of `families`
    /// exist: one BatchGetItem (per 100 distinct keys, in parallel).
    pub async fn write_context(
        &self,
        org: &str,
        wanted: &[(TargetEntity, String)],
        families: &[i64],
    ) -> Result<WriteContext, StoreError> {
        self.settings_context(org, wanted, families, None).await
    }

    /// `write_context`, plus the completeness profile `profile` when given.
    pub async fn settings_context(
        &self,
        org: &str,
        wanted: &[(TargetEntity, String)],
        families: &[i64],
        profile: Option<&str>,
    ) -> Result<WriteContext, StoreError> {
        // Only what can exist is read: a key or identifier that breaks its rule (too long
        // for a storage key, say) names nothing, so callers then report it as unknown.
        let mut keys: Vec<Item> = wanted
            .iter()
            .filter(|(_, k)| is_valid_key(k))
            .map(|(e, k)| item_key(attributes_pk(org), attribute_sk(e.as_str(), k)))
            .collect();
        keys.push(item_key(org_pk(org), SCOPES_SK));
        keys.extend(
            families
                .iter()
                .map(|id| item_key(families_pk(org), family_sk(*id))),
        );
        if let Some(p) = profile.filter(|p| identifier::validate("profile", p).is_ok()) {
            keys.push(item_key(profiles_pk(org), p));
        }
        let mut ctx = WriteContext::default();
        for item in self.batch_get(keys).await? {
            let pk = s(&item, "PK");
            if pk == attributes_pk(org) {
                let a: super::items::AttributeItem =
                    serde_dynamo::from_item(item).map_err(|e| StoreError::serde("attribute", e))?;
                ctx.defs
                    .entry(a.def.target_entity)
                    .or_default()
                    .insert(a.def.key.clone(), a.def);
            } else if pk == families_pk(org) {
                if let Ok(id) = s(&item, "SK").parse::<i64>() {
                    ctx.families.insert(id);
                }
            } else if pk == profiles_pk(org) {
                let p: ProfileItem =
                    serde_dynamo::from_item(item).map_err(|e| StoreError::serde("profile", e))?;
                ctx.profile = Some(p.profile);
            } else {
                let i: ScopesItem =
                    serde_dynamo::from_item(item).map_err(|e| StoreError::serde("scopes", e))?;
                ctx.scopes = i.scopes;
            }
        }
        Ok(ctx)
    }

    /// Creates a family with the next integer id of the organization (an atomic counter,
    /// then a put): ids are never reused.
    pub async fn create_family(
        &self,
        org: &str,
        name: &str,
        attributes: Vec<String>,
        guard: Option<&Guard>,
        claim: Option<&crate::store::quotas::QuotaClaim>,
    ) -> Result<Family, StoreError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(item_key(org_pk(org), FAMILY_SEQ_SK)))
            .update_expression("ADD seq :one")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("UpdateItem", e))?;
        let id = match out.attributes.as_ref().and_then(|a| a.get("seq")) {
            Some(AttributeValue::N(n)) => n
                .parse::<i64>()
                .map_err(|e| StoreError::Other(e.to_string()))?,
            _ => return Err(StoreError::Other("family counter missing".into())),
        };
        let family = Family {
            id,
            name: name.to_string(),
            attributes,
        };
        let item = FamilyItem {
            pk: families_pk(org),
            sk: family_sk(id),
            family: family.clone(),
            created_at: Timestamp::now(),
        };
        self.put_new_counted(&item, "family", guard, claim).await?;
        Ok(family)
    }

    pub async fn get_family(&self, org: &str, id: i64) -> Result<Option<Family>, StoreError> {
        let item: Option<FamilyItem> = self
            .get_item(item_key(families_pk(org), family_sk(id)), "family")
            .await?;
        Ok(item.map(|i| i.family))
    }

    /// Every family in id order: one Query of the families partition.
    pub async fn list_families(&self, org: &str) -> Result<Vec<Family>, StoreError> {
        let query = self.partition_query(families_pk(org), None);
        let items: Vec<FamilyItem> = serde_dynamo::from_items(self.query_all(query).await?)
            .map_err(|e| StoreError::serde("family", e))?;
        Ok(items.into_iter().map(|i| i.family).collect())
    }

    /// Creates a completeness profile; `Taken` when the identifier exists.
    pub async fn create_profile(
        &self,
        org: &str,
        profile: &CompletenessProfile,
        guard: Option<&Guard>,
        claim: Option<&crate::store::quotas::QuotaClaim>,
    ) -> Result<(), StoreError> {
        let item = ProfileItem {
            pk: profiles_pk(org),
            sk: profile.identifier.clone(),
            profile: profile.clone(),
            created_at: Timestamp::now(),
        };
        match self.put_new_counted(&item, "profile", guard, claim).await {
            Err(StoreError::ConditionFailed) => Err(StoreError::Taken(format!(
                "completeness profile '{}' already exists",
                profile.identifier
            ))),
            other => other,
        }
    }

    pub async fn get_profile(
        &self,
        org: &str,
        id: &str,
    ) -> Result<Option<CompletenessProfile>, StoreError> {
        let item: Option<ProfileItem> = self
            .get_item(item_key(profiles_pk(org), id), "profile")
            .await?;
        Ok(item.map(|i| i.profile))
    }

    /// Every completeness profile in identifier order: one Query.
    pub async fn list_profiles(&self, org: &str) -> Result<Vec<CompletenessProfile>, StoreError> {
        let query = self.partition_query(profiles_pk(org), None);
        let items: Vec<ProfileItem> = serde_dynamo::from_items(self.query_all(query).await?)
            .map_err(|e| StoreError::serde("profile", e))?;
        Ok(items.into_iter().map(|i| i.profile).collect())
    }
}
