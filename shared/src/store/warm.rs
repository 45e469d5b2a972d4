//! Warm ordered indexes of the flat lists (assets, categories, bundles, metaobjects of a
//! definition, a type's deletions, a subscription's delivery log), so that a page of any
//! depth and its exact total come from memory and only the page's items are read. Each
//! index is read in full once per process (its base partition, strongly consistent), then
//! brought up to date on every call by a delta of what was written since (`warm_sources.rs`),
//! like the list snapshots of products (`snapshot/`). Entries that expire by TTL carry
//! their expiry and leave the index at that second, so a count can never drift from what a
//! page shows.

use super::changes::SnapshotPolicy;
use super::ops::Item;
use super::warm_sources::{Change, Followed, Mark};
use super::{Store, StoreError};
use crate::domain::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Mutex;
use std::time::Instant;

/// The ordered keys of one list and what lists need of them.
#[derive(Debug, Default)]
pub struct Keys {
    map: BTreeMap<String, Mark>,
    /// Removals seen, kept while an overlapping delta could still bring an older image.
    deleted: HashMap<String, Timestamp>,
    /// `(expires, key)` of the entries that expire.
    expiring: BTreeSet<(i64, String)>,
    bytes: usize,
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
pub struct WarmPage {
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
    fn apply(&mut self, changes: Vec<Change>) {
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
    fn expire(&mut self, now: i64) {
        while let Some((e, key)) = self.expiring.first().cloned() {
            if e > now {
                break;
            }
            self.remove(&key);
        }
    }

    fn forget_deletions_before(&mut self, horizon: i64) {
        self.deleted.retain(|_, t| t.millis() >= horizon);
    }

    /// One page of the entries `q` selects, and how many it selects in all.
    pub fn page(&self, q: &PageQuery<'_>) -> WarmPage {
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
        WarmPage { keys, total, more }
    }
}

/// A full read of one list in progress; it survives the call that could not finish it.
#[derive(Debug)]
struct Load {
    /// When it started: every change older than this minus the overlap is in it.
    started: Timestamp,
    /// Where the next page starts (`None`: the beginning).
    cursor: Option<Item>,
    done: bool,
    keys: Keys,
}

impl Load {
    fn new() -> Self {
        Self {
            started: Timestamp::now(),
            cursor: None,
            done: false,
            keys: Keys::default(),
        }
    }
}

/// One list's index in this process.
#[derive(Debug)]
struct Warm {
    keys: Keys,
    /// When the delta (or read) the keys are synced to started; `None` until read in full.
    synced: Option<Timestamp>,
    loaded: Instant,
    used: Instant,
    /// A full read under way (the first one, or a reload while `keys` still serve).
    load: Option<Load>,
}

impl Warm {
    fn new() -> Self {
        Self {
            keys: Keys::default(),
            synced: None,
            loaded: Instant::now(),
            used: Instant::now(),
            load: None,
        }
    }

