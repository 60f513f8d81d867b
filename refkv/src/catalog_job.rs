//! Split jobs in the catalog: their phases, which steps between phases are legal, and the
//! job-control operations of elastickv's milestone-2 API (start, abandon, retry).
//!
//! Invariants (all enforced here, inside Raft apply):
//! - at most [`MAX_LIVE_JOBS`] job is live (not DONE/ABANDONED; FAILED and ABANDONING count);
//! - a same-group split never touches a route inside a live job's original route interval;
//! - a job is abandoned only before CUTOVER (or FAILED with a pre-CUTOVER retry phase), and
//!   an abandoned job leaves the source group the range's only owner, at its old epoch;
//! - a FAILED job records the phase a retry replays (`retry_phase`); retry never guesses.

use serde::{Deserialize, Serialize};

use super::{Catalog, CatalogError, RouteState, SplitOutcome};
use crate::keys::{below_end, Key};

/// At most this many live split jobs (elastickv M2 v1: `maxLiveJobs = 1`).
pub const MAX_LIVE_JOBS: usize = 1;

/// How many finished jobs the catalog keeps for reporting.
const KEEP_TERMINAL_JOBS: usize = 64;

/// Phases of a cross-group split job (elastickv's `SplitJobPhase`, docs/refkv.md).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobPhase {
    Planned,
    Backfill,
    Fence,
    DeltaCopy,
    Cutover,
    Cleanup,
    Done,
    Failed,
    Abandoning,
    Abandoned,
}

impl JobPhase {
    pub fn is_terminal(self) -> bool {
        matches!(self, JobPhase::Done | JobPhase::Abandoned)
    }

    /// Before the cutover: the move may still be undone.
    pub fn is_pre_cutover(self) -> bool {
        matches!(
            self,
            JobPhase::Planned | JobPhase::Backfill | JobPhase::Fence | JobPhase::DeltaCopy
        )
    }

    /// The steps the driver takes: the forward path, giving up (FAILED) from any working
    /// phase, and finishing an abandon. FAILED is left and ABANDONING entered only through
    /// [`Catalog::retry_job`] / [`Catalog::abandon_job`].
    pub fn can_step_to(self, to: JobPhase) -> bool {
        use JobPhase::*;
        matches!(
            (self, to),
            (Planned, Backfill)
                | (Backfill, Fence)
                | (Fence, DeltaCopy)
                | (DeltaCopy, Cutover)
                | (Cutover, Cleanup)
                | (Cleanup, Done)
                | (
                    Planned | Backfill | Fence | DeltaCopy | Cutover | Cleanup,
                    Failed
                )
                | (Abandoning, Abandoned)
        )
    }

