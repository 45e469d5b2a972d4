//! A model of filtered subscriptions for the tests and the bench: random filters from a pool
//! of conditions on a product color and SKU sizes and stock (the lists' `search` grammar), and
//! what each filtered subscription must receive for a set of changes: one delivery per changed
//! entity that matches before or after, with its `match`.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Defines the attributes the model's filters name: the product's color, the SKU's size and
/// stock.
pub async fn define(org: &crate::Org) {
    for (key, entity, t) in [
        ("color", "product", "text"),
        ("size", "sku", "text"),
        ("stock", "sku", "number"),
    ] {
        org.define(json!({"key": key, "displayName": key, "targetEntity": entity, "type": t}))
            .await;
    }
}

/// A tiny deterministic generator (xorshift), seeded from `FILTER_SEED` or the clock.
pub struct Rng(pub u64);

impl Rng {
    fn step(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.step() % n
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// A SKU as the model holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sku {
    pub color: &'static str,
    pub size: Option<&'static str>,
    pub stock: Option<i64>,
}

/// One condition of the pool: its search JSON and what it means.
#[derive(Debug, Clone, Copy)]
pub enum Cond {
    Color(&'static str),
    NotColor(&'static str),
    Sizes(&'static [&'static str]),
    NoSize,
    StockOver(i64),
    StockUnder(i64),
    Identifier(&'static str),
}

impl Cond {
    pub fn key(self) -> &'static str {
        match self {
            Cond::Color(_) | Cond::NotColor(_) => "product.color",
            Cond::Sizes(_) | Cond::NoSize => "sku.size",
            Cond::StockOver(_) | Cond::StockUnder(_) => "sku.stock",
            Cond::Identifier(_) => "_identifier",
        }
    }
    pub fn json(self) -> Value {
        match self {
            Cond::Color(c) => json!({"operator": "EQUALS", "value": c}),
            Cond::NotColor(c) => json!({"operator": "NOT_EQUALS", "value": c}),
            Cond::Sizes(s) => json!({"operator": "IN", "value": s}),
            Cond::NoSize => json!({"operator": "EMPTY"}),
            Cond::StockOver(n) => json!({"operator": "GREATER_THAN", "value": n}),
            Cond::StockUnder(n) => json!({"operator": "LESS_THAN", "value": n}),
            Cond::Identifier(s) => json!({"operator": "CONTAINS", "value": s}),
        }
    }
    pub fn holds(self, id: &str, s: &Sku) -> bool {
        match self {
            Cond::Color(c) => s.color == c,
            Cond::NotColor(c) => s.color != c,
            Cond::Sizes(set) => s.size.is_some_and(|z| set.contains(&z)),
            Cond::NoSize => s.size.is_none(),
            Cond::StockOver(n) => s.stock.is_some_and(|x| x > n),
            Cond::StockUnder(n) => s.stock.is_some_and(|x| x < n),
            Cond::Identifier(p) => id.contains(p),
        }
    }
}

pub const POOL: &[Cond] = &[
    Cond::Color("red"),
    Cond::NotColor("red"),
    Cond::Sizes(&["S", "M"]),
    Cond::NoSize,
    Cond::StockOver(0),
    Cond::StockUnder(2),
    Cond::Identifier("-s0"),
];

/// A random filter: 1 or 2 keys, all or any.
pub struct Filter {
    pub conds: Vec<Cond>,
    pub any: bool,
}

impl Filter {
    pub fn random(rng: &mut Rng) -> Self {
        let first = *rng.pick(POOL);
        let mut conds = vec![first];
        let second = *rng.pick(POOL);
        if rng.below(2) == 0 && second.key() != first.key() {
            conds.push(second);
        }
        Filter {
            conds,
            any: rng.below(2) == 0,
        }
    }
    pub fn search(&self) -> Value {
        let map: Map<String, Value> = self
            .conds
            .iter()
            .map(|c| (c.key().to_string(), json!([c.json()])))
            .collect();
        Value::Object(map)
    }
    pub fn holds(&self, id: &str, s: Option<&Sku>) -> bool {
        let Some(s) = s else { return false };
        match self.any {
            true => self.conds.iter().any(|c| c.holds(id, s)),
            false => self.conds.iter().all(|c| c.holds(id, s)),
        }
    }
}

pub type Expected = Vec<(String, String, String)>;

/// What one filtered subscription gets for the changes from `before` to `after`.
pub fn expected(
    f: &Filter,
    event: &str,
    changed: &[String],
    before: &BTreeMap<String, Sku>,
    after: &BTreeMap<String, Sku>,
) -> Expected {
    let mut out = Vec::new();
    for id in changed {
        let m = match (f.holds(id, before.get(id)), f.holds(id, after.get(id))) {
            (false, true) => "entered",
            (true, true) => "stayed",
            (true, false) => "left",
            (false, false) => continue,
        };
        out.push((id.clone(), event.to_string(), m.to_string()));
    }
    out.sort();
    out
}
