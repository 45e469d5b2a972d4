//! The flat lists' half of the list engine (assets, categories, bundles, metaobjects of a
//! definition, a type's deletions, a subscription's delivery log): a warm ordered index of
//! each (`index.rs`), so that a page of any depth and its exact total come from memory and
//! only the page's items are read. Each index is read in full once per process (its base
//! partition, strongly consistent), then brought up to date on every call by a delta of what
//! was written since (the store's `flat_lists.rs` reads both), like the list snapshots of
//! products (`snapshot/`). Entries that expire by TTL carry their expiry and leave the index
//! at that second, so a count can never drift from what a page shows.

mod index;

pub use index::{FlatPage, Keys, PageQuery, Seek};

use super::snapshot::SnapshotPolicy;
use crate::domain::time::Timestamp;
use crate::store::changes::PageKey;
use crate::store::flat_lists::Followed;
use crate::store::metrics::in_parallel;
use crate::store::{Store, StoreError};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// A full read of one list in progress; it survives the call that could not finish it.
#[derive(Debug)]
struct Load {
    /// When it started: every change older than this minus the overlap is in it.
    started: Timestamp,
    /// Where the next page starts (`None`: the beginning).
    cursor: Option<PageKey>,
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
pub struct FlatIndexes {
    policy: SnapshotPolicy,
    inner: Mutex<HashMap<String, Warm>>,
}

impl FlatIndexes {
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

impl FlatIndexes {
    /// Brings the index of `list` up to date: one delta while it is warm (a reload, every
    /// `reload_after`, goes on beside it within `reload_slice`); the first time, a full read
    /// within `load_budget`, else `StoreError::Loading` and the next call goes on.
    pub async fn refresh(&self, store: &Store, list: &Followed<'_>) -> Result<(), StoreError> {
        let indexes = self;
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
                    Ok(Some((started, store.flat_delta(list, since).await?)))
                }
                None => Ok(None),
            }
        };
        let reading = async {
            match load.as_mut() {
                Some(l) => continue_load(store, list, l, deadline, policy).await,
                None => Ok(()),
            }
        };
        let (delta, read) = in_parallel(async { futures_util::join!(delta, reading) }).await;
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
                match store.flat_delta(list, since).await {
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

    /// Runs `f` over the index of `list` (refresh it first), its expired entries dropped.
    pub fn with<R>(&self, list: &Followed<'_>, f: impl FnOnce(&mut Keys) -> R) -> R {
        let mut map = self.lock();
        let warm = map.entry(list.partition()).or_insert_with(Warm::new);
        warm.keys.expire(Timestamp::now().millis() / 1000);
        f(&mut warm.keys)
    }
}

/// Reads on in `load` page by page until it is done or `deadline` has passed.
async fn continue_load(
    store: &Store,
    list: &Followed<'_>,
    load: &mut Load,
    deadline: Instant,
    policy: SnapshotPolicy,
) -> Result<(), StoreError> {
    while !load.done {
        let (rows, next) = store
            .flat_load_page(list, load.cursor.clone(), policy.load_page_items)
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
