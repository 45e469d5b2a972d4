//! One flat list's ordered keys in memory: entries applied idempotently from full reads and
//! deltas (a tombstone blocks older images), dropped at their TTL, and paged by offset or
//! cursor, with an optional floor, filter and direction, with the exact total.

use crate::store::flat_lists::{Change, Mark};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

/// The ordered keys of one list and what lists need of them.
#[derive(Debug, Default)]
pub struct Keys {
    map: BTreeMap<String, Mark>,
    /// Removals seen, kept while an overlapping delta could still bring an older image.
    deleted: HashMap<String, crate::domain::time::Timestamp>,
    /// `(expires, key)` of the entries that expire.
    expiring: BTreeSet<(i64, String)>,
    pub(super) bytes: usize,
}

fn weight(key: &str, mark: &Mark) -> usize {
    let expiring = mark.expires.map_or(0, |_| key.len() + 32);
    key.len() + mark.folded.as_ref().map_or(0, |f| f.len()) + expiring + 96
}

/// Where a page starts.
#[derive(Debug, Clone, Copy)]
pub enum Seek<'a> {
    /// After this many entries (`page`).
    Offset(usize),
    /// Just after this key (`cursor`): a seek.
    After(&'a str),
}

/// What a list asks of its index.
pub struct PageQuery<'a> {
    /// Only keys after this one (exclusive).
    pub floor: Option<&'a str>,
    pub from: Seek<'a>,
    pub limit: usize,
    /// Descending key order (newest first for time-ordered keys).
    pub descending: bool,
    /// Only entries this accepts (`None`: every entry).
    pub filter: Option<&'a (dyn Fn(&Mark) -> bool + Sync)>,
}

/// The keys of one page, the list's total, and whether entries follow the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatPage {
    pub keys: Vec<String>,
    pub total: usize,
    pub more: bool,
}

impl Keys {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn insert(&mut self, key: String, mark: Mark) {
        self.bytes += weight(&key, &mark);
        if let Some(e) = mark.expires {
            self.expiring.insert((e, key.clone()));
        }
        if let Some(old) = self.map.insert(key.clone(), mark) {
            self.forget_mark(&key, &old);
        }
    }

    fn forget_mark(&mut self, key: &str, old: &Mark) {
        self.bytes -= weight(key, old);
        if let Some(e) = old.expires {
            self.expiring.remove(&(e, key.to_string()));
        }
    }

    /// Removes `key` (an entry found gone when its page was read).
    pub fn remove(&mut self, key: &str) {
        if let Some(old) = self.map.remove(key) {
            self.forget_mark(key, &old);
        }
    }

    /// Applies rows; re-applying a row already seen, or an older one, changes nothing.
    pub(super) fn apply(&mut self, changes: Vec<Change>) {
        for Change { key, mark, del } in changes {
            if del {
                if self.map.get(&key).is_some_and(|m| m.at <= mark.at) {
                    self.remove(&key);
                }
                let t = self.deleted.entry(key).or_insert(mark.at);
                *t = (*t).max(mark.at);
                continue;
            }
            if self.deleted.get(&key).is_some_and(|t| *t >= mark.at) {
                continue;
            }
            match self.map.get(&key) {
                Some(m) if (m.at, m.ver) >= (mark.at, mark.ver) => {}
                _ => self.insert(key, mark),
            }
        }
    }

    /// Drops the entries whose TTL has come by `now` (epoch seconds).
    pub(super) fn expire(&mut self, now: i64) {
        while let Some((e, key)) = self.expiring.first().cloned() {
            if e > now {
                break;
            }
            self.remove(&key);
        }
    }

    pub(super) fn forget_deletions_before(&mut self, horizon: i64) {
        self.deleted.retain(|_, t| t.millis() >= horizon);
    }