    /// The phase a retry replays after failing in `self` (PLANNED has no side effect, so
    /// it replays from BACKFILL).
    fn retry_target(self) -> JobPhase {
        match self {
            JobPhase::Planned => JobPhase::Backfill,
            other => other,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Job {
    pub id: u64,
    /// The route that was split.
    pub parent_route: u64,
    /// The child that moves.
    pub moving_route: u64,
    pub split_key: Key,
    /// Start of the parent route (the job's interval is `[route_start, end)`).
    #[serde(default)]
    pub route_start: Key,
    /// The moving child's range.
    pub start: Key,
    pub end: Key,
    pub source_group: u64,
    pub target_group: u64,
    pub phase: JobPhase,
    /// While FAILED: the phase `RetrySplitJob` returns to.
    #[serde(default)]
    pub retry_phase: Option<JobPhase>,
    /// Once abandoned: the pre-cutover phase the abandon started from.
    #[serde(default)]
    pub abandon_from: Option<JobPhase>,
    /// The epoch the moving child gets at cutover (allocated when the job is planned).
    pub new_epoch: u64,
    /// The moving child's epoch before the move (the source's epoch).
    #[serde(default)]
    pub old_epoch: u64,
    pub last_error: String,
    pub started_ms: i64,
    pub updated_ms: i64,
    pub terminal_ms: i64,
}

impl Job {
    /// Does `[start, end)` intersect the job's original route interval?
    pub fn overlaps(&self, start: &[u8], end: &[u8]) -> bool {
        below_end(start, &self.end) && below_end(&self.route_start, end)
    }

    fn touch(&mut self, now_ms: i64) {
        self.updated_ms = now_ms;
    }
}

impl Catalog {
    pub fn live_jobs(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values().filter(|j| !j.phase.is_terminal())
    }

    /// `StartSplitMigration`: splits `route_id` at `split_key` and opens a job moving the
    /// right child to `target_group` (which must be another existing group).
    pub fn start_migration(
        &mut self,
        expected_version: u64,
        route_id: u64,
        split_key: &[u8],
        target_group: u64,
        now_ms: i64,
    ) -> Result<SplitOutcome, CatalogError> {
        // The cap first: its refusal does not depend on how fresh the caller's version is.
        if let Some(live) = self.live_jobs().next() {
            return Err(CatalogError::TooManyInFlightJobs { live: live.id });
        }
        let parent = self.checked_split(expected_version, route_id, split_key)?;
        if target_group == 0 || target_group == parent.group {
            return Err(CatalogError::SameGroupMigration(parent.group));
        }
        if target_group > self.groups {
            return Err(CatalogError::UnknownGroup(target_group));
        }
        if parent.state != RouteState::Active {
            return Err(CatalogError::RouteBusy(route_id));
        }
        let (left, right) =
            self.replace_by_children(&parent, split_key, RouteState::MigratingSource);
        let job_id = self.next_job_id;
        self.next_job_id += 1;
        let new_epoch = self.next_epoch;
        self.next_epoch += 1;
        let job = Job {
            id: job_id,
            parent_route: parent.id,
            moving_route: right.id,
            split_key: split_key.to_vec(),
            route_start: parent.start.clone(),
            start: right.start.clone(),
            end: right.end.clone(),
            source_group: parent.group,
            target_group,
            phase: JobPhase::Planned,
            retry_phase: None,
            abandon_from: None,
            new_epoch,
            old_epoch: parent.epoch,
            last_error: String::new(),
            started_ms: now_ms,
            updated_ms: now_ms,
            terminal_ms: 0,
        };
        self.jobs.insert(job_id, job);
        self.version += 1;
        Ok(SplitOutcome {
            version: self.version,
            left,
            right,
            job_id,
        })
    }

    fn job_mut(&mut self, job_id: u64) -> Result<&mut Job, CatalogError> {
        self.jobs
            .get_mut(&job_id)
            .ok_or(CatalogError::UnknownJob(job_id))
    }

    /// The driver advances a job one phase (CAS on `from`), applying the phase's effect on
    /// its route.
    pub fn step_job(
        &mut self,
        job_id: u64,
        from: JobPhase,
        to: JobPhase,
        error: Option<String>,
        now_ms: i64,
    ) -> Result<(), CatalogError> {
        let job = self.job_mut(job_id)?;
        if job.phase != from || !from.can_step_to(to) {
            return Err(CatalogError::IllegalStep {
                job: job_id,
                from,
                to,
                current: job.phase,
            });
        }
        job.phase = to;
        job.touch(now_ms);
        if to == JobPhase::Failed {
            job.retry_phase = Some(from.retry_target());
        }
        if let Some(error) = error {
            job.last_error = error;
        }
        if to.is_terminal() {
            job.terminal_ms = now_ms;
        }
        let job = job.clone();
        if let Some(route) = self.routes.get_mut(&job.moving_route) {
            match to {
                JobPhase::Fence => route.state = RouteState::WriteFenced,
                JobPhase::Cutover => {
                    route.group = job.target_group;
                    route.epoch = job.new_epoch;
                    route.state = RouteState::Active;
                }
                JobPhase::Abandoned => route.state = RouteState::Active,
                _ => {}
            }
        }
        self.version += 1;
        self.forget_old_jobs();
        Ok(())
    }

    /// `AbandonSplitJob`: allowed before CUTOVER (or FAILED with a pre-CUTOVER retry phase);
    /// the job enters ABANDONING and the driver undoes it. Repeating it on an ABANDONING or
    /// ABANDONED job is a no-op. Returns whether the catalog changed.
    pub fn abandon_job(&mut self, job_id: u64, now_ms: i64) -> Result<bool, CatalogError> {
        let job = self.job_mut(job_id)?;
        let from = match (job.phase, job.retry_phase) {
            (JobPhase::Abandoning | JobPhase::Abandoned, _) => return Ok(false),
            (p, _) if p.is_pre_cutover() => p,
            (JobPhase::Failed, Some(r)) if r.is_pre_cutover() => r,
            (phase, _) => return Err(CatalogError::AbandonRefused { job: job_id, phase }),
        };
        job.phase = JobPhase::Abandoning;
        job.abandon_from = Some(from);
        job.retry_phase = None;
        job.touch(now_ms);
        self.version += 1;
        Ok(true)
    }

    /// `RetrySplitJob`: a FAILED job goes back to its recorded retry phase.
    pub fn retry_job(&mut self, job_id: u64, now_ms: i64) -> Result<(), CatalogError> {
        let job = self.job_mut(job_id)?;
        let Some(to) = job.retry_phase.filter(|_| job.phase == JobPhase::Failed) else {
            return Err(CatalogError::RetryRefused {
                job: job_id,
                phase: job.phase,
            });
        };
        job.phase = to;
        job.retry_phase = None;
        job.touch(now_ms);
        self.version += 1;
        Ok(())
    }

    fn forget_old_jobs(&mut self) {
        let terminal: Vec<u64> = self
            .jobs
            .values()
            .filter(|j| j.phase.is_terminal())
            .map(|j| j.id)
            .collect();
        if terminal.len() > KEEP_TERMINAL_JOBS {
            for id in &terminal[..terminal.len() - KEEP_TERMINAL_JOBS] {
                self.jobs.remove(id);
            }
        }
    }
}
