//! Writes to a product tree (PATCH /products with `variants` and `skus`, PATCH /skus): the
//! body is parsed and validated whole before anything is read or written, then each attempt
//! plans the conditional writes against a fresh read of the tree and commits them.

use super::asset_input::{distinct_ids, AssetInput, AssetItem, RawAsset, MAX_LINKS};
use super::references;
use crate::context::Context;
use crate::domain::attributes::TargetEntity;
use crate::domain::limits::{
    MAX_ATTRIBUTE_KEYS_PER_WRITE, MAX_SKUS_PER_PRODUCT, MAX_VALUES_PER_ENTITY,
    MAX_VARIANTS_PER_PRODUCT,
};
use crate::domain::time::Timestamp;
use crate::domain::values::{self, ScopeRules, StoredValues, ValueChange};
use crate::domain::{identifier, names};
use crate::error::Failure;
use crate::http::render;
use crate::store::counters::{refs_of, Ref};
use crate::store::items::{EntityItem, EntityKind};
use crate::store::products::{ProductTree, TreeDepth};
use crate::store::settings::WriteContext;
use crate::store::writes::{Expect, TreeWrite};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap, HashSet};

mod body;
mod planning;

use body::VariantBody;
pub use body::{ProductBody, ProductBulk, SkuPatchBody};
pub use planning::{plan, written, Plan, Written};

#[cfg(test)]
mod tests;

/// Changes to one entity: `name` when given, validated value changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntityPatch {
    pub id: String,
    pub name: Option<String>,
    pub values: Vec<ValueChange>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct VariantPatch {
    pub entity: EntityPatch,
    pub skus: Vec<EntityPatch>,
}

/// Everything one PATCH asks of a product tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProductPatch {
    pub entity: EntityPatch,
    /// `Some(None)` removes the family.
    pub family: Option<Option<i64>>,
    pub variants: Vec<VariantPatch>,
    /// The complete set of linked assets, in order, each created or updated as given.
    pub assets: Option<Vec<AssetInput>>,
    /// The complete set of categories.
    pub categories: Option<Vec<String>>,
    /// The import line this patch comes from (`<import id>#<line>`), recorded on the product
    /// it creates: applied again (an import resuming after a crash), it answers 201 again.
    pub source: Option<String>,
}

/// An entity of the body before its values are validated against the definitions.
struct RawEntity<'a> {
    at: String,
    id: &'a str,
    name: Option<&'a str>,
    values: Option<&'a Map<String, Value>>,
}

impl<'a> RawEntity<'a> {
    /// Checks an entity's identifier (`what` names its kind), name and value count; `at`
    /// names it in errors (`""` for the product, `"variants[0]"`).
    fn new(
        at: String,
        what: &str,
        id: &'a str,
        name: Option<&'a str>,
        values: Option<&'a Map<String, Value>>,
    ) -> Result<Self, Failure> {
        let bad = |e: Failure| {
            if at.is_empty() {
                e
            } else {
                Failure::invalid(format!("{at}: {}", e.message()))
            }
        };
        if !at.is_empty() {
            identifier::validate(what, id).map_err(|e| bad(e.into()))?;
        }
        let name = name.map(entity_name).transpose().map_err(bad)?;
        let values = values.map(values_within_limit).transpose().map_err(bad)?;
        Ok(Self {
            at,
            id,
            name,
            values,
        })
    }
}

/// An entity's `name` (product, variant, SKU), checked like every display name: 1 to 255
/// characters, not blank, no control characters. An omitted (or `null`) name keeps the
/// entity's name, and a new entity is named after its identifier; an empty one is refused.
fn entity_name(name: &str) -> Result<&str, Failure> {
    names::validate("name", name)?;
    Ok(name)
}

/// A variant's or SKU's `identifier` (`at` names it in errors): required, a string.
fn identifier_field<'a>(at: &str, value: Option<&'a Value>) -> Result<&'a str, Failure> {
    value.and_then(Value::as_str).ok_or_else(|| {
        Failure::invalid(format!(
            "{at}: field 'identifier' is required and must be a string"
        ))
    })
}

