//! The checkpoint builder (the `checkpoint-builder` function, run on a schedule): builds the
//! checkpoint of every list in use (noted by the serving processes that load it;
//! `search/snapshot/builder.rs`), one at a time, the oldest checkpoint first, until the
//! invocation's time runs short: a list skipped then has the oldest checkpoint in the next
//! run. Each build is logged with its cost and the age of the checkpoint it found (the
//! logs' metric filters make checkpoint freshness a metric with an alarm, and failed builds
//! a count); a failed build does not fail the run, so one list cannot hold back the others
//! (or roll a deploy back).

use crate::context::{checkpoint_key, Context};
use crate::imports::checkpoints::S3Checkpoints;
use crate::search::snapshot::{BuildPlace, Snapshots};
use crate::store::items::EntityKind;
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
        let lists: Vec<(String, EntityKind)> = checkpoints
            .lists()
            .await?
            .into_iter()
            .filter(|(org, _)| only.is_none_or(|o| o == org.as_str()))
            .collect();
        let mut run = Run {
            lists: lists.len(),
            ..Run::default()
        };
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
        for (org, kind) in &lists {
            if Instant::now() >= stop_at {
                run.left = run.lists - run.built - run.failed;
                break;
            }
            let started = Instant::now();
            let (built, cost) =
                crate::store::metrics::counted(Snapshots::build(&place, org, *kind)).await;
            let (kind, ms) = (kind.as_str(), started.elapsed().as_millis() as u64);
            match built {
                Ok(b) => {
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
                    tracing::warn!(%org, kind, error = %e, ms, "checkpoint not built");
                }
            }
        }
        tracing::info!(
            lists = run.lists,
            built = run.built,
            written = run.written,
            failed = run.failed,
            left = run.left,
            "checkpoint run"
        );
        Ok(run)
    }
}
