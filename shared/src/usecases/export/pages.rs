//! An export's walk bounded in bytes, so that its memory follows a budget rather than the
//! catalog: a read asks for as many entities as the bytes still free hold at the largest
//! size an entity has had so far ([`Budget`]); a product's tree (or a variant's SKUs), whose
//! size no index knows, is read as its first Query response alone (DynamoDB ends one at
//! 1 MB), its rest only when its line is written, one tree at a time; and lines go into the
//! part one by one, never as a page of text.

use super::ExportSpec;
use crate::context::Context;
use crate::error::Failure;
use crate::http::render;
use crate::search::engine::Cut;
use crate::store::items::EntityKind;
use crate::store::lists::{Collection, Head};
use crate::store::metrics::in_parallel;
use crate::store::products::{assemble, ProductTree, TreeDepth};
use crate::usecases::listing::{matching, Refresh};
use std::collections::HashMap;
use std::io::Write;

/// What an export's walk may hold of entities read and not yet written (the page being
/// written and the one read ahead together), what it has learnt of their sizes, and the most
/// it has held. Bytes are counted as DynamoDB counts the items (`EntityItem::stored_bytes`).
#[derive(Debug, Clone)]
pub struct Budget {
    bytes: usize,
    /// The size a read expects of each entity: the largest of the last read (a tree read
    /// in part: its first response), or half the size expected before when that is more, so
    /// a huge entity shrinks the reads after it and weighs half as much at each.
    largest: Option<usize>,
    peak: usize,
}

impl Budget {
    pub fn new(bytes: usize) -> Self {
        Self {
            bytes: bytes.max(1),
            largest: None,
            peak: 0,
        }
    }

    /// How many entities the next read may ask for (at most `cap`) while `held` bytes are
    /// held: as many as the bytes still free hold at the size expected of each. With nothing
    /// held, one at least (an entity larger than the budget is read alone: the walk always
    /// moves on), and one when no size is known yet (a walk's first read); otherwise none
    /// when none fits: that read waits until what is held is written. An entity larger than
    /// expected passes the budget by its excess, in the one read that meets it: at most a
    /// Query response (1 MB) for a tree, the item limit (400 KB) per item otherwise.
    pub fn window(&self, held: usize, cap: usize) -> usize {
        let fits = match self.largest {
            Some(largest) => self.bytes.saturating_sub(held) / largest.max(1),
            None => usize::from(held == 0),
        };
        let n = fits.min(cap);
        if held == 0 {
            n.max(1)
        } else {
            n
        }
    }

    /// Learns the sizes of a read's entities.
    pub fn saw(&mut self, page: &Page) {
        if let Some(most) = page.entities.iter().map(|e| e.bytes).max() {
            self.largest = Some(self.largest.map_or(most, |l| most.max(l / 2)));
        }
    }

    /// Records that `held` bytes were held at once.
    pub fn hold(&mut self, held: usize) {
        self.peak = self.peak.max(held);
    }

    /// The most bytes held at once.
    pub fn peak(&self) -> usize {
        self.peak
    }
}

/// One entity of a page as read.
#[derive(Debug)]
enum Held {
    Whole(ProductTree),
    /// A product's tree past its first response.
    Tree(Collection, Head),
    /// A variant (with its product) whose SKUs go on past their first response.
    Skus(ProductTree, Collection, Head),
}

#[derive(Debug)]
struct Entity {
    held: Held,
    /// What it holds, as DynamoDB counts its items.
    bytes: usize,
}

fn tree_bytes(t: &ProductTree) -> usize {
    let items = t.variants.iter().chain(&t.skus);
    t.product.stored_bytes() + items.map(|i| i.stored_bytes()).sum::<usize>()
}

impl Entity {
    fn new(held: Held) -> Self {
        let bytes = match &held {
            Held::Whole(t) => tree_bytes(t),
            Held::Tree(_, h) => h.items.iter().map(|i| i.stored_bytes()).sum(),
            Held::Skus(t, _, h) => {
                tree_bytes(t) + h.items.iter().map(|i| i.stored_bytes()).sum::<usize>()
            }
        };
        Self { held, bytes }
    }

    /// The whole entity (its collection read to its end), with its bytes; `None` when it
    /// was deleted since the page was read.
    async fn finish(
        self,
        cx: &Context,
        org: &str,
    ) -> Result<(Option<ProductTree>, usize), Failure> {
        Ok(match self.held {
            Held::Whole(t) => (Some(t), self.bytes),
            Held::Tree(c, mut head) => {
                cx.store.finish_head(org, &c, &mut head).await?;
                let tree = assemble(head.items);
                let bytes = tree.as_ref().map_or(0, tree_bytes);
                (tree, bytes)
            }
            Held::Skus(mut t, c, mut head) => {
                cx.store.finish_head(org, &c, &mut head).await?;
                t.skus = sorted(head.items);
                let bytes = tree_bytes(&t);
                (Some(t), bytes)
            }
        })
    }
}

