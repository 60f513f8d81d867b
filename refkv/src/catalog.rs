//! The versioned route catalog, stored in the default group's state machine.
//!
//! Routes tile the keyspace `[start, end)` (empty `end` = unbounded). Every change bumps
//! `version` by exactly one. A same-group split replaces a route by two children carrying
//! its id as `parent`; a cross-group split also opens a split job whose phases move the
//! right child to another group (see [`JobPhase`], `catalog_job.rs`); the child gets a new
//! epoch at cutover.
//! Everything here is pure and deterministic: it runs inside Raft apply.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::keys::below_end;
use crate::keys::Key;
pub use job::{Job, JobPhase, MAX_LIVE_JOBS};

#[path = "catalog_job.rs"]
mod job;

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
    IllegalStep {
        job: u64,
        from: JobPhase,
        to: JobPhase,
        current: JobPhase,
    },
    #[error("ErrTooManyInFlightJobs: split job {live} is still live (at most {max} at a time)", max = MAX_LIVE_JOBS)]
    TooManyInFlightJobs { live: u64 },
    #[error("ErrSplitJobOverlap: route {route} overlaps the range of live split job {job}")]
    SplitJobOverlap { route: u64, job: u64 },
    #[error("StartSplitMigration needs a target group other than the route's own group {0} (same-group splits use SplitRange)")]
    SameGroupMigration(u64),
    #[error("split job {job} cannot be abandoned in {phase:?} (only before CUTOVER)")]
    AbandonRefused { job: u64, phase: JobPhase },
    #[error(
        "split job {job} cannot be retried in {phase:?} (only FAILED with a recorded retry phase)"
    )]
    RetryRefused { job: u64, phase: JobPhase },
    #[error("not the catalog group")]
    NotCatalogGroup,
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
            let route = Route {
                id,
                start: start.clone(),
                end,
                group,
                state: RouteState::Active,
                parent: 0,
                epoch: 1,
            };
            routes.insert(id, route);
        }
        let next_route_id = routes.len() as u64 + 1;
        Ok(Catalog {
            version: 1,
            groups,
            routes,
            jobs: BTreeMap::new(),
            next_route_id,
            next_job_id: 1,
            next_epoch: 2,
        })
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
    /// catalog-only split, refused while it overlaps a live job; another group is the
    /// deprecated alias of [`Catalog::start_migration`].
    pub fn split(
        &mut self,
        expected_version: u64,
        route_id: u64,
        split_key: &[u8],
        target_group: u64,
        now_ms: i64,
    ) -> Result<SplitOutcome, CatalogError> {
        let parent = self.checked_split(expected_version, route_id, split_key)?;
        if target_group != 0 && target_group != parent.group {
            return self.start_migration(
                expected_version,
                route_id,
                split_key,
                target_group,
                now_ms,
            );
        }
        if let Some(job) = self
            .live_jobs()
            .find(|j| j.overlaps(&parent.start, &parent.end))
        {
            return Err(CatalogError::SplitJobOverlap {
                route: route_id,
                job: job.id,
            });
        }
        if parent.state != RouteState::Active {
            return Err(CatalogError::RouteBusy(route_id));
        }
        let (left, right) = self.replace_by_children(&parent, split_key, RouteState::Active);
        self.version += 1;
        Ok(SplitOutcome {
            version: self.version,
            left,
            right,
            job_id: 0,
        })
    }

    /// The checks every split shares: catalog version, route, key strictly inside it.
    fn checked_split(
        &self,
        expected_version: u64,
        route_id: u64,
        split_key: &[u8],
    ) -> Result<Route, CatalogError> {
        if expected_version != self.version {
            return Err(CatalogError::VersionMismatch {
                expected: expected_version,
                current: self.version,
            });
        }
        let parent = self
            .routes
            .get(&route_id)
            .cloned()
            .ok_or(CatalogError::UnknownRoute(route_id))?;
        if split_key <= parent.start.as_slice() || !below_end(split_key, &parent.end) {
            return Err(CatalogError::KeyOutsideRoute(route_id));
        }
        Ok(parent)
    }

    /// Replaces `parent` by its two children at `split_key` (version unchanged).
    fn replace_by_children(
        &mut self,
        parent: &Route,
        split_key: &[u8],
        right_state: RouteState,
    ) -> (Route, Route) {
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
            state: right_state,
            ..parent.clone()
        };
        self.next_route_id += 2;
        self.routes.remove(&parent.id);
        self.routes.insert(left.id, left.clone());
        self.routes.insert(right.id, right.clone());
        (left, right)
    }

    /// Checks the tiling invariant: routes sorted by start cover the keyspace without gaps
    /// or overlaps, each non-empty.
    pub fn check_tiling(&self) -> Result<(), String> {
        let routes = self.sorted_routes();
        let mut expected_start: Key = Vec::new();
        for (i, r) in routes.iter().enumerate() {
            if r.start != expected_start {
                return Err(format!(
                    "route {} starts at {:?}, expected {:?}",
                    r.id, r.start, expected_start
                ));
            }
            let last = i + 1 == routes.len();
            if r.end.is_empty() != last {
                return Err(format!(
                    "route {} has an unbounded end but is not last (or vice versa)",
                    r.id
                ));
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

#[cfg(test)]
#[path = "catalog_job_tests.rs"]
mod job_tests;
