//! The versioned route catalog, stored in the default group's state machine.
//!
//! Routes tile the keyspace `[start, end)` (empty `end` = unbounded). Every change bumps
//! `version` by exactly one. A same-group split replaces a route by two children carrying
//! its id as `parent`; a cross-group split also opens a split job whose phases move the
//! right child to another group (see [`JobPhase`]); the child gets a new epoch at cutover.
//! Everything here is pure and deterministic: it runs inside Raft apply.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::types::Key;

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum RouteState {
    Active,
    WriteFenced,
    MigratingSource,
    MigratingTarget,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Route {
    pub id: u64,
    pub start: Key,
    /// Exclusive; empty = unbounded.
    pub end: Key,
    pub group: u64,
    pub state: RouteState,
    pub parent: u64,
    pub epoch: u64,
}

impl Route {
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && below_end(key, &self.end)
    }
}

/// `key < end`, with an empty `end` meaning unbounded.
pub fn below_end(key: &[u8], end: &[u8]) -> bool {
    end.is_empty() || key < end
}

/// Phases of a cross-group split job (see issue 4 / docs/refkv.md).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobPhase {
    Planned,
    Backfill,
    Fence,
    DeltaCopy,
    Cutover,
    Cleanup,
    Done,
    Abandoning,
    Abandoned,
}

impl JobPhase {
    pub fn is_terminal(self) -> bool {
        matches!(self, JobPhase::Done | JobPhase::Abandoned)
    }

    /// The legal phase steps: the forward path, and abandoning before cutover.
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
                | (Planned | Backfill | Fence | DeltaCopy, Abandoning)
                | (Abandoning, Abandoned)
        )
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
    pub start: Key,
    pub end: Key,
    pub source_group: u64,
    pub target_group: u64,
    pub phase: JobPhase,
    /// The epoch the moving child gets at cutover (allocated when the job is planned).
    pub new_epoch: u64,
    pub last_error: String,
    pub started_ms: i64,
    pub updated_ms: i64,
    pub terminal_ms: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SplitOutcome {
    pub version: u64,
    pub left: Route,
    pub right: Route,
    pub job_id: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("catalog version mismatch: expected {expected}, current {current}")]
    VersionMismatch { expected: u64, current: u64 },
    #[error("unknown route {0}")]
    UnknownRoute(u64),
    #[error("split key is not strictly inside route {0}")]
    KeyOutsideRoute(u64),
    #[error("unknown raft group {0}")]
    UnknownGroup(u64),
    #[error("route {0} is not active (a move is in progress)")]
    RouteBusy(u64),
    #[error("unknown split job {0}")]
    UnknownJob(u64),
    #[error("split job {job}: illegal step {from:?} -> {to:?} (job is in {current:?})")]
    IllegalStep { job: u64, from: JobPhase, to: JobPhase, current: JobPhase },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Catalog {
    pub version: u64,
    pub groups: u64,
    pub routes: BTreeMap<u64, Route>,
    pub jobs: BTreeMap<u64, Job>,
    pub next_route_id: u64,
    pub next_job_id: u64,
    pub next_epoch: u64,
}

/// How many finished jobs the catalog keeps for reporting.
const KEEP_TERMINAL_JOBS: usize = 64;

impl Catalog {
    /// The catalog every node starts from: routes cut at `split_keys` (sorted, distinct,
    /// non-empty), assigned to groups round-robin starting with group 1, all at epoch 1.
    pub fn genesis(groups: u64, split_keys: &[Key]) -> Result<Catalog, String> {
        if groups == 0 {
            return Err("at least one raft group is required".into());
        }
        let mut bounds: Vec<Key> = vec![Vec::new()];
        for key in split_keys {
            if key.is_empty() || key <= bounds.last().expect("starts non-empty") {
                return Err(format!(
                    "initial split keys must be non-empty and strictly increasing (at {:?})",
                    String::from_utf8_lossy(key)
                ));
            }
            bounds.push(key.clone());
        }
        let mut routes = BTreeMap::new();
        for (i, start) in bounds.iter().enumerate() {
            let id = i as u64 + 1;
            let end = bounds.get(i + 1).cloned().unwrap_or_default();
            let group = (i as u64 % groups) + 1;
            let route = Route { id, start: start.clone(), end, group, state: RouteState::Active, parent: 0, epoch: 1 };
            routes.insert(id, route);
        }
        let next_route_id = routes.len() as u64 + 1;
        Ok(Catalog { version: 1, groups, routes, jobs: BTreeMap::new(), next_route_id, next_job_id: 1, next_epoch: 2 })
    }

    pub fn route_for_key(&self, key: &[u8]) -> Option<&Route> {
        self.routes.values().find(|r| r.contains(key))
    }

