//! Rule (e): invariants of the route catalog itself, over every snapshot the watcher saw.
//!
//! - versions strictly increase (re-observing the same version with the same content is
//!   allowed; the same version with different content, or a lower one, is not);
//! - the routes of each version tile the keyspace: first start `""`, last end `""`
//!   (unbounded), each end equal to the next start, no empty route, no duplicate id;
//! - lineage: a route that appears after the first observation has a parent that was
//!   observed earlier, lies inside it, and the parent's descendants tile the parent once it
//!   is gone; a route's epoch never decreases and grows whenever its group changes;
//! - split keys of split jobs lie strictly inside the route they split;
//! - every split job ends the history DONE or ABANDONED; a job's phase never goes back
//!   along its path, never changes after a terminal phase, and is never abandoned after
//!   CUTOVER (FAILED, elastickv's retry waypoint, is left unjudged on either side).

use super::report::RuleReport;
use crate::catalog::{CatalogObservation, CatalogTimeline};
use crate::history::{job_phase_name, JobPhase, RouteRecord, SplitJobRecord};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::json;

/// The job phases faultline knows, by normalized name ([`job_phase_name`]); an unknown
/// phase is never terminal and has no rank.
fn known(name: &str) -> Option<JobPhase> {
    JobPhase::parse(name)
}

fn is_terminal(name: &str) -> bool {
    known(name).is_some_and(JobPhase::is_terminal)
}

/// State carried from one observation to the next.
#[derive(Default)]
struct Tracker {
    /// Last record of every route id seen so far.
    routes: FxHashMap<u64, RouteRecord>,
    /// Route id → parent id, from every observation so far.
    parent: FxHashMap<u64, u64>,
    /// Job id → (last phase, op index of the observation it was last seen in).
    jobs: FxHashMap<u64, (String, u64)>,
    /// Jobs whose split key has been checked.
    jobs_key_checked: FxHashSet<u64>,
    lineage_unverifiable: u64,
    split_keys_unverifiable: u64,
}

pub fn catalog_invariants(
    timeline: &CatalogTimeline,
    report: &mut RuleReport,
) -> serde_json::Value {
    for e in &timeline.errors {
        report.violation(json!({"kind": "unreadable-catalog-event", "catalog_op": e.op_index, "explanation": e.message}));
    }
    if timeline.is_empty() {
        report.unknown_reason =
            Some("no catalog observations (watcher events) in the history".into());
        return json!({});
    }
    let mut t = Tracker::default();
    let mut previous: Option<&CatalogObservation> = None;
    let mut repeated = 0u64;
    for obs in &timeline.observations {
        if let Some(prev) = previous {
            let (pv, v) = (prev.snapshot.version, obs.snapshot.version);
            if v == pv && prev.snapshot == obs.snapshot {
                repeated += 1;
                continue;
            }
            if v <= pv {
                report.violation(json!({
                    "kind": if v == pv { "version-reused-with-different-content" } else { "version-went-backwards" },
                    "catalog_op": obs.op_index, "catalog_version": v,
                    "previous_catalog_op": prev.op_index, "previous_catalog_version": pv,
                    "explanation": format!("catalog version {v} (op {}) observed after version {pv} (op {})",
                        obs.op_index, prev.op_index),
                }));
            }
        }
        report.checked += 1;
        check_tiling(obs, report);
        check_lineage(obs, previous, &mut t, report);
        check_jobs(obs, &mut t, report);
        for r in &obs.snapshot.routes {
            t.routes.insert(r.id, r.clone());
        }
        previous = Some(obs);
    }
    let final_op = previous.map(|o| o.op_index);
    let mut unsettled_vanished = Vec::new();
    let final_jobs: FxHashSet<u64> = previous
        .map(|o| o.snapshot.jobs.iter().map(|j| j.id).collect())
        .unwrap_or_default();
    let mut job_ids: Vec<_> = t.jobs.keys().copied().collect();
    job_ids.sort_unstable();
    for id in job_ids {
        let (phase, seen_op) = &t.jobs[&id];
        if is_terminal(phase) {
            continue;
        }
        if final_jobs.contains(&id) {
            report.violation(json!({
                "kind": "split-job-not-settled", "job": id, "phase": phase, "catalog_op": seen_op,
                "explanation": format!("split job {id} is still {phase} in the last catalog observation (op {seen_op}): \
                    it never reached DONE or ABANDONED"),
            }));
        } else {
            unsettled_vanished
                .push(json!({"job": id, "last_phase": phase, "last_seen_op": seen_op}));
        }
    }
    if !unsettled_vanished.is_empty() && report.unknown_reason.is_none() {
        report.unknown_reason = Some(format!(
            "{} split job(s) left the catalog before the watcher saw them DONE or ABANDONED",
            unsettled_vanished.len()
        ));
    }
    json!({
        "repeated_observations": repeated,
        "lineage_unverifiable": t.lineage_unverifiable,
        "split_keys_unverifiable": t.split_keys_unverifiable,
        "jobs_seen": t.jobs.len(),
        "jobs_vanished_unsettled": unsettled_vanished,
        "final_catalog_op": final_op,
    })
}

