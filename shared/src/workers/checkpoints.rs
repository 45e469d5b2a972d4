//! The checkpoint builder (the `checkpoint-builder` function, run on a schedule): builds the
//! checkpoint of every list in use (noted by the serving processes that load it;
//! `search/snapshot/builder.rs`), one at a time, the oldest checkpoint first, until the
//! invocation's time runs short: a list skipped then has the oldest checkpoint in the next
//! run. Each build is logged with its cost and the age of the checkpoint it found (the
//! logs' metric filters make checkpoint freshness a metric with an alarm, and failed builds
//! a count with an alarm); a failed build does not fail the run, and is noted beside the
//! list: the list waits out a backoff that doubles with each failure in a row and then goes
//! behind the others (ordered by when it became due), so one list that cannot be built
//! never stays "oldest" and holds back every other tenant's. A list whose last checkpoint
//! would not fit the function's memory is refused before its build starts.

use crate::context::{checkpoint_key, Context};
use crate::imports::checkpoints::{Listed, S3Checkpoints};
use crate::search::snapshot::{BuildPlace, Snapshots};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Time kept free before the invocation's deadline (at most a tenth of the invocation): no
/// build starts later, and a read still running then gives up.
const RESERVE: Duration = Duration::from_secs(60);
/// Default period of the full reads (`CATALOG_CHECKPOINT_FULL_READ_HOURS`): 6 hours.
const FULL_EVERY: Duration = Duration::from_secs(6 * 3600);
/// A build's budget for reading a list (a whole read of the largest list fits).
const LOAD_BUDGET: Duration = Duration::from_secs(600);

/// The first wait after a failed build: the schedule's period; it doubles with each
/// further failure in a row, up to [`MAX_BACKOFF`].
const BACKOFF: i64 = 5 * 60;
/// The longest wait between two tries of a list that keeps failing.
const MAX_BACKOFF: i64 = 6 * 3600;
/// How many times its checkpoint's size a build may need in memory: the snapshot it reads
/// and the checkpoint it writes, decoded and encoded, with room to spare.
const MEMORY_PER_CHECKPOINT_BYTE: u64 = 4;

/// When a list whose builds failed `failures` times in a row, the last at `at`, is due
/// again (seconds since the epoch).
fn due_after_failures(failures: u32, at: i64) -> i64 {
    if failures == 0 {
        return at;
    }
    let doublings = failures.saturating_sub(1).min(16);
    at + (BACKOFF << doublings).min(MAX_BACKOFF)
}

/// What a run does with the lists in use.
#[derive(Debug, Default, PartialEq)]
struct Plan {
    /// To build, in this order: the oldest checkpoint (or none) first; a list whose builds
    /// failed takes its place by when its backoff ended, behind every checkpoint older.
    due: Vec<Listed>,
    /// Waiting out a backoff after failed builds.
    waiting: usize,
    /// Refused before a build starts, and why.
    refused: Vec<(Listed, String)>,
}

/// Orders `lists` for a run at `now` (seconds since the epoch) of a function with
/// `memory` bytes (`None`: not known, nothing refused for it).
fn plan(lists: Vec<Listed>, now: i64, memory: Option<u64>) -> Plan {
    let mut plan = Plan::default();
    let mut due: Vec<(i64, Listed)> = Vec::new();
    for list in lists {
        let since = match list.failed {
            Some(f) => due_after_failures(f.failures, f.at),
            None => list.written.unwrap_or(i64::MIN),
        };
        if list.failed.is_some() && since > now {
            plan.waiting += 1;
            continue;
        }
        let needs = list
            .bytes
            .unwrap_or(0)
            .saturating_mul(MEMORY_PER_CHECKPOINT_BYTE);
        if let Some(memory) = memory.filter(|m| needs > *m) {
            let why = format!(
                "its last checkpoint ({} bytes) needs about {needs} bytes of memory to build again, more than the function's {memory}",
                list.bytes.unwrap_or(0)
            );
            plan.refused.push((list, why));
            continue;
        }
        due.push((since, list));
    }
    due.sort_by_key(|(since, _)| *since);
    plan.due = due.into_iter().map(|(_, list)| list).collect();
    plan
}

