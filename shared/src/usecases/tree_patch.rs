//! Writes to a product tree (PATCH /products with `variants` and `skus`, PATCH /skus): the
//! body is parsed and validated whole before anything is read or written, then each attempt
//! plans the conditional writes against a fresh read of the tree and commits them.

use super::asset_input::{distinct_ids, raw_asset, AssetInput, RawAsset, MAX_LINKS};
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
use crate::error::ApiError;
use crate::http::render;
use crate::http::{ApiResponse, JsonBody};
use crate::store::counters::{refs_of, Ref};
use crate::store::items::{EntityItem, EntityKind};
use crate::store::products::{ProductTree, TreeDepth};
use crate::store::settings::WriteContext;
use crate::store::writes::{Expect, TreeWrite};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap, HashSet};

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

const VARIANT_FIELDS: &[&str] = &["identifier", "name", "values", "skus"];
const SKU_FIELDS: &[&str] = &["identifier", "name", "values"];

fn raw_entity<'a>(
    at: String,
    what: &str,
    v: &'a Value,
    fields: &[&str],
) -> Result<(RawEntity<'a>, &'a Map<String, Value>), ApiError> {
    let bad = |m: String| ApiError::bad_request(format!("{at}: {m}"));
    let obj = v
        .as_object()
        .ok_or_else(|| bad("expected an object".into()))?;
    let body = JsonBody(obj.clone());
    body.only(fields).map_err(|e| bad(e.message))?;
    let id = match obj.get("identifier") {
        Some(Value::String(s)) => s.as_str(),
        _ => {
            return Err(bad(
                "field 'identifier' is required and must be a string".into()
            ))
        }
    };
    identifier::validate(what, id).map_err(|e| bad(e.message))?;
    let name = match obj.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(entity_name(s).map_err(|e| bad(e.message))?),
        Some(_) => return Err(bad("field 'name' must be a string".into())),
    };
    let values = match obj.get("values") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(values_within_limit(m).map_err(|e| bad(e.message))?),
        Some(_) => return Err(bad("field 'values' must be an object".into())),
    };
    Ok((
        RawEntity {
            at,
            id,
            name,
            values,
        },
        obj,
    ))
}

/// An entity's `name` (product, variant, SKU), checked like every display name: 1 to 255
/// characters, not blank, no control characters. An omitted (or `null`) name keeps the
/// entity's name, and a new entity is named after its identifier; an empty one is refused.
fn entity_name(name: &str) -> Result<&str, ApiError> {
    names::validate("name", name)?;
    Ok(name)
}

/// The `variants` array of a PATCH /products body, structurally checked.
fn raw_variants(list: &[Value]) -> Result<Vec<(RawEntity<'_>, Vec<RawEntity<'_>>)>, ApiError> {
    if list.len() > MAX_VARIANTS_PER_PRODUCT {
        return Err(ApiError::bad_request(format!(
            "field 'variants': a product has at most {MAX_VARIANTS_PER_PRODUCT} variants; this body names {}",
            list.len()
        )));
    }
    let skus: usize = list
        .iter()
        .filter_map(|v| v.get("skus").and_then(Value::as_array))
        .map(Vec::len)
        .sum();
    if skus > MAX_SKUS_PER_PRODUCT {
        return Err(ApiError::bad_request(format!(
            "field 'variants': a product has at most {MAX_SKUS_PER_PRODUCT} SKUs; this body names {skus}"
        )));
    }
    let mut seen_variants = HashSet::new();
    let mut seen_skus = HashSet::new();
    let mut out = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let (variant, obj) = raw_entity(format!("variants[{i}]"), "variant", v, VARIANT_FIELDS)?;
        if !seen_variants.insert(variant.id) {
            return Err(ApiError::bad_request(format!(
                "variants[{i}]: variant '{}' is given twice",
                variant.id
            )));
        }
        let mut skus = Vec::new();
        match obj.get("skus") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for (j, s) in list.iter().enumerate() {
                    let at = format!("variants[{i}].skus[{j}]");
                    let (sku, _) = raw_entity(at.clone(), "sku", s, SKU_FIELDS)?;
                    if !seen_skus.insert(sku.id) {
                        return Err(ApiError::bad_request(format!(
                            "{at}: sku '{}' is given twice",
                            sku.id
                        )));
                    }
                    skus.push(sku);
                }
            }
            Some(_) => {
                return Err(ApiError::bad_request(format!(
                    "variants[{i}]: field 'skus' must be an array"
                )))
            }
        }
        out.push((variant, skus));
    }
    Ok(out)
}