    fn bytes(&self) -> usize {
        self.keys.bytes + self.load.as_ref().map_or(0, |l| l.keys.bytes)
    }
}

/// Every warm index of this process, by the base partition it follows.
#[derive(Debug)]
pub struct WarmIndexes {
    policy: SnapshotPolicy,
    inner: Mutex<HashMap<String, Warm>>,
}

impl WarmIndexes {
    /// Indexes kept under the list snapshots' policy: the same overlap, reload age, load
    /// budget and page size; a quarter of their memory.
    pub fn new(policy: SnapshotPolicy) -> Self {
        Self {
            policy: SnapshotPolicy {
                max_bytes: policy.max_bytes / 4,
                ..policy
            },
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Warm>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops the least recently used indexes other than `keep` while over the budget.
    fn evict(&self, map: &mut HashMap<String, Warm>, keep: &str) {
        let mut total: usize = map.values().map(Warm::bytes).sum();
        if total <= self.policy.max_bytes {
            return;
        }
        let mut others: Vec<(String, Instant, usize)> = map
            .iter()
            .filter(|(k, _)| k.as_str() != keep)
            .map(|(k, w)| (k.clone(), w.used, w.bytes()))
            .collect();
        others.sort_by_key(|(_, used, _)| *used);
        for (key, _, bytes) in others {
            if total <= self.policy.max_bytes {
                break;
            }
            map.remove(&key);
            total = total.saturating_sub(bytes);
        }
    }
}

/// What one call reads for one index.
struct Plan {
    /// A delta since this time, for keys that serve.
    delta: Option<Timestamp>,
    /// A full read to go on with, and whether older keys serve meanwhile.
    load: Option<Load>,
}

impl Store {
    /// Brings the index of `list` up to date: one delta while it is warm (a reload, every
    /// `reload_after`, goes on beside it within `reload_slice`); the first time, a full read
    /// within `load_budget`, else `StoreError::Loading` and the next call goes on.
    pub async fn refresh_warm(&self, list: &Followed<'_>) -> Result<(), StoreError> {
        let indexes = &self.warm;
        let policy = indexes.policy;
        let overlap = policy.overlap.as_millis() as i64;
        let id = list.partition();
        let call_started = Timestamp::now();
        let began = Instant::now();
        let plan = {
            let mut map = indexes.lock();
            let warm = map.entry(id.clone()).or_insert_with(Warm::new);
            let delta = warm
                .synced
                .map(|t| Timestamp::from_millis(t.millis() - overlap));
            let stale = warm.loaded.elapsed() >= policy.reload_after;
            let load = match (delta, stale) {
                (Some(_), false) => None,
                _ => Some(warm.load.take().unwrap_or_else(Load::new)),
            };
            Plan { delta, load }
        };
        let serving = plan.delta.is_some();
        let mut load = plan.load;
        let deadline = began
            + if serving {
                policy.reload_slice
            } else {
                policy.load_budget
            };
        let delta = async {
            match plan.delta {
                Some(since) => {
                    let started = Timestamp::now();
                    Ok(Some((started, self.warm_delta(list, since).await?)))
                }
                None => Ok(None),
            }
        };
        let reading = async {
            match load.as_mut() {
                Some(l) => self.continue_warm_load(list, l, deadline, policy).await,
                None => Ok(()),
            }
        };
        let (delta, read) =
            super::metrics::in_parallel(async { futures_util::join!(delta, reading) }).await;
        let put_back = |load: Option<Load>| {
            if let Some(load) = load {
                let mut map = indexes.lock();
                map.entry(id.clone()).or_insert_with(Warm::new).load = Some(load);
            }
        };
        let delta = match (delta, read) {
            (Ok(d), Ok(())) => d,
            (Err(e), _) | (_, Err(e)) => {
                put_back(load);
                return Err(e);
            }
        };
        // A cold read that began in an earlier call catches up with what changed since it
        // started; one that began now is as fresh as a delta.
        let mut catch_up = None;
        if let Some(l) = load.as_ref().filter(|l| l.done && !serving) {
            if l.started < call_started {
                let since = Timestamp::from_millis(l.started.millis() - overlap);
                let started = Timestamp::now();
                match self.warm_delta(list, since).await {
                    Ok(rows) => catch_up = Some((started, rows)),
                    Err(e) => {
                        put_back(load);
                        return Err(e);
                    }
                }
            }
        }
        let mut map = indexes.lock();
        let warm = map.entry(id.clone()).or_insert_with(Warm::new);
        warm.used = Instant::now();
        let mut outcome = Ok(());
        if let Some((started, rows)) = delta {
            if warm.synced.is_some() {
                if let Some(l) = load.as_mut() {
                    l.keys.apply(rows.clone());
                }
                warm.keys.apply(rows);
                warm.synced = Some(started);
            }
        }
        match load {
            Some(mut l) if l.done => {
                let synced = match catch_up {
                    Some((started, rows)) => {
                        l.keys.apply(rows);
                        started
                    }
                    None => warm.synced.filter(|_| serving).unwrap_or(l.started),
                };
                warm.keys = l.keys;
                warm.synced = Some(synced);
                warm.loaded = Instant::now();
            }
            Some(l) => {
                if !serving {
                    outcome = Err(StoreError::Loading { read: l.keys.len() });
                }
                warm.load = Some(l);
            }
            None => {}
        }
        if let Some(t) = warm.synced {
            warm.keys.forget_deletions_before(t.millis() - 2 * overlap);
        }
        indexes.evict(&mut map, &id);
        outcome
    }

    /// Reads on in `load` page by page until it is done or `deadline` has passed.
    async fn continue_warm_load(
        &self,
        list: &Followed<'_>,
        load: &mut Load,
        deadline: Instant,
        policy: SnapshotPolicy,
    ) -> Result<(), StoreError> {
        while !load.done {
            let (rows, next) = self
                .warm_load_page(list, load.cursor.clone(), policy.load_page_items)
                .await?;
            load.keys.apply(rows);
            load.done = next.is_none();
            load.cursor = next;
            if Instant::now() >= deadline {
                break;
            }
        }
        Ok(())
    }

    /// Runs `f` over the index of `list` (refresh it first), its expired entries dropped.
    pub fn with_warm<R>(&self, list: &Followed<'_>, f: impl FnOnce(&mut Keys) -> R) -> R {
        let mut map = self.warm.lock();
        let warm = map.entry(list.partition()).or_insert_with(Warm::new);
        warm.keys.expire(Timestamp::now().millis() / 1000);
        f(&mut warm.keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