fn tiling_violation(report: &mut RuleReport, obs: &CatalogObservation, kind: &str, detail: String) {
    report.violation(json!({
        "kind": kind, "catalog_op": obs.op_index, "catalog_version": obs.snapshot.version,
        "explanation": format!("catalog version {} (op {}): {detail}", obs.snapshot.version, obs.op_index),
    }));
}

/// Routes (sorted by start) must cover `["", unbounded)` exactly once.
fn check_tiling(obs: &CatalogObservation, report: &mut RuleReport) {
    let routes = &obs.snapshot.routes;
    if routes.is_empty() {
        tiling_violation(
            report,
            obs,
            "empty-catalog",
            "the catalog has no routes".into(),
        );
        return;
    }
    if let Some((kind, detail)) = tiling_gap_or_overlap(routes, "", "") {
        tiling_violation(report, obs, kind, detail);
    }
    let mut ids = FxHashSet::default();
    for r in routes {
        if !ids.insert(r.id) {
            tiling_violation(
                report,
                obs,
                "duplicate-route-id",
                format!("route id {} appears twice", r.id),
            );
        }
    }
}

/// Whether `routes` (sorted by start) tile `[start, end)` (`end` empty = unbounded);
/// the first defect found, as (kind, description).
pub fn tiling_gap_or_overlap(
    routes: &[RouteRecord],
    start: &str,
    end: &str,
) -> Option<(&'static str, String)> {
    let mut cursor: Option<&str> = Some(start); // None = already reached unbounded end
    for r in routes {
        if !r.end.is_empty() && r.start >= r.end {
            return Some((
                "empty-route",
                format!("route {} [{:?}, {:?}) is empty", r.id, r.start, r.end),
            ));
        }
        match cursor {
            None => {
                return Some((
                    "overlap",
                    format!(
                        "route {} starts at {:?} after a route that is unbounded",
                        r.id, r.start
                    ),
                ))
            }
            Some(c) if r.start.as_str() > c => {
                return Some((
                    "gap",
                    format!(
                        "no route covers [{c:?}, {:?}) (before route {})",
                        r.start, r.id
                    ),
                ))
            }
            Some(c) if r.start.as_str() < c => {
                return Some((
                    "overlap",
                    format!(
                        "route {} starts at {:?}, inside the previous route ending at {c:?}",
                        r.id, r.start
                    ),
                ))
            }
            _ => {}
        }
        cursor = if r.end.is_empty() {
            None
        } else {
            Some(r.end.as_str())
        };
    }
    match (cursor, end.is_empty()) {
        (None, true) => None,
        (Some(c), true) => Some(("gap", format!("no route covers [{c:?}, unbounded)"))),
        (Some(c), false) if c == end => None,
        (Some(c), false) => Some((
            if c < end { "gap" } else { "overlap" },
            format!("routes end at {c:?}, expected {end:?}"),
        )),
        (None, false) => Some((
            "overlap",
            format!("a route is unbounded, expected the range to end at {end:?}"),
        )),
    }
}

fn check_lineage(
    obs: &CatalogObservation,
    previous: Option<&CatalogObservation>,
    t: &mut Tracker,
    report: &mut RuleReport,
) {
    let version_gap = previous.is_some_and(|p| obs.snapshot.version > p.snapshot.version + 1);
    let present: FxHashSet<u64> = obs.snapshot.routes.iter().map(|r| r.id).collect();
    let mut parents_to_tile = Vec::new();
    for r in &obs.snapshot.routes {
        if let Some(p) = r.parent.filter(|&p| p != r.id) {
            t.parent.entry(r.id).or_insert(p);
        }
        if let Some(old) = t.routes.get(&r.id) {
            check_epoch_progress(obs, old, r, report);
            continue;
        }
        if previous.is_none() {
            continue; // routes of the first observation have no observable history
        }
        let Some(p) = check_new_route(obs, r, version_gap, t, report) else {
            continue;
        };
        if !present.contains(&p) && !parents_to_tile.contains(&p) {
            parents_to_tile.push(p);
        }
    }
    if version_gap {
        // Intermediate routes of the skipped versions are unknown, so descendants of a
        // parent cannot all be recognised: count rather than judge.
        t.lineage_unverifiable += parents_to_tile.len() as u64;
        return;
    }
    for p in parents_to_tile {
        check_descendants_tile(obs, p, t, report);
    }
}