fn sorted(mut items: Vec<crate::store::items::EntityItem>) -> Vec<crate::store::items::EntityItem> {
    items.sort_by(|a, b| a.id.cmp(&b.id));
    items
}

/// One read of the walk: its entities in identifier order, as read.
#[derive(Debug)]
pub struct Page {
    entities: Vec<Entity>,
    /// The last identifier the page covered (the walk goes on after it).
    pub last: Option<String>,
    /// Whether more follow.
    pub more: bool,
}

/// The walk's `count` entities after `after` (from the start with `None`): the list engine
/// (brought up to date first with [`Refresh::Now`]) selects them in identifier order, and
/// one round trip reads them as the list routes do, except that a product's tree, or a
/// variant's SKUs, is read as its first Query response (the rest when its line is written:
/// [`Page::write`]). An entity deleted between the two is left out.
pub async fn read(
    cx: &Context,
    org: &str,
    spec: &ExportSpec,
    (after, count): (Option<&str>, usize),
    refresh: Refresh,
) -> Result<Page, Failure> {
    let cut = (after.map_or(Cut::Index(0), Cut::After), count);
    let (entries, _, more) = matching(cx, org, spec.entity, &spec.select, cut, refresh).await?;
    let store = &cx.store;
    let whole = |trees: Vec<ProductTree>| trees.into_iter().map(Held::Whole).collect();
    let held: Vec<Held> = match (spec.entity, spec.embed.variants, spec.embed.skus) {
        (EntityKind::Product, false, _) => whole(
            store
                .product_page(org, &entries, TreeDepth::Product)
                .await?,
        ),
        (EntityKind::Product, true, skus) => {
            let depth = if skus {
                TreeDepth::Skus
            } else {
                TreeDepth::Variants
            };
            let trees: Vec<Collection> = entries
                .iter()
                .map(|e| Collection::Tree {
                    product: e.id.clone(),
                    depth,
                })
                .collect();
            let heads = store.heads(org, &trees).await?;
            trees
                .into_iter()
                .zip(heads)
                .filter_map(|(c, head)| match head.is_whole() {
                    true => assemble(head.items).map(Held::Whole),
                    false => Some(Held::Tree(c, head)),
                })
                .collect()
        }
        (EntityKind::Variant, _, true) => {
            let skus: Vec<Collection> = entries
                .iter()
                .map(|e| Collection::Skus {
                    product: e.pid.clone().unwrap_or_default(),
                    variant: e.id.clone(),
                })
                .collect();
            let (trees, heads) = in_parallel(async {
                futures_util::try_join!(
                    store.variant_page(org, &entries, false),
                    store.heads(org, &skus)
                )
            })
            .await?;
            let mut by_variant: HashMap<String, (Collection, Head)> = entries
                .iter()
                .map(|e| e.id.clone())
                .zip(skus.into_iter().zip(heads))
                .collect();
            trees
                .into_iter()
                .filter_map(|mut t| {
                    let (c, head) = by_variant.remove(&t.variants.first()?.id)?;
                    Some(match head.is_whole() {
                        true => {
                            t.skus = sorted(head.items);
                            Held::Whole(t)
                        }
                        false => Held::Skus(t, c, head),
                    })
                })
                .collect()
        }
        (EntityKind::Variant, _, false) => whole(store.variant_page(org, &entries, false).await?),
        (EntityKind::Sku, ..) => whole(store.sku_page(org, &entries).await?),
    };
    Ok(Page {
        entities: held.into_iter().map(Entity::new).collect(),
        last: entries.last().map(|e| e.id.to_string()),
        more,
    })
}

impl Page {
    /// The bytes its entities hold.
    pub fn bytes(&self) -> usize {
        self.entities.iter().map(|e| e.bytes).sum()
    }

    /// Writes each entity as its detail route shows it, a line each, into `out`, in order;
    /// an entity read in part is read to its end first, one at a time. Returns the lines
    /// written and the most bytes the page held at once meanwhile.
    pub async fn write(
        self,
        cx: &Context,
        org: &str,
        spec: &ExportSpec,
        out: &mut impl Write,
    ) -> Result<(u64, usize), Failure> {
        let mut held = self.bytes();
        let mut peak = held;
        let mut lines = 0;
        for e in self.entities {
            let read = e.bytes;
            let (tree, bytes) = e.finish(cx, org).await?;
            held = held - read + bytes;
            peak = peak.max(held);
            if let Some(tree) = tree {
                line(spec, &tree, out)?;
                lines += 1;
            }
            held -= bytes;
        }
        Ok((lines, peak))
    }
}