    /// Routes in key order.
    pub fn sorted_routes(&self) -> Vec<&Route> {
        let mut routes: Vec<&Route> = self.routes.values().collect();
        routes.sort_by(|a, b| a.start.cmp(&b.start));
        routes
    }

    /// Splits `route_id` at `split_key`. A `target_group` of 0 or the route's own group is a
    /// catalog-only split; another group opens a move job for the right child.
    pub fn split(
        &mut self,
        expected_version: u64,
        route_id: u64,
        split_key: &[u8],
        target_group: u64,
        now_ms: i64,
    ) -> Result<SplitOutcome, CatalogError> {
        if expected_version != self.version {
            return Err(CatalogError::VersionMismatch { expected: expected_version, current: self.version });
        }
        let parent = self.routes.get(&route_id).cloned().ok_or(CatalogError::UnknownRoute(route_id))?;
        if split_key <= parent.start.as_slice() || !below_end(split_key, &parent.end) {
            return Err(CatalogError::KeyOutsideRoute(route_id));
        }
        if parent.state != RouteState::Active {
            return Err(CatalogError::RouteBusy(route_id));
        }
        if target_group > self.groups {
            return Err(CatalogError::UnknownGroup(target_group));
        }
        let moving = target_group != 0 && target_group != parent.group;
        let left = Route {
            id: self.next_route_id,
            start: parent.start.clone(),
            end: split_key.to_vec(),
            parent: parent.id,
            ..parent.clone()
        };
        let right = Route {
            id: self.next_route_id + 1,
            start: split_key.to_vec(),
            end: parent.end.clone(),
            parent: parent.id,
            state: if moving { RouteState::MigratingSource } else { RouteState::Active },
            ..parent.clone()
        };
        self.next_route_id += 2;
        self.routes.remove(&route_id);
        self.routes.insert(left.id, left.clone());
        self.routes.insert(right.id, right.clone());
        let mut job_id = 0;
        if moving {
            job_id = self.next_job_id;
            self.next_job_id += 1;
            let new_epoch = self.next_epoch;
            self.next_epoch += 1;
            self.jobs.insert(
                job_id,
                Job {
                    id: job_id,
                    parent_route: parent.id,
                    moving_route: right.id,
                    split_key: split_key.to_vec(),
                    start: right.start.clone(),
                    end: right.end.clone(),
                    source_group: parent.group,
                    target_group,
                    phase: JobPhase::Planned,
                    new_epoch,
                    last_error: String::new(),
                    started_ms: now_ms,
                    updated_ms: now_ms,
                    terminal_ms: 0,
                },
            );
        }
        self.version += 1;
        Ok(SplitOutcome { version: self.version, left, right, job_id })
    }

    /// Advances a job one phase, applying the phase's effect on its route.
    pub fn step_job(
        &mut self,
        job_id: u64,
        from: JobPhase,
        to: JobPhase,
        error: Option<String>,
        now_ms: i64,
    ) -> Result<(), CatalogError> {
        let job = self.jobs.get(&job_id).ok_or(CatalogError::UnknownJob(job_id))?;
        if job.phase != from || !from.can_step_to(to) {
            return Err(CatalogError::IllegalStep { job: job_id, from, to, current: job.phase });
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
        let job = self.jobs.get_mut(&job_id).expect("checked above");
        job.phase = to;
        job.updated_ms = now_ms;
        if let Some(error) = error {
            job.last_error = error;
        }
        if to.is_terminal() {
            job.terminal_ms = now_ms;
        }
        self.version += 1;
        self.forget_old_jobs();
        Ok(())
    }

    fn forget_old_jobs(&mut self) {
        let terminal: Vec<u64> = self.jobs.values().filter(|j| j.phase.is_terminal()).map(|j| j.id).collect();
        if terminal.len() > KEEP_TERMINAL_JOBS {
            for id in &terminal[..terminal.len() - KEEP_TERMINAL_JOBS] {
                self.jobs.remove(id);
            }
        }
    }

    /// Checks the tiling invariant: routes sorted by start cover the keyspace without gaps
    /// or overlaps, each non-empty.
    pub fn check_tiling(&self) -> Result<(), String> {
        let routes = self.sorted_routes();
        let mut expected_start: Key = Vec::new();
        for (i, r) in routes.iter().enumerate() {
            if r.start != expected_start {
                return Err(format!("route {} starts at {:?}, expected {:?}", r.id, r.start, expected_start));
            }
            let last = i + 1 == routes.len();
            if r.end.is_empty() != last {
                return Err(format!("route {} has an unbounded end but is not last (or vice versa)", r.id));
            }
            if !r.end.is_empty() && r.end <= r.start {
                return Err(format!("route {} is empty", r.id));
            }
            expected_start = r.end.clone();
        }
        if routes.is_empty() {
            return Err("catalog has no routes".into());
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
