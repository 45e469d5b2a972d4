//! Refreshing an organization's snapshots from the byChange index: full loads in budgeted, resumable slices and deltas after them, all types and shards in parallel.

use super::*;
use std::collections::BTreeSet;
use std::sync::Arc;

impl Snapshots {
    /// Brings the snapshots of `kinds` up to date from `store`, all types and shards in
    /// parallel: a delta Query per shard of each warm type; the first call of a process
    /// reads each type's `byChange` partitions in full, within the policy's budget, and
    /// answers `StoreError::Loading` when it could not finish (the next call goes on from
    /// there).
    pub async fn refresh(
        &self,
        store: &Store,
        org: &str,
        kinds: &[EntityKind],
    ) -> Result<(), StoreError> {
        let shards = index_shards();
        let call_started = Timestamp::now();
        let plan = self.plan(org, kinds, shards);
        let began = Instant::now();
        // Every type's outcome is kept, even when another type's read failed: a load's
        // progress is never thrown away.
        let outcomes = try_all(plan.into_iter().map(|(kind, step)| async move {
            let outcome = self
                .refresh_kind(store, org, kind, step, call_started, began)
                .await;
            Ok::<_, StoreError>((kind, outcome))
        }))
        .await?;
        let mut loading: Option<usize> = None;
        let mut failed = None;
        for (kind, outcome) in outcomes {
            match outcome {
                Ok((outcome, still)) => {
                    self.keep(org, kind, outcome);
                    if let Some(read) = still {
                        *loading.get_or_insert(0) += read;
                    }
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        match (failed, loading) {
            (Some(e), _) => Err(e),
            (None, Some(read)) => Err(StoreError::Loading { read }),
            (None, None) => Ok(()),
        }
    }

    /// One type's part of a refresh: its delta, or the next part of its full read (put
    /// back on any failure, so that the next call goes on from there).
    async fn refresh_kind(
        &self,
        store: &Store,
        org: &str,
        kind: EntityKind,
        step: Step,
        call_started: Timestamp,
        began: Instant,
    ) -> Result<(Outcome, Option<usize>), StoreError> {
        let policy = self.policy();
        let (mut load, serving, full) = match step {
            Step::Delta(since) => {
                let started = Timestamp::now();
                let rows = delta_rows(store, org, kind, since).await?;
                return Ok((Outcome::Delta { started, rows }, None));
            }
            Step::Load {
                load,
                serving,
                full,
            } => (load, serving, full),
        };
        // A serving snapshot due for its reload takes a checkpoint of a newer full read
        // (the checkpoint builder's) instead of reading the index again; without one, its
        // deltas keep it as it is. Only one synced longer ago than the tombstones let a
        // delta see every deletion reads the index again.
        if let Some(since) = serving.filter(|s| !too_old_for_a_delta(*s)) {
            if self.checkpoints.is_some() && load.untouched() {
                let reload = Reload { since, full, began };
                return self
                    .reload_or_postpone(store, org, kind, reload, load)
                    .await;
            }
        }
        // A cold type (nothing served, nothing read yet) starts from its checkpoint when
        // there is a usable one: then only the changes after it are read. All of it within
        // the call's budget; past it, or without a checkpoint, the full read (tried once).
        if serving.is_none() && self.checkpoints.is_some() && load.untouched() {
            load.tried_checkpoint = true;
            let restored = tokio::time::timeout_at(
                (began + policy.load_budget).into(),
                self.restore_with_delta(store, org, kind, policy),
            )
            .await;
            match restored {
                Ok(Ok(Some(outcome))) => {
                    self.note(org, kind).await;
                    return Ok((outcome, None));
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    self.keep(org, kind, Outcome::Loading(load));
                    return Err(e);
                }
                Err(_) => {
                    tracing::warn!(%org, kind = kind.as_str(), "checkpoint not loaded within the budget: full read");
                    self.keep(org, kind, Outcome::Loading(load));
                    return Err(StoreError::Loading { read: 0 });
                }
            }
        }
        let deadline = began
            + match serving {
                Some(_) => policy.reload_slice,
                None => policy.load_budget,
            };
        // while a reload runs, the old snapshot keeps serving, kept fresh
        let fresh = async {
            match serving {
                Some(since) => {
                    let started = Timestamp::now();
                    let rows = delta_rows(store, org, kind, since).await?;
                    Ok(Some((started, rows)))
                }
                None => Ok(None),
            }
        };
        let (loaded, fresh) = futures_util::join!(
            continue_load(store, org, kind, &mut load, deadline, policy),
            fresh
        );
        let fresh = match (loaded, fresh) {
            (Ok(()), Ok(fresh)) => fresh,
            (Err(e), _) | (_, Err(e)) => {
                self.keep(org, kind, Outcome::Loading(load));
                return Err(e);
            }
        };
        if !load.done() {
            let read = load.entries_read();
            return Ok(match fresh {
                Some((started, rows)) => {
                    self.keep(org, kind, Outcome::Loading(load));
                    (Outcome::Delta { started, rows }, None)
                }
                None => (Outcome::Loading(load), Some(read)),
            });
        }
        // A read that began in an earlier call catches up with what changed since it
        // started; one that began now is as fresh as a delta.
        let (delta_started, delta) = if load.started < call_started {
            let since =
                Timestamp::from_millis(load.started.millis() - policy.overlap.as_millis() as i64);
            let started = Timestamp::now();
            match delta_rows(store, org, kind, since).await {
                Ok(rows) => (started, rows),
                Err(e) => {
                    self.keep(org, kind, Outcome::Loading(load));
                    return Err(e);
                }
            }
        } else {
            (load.started, Vec::new())
        };
        self.note(org, kind).await;
        Ok((
            Outcome::Loaded {
                full: load.started,
                rows: load.into_rows(),
                delta_started,
                delta,
            },
            None,
        ))
    }

    /// Notes that `org`'s list of `kind` is in use, so that the checkpoint builder keeps
    /// its checkpoint (serving processes only; a note is refreshed at every load and
    /// reload, and expires a day after the last).
    async fn note(&self, org: &str, kind: EntityKind) {
        let Some(checkpoints) = self.checkpoints.as_ref().filter(|_| self.notes) else {
            return;
        };
        if let Err(e) = checkpoints.want(&checkpoint::wanted_key(org, kind)).await {
            tracing::warn!(%org, kind = kind.as_str(), error = %e, "list not noted for its checkpoint");
        }
    }

    /// A serving snapshot's reload: from the checkpoint when its full read is newer than
    /// `full` (the one the snapshot descends from, or one that could not be loaded before)
    /// and it loads within the call's budget; else the changes since `since`, and the next
    /// try a reload period later (a checkpoint that could not be loaded is not tried again
    /// until a newer full read's).
    ///
    /// When the serving rows and the checkpoint's copy would not fit in the budget
    /// together, the serving rows go first ([`Snapshots::release_for_reload`]); a reload
    /// that then fails leaves the type cold, and the call answers 503 (a load under way:
    /// `load`, untouched) rather than a list from nothing.
    async fn reload_or_postpone(
        &self,
        store: &Store,
        org: &str,
        kind: EntityKind,
        Reload { since, full, began }: Reload,
        load: Load,
    ) -> Result<(Outcome, Option<usize>), StoreError> {
        let policy = self.policy();
        let stamp = async {
            match &self.checkpoints {
                Some(checkpoints) => checkpoints.stamp(&checkpoint::key(org, kind)).await,
                None => Ok(None),
            }
        };
        let (stamp, ()) = futures_util::join!(stamp, self.note(org, kind));
        let newer = match stamp {
            Ok(stamp) => stamp
                .map(|s| s.full)
                .filter(|f| full.is_none_or(|known| *f > known)),
            Err(e) => {
                tracing::warn!(%org, kind = kind.as_str(), error = %e, "checkpoint not looked at");
                None
            }
        };
        let mut refused = None;
        if let Some(newer) = newer {
            let released = self.release_for_reload(org, kind);
            if released {
                tracing::info!(%org, kind = kind.as_str(), "serving rows released: one copy through the reload");
            }
            let restored = tokio::time::timeout_at(
                (began + policy.load_budget).into(),
                self.restore_with_delta(store, org, kind, policy),
            )
            .await;
            match restored {
                Ok(Ok(Some(outcome))) => return Ok((outcome, None)),
                // released, the type is cold: the next call loads it as a first call does
                Ok(Err(e)) => return Err(e),
                Ok(Ok(None)) | Err(_) => {
                    tracing::warn!(%org, kind = kind.as_str(), released, "checkpoint not reloaded (unusable, or not within the budget)");
                    if released {
                        return Ok((Outcome::Loading(load), Some(0)));
                    }
                    refused = Some(newer);
                }
            }
        }
        let started = Timestamp::now();
        let rows = delta_rows(store, org, kind, since).await?;
        Ok((
            Outcome::Postponed {
                started,
                rows,
                refused,
            },
            None,
        ))
    }

    /// The checkpoint of `org`'s `kind` and the changes after it, when there is a usable
    /// checkpoint.
    async fn restore_with_delta(
        &self,
        store: &Store,
        org: &str,
        kind: EntityKind,
        policy: SnapshotPolicy,
    ) -> Result<Option<Outcome>, StoreError> {
        let Some((rows, synced, full)) = self.restore(org, kind).await else {
            return Ok(None);
        };
        let since = Timestamp::from_millis(
            synced
                .millis()
                .saturating_sub(policy.overlap.as_millis() as i64),
        );
        let started = Timestamp::now();
        let delta = delta_rows(store, org, kind, since).await?;
        Ok(Some(Outcome::Loaded {
            rows,
            delta_started: started,
            delta,
            full,
        }))
    }

    /// The checkpoint of `org`'s `kind`, decoded, with its position and the start of the
    /// full read it descends from, when there is one young enough that the index still
    /// holds every deletion after it (tombstones are kept a day: half of it), and not ahead
    /// of this clock.
    pub(super) async fn restore(
        &self,
        org: &str,
        kind: EntityKind,
    ) -> Option<(Rows, Timestamp, Timestamp)> {
        let checkpoints = self.checkpoints.as_ref()?;
        let (bytes, full) = match checkpoints.get(&checkpoint::key(org, kind)).await {
            Ok(found) => found?,
            Err(e) => {
                tracing::warn!(%org, kind = kind.as_str(), error = %e, "checkpoint not read");
                return None;
            }
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (key, owner) = (self.checkpoint_key.clone(), org.to_string());
        let decoded = match tokio::task::spawn_blocking(move || {
            let seal = checkpoint::Seal {
                key: &key,
                org: &owner,
                kind,
            };
            checkpoint::decode(&bytes, threads, seal)
        })
        .await
        {
            Ok(decoded) => decoded,
            Err(e) => {
                tracing::warn!(%org, kind = kind.as_str(), error = %e, "checkpoint decoder failed");
                return None;
            }
        };
        let now = Timestamp::now().millis();
        let overlap = self.policy.overlap.as_millis() as i64;
        match decoded {
            Ok((rows, synced))
                if synced.millis() <= now.saturating_add(overlap)
                    && !too_old_for_a_delta(synced) =>
            {
                Some((rows, synced, full))
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(%org, kind = kind.as_str(), error = %e.0, "checkpoint refused");
                None
            }
        }
    }

    /// Runs `f` over the organization's snapshots (refresh them first).
    pub fn read<R>(&self, org: &str, f: impl FnOnce(&Levels<'_>) -> R) -> R {
        let map = self.lock();
        f(&Levels { map: &map, org })
    }

    /// Runs `f` over the organization's snapshots and the identifiers of `target` that
    /// `select` picks: when `key` names a selection computed before, that one, as it was
    /// when no snapshot changed since, else brought up to date by `reselect` (given the
    /// entities whose place can have changed), or computed again by `select` when the
    /// snapshots' logs do not reach back to it or a quarter of the entities changed.
    pub fn with_selection<R>(
        &self,
        org: &str,
        target: EntityKind,
        key: Option<String>,
        select: impl FnOnce(&Levels<'_>) -> SelectedIds,
        reselect: impl FnOnce(&Levels<'_>, SelectedIds, &BTreeSet<Arc<str>>) -> SelectedIds,
        f: impl FnOnce(&Levels<'_>, &SelectedIds) -> R,
    ) -> R {
        let map = self.lock();
        let levels = Levels { map: &map, org };
        let Some(key) = key else {
            return f(&levels, &select(&levels));
        };
        let generations = levels.generations();
        let mut kept = self.selections.lock().unwrap_or_else(|e| e.into_inner());
        let ids = match kept.take(org, target, &key) {
            Some((ids, at)) if at == generations => ids,
            found => {
                let affected = found.and_then(|(ids, at)| {
                    let affected = levels.affected(target, &at)?;
                    (affected.len() * 4 <= levels.of(target).len()).then_some((ids, affected))
                });
                match affected {
                    Some((ids, affected)) => reselect(&levels, ids, &affected),
                    None => select(&levels),
                }
            }
        };
        kept.put(org, target, key, generations, ids.clone());
        drop(kept);
        f(&levels, &ids)
    }
}

/// A due reload of a serving snapshot: synced at `since`, descended from the full read at
/// `full`, in a call that began at `began`.
struct Reload {
    since: Timestamp,
    full: Option<Timestamp>,
    began: Instant,
}

/// Whether a delta from `since` could miss a deletion: the index keeps tombstones a day,
/// and a snapshot or checkpoint is used only within half of it.
fn too_old_for_a_delta(since: Timestamp) -> bool {
    Timestamp::now().millis().saturating_sub(since.millis()) >= TOMBSTONE_RETENTION_SECS * 1000 / 2
}

/// Index entries of a type changed after `since`, from every shard in parallel.
async fn delta_rows(
    store: &Store,
    org: &str,
    kind: EntityKind,
    since: Timestamp,
) -> Result<Vec<Row>, StoreError> {
    let rows = store.changes_since(org, kind, since).await?;
    Ok(rows.into_iter().map(Row::from).collect())
}

/// Reads on in every unfinished shard of `load`, in parallel, page by page (each page
/// decoded and applied as it arrives), until each is done or `deadline` has passed.
async fn continue_load(
    store: &Store,
    org: &str,
    kind: EntityKind,
    load: &mut Load,
    deadline: Instant,
    policy: SnapshotPolicy,
) -> Result<(), StoreError> {
    try_all(
        load.shards
            .iter_mut()
            .enumerate()
            .filter(|(_, s)| !matches!(s.cursor, Cursor::Done))
            .map(|(n, shard)| async move {
                loop {
                    let after = match &shard.cursor {
                        Cursor::Done => return Ok::<(), StoreError>(()),
                        Cursor::Start => None,
                        Cursor::After(key) => Some(key.clone()),
                    };
                    let (rows, next) = store
                        .changes_page(org, kind, n, after, policy.load_page_items)
                        .await?;
                    shard.rows.apply(rows.into_iter().map(Row::from).collect());
                    shard.cursor = match next {
                        Some(key) => Cursor::After(key),
                        None => Cursor::Done,
                    };
                    if Instant::now() >= deadline {
                        return Ok(());
                    }
                }
            }),
    )
    .await?;
    Ok(())
}