/// A route first seen in `obs` (not the first observation) must name a parent that an
/// earlier version held, and lie inside it. Returns that parent, when it is known.
fn check_new_route(
    obs: &CatalogObservation,
    r: &RouteRecord,
    version_gap: bool,
    t: &mut Tracker,
    report: &mut RuleReport,
) -> Option<u64> {
    let Some(p) = r.parent.filter(|&p| p != r.id) else {
        let why = format!(
            "new route {} [{:?}, {:?}) has no parent route",
            r.id, r.start, r.end
        );
        tiling_violation(report, obs, "route-without-parent", why);
        return None;
    };
    let Some(parent) = t.routes.get(&p) else {
        if version_gap {
            t.lineage_unverifiable += 1;
        } else {
            let why = format!(
                "new route {} names parent {p}, which no earlier version contained",
                r.id
            );
            tiling_violation(report, obs, "parent-never-existed", why);
        }
        return None;
    };
    let inside = parent.start <= r.start
        && (parent.end.is_empty() || (!r.end.is_empty() && r.end <= parent.end));
    if !inside {
        let why = format!(
            "route {} [{:?}, {:?}) is not inside its parent {p} [{:?}, {:?})",
            r.id, r.start, r.end, parent.start, parent.end
        );
        tiling_violation(report, obs, "child-outside-parent", why);
    }
    Some(p)
}

/// Route `p`, gone from `obs`, must be tiled exactly by its descendants there.
fn check_descendants_tile(obs: &CatalogObservation, p: u64, t: &Tracker, report: &mut RuleReport) {
    let parent = &t.routes[&p];
    let descendants: Vec<RouteRecord> = obs
        .snapshot
        .routes
        .iter()
        .filter(|r| descends(&t.parent, r.id, p))
        .cloned()
        .collect();
    if let Some((_, detail)) = tiling_gap_or_overlap(&descendants, &parent.start, &parent.end) {
        let why = format!(
            "the descendants of route {p} [{:?}, {:?}) do not tile it: {detail}",
            parent.start, parent.end
        );
        tiling_violation(report, obs, "children-do-not-tile-parent", why);
    }
}

fn descends(parent: &FxHashMap<u64, u64>, mut id: u64, ancestor: u64) -> bool {
    for _ in 0..=parent.len() {
        match parent.get(&id) {
            Some(&p) if p == ancestor => return true,
            Some(&p) => id = p,
            None => return false,
        }
    }
    false
}

fn check_epoch_progress(
    obs: &CatalogObservation,
    old: &RouteRecord,
    new: &RouteRecord,
    report: &mut RuleReport,
) {
    if new.epoch < old.epoch {
        tiling_violation(
            report,
            obs,
            "route-epoch-went-backwards",
            format!(
                "route {} went from epoch {} to {}",
                new.id, old.epoch, new.epoch
            ),
        );
    } else if new.group != old.group && new.epoch == old.epoch {
        tiling_violation(
            report,
            obs,
            "owner-changed-without-epoch-bump",
            format!(
                "route {} moved from group {} to group {} but kept epoch {}",
                new.id, old.group, new.group, new.epoch
            ),
        );
    }
}

fn check_jobs(obs: &CatalogObservation, t: &mut Tracker, report: &mut RuleReport) {
    for job in &obs.snapshot.jobs {
        let phase = job_phase_name(&job.phase);
        if t.jobs_key_checked.insert(job.id) {
            check_split_key(obs, job, t, report);
        }
        if let Some((old, _)) = t.jobs.get(&job.id) {
            let (was, now) = (known(old), known(&phase));
            if is_terminal(old) && *old != phase {
                tiling_violation(
                    report,
                    obs,
                    "terminal-job-changed",
                    format!("split job {} went from {old} to {phase}", job.id),
                );
            } else if was.is_some_and(JobPhase::at_or_after_cutover)
                && now.is_some_and(JobPhase::is_abandon_path)
            {
                tiling_violation(report, obs, "abandoned-after-cutover",
                    format!("split job {} went from {old} to {phase}: after CUTOVER the source is no longer authoritative", job.id));
            } else if let (Some(a), Some(b)) =
                (was.and_then(JobPhase::rank), now.and_then(JobPhase::rank))
            {
                if b < a {
                    tiling_violation(
                        report,
                        obs,
                        "job-phase-went-backwards",
                        format!("split job {} went from {old} back to {phase}", job.id),
                    );
                }
            }
        }
        t.jobs.insert(job.id, (phase, obs.op_index));
    }
}

fn check_split_key(
    obs: &CatalogObservation,
    job: &SplitJobRecord,
    t: &mut Tracker,
    report: &mut RuleReport,
) {
    let route = obs
        .snapshot
        .routes
        .iter()
        .find(|r| r.id == job.route_id)
        .or_else(|| t.routes.get(&job.route_id));
    let Some(route) = route else {
        t.split_keys_unverifiable += 1;
        return;
    };
    let interior =
        route.start < job.split_key && (route.end.is_empty() || job.split_key < route.end);
    if !interior {
        tiling_violation(
            report,
            obs,
            "split-key-not-interior",
            format!(
            "split job {} splits route {} [{:?}, {:?}) at {:?}, which is not strictly inside it",
            job.id, route.id, route.start, route.end, job.split_key),
        );
    }
}