/// `tree` as its detail route shows it, and a newline, into `out`.
fn line(spec: &ExportSpec, tree: &ProductTree, out: &mut impl Write) -> Result<(), Failure> {
    let (embed, sel) = (spec.embed, &spec.selection);
    let line = match spec.entity {
        EntityKind::Product => render::product(tree, embed, sel),
        EntityKind::Variant => render::variant(tree, embed.skus, sel),
        EntityKind::Sku => render::sku(tree, sel),
    };
    serde_json::to_writer(&mut *out, &line)
        .map_err(|e| e.to_string())
        .and_then(|()| out.write_all(b"\n").map_err(|e| e.to_string()))
        .map_err(|e| {
            tracing::error!(error = %e, "writing an export line");
            Failure::Internal
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A walk as the worker makes it over entities of `sizes` (bytes), reads of at most
    /// `cap`: each page read while the one before it is written, sized by what that one
    /// holds. Returns the reads' sizes (in entities) and the most bytes held at once.
    fn walk(sizes: &[usize], budget: usize, cap: usize) -> (Vec<usize>, usize) {
        let mut b = Budget::new(budget);
        let mut reads = Vec::new();
        let mut next = 0;
        let mut read = |b: &mut Budget, n: usize| {
            let page = Page {
                entities: sizes[next..(next + n).min(sizes.len())]
                    .iter()
                    .map(|&bytes| Entity {
                        held: Held::Whole(ProductTree {
                            product: tests_item(),
                            variants: Vec::new(),
                            skus: Vec::new(),
                        }),
                        bytes,
                    })
                    .collect(),
                last: None,
                more: next + n < sizes.len(),
            };
            next = (next + n).min(sizes.len());
            reads.push(page.entities.len());
            b.saw(&page);
            page
        };
        let first = b.window(0, cap);
        let mut current = read(&mut b, first);
        loop {
            let n = if current.more {
                b.window(current.bytes(), cap)
            } else {
                0
            };
            let ahead = (n > 0).then(|| read(&mut b, n));
            b.hold(current.bytes() + ahead.as_ref().map_or(0, Page::bytes));
            if !current.more {
                break;
            }
            current = match ahead {
                Some(page) => page,
                None => {
                    let n = b.window(0, cap);
                    read(&mut b, n)
                }
            };
        }
        assert_eq!(
            reads.iter().sum::<usize>(),
            sizes.len(),
            "every entity once"
        );
        (reads, b.peak())
    }

    fn tests_item() -> crate::store::items::EntityItem {
        serde_json::from_value(serde_json::json!({
            "PK": "O#o#P#p", "SK": "L1", "GSI1PK": "O#o#T#product#0", "GSI2SK": "x",
            "kind": "product", "id": "p", "name": "P", "su": "2026-01-01T00:00:00.000Z",
            "tu": "2026-01-01T00:00:00.000Z", "ver": 1
        }))
        .unwrap()
    }

    #[test]
    fn pages_are_cut_by_the_bytes_they_hold_not_by_the_largest_entities_times_the_page() {
        // small entities: pages of the cap, as before the budget
        let (reads, peak) = walk(&[1_000; 100], 1_000_000, 20);
        assert_eq!(reads, [vec![1], vec![20; 4], vec![19]].concat());
        assert_eq!(peak, 40_000);
        // large ones: the page being written and the one read ahead hold the budget at most
        // (pages of 20 and 20 ahead would hold 12 MB)
        let (reads, peak) = walk(&[300_000; 10], 1_000_000, 20);
        assert_eq!(reads, [1, 2, 1, 2, 1, 2, 1]);
        assert_eq!(peak, 900_000);
        // the budget holds for any mix whose sizes never pass the one expected
        let mut sizes: Vec<usize> = (0..200).map(|i| 50_000 + (i * 7_919) % 150_000).collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(walk(&sizes, 1_000_000, 20).1, 986_764);
        // an entity larger than the budget is read alone, nothing beside it; the reads
        // after it grow back as its weight halves
        let (reads, peak) = walk(
            &[[5_000_000].as_slice(), &[2_000; 40]].concat(),
            1_000_000,
            20,
        );
        assert_eq!(reads, [1, 1, 1, 1, 1, 3, 6, 12, 15]);
        assert_eq!(peak, 5_000_000);
        // one larger than expected passes the budget by what it brings, once: in the read
        // that meets it
        let sizes = [[2_000; 3].as_slice(), &[3_000_000], &[2_000; 3]].concat();
        assert_eq!(walk(&sizes, 1_000_000, 20), (vec![1, 6], 3_012_000));
    }

    #[test]
    fn a_window_fits_the_bytes_free() {
        let mut b = Budget::new(100);
        assert_eq!((b.window(0, 20), b.window(50, 20)), (1, 0));
        b.largest = Some(30);
        assert_eq!(
            (
                b.window(0, 20),
                b.window(40, 20),
                b.window(71, 20),
                b.window(0, 2)
            ),
            (3, 2, 0, 2)
        );
        b.largest = Some(500);
        assert_eq!((b.window(0, 20), b.window(1, 20)), (1, 0));
        assert_eq!(b.peak(), 0);
        b.hold(70);
        b.hold(20);
        assert_eq!(b.peak(), 70);
    }
}