    /// One page of the entries `q` selects, and how many it selects in all.
    pub fn page(&self, q: &PageQuery<'_>) -> FlatPage {
        let floor = q.floor.map_or(Bound::Unbounded, Bound::Excluded);
        let all = || self.map.range::<str, _>((floor, Bound::Unbounded));
        let accepts = |m: &Mark| q.filter.is_none_or(|f| f(m));
        let total = match (q.floor, q.filter) {
            (None, None) => self.map.len(),
            _ => all().filter(|(_, m)| accepts(m)).count(),
        };
        let from: Box<dyn Iterator<Item = (&String, &Mark)>> = match (q.from, q.descending) {
            (Seek::Offset(_), false) => Box::new(all()),
            (Seek::Offset(_), true) => Box::new(all().rev()),
            (Seek::After(k), false) => {
                let lower = match q.floor {
                    Some(f) if f >= k => Bound::Excluded(f),
                    _ => Bound::Excluded(k),
                };
                Box::new(self.map.range::<str, _>((lower, Bound::Unbounded)))
            }
            (Seek::After(k), true) => {
                Box::new(self.map.range::<str, _>((floor, Bound::Excluded(k))).rev())
            }
        };
        let skip = match q.from {
            Seek::Offset(n) => n,
            Seek::After(_) => 0,
        };
        let mut keys: Vec<String> = from
            .filter(|(_, m)| accepts(m))
            .skip(skip)
            .take(q.limit + 1)
            .map(|(k, _)| k.clone())
            .collect();
        let more = keys.len() > q.limit;
        keys.truncate(q.limit);
        FlatPage { keys, total, more }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::Timestamp;

    fn mark(at: i64, ver: u64) -> Mark {
        Mark {
            at: Timestamp::from_millis(at),
            ver,
            folded: None,
            expires: None,
        }
    }

    fn row(key: &str, at: i64, ver: u64, del: bool) -> Change {
        Change {
            key: key.into(),
            mark: mark(at, ver),
            del,
        }
    }

    fn keys(k: &Keys) -> Vec<&str> {
        k.map.keys().map(String::as_str).collect()
    }

    fn query(from: Seek<'_>, limit: usize) -> PageQuery<'_> {
        PageQuery {
            floor: None,
            from,
            limit,
            descending: false,
            filter: None,
        }
    }

    #[test]
    fn rows_apply_idempotently_and_tombstones_block_older_images() {
        let mut k = Keys::default();
        k.apply(vec![row("b", 10, 1, false), row("a", 10, 1, false)]);
        k.apply(vec![row("a", 10, 1, false)]);
        assert_eq!(keys(&k), ["a", "b"]);
        k.apply(vec![row("a", 11, 0, true)]);
        assert_eq!(keys(&k), ["b"]);
        // the old image again (an overlapping delta): stays removed
        k.apply(vec![row("a", 10, 1, false)]);
        assert_eq!(keys(&k), ["b"]);
        // created again later: back
        k.apply(vec![row("a", 12, 0, false)]);
        assert_eq!(keys(&k), ["a", "b"]);
        assert_eq!(k.bytes, 2 * weight("a", &mark(0, 0)));
    }

    #[test]
    fn entries_leave_at_their_expiry_and_the_weight_follows() {
        let mut k = Keys::default();
        for (key, expires) in [("x", 100), ("y", 50), ("z", 200)] {
            k.apply(vec![Change {
                key: key.into(),
                mark: Mark {
                    expires: Some(expires),
                    ..mark(1, 0)
                },
                del: false,
            }]);
        }
        k.expire(49);
        assert_eq!(keys(&k), ["x", "y", "z"]);
        k.expire(100);
        assert_eq!(keys(&k), ["z"]);
        assert_eq!(k.expiring.len(), 1);
        k.remove("z");
        assert_eq!((k.bytes, k.expiring.len()), (0, 0));
    }

    #[test]
    fn pages_by_offset_cursor_floor_filter_and_direction() {
        let mut k = Keys::default();
        k.apply(
            (0..10)
                .map(|i| row(&format!("k{i}"), 1, 0, false))
                .collect(),
        );
        let p = k.page(&query(Seek::Offset(8), 3));
        assert_eq!(
            (p.keys, p.total, p.more),
            (vec!["k8".into(), "k9".into()], 10, false)
        );
        let p = k.page(&query(Seek::After("k3"), 2));
        assert_eq!(
            (p.keys, p.total, p.more),
            (vec!["k4".into(), "k5".into()], 10, true)
        );
        let p = k.page(&PageQuery {
            floor: Some("k6"),
            ..query(Seek::Offset(0), 5)
        });
        assert_eq!(
            (p.keys, p.total),
            (vec!["k7".into(), "k8".into(), "k9".into()], 3)
        );
        let p = k.page(&PageQuery {
            descending: true,
            ..query(Seek::Offset(1), 2)
        });
        assert_eq!(
            (p.keys, p.total, p.more),
            (vec!["k8".into(), "k7".into()], 10, true)
        );
        let even = |m: &Mark| m.ver == 0;
        let none = |_: &Mark| false;
        assert_eq!(
            k.page(&PageQuery {
                filter: Some(&even),
                ..query(Seek::Offset(0), 1)
            })
            .total,
            10
        );
        let p = k.page(&PageQuery {
            filter: Some(&none),
            ..query(Seek::Offset(0), 1)
        });
        assert_eq!((p.keys.len(), p.total, p.more), (0, 0, false));
        // past the end: empty with the true total
        let p = k.page(&query(Seek::Offset(50), 5));
        assert_eq!((p.keys.len(), p.total, p.more), (0, 10, false));
    }
}
