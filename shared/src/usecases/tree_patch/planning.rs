//! Plans the writes of one attempt: the read tree (or none) and a validated patch become the items to write, with the conditions they expect.

use super::*;

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
    let mut changed = values::apply(&mut item.values, &patch.values);
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
        let read = refs_of(&item.values);
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
        [self.item.self_updated_at, self.item.updated_at]
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
) -> Result<Plan, Failure> {
    let (mut product, existing_variants, existing_skus) = match tree {
        Some(t) => (Planned::existing(t.product), t.variants, t.skus),
        None if create => (
            Planned::new(org, EntityKind::Product, product_id, (None, None)),
            Vec::new(),
            Vec::new(),
        ),
        None => return Err(Failure::not_found("product", product_id)),
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
            None => return Err(Failure::not_found("variant", vid)),
        };
        variant.changed_self |= apply_entity(&mut variant.item, &vp.entity);
        let mut skus = Vec::new();
        for sp in &vp.skus {
            let mut sku = match skus_by_id.remove(&sp.id) {
                Some(s) if s.vid.as_deref() != Some(vid) => {
                    return Err(Failure::conflict(format!(
                        "sku '{}' belongs to variant '{}'",
                        sp.id,
                        s.vid.unwrap_or_default()
                    )))
                }
                Some(s) => Planned::existing(s),
                None if create => {
                    Planned::new(org, EntityKind::Sku, &sp.id, (Some(product_id), Some(vid)))
                }
                None => return Err(Failure::not_found("sku", &sp.id)),
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
) -> Result<(), Failure> {
    let new = |p: &Planned| p.expect == Expect::Absent;
    let adds_variants = planned.iter().any(|(v, _)| new(v));
    let adds_skus = planned.iter().flat_map(|(_, s)| s).any(new);
    let read_all = product == Expect::Absent;
    if adds_variants && (read_all || *depth != TreeDepth::Product) {
        let total = other_variants + planned.len();
        if total > MAX_VARIANTS_PER_PRODUCT {
            return Err(Failure::invalid(format!(
                "field 'variants': a product has at most {MAX_VARIANTS_PER_PRODUCT} variants; this write would make {total}"
            )));
        }
    }
    if adds_skus && (read_all || *depth == TreeDepth::Skus) {
        let total = other_skus + planned.iter().map(|(_, s)| s.len()).sum::<usize>();
        if total > MAX_SKUS_PER_PRODUCT {
            return Err(Failure::invalid(format!(
                "field 'variants': a product has at most {MAX_SKUS_PER_PRODUCT} SKUs; this write would make {total}"
            )));
        }
    }
    Ok(())
}

/// What a tree write did to the entity it answers for: whether the product was created,
/// the entity's write result and its tag (the handler makes it an answer: 201 or 200).
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub created: bool,
    pub result: Value,
    pub etag: String,
}

impl Written {
    /// The status a bulk line reports and a single write answers.
    pub fn status(&self) -> u16 {
        if self.created {
            201
        } else {
            200
        }
    }
}

/// The outcome of `plan`'s write for `entity` (updated at `updated`).
pub fn written(plan: &Plan, entity: &EntityItem, updated: Timestamp) -> Written {
    Written {
        created: plan.created,
        result: render::write_result(entity, updated),
        etag: super::super::etags::entity(entity),
    }
}