/// A `values` object of at most [`MAX_VALUES_PER_ENTITY`] keys.
fn values_within_limit(m: &Map<String, Value>) -> Result<&Map<String, Value>, ApiError> {
    if m.len() > MAX_VALUES_PER_ENTITY {
        return Err(ApiError::bad_request(format!(
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
) -> Result<Vec<(TargetEntity, String)>, ApiError> {
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.len() > MAX_ATTRIBUTE_KEYS_PER_WRITE {
        return Err(ApiError::bad_request(format!(
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
) -> Result<EntityPatch, ApiError> {
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
                    ApiError::bad_request(format!("{}.{}", raw.at, e.message))
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

/// The fields of a PATCH /products/{identifier} body.
pub const PATCH_FIELDS: &[&str] = &[
    "name",
    "values",
    "familyId",
    "variants",
    "assets",
    "categories",
];

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
    /// Checks the body's shape; `extra` names fields the caller allows beyond
    /// [`PATCH_FIELDS`] (the bulk route's `identifier`).
    pub fn parse(id: &'a str, body: &'a JsonBody, extra: &[&str]) -> Result<Self, ApiError> {
        let allowed: Vec<&str> = PATCH_FIELDS.iter().chain(extra).copied().collect();
        body.only(&allowed)?;
        let name = body.opt_str("name")?.map(entity_name).transpose()?;
        let values = body
            .opt_object("values")?
            .map(values_within_limit)
            .transpose()?;
        let family = match body.0.get("familyId") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(v) => Some(Some(v.as_i64().filter(|n| *n > 0).ok_or_else(|| {
                ApiError::bad_request("field 'familyId' must be a positive integer or null")
            })?)),
        };
        Ok(Self {
            product: RawEntity {
                at: String::new(),
                id,
                name,
                values,
            },
            family,
            variants: raw_variants(body.opt_array("variants")?.map_or(&[], Vec::as_slice))?,
            assets: body
                .opt_array("assets")?
                .map(|l| raw_assets(l))
                .transpose()?,
            categories: body
                .opt_array("categories")?
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
    pub fn validate(&self, ctx: &WriteContext) -> Result<ProductPatch, ApiError> {
        if let Some(f) = self.family_id() {
            if !ctx.families.contains(&f) {
                return Err(ApiError::bad_request(format!(
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
    body: &JsonBody,
) -> Result<ProductPatch, ApiError> {
    let raw = RawProductPatch::parse(id, body, &[])?;
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

const ASSET_ITEM_FIELDS: &[&str] = &["identifier", "url", "name", "mimeType", "values"];

/// The `assets` array of a PATCH /products body: asset objects with distinct identifiers.
fn raw_assets(list: &[Value]) -> Result<Vec<RawAsset<'_>>, ApiError> {
    if list.len() > MAX_LINKS {
        return Err(ApiError::bad_request(format!(
            "field 'assets': a product links at most {MAX_LINKS} assets"
        )));
    }
    let mut out: Vec<RawAsset<'_>> = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let obj = v.as_object().ok_or_else(|| {
            ApiError::bad_request(format!(
                "assets[{i}]: expected an object with an 'identifier'"
            ))
        })?;
        let raw = raw_asset(format!("assets[{i}]: "), obj, ASSET_ITEM_FIELDS)?;
        let id = raw.identifier.ok_or_else(|| {
            ApiError::bad_request(format!("assets[{i}]: field 'identifier' is required"))
        })?;
        if out.iter().any(|a| a.identifier == Some(id)) {
            return Err(ApiError::bad_request(format!(
                "assets[{i}]: asset '{id}' is given twice"
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
    body: &JsonBody,
) -> Result<EntityPatch, ApiError> {
    let raw = RawEntity {
        at: String::new(),
        id,
        name: body.opt_str("name")?.map(entity_name).transpose()?,
        values: body
            .opt_object("values")?
            .map(values_within_limit)
            .transpose()?,
    };
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

/// The writes of one attempt.
#[derive(Debug)]
pub struct Plan {
    pub product: EntityItem,
    /// The product is new (or was created by this same import line before).
    pub created: bool,
    pub write: TreeWrite,
    /// Every entity written, as written (the product too).
    pub items: Vec<EntityItem>,
}

impl Plan {
    /// The written entity of `kind` named `id`, if the plan writes it.
    pub fn item(&self, kind: EntityKind, id: &str) -> Option<&EntityItem> {
        self.items.iter().find(|i| i.kind == kind && i.id == id)
    }
}

/// Applies name and values to an item; whether anything changed.
fn apply_entity(item: &mut EntityItem, patch: &EntityPatch) -> bool {
    let mut changed = values::apply(&mut item.vals, &patch.values);
    if let Some(n) = &patch.name {
        if *n != item.name {
            item.name = n.clone();
            changed = true;
        }
    }
    changed
}

/// One entity of the plan: the item as it will be written, and what it expects to find.
struct Planned {
    item: EntityItem,
    expect: Expect,
    changed_self: bool,
    changed_tree: bool,
    /// The metaobjects its values referenced as read (none when new): a reference the plan
    /// adds must still exist when it commits.
    read: BTreeSet<Ref>,
}

impl Planned {
    fn existing(item: EntityItem) -> Self {
        let expect = Expect::Version(item.ver);
        let read = refs_of(&item.vals);
        Self {
            item,
            expect,
            changed_self: false,
            changed_tree: false,
            read,
        }
    }

    fn new(org: &str, kind: EntityKind, id: &str, parents: (Option<&str>, Option<&str>)) -> Self {
        let item = EntityItem::new(
            org,
            kind,
            id,
            parents,
            id,
            StoredValues::new(),
            Timestamp::from_millis(0),
        );
        Self {
            item,
            expect: Expect::Absent,
            changed_self: true,
            changed_tree: true,
            read: BTreeSet::new(),
        }
    }

    fn stamps(&self) -> [Timestamp; 2] {
        [self.item.su, self.item.tu]
    }

    fn stamp(&mut self, at: Timestamp) {
        if self.changed_self {
            self.item.touch(at);
        } else if self.changed_tree {
            self.item.touch_tree(at);
        }
    }

    fn changed(&self) -> bool {
        self.changed_self || self.changed_tree
    }
}

/// Plans the writes that bring `tree` (as read; `None` when the product does not exist) to
/// what `patch` asks. Entities of the patch missing from the tree are created, except when
/// `create` is false (PATCH /skus), where a missing entity is a 404.
pub fn plan(
    org: &str,
    product_id: &str,
    tree: Option<ProductTree>,
    patch: &ProductPatch,
    create: bool,
) -> Result<Plan, ApiError> {
    let (mut product, existing_variants, existing_skus) = match tree {
        Some(t) => (Planned::existing(t.product), t.variants, t.skus),
        None if create => (
            Planned::new(org, EntityKind::Product, product_id, (None, None)),
            Vec::new(),
            Vec::new(),
        ),
        None => return Err(ApiError::entity_not_found("product", product_id)),
    };
    let created = product.expect == Expect::Absent
        || (patch.source.is_some() && product.item.src == patch.source);
    if product.expect == Expect::Absent {
        product.item.src = patch.source.clone();
    }
    product.changed_self |= apply_entity(&mut product.item, &patch.entity);
    if let Some(family) = patch.family {
        if product.item.family_id != family {
            product.item.family_id = family;
            product.changed_self = true;
        }
    }
    if let Some(assets) = &patch.assets {
        let ids: Vec<String> = assets.iter().map(|a| a.identifier.clone()).collect();
        if product.item.assets != ids {
            product.item.assets = ids;
            product.changed_self = true;
        }
    }
    if let Some(categories) = &patch.categories {
        if product.item.categories.as_ref() != Some(categories) {
            product.item.categories = Some(categories.clone());
            product.changed_self = true;
        }
    }
    let mut variants_by_id: HashMap<String, EntityItem> = existing_variants
        .into_iter()
        .map(|v| (v.id.clone(), v))
        .collect();
    let mut skus_by_id: HashMap<String, EntityItem> = existing_skus
        .into_iter()
        .map(|s| (s.id.clone(), s))
        .collect();
    let mut planned: Vec<(Planned, Vec<Planned>)> = Vec::new();
    for vp in &patch.variants {
        let vid = vp.entity.id.as_str();
        let mut variant = match variants_by_id.remove(vid) {
            Some(v) => Planned::existing(v),
            None if create => Planned::new(org, EntityKind::Variant, vid, (Some(product_id), None)),
            None => return Err(ApiError::entity_not_found("variant", vid)),
        };
        variant.changed_self |= apply_entity(&mut variant.item, &vp.entity);
        let mut skus = Vec::new();
        for sp in &vp.skus {
            let mut sku = match skus_by_id.remove(&sp.id) {
                Some(s) if s.vid.as_deref() != Some(vid) => {
                    return Err(ApiError::conflict(format!(
                        "sku '{}' belongs to variant '{}'",
                        sp.id,
                        s.vid.unwrap_or_default()
                    )))
                }
                Some(s) => Planned::existing(s),
                None if create => {
                    Planned::new(org, EntityKind::Sku, &sp.id, (Some(product_id), Some(vid)))
                }
                None => return Err(ApiError::entity_not_found("sku", &sp.id)),
            };
            sku.changed_self |= apply_entity(&mut sku.item, sp);
            variant.changed_tree |= sku.changed_self;
            skus.push(sku);
        }
        product.changed_tree |= variant.changed_self || variant.changed_tree;
        planned.push((variant, skus));
    }
    check_tree_size(
        &patch.depth(),
        &planned,
        variants_by_id.len(),
        skus_by_id.len(),
        product.expect,
    )?;
    let mut write = TreeWrite::new();
    if !product.changed() {
        return Ok(Plan {
            product: product.item,
            created,
            write,
            items: Vec::new(),
        });
    }
    // One time for the whole write, never before anything it touches already recorded.
    let mut stamps: Vec<Timestamp> = product.stamps().to_vec();
    for (v, skus) in &planned {
        if v.changed() {
            stamps.extend(v.stamps());
        }
        stamps.extend(
            skus.iter()
                .filter(|s| s.changed())
                .flat_map(Planned::stamps),
        );
    }
    let at = Timestamp::next_after(stamps);
    // Parents before children: if a write of several transactions stops half way, what was
    // written is still a valid tree, and the retry's plan touches the parents again.
    let mut items = Vec::new();
    product.stamp(at);
    write.put_read(org, &product.item, product.expect, Some(&product.read))?;
    items.push(product.item.clone());
    for (v, skus) in planned {
        for mut e in [v].into_iter().chain(skus).filter(Planned::changed) {
            e.stamp(at);
            write.put_read(org, &e.item, e.expect, Some(&e.read))?;
            items.push(e.item);
        }
    }
    Ok(Plan {
        product: product.item,
        created,
        write,
        items,
    })
}

/// Refuses a plan whose tree would pass the limits of one product, counting what the read
/// tree holds beside what the patch names (`others_*`: entities read and not named). Only
/// levels the patch names are counted: their read was whole (or the product is new).
fn check_tree_size(
    depth: &TreeDepth,
    planned: &[(Planned, Vec<Planned>)],
    other_variants: usize,
    other_skus: usize,
    product: Expect,
) -> Result<(), ApiError> {
    let new = |p: &Planned| p.expect == Expect::Absent;
    let adds_variants = planned.iter().any(|(v, _)| new(v));
    let adds_skus = planned.iter().flat_map(|(_, s)| s).any(new);
    let read_all = product == Expect::Absent;
    if adds_variants && (read_all || *depth != TreeDepth::Product) {
        let total = other_variants + planned.len();
        if total > MAX_VARIANTS_PER_PRODUCT {
            return Err(ApiError::bad_request(format!(
                "field 'variants': a product has at most {MAX_VARIANTS_PER_PRODUCT} variants; this write would make {total}"
            )));
        }
    }
    if adds_skus && (read_all || *depth == TreeDepth::Skus) {
        let total = other_skus + planned.iter().map(|(_, s)| s.len()).sum::<usize>();
        if total > MAX_SKUS_PER_PRODUCT {
            return Err(ApiError::bad_request(format!(
                "field 'variants': a product has at most {MAX_SKUS_PER_PRODUCT} SKUs; this write would make {total}"
            )));
        }
    }
    Ok(())
}

/// The response of a tree write: 201 when the product was created, else 200.
pub fn written(plan: &Plan, entity: &EntityItem, updated: Timestamp) -> ApiResponse {
    let status = if plan.created { 201 } else { 200 };
    ApiResponse::single(status, render::write_result(entity, updated))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORG: &str = "abc123";

    fn item(
        kind: EntityKind,
        id: &str,
        parents: (Option<&str>, Option<&str>),
        ver: u64,
    ) -> EntityItem {
        let mut e = EntityItem::new(
            ORG,
            kind,
            id,
            parents,
            id,
            StoredValues::new(),
            Timestamp::from_millis(1_000),
        );
        e.ver = ver;
        e
    }

    fn entity(id: &str) -> EntityPatch {
        EntityPatch {
            id: id.into(),
            ..EntityPatch::default()
        }
    }

    fn named(id: &str, name: &str) -> EntityPatch {
        EntityPatch {
            id: id.into(),
            name: Some(name.into()),
            values: Vec::new(),
        }
    }

    fn tree() -> ProductTree {
        ProductTree {
            product: item(EntityKind::Product, "p", (None, None), 3),
            variants: vec![item(EntityKind::Variant, "v1", (Some("p"), None), 2)],
            skus: vec![item(EntityKind::Sku, "s1", (Some("p"), Some("v1")), 5)],
        }
    }

    #[test]
    fn a_new_tree_is_created_parents_first_with_identity_claims() {
        let patch = ProductPatch {
            entity: named("p", "Chair"),
            variants: vec![VariantPatch {
                entity: entity("v1"),
                skus: vec![entity("s1")],
            }],
            ..ProductPatch::default()
        };
        let plan = plan(ORG, "p", None, &patch, true).unwrap();
        assert!(plan.created);
        assert_eq!(plan.product.name, "Chair");
        let ids: Vec<&str> = plan.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["p", "v1", "s1"]);
        // product; variant + its identity item; SKU + its identity item
        assert_eq!(plan.write.len(), 5);
        assert_eq!(plan.write.transaction_sizes(), vec![5]);
        // one time for the whole write
        assert!(plan
            .items
            .iter()
            .all(|i| i.su == plan.product.su && i.tu == plan.product.tu));
    }

    #[test]
    fn an_update_writes_what_changed_and_raises_the_ancestors() {
        let patch = ProductPatch {
            entity: entity("p"),
            variants: vec![VariantPatch {
                entity: entity("v1"),
                skus: vec![named("s1", "Small")],
            }],
            ..ProductPatch::default()
        };
        let plan = plan(ORG, "p", Some(tree()), &patch, true).unwrap();
        assert!(!plan.created);
        let ids: Vec<&str> = plan.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["p", "v1", "s1"], "the SKU and its ancestors' tu");
        let sku = plan.item(EntityKind::Sku, "s1").unwrap();
        assert_eq!(sku.name, "Small");
        assert!(sku.su > Timestamp::from_millis(1_000));
        let product = plan.item(EntityKind::Product, "p").unwrap();
        assert_eq!(
            product.su,
            Timestamp::from_millis(1_000),
            "the product itself is unchanged"
        );
        assert!(product.tu > Timestamp::from_millis(1_000));
        // three conditional puts, no identity claims: they exist
        assert_eq!(plan.write.len(), 3);
    }

    #[test]
    fn a_patch_that_changes_nothing_writes_nothing() {
        let patch = ProductPatch {
            entity: named("p", "p"),
            variants: vec![VariantPatch {
                entity: entity("v1"),
                skus: vec![entity("s1")],
            }],
            ..ProductPatch::default()
        };
        let plan = plan(ORG, "p", Some(tree()), &patch, true).unwrap();
        assert!(plan.write.is_empty());
        assert!(plan.items.is_empty());
        assert!(!plan.created);
    }

    #[test]
    fn missing_entities_are_404_without_create_and_a_moved_sku_is_409() {
        let patch = ProductPatch {
            entity: entity("p"),
            variants: vec![VariantPatch {
                entity: entity("v2"),
                skus: vec![],
            }],
            ..ProductPatch::default()
        };
        assert_eq!(
            plan(ORG, "p", Some(tree()), &patch, false).unwrap_err(),
            ApiError::entity_not_found("variant", "v2")
        );
        assert_eq!(
            plan(ORG, "q", None, &ProductPatch::default(), false).unwrap_err(),
            ApiError::entity_not_found("product", "q")
        );
        let moved = ProductPatch {
            entity: entity("p"),
            variants: vec![VariantPatch {
                entity: entity("v2"),
                skus: vec![entity("s1")],
            }],
            ..ProductPatch::default()
        };
        let err = plan(ORG, "p", Some(tree()), &moved, true).unwrap_err();
        assert_eq!(
            (err.status, err.message.as_str()),
            (409, "sku 's1' belongs to variant 'v1'")
        );
    }

    #[test]
    fn large_writes_split_at_100_actions_never_inside_an_entity() {
        // 1 product + 50 variants with their identities = 101 actions
        let patch = ProductPatch {
            entity: entity("big"),
            variants: (0..50)
                .map(|i| VariantPatch {
                    entity: entity(&format!("v{i:02}")),
                    skus: vec![],
                })
                .collect(),
            ..ProductPatch::default()
        };
        let plan = plan(ORG, "big", None, &patch, true).unwrap();
        assert_eq!(plan.write.len(), 101);
        // the 50th variant and its identity item do not fit: both move to the next one
        assert_eq!(plan.write.transaction_sizes(), vec![99, 2]);
    }

    #[test]
    fn an_import_line_that_created_a_product_reports_201_when_applied_again() {
        let patch = ProductPatch {
            entity: named("p", "Chair"),
            source: Some("imp_1#7".into()),
            ..ProductPatch::default()
        };
        let first = plan(ORG, "p", None, &patch, true).unwrap();
        assert_eq!(first.product.src.as_deref(), Some("imp_1#7"));
        let again = plan(
            ORG,
            "p",
            Some(ProductTree {
                product: first.product.clone(),
                variants: vec![],
                skus: vec![],
            }),
            &patch,
            true,
        )
        .unwrap();
        assert!(again.created && again.write.is_empty());
        let other_line = ProductPatch {
            source: Some("imp_1#8".into()),
            ..patch
        };
        let updated = plan(
            ORG,
            "p",
            Some(ProductTree {
                product: first.product,
                variants: vec![],
                skus: vec![],
            }),
            &other_line,
            true,
        )
        .unwrap();
        assert!(!updated.created);
    }
}