/// The `variants` of a product body, checked: counts, identifiers, names, no duplicates.
fn raw_variants(list: &[VariantBody]) -> Result<Vec<(RawEntity<'_>, Vec<RawEntity<'_>>)>, Failure> {
    if list.len() > MAX_VARIANTS_PER_PRODUCT {
        return Err(Failure::invalid(format!(
            "field 'variants': a product has at most {MAX_VARIANTS_PER_PRODUCT} variants; this body names {}",
            list.len()
        )));
    }
    let skus: usize = list
        .iter()
        .filter_map(|v| v.skus.as_ref())
        .map(Vec::len)
        .sum();
    if skus > MAX_SKUS_PER_PRODUCT {
        return Err(Failure::invalid(format!(
            "field 'variants': a product has at most {MAX_SKUS_PER_PRODUCT} SKUs; this body names {skus}"
        )));
    }
    let mut seen_variants = HashSet::new();
    let mut seen_skus = HashSet::new();
    let mut out = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let at = format!("variants[{i}]");
        let variant = RawEntity::new(
            at.clone(),
            "variant",
            identifier_field(&at, v.identifier.as_ref())?,
            v.name.as_deref(),
            v.values.as_ref(),
        )?;
        if !seen_variants.insert(variant.id) {
            return Err(Failure::invalid(format!(
                "variants[{i}]: variant '{}' is given twice",
                variant.id
            )));
        }
        let mut skus = Vec::new();
        for (j, s) in v.skus.iter().flatten().enumerate() {
            let at = format!("variants[{i}].skus[{j}]");
            let sku = RawEntity::new(
                at.clone(),
                "sku",
                identifier_field(&at, s.identifier.as_ref())?,
                s.name.as_deref(),
                s.values.as_ref(),
            )?;
            if !seen_skus.insert(sku.id) {
                return Err(Failure::invalid(format!(
                    "{at}: sku '{}' is given twice",
                    sku.id
                )));
            }
            skus.push(sku);
        }
        out.push((variant, skus));
    }
    Ok(out)
}

/// A `values` object of at most [`MAX_VALUES_PER_ENTITY`] keys.
fn values_within_limit(m: &Map<String, Value>) -> Result<&Map<String, Value>, Failure> {
    if m.len() > MAX_VALUES_PER_ENTITY {
        return Err(Failure::invalid(format!(
            "field 'values': at most {MAX_VALUES_PER_ENTITY} attribute keys per entity; this one has {}",
            m.len()
        )));
    }
    Ok(m)
}

fn wanted_keys(
    entity: TargetEntity,
    values: Option<&Map<String, Value>>,
) -> impl Iterator<Item = (TargetEntity, String)> + '_ {
    // A key no attribute can have (`[a-z][a-z0-9_]{0,63}`) is not looked up: validation
    // then reports it as unknown, without a read.
    values.into_iter().flat_map(move |m| {
        m.keys()
            .filter(|k| crate::domain::attributes::is_valid_key(k))
            .map(move |k| (entity, k.clone()))
    })
}

/// The distinct keys of `wanted`, at most [`MAX_ATTRIBUTE_KEYS_PER_WRITE`]: each is one
/// definition to read.
pub fn distinct_keys(
    mut wanted: Vec<(TargetEntity, String)>,
) -> Result<Vec<(TargetEntity, String)>, Failure> {
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.len() > MAX_ATTRIBUTE_KEYS_PER_WRITE {
        return Err(Failure::invalid(format!(
            "field 'values': a write names at most {MAX_ATTRIBUTE_KEYS_PER_WRITE} distinct attribute keys; this one names {}",
            wanted.len()
        )));
    }
    Ok(wanted)
}

/// Validates one entity's values against the context; errors name where they are.
fn entity_patch(
    raw: &RawEntity<'_>,
    entity: TargetEntity,
    ctx: &WriteContext,
) -> Result<EntityPatch, Failure> {
    let languages = ctx.scopes.language_codes();
    let channels = ctx.scopes.channel_ids();
    let rules = ScopeRules {
        languages: Some(&languages),
        channels: Some(&channels),
    };
    let values = match raw.values {
        None => Vec::new(),
        Some(m) => {
            values::parse_values(entity.as_str(), m, &ctx.defs_of(entity), &rules).map_err(|e| {
                if raw.at.is_empty() {
                    e.into()
                } else {
                    Failure::invalid(format!("{}.{}", raw.at, e.message))
                }
            })?
        }
    };
    Ok(EntityPatch {
        id: raw.id.to_string(),
        name: raw.name.map(str::to_string),
        values,
    })
}

/// A PATCH /products body, structurally checked (fields, types, identifiers, duplicates)
/// but not yet validated against the organization's definitions: what it needs to read.
pub struct RawProductPatch<'a> {
    product: RawEntity<'a>,
    family: Option<Option<i64>>,
    variants: Vec<(RawEntity<'a>, Vec<RawEntity<'a>>)>,
    assets: Option<Vec<RawAsset<'a>>>,
    categories: Option<Vec<String>>,
}

impl<'a> RawProductPatch<'a> {
    /// Checks a parsed body for product `id` (already checked as an identifier).
    pub fn new(id: &'a str, body: &'a ProductBody) -> Result<Self, Failure> {
        Ok(Self {
            product: RawEntity::new(
                String::new(),
                "product",
                id,
                body.name.as_deref(),
                body.values.as_ref(),
            )?,
            family: body.family_id,
            variants: raw_variants(body.variants.as_deref().unwrap_or_default())?,
            assets: body.assets.as_deref().map(raw_assets).transpose()?,
            categories: body
                .categories
                .as_deref()
                .map(|l| distinct_ids(l, "categories", "category"))
                .transpose()?,
        })
    }

    /// The attribute definitions the body's values need.
    pub fn wanted(&self) -> Vec<(TargetEntity, String)> {
        let mut wanted: Vec<(TargetEntity, String)> =
            wanted_keys(TargetEntity::Product, self.product.values).collect();
        for (v, skus) in &self.variants {
            wanted.extend(wanted_keys(TargetEntity::Variant, v.values));
            for s in skus {
                wanted.extend(wanted_keys(TargetEntity::Sku, s.values));
            }
        }
        for a in self.assets.iter().flatten() {
            wanted.extend(a.wanted());
        }
        wanted
    }