/// The function's memory, from Lambda's environment (`None` elsewhere).
fn function_memory() -> Option<u64> {
    std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(|mb| mb << 20)
}

/// The builder, with its clients built once.
pub struct Builder {
    cx: &'static Context,
    /// `None`: the deployment keeps no checkpoints, and there is nothing to build.
    checkpoints: Option<Arc<S3Checkpoints>>,
    full_every: Duration,
}

/// What one run did.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub lists: usize,
    pub built: usize,
    pub written: usize,
    pub read_in_full: usize,
    pub failed: usize,
    /// Lists left for the next run (time ran short).
    pub left: usize,
    /// Lists waiting out a backoff after failed builds.
    pub waiting: usize,
    /// Lists refused before their build started (too large for the function's memory).
    pub refused: usize,
}

impl Builder {
    /// The builder of the deployment's checkpoint bucket (`CATALOG_CHECKPOINT_BUCKET`;
    /// without one, each run builds nothing).
    pub async fn from_env(cx: &'static Context) -> Self {
        let shared = aws_config::load_from_env().await;
        let full_every = std::env::var("CATALOG_CHECKPOINT_FULL_READ_HOURS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|h| *h > 0)
            .map_or(FULL_EVERY, |h| Duration::from_secs(h * 3600));
        let checkpoints = cx.config.imports.checkpoint_bucket.clone().map(|bucket| {
            Arc::new(S3Checkpoints {
                client: crate::imports::s3_client(&shared),
                bucket,
            })
        });
        Self {
            cx,
            checkpoints,
            full_every,
        }
    }

    /// Builds every list's checkpoint that is due (of organization `only`, when given: an
    /// operator's invocation `{"org": "<id>"}`), oldest first, until `deadline` nears. Fails
    /// only when the lists cannot be listed.
    pub async fn run(&self, deadline: Instant, only: Option<&str>) -> Result<Run, String> {
        let Some(checkpoints) = &self.checkpoints else {
            tracing::warn!("CATALOG_CHECKPOINT_BUCKET is not set: no checkpoints to build");
            return Ok(Run::default());
        };
        let lists: Vec<Listed> = checkpoints
            .lists()
            .await?
            .into_iter()
            .filter(|l| only.is_none_or(|o| o == l.org.as_str()))
            .collect();
        let listed = lists.len();
        let now = crate::domain::time::Timestamp::now().millis() / 1000;
        let plan = plan(lists, now, function_memory());
        let mut run = Run {
            lists: listed,
            waiting: plan.waiting,
            refused: plan.refused.len(),
            ..Run::default()
        };
        for (list, why) in &plan.refused {
            self.failed(checkpoints, list, why, 0).await;
        }
        let lists = plan.due;
        let reserve = RESERVE.min(deadline.saturating_duration_since(Instant::now()) / 10);
        let stop_at = deadline.checked_sub(reserve).unwrap_or(deadline);
        let place = BuildPlace {
            store: &self.cx.store,
            checkpoints: checkpoints.clone(),
            key: checkpoint_key(&self.cx.config),
            policy: crate::search::snapshot::SnapshotPolicy {
                load_budget: LOAD_BUDGET.min(stop_at.saturating_duration_since(Instant::now())),
                ..self.cx.config.snapshots
            },
            full_every: self.full_every,
            deadline: stop_at,
            run_started: crate::domain::time::Timestamp::now(),
        };
        for list in &lists {
            let (org, kind) = (&list.org, &list.kind);
            if Instant::now() >= stop_at {
                run.left = lists.len() - run.built - run.failed;
                break;
            }
            let started = Instant::now();
            let (built, cost) =
                crate::store::metrics::counted(Snapshots::build(&place, org, *kind)).await;
            let (kind, ms) = (kind.as_str(), started.elapsed().as_millis() as u64);
            match built {
                Ok(b) => {
                    if let Some(f) = list.failed {
                        if let Err(e) = checkpoints.clear_failure(org, list.kind, f.failures).await
                        {
                            tracing::warn!(%org, kind, error = %e, "failure note not cleared");
                        }
                    }
                    run.built += 1;
                    run.written += usize::from(b.wrote);
                    run.read_in_full += usize::from(b.read_in_full);
                    tracing::info!(
                        %org,
                        kind,
                        entries = b.entries,
                        changed = b.changed,
                        read_in_full = b.read_in_full,
                        wrote = b.wrote,
                        age_before_ms = b.age_before_ms.unwrap_or(-1),
                        ddb_requests = cost.requests,
                        ms,
                        "checkpoint build"
                    );
                }
                Err(e) => {
                    run.failed += 1;
                    self.failed(checkpoints, list, &e.to_string(), ms).await;
                }
            }
        }
        tracing::info!(
            lists = run.lists,
            built = run.built,
            written = run.written,
            failed = run.failed,
            left = run.left,
            waiting = run.waiting,
            refused = run.refused,
            "checkpoint run"
        );
        Ok(run)
    }

    /// Logs a list not built (the failed builds' metric and alarm count the line) and notes
    /// the failure beside it, for its backoff.
    async fn failed(&self, checkpoints: &S3Checkpoints, list: &Listed, why: &str, ms: u64) {
        let before = list.failed.map(|f| f.failures);
        let failures = before.unwrap_or(0) + 1;
        let (org, kind) = (&list.org, list.kind.as_str());
        tracing::warn!(%org, kind, error = %why, failures, ms, "checkpoint not built");
        if let Err(e) = checkpoints.note_failure(org, list.kind, before, why).await {
            tracing::warn!(%org, kind, error = %e, "failure not noted");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::imports::checkpoints::Failed;
    use crate::store::items::EntityKind;

    fn list(org: &str, written: Option<i64>, failed: Option<(u32, i64)>) -> Listed {
        Listed {
            org: org.into(),
            kind: EntityKind::Product,
            written,
            bytes: written.map(|_| 1_000),
            failed: failed.map(|(failures, at)| Failed { failures, at }),
        }
    }

    fn orgs(plan: &Plan) -> Vec<&str> {
        plan.due.iter().map(|l| l.org.as_str()).collect()
    }

    #[test]
    fn a_list_that_failed_goes_behind_the_others_after_its_backoff() {
        let now = 1_000_000;
        // the failing list has the oldest checkpoint: before, it was tried first every run
        let lists = vec![
            list("stuck", Some(now - 90_000), Some((1, now - 60))),
            list("a", Some(now - 3_000), None),
            list("new", None, None),
            list("b", Some(now - 600), None),
        ];
        let p = plan(lists.clone(), now, None);
        assert_eq!(orgs(&p), ["new", "a", "b"]);
        assert_eq!(p.waiting, 1);
        // its backoff over, it comes behind every checkpoint older than when it became due
        let p = plan(lists.clone(), now + 300, None);
        assert_eq!(orgs(&p), ["new", "a", "b", "stuck"]);
        assert_eq!(p.waiting, 0);
    }

    #[test]
    fn the_backoff_doubles_with_each_failure_up_to_six_hours() {
        assert_eq!(due_after_failures(0, 7), 7);
        assert_eq!(due_after_failures(1, 0), 300);
        assert_eq!(due_after_failures(2, 0), 600);
        assert_eq!(due_after_failures(5, 0), 4_800);
        assert_eq!(due_after_failures(8, 0), 6 * 3600);
        assert_eq!(due_after_failures(u32::MAX, 0), 6 * 3600);
    }

    #[test]
    fn a_build_that_would_not_fit_the_memory_is_refused_before_it_starts() {
        let now = 1_000_000;
        let mut huge = list("huge", Some(now - 90_000), None);
        huge.bytes = Some(600 << 20);
        let lists = vec![huge, list("a", Some(now - 3_000), None)];
        let p = plan(lists.clone(), now, Some(2048 << 20));
        assert_eq!(orgs(&p), ["a"]);
        assert_eq!(p.refused.len(), 1);
        assert_eq!(p.refused[0].0.org, "huge");
        assert!(
            p.refused[0]
                .1
                .contains("more than the function's 2147483648"),
            "{}",
            p.refused[0].1
        );
        // with the memory unknown (not on Lambda), nothing is refused for it
        assert_eq!(orgs(&plan(lists, now, None)), ["huge", "a"]);
    }
}