    /// The family the body sets, if any.
    pub fn family_id(&self) -> Option<i64> {
        self.family.flatten()
    }

    /// Validates every value against `ctx` (read with [`Self::wanted`] and
    /// [`Self::family_id`]); no I/O.
    pub fn validate(&self, ctx: &WriteContext) -> Result<ProductPatch, Failure> {
        if let Some(f) = self.family_id() {
            if !ctx.families.contains(&f) {
                return Err(Failure::invalid(format!(
                    "field 'familyId': family {f} does not exist"
                )));
            }
        }
        let mut patch = ProductPatch {
            entity: entity_patch(&self.product, TargetEntity::Product, ctx)?,
            family: self.family,
            variants: Vec::new(),
            assets: self
                .assets
                .as_ref()
                .map(|list| {
                    list.iter()
                        .map(|a| a.validate(a.identifier.unwrap_or_default(), ctx))
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()?,
            categories: self.categories.clone(),
            source: None,
        };
        for (v, skus) in &self.variants {
            patch.variants.push(VariantPatch {
                entity: entity_patch(v, TargetEntity::Variant, ctx)?,
                skus: skus
                    .iter()
                    .map(|s| entity_patch(s, TargetEntity::Sku, ctx))
                    .collect::<Result<_, _>>()?,
            });
        }
        Ok(patch)
    }
}

impl ProductPatch {
    /// Every entity's value changes, with the path prefix that names the entity in errors.
    pub fn value_changes(&self) -> Vec<(String, &[ValueChange])> {
        let mut changes = vec![(String::new(), self.entity.values.as_slice())];
        for (i, v) in self.variants.iter().enumerate() {
            changes.push((format!("variants[{i}]."), v.entity.values.as_slice()));
            for (j, s) in v.skus.iter().enumerate() {
                changes.push((format!("variants[{i}].skus[{j}]."), s.values.as_slice()));
            }
        }
        for (i, a) in self.assets.iter().flatten().enumerate() {
            changes.push((format!("assets[{i}]."), a.values.as_slice()));
        }
        changes
    }

    /// How deep a write of this patch must read the tree.
    pub fn depth(&self) -> TreeDepth {
        if self.variants.iter().any(|v| !v.skus.is_empty()) {
            TreeDepth::Skus
        } else if !self.variants.is_empty() {
            TreeDepth::Variants
        } else {
            TreeDepth::Product
        }
    }
}

/// Parses and validates a PATCH /products body whole: one BatchGetItem of the definitions,
/// scopes and family it names, no write.
pub async fn parse_product_patch(
    cx: &Context,
    org: &str,
    id: &str,
    body: &ProductBody,
) -> Result<ProductPatch, Failure> {
    let raw = RawProductPatch::new(id, body)?;
    let wanted = distinct_keys(raw.wanted())?;
    let families: Vec<i64> = raw.family_id().into_iter().collect();
    let ctx = if wanted.is_empty() && families.is_empty() {
        WriteContext::default()
    } else {
        cx.store.write_context(org, &wanted, &families).await?
    };
    let patch = raw.validate(&ctx)?;
    references::check_exist(&cx.store, org, &patch.value_changes()).await?;
    Ok(patch)
}

/// The `assets` of a product body: asset objects with distinct identifiers.
fn raw_assets(list: &[AssetItem]) -> Result<Vec<RawAsset<'_>>, Failure> {
    if list.len() > MAX_LINKS {
        return Err(Failure::invalid(format!(
            "field 'assets': a product links at most {MAX_LINKS} assets"
        )));
    }
    let mut out: Vec<RawAsset<'_>> = Vec::new();
    for (i, a) in list.iter().enumerate() {
        let raw = RawAsset::new(format!("assets[{i}]: "), Some(&a.identifier), a.fields())?;
        if out.iter().any(|o| o.identifier == raw.identifier) {
            return Err(Failure::invalid(format!(
                "assets[{i}]: asset '{}' is given twice",
                a.identifier
            )));
        }
        out.push(raw);
    }
    Ok(out)
}

/// Parses and validates a PATCH /skus body (`name`, `values`).
pub async fn parse_sku_patch(
    cx: &Context,
    org: &str,
    id: &str,
    body: &SkuPatchBody,
) -> Result<EntityPatch, Failure> {
    let raw = RawEntity::new(
        String::new(),
        "sku",
        id,
        body.name.as_deref(),
        body.values.as_ref(),
    )?;
    let wanted: Vec<_> = wanted_keys(TargetEntity::Sku, raw.values).collect();
    let ctx = if wanted.is_empty() {
        WriteContext::default()
    } else {
        cx.store.write_context(org, &wanted, &[]).await?
    };
    let patch = entity_patch(&raw, TargetEntity::Sku, &ctx)?;
    references::check_exist(&cx.store, org, &[(String::new(), &patch.values)]).await?;
    Ok(patch)
}
