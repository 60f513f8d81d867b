//! Rules (a)–(d): what the commit metadata of acknowledged operations must satisfy.
//!
//! (a) one committing group per (route, epoch) — and it is the group the catalog names;
//! (b) no write acknowledged under an epoch the catalog had already superseded before the
//!     write was invoked;
//! (c) no two acknowledged writes in the same Raft log slot;
//! (d) per process and key, epochs never go backwards.

use super::acked::AckedOp;
use super::report::RuleReport;
use crate::catalog::{jobs_for_range, CatalogObservation, CatalogTimeline, Lineage};
use crate::history::{CommitMeta, JobPhase, RouteRecord};
use rustc_hash::FxHashMap;
use serde_json::json;

/// (route id, epoch) → the group the catalog says owned that route at that epoch, with
/// the catalog version and watcher op that say so; `None` when the catalog itself names
/// two groups for one epoch (reported by rule (e), unusable here).
type CatalogOwners = FxHashMap<(u64, u64), Option<(u64, u64, u64)>>;

fn catalog_owners(timeline: &CatalogTimeline) -> CatalogOwners {
    let mut owners: CatalogOwners = FxHashMap::default();
    for obs in timeline.in_time_order() {
        for route in &obs.snapshot.routes {
            let entry = owners.entry((route.id, route.epoch)).or_insert(Some((
                route.group,
                obs.snapshot.version,
                obs.op_index,
            )));
            if matches!(entry, Some((g, _, _)) if *g != route.group) {
                *entry = None;
            }
        }
    }
    owners
}

/// Rule (a): for every route and epoch, all acknowledged writes were committed by one group,
/// the one the catalog records for that epoch when it records one.
pub fn one_group_per_epoch(acked: &[AckedOp], timeline: &CatalogTimeline, report: &mut RuleReport) {
    let owners = catalog_owners(timeline);
    let mut first_committer: FxHashMap<(u64, u64), (u64, u64)> = FxHashMap::default();
    for op in acked.iter().filter(|op| op.is_write) {
        let Some(m) = op.meta else {
            report.skipped += 1;
            continue;
        };
        let (Some(route), Some(epoch), Some(group)) = (m.route_id, m.route_epoch, m.group) else {
            report.skipped += 1;
            continue;
        };
        report.checked += 1;
        if let Some(Some((owner, version, catalog_op))) = owners.get(&(route, epoch)) {
            if *owner != group {
                report.violation(json!({
                    "kind": "committed-by-non-owner",
                    "op": op.index, "key": op.key, "route": route, "epoch": epoch, "group": group,
                    "catalog_group": owner, "catalog_version": version, "catalog_op": catalog_op,
                    "explanation": format!(
                        "write {} was committed by group {group} under route {route} epoch {epoch}, \
                         but catalog version {version} (op {catalog_op}) gives that epoch to group {owner}",
                        op.index),
                }));
                continue;
            }
        }
        let (first_group, first_op) = *first_committer
            .entry((route, epoch))
            .or_insert((group, op.index));
        if first_group != group {
            report.violation(json!({
                "kind": "two-groups-one-epoch",
                "op": op.index, "key": op.key, "route": route, "epoch": epoch, "group": group,
                "other_op": first_op, "other_group": first_group,
                "explanation": format!(
                    "writes {first_op} and {} were both acknowledged under route {route} epoch {epoch}, \
                     committed by groups {first_group} and {group}", op.index),
            }));
        }
    }
    report.unknown_if_nothing_checked(
        "no acknowledged write reports route id, route epoch and group (the store sends no commit metadata)",
    );
}

/// Rule (b): a write acknowledged under epoch `e` of route `r` is stale when the catalog
/// observed *before the write was invoked* already placed its key in `r` (or a descendant
/// of `r`) at a later epoch, or in a descendant of `r` owned by another group.
pub fn no_stale_epoch_writes(
    acked: &[AckedOp],
    timeline: &CatalogTimeline,
    lineage: &Lineage,
    report: &mut RuleReport,
) {
    if timeline.is_empty() {
        report.unknown_reason =
            Some("no catalog observations in the history: cannot tell when routes moved".into());
        return;
    }
    for ObservedWrite {
        op,
        key,
        meta: m,
        obs,
        current,
    } in writes_in_observed_catalog(acked, timeline, report)
    {
        let (Some(route), Some(epoch), Some(group)) = (m.route_id, m.route_epoch, m.group) else {
            report.skipped += 1;
            continue;
        };
        report.checked += 1;
        if !lineage.descends_from(current.id, route) {
            continue;
        }
        let moved_epoch = current.epoch > epoch;
        let moved_owner = current.id != route && current.group != group;
        if moved_epoch || moved_owner {
            report.violation(json!({
                "kind": "stale-epoch-write",
                "op": op.index, "invoke": op.invoke_index, "key": key,
                "route": route, "epoch": epoch, "group": group,
                "catalog_version": obs.snapshot.version, "catalog_op": obs.op_index,
                "current_route": current.id, "current_epoch": current.epoch, "current_group": current.group,
                "explanation": format!(
                    "write {} to {key:?} was acknowledged by group {group} under route {route} epoch {epoch}, \
                     but catalog version {} (watcher op {}, observed before the write was invoked at op {}) \
                     already had the key in route {} epoch {} owned by group {}",
                    op.index, obs.snapshot.version, obs.op_index, op.invoke_index,
                    current.id, current.epoch, current.group),
            }));
        }
    }
    report.unknown_if_nothing_checked(
        "no acknowledged write with route metadata was invoked after a catalog observation covering its key",
    );
}

/// Rule (c): a (group, log index) slot holds one committed entry, so two distinct
/// acknowledged writes never report the same slot — with the same term (duplicate report)
/// or with different terms (one of them was overwritten: an acknowledged write was lost).
pub fn unique_commit_slots(acked: &[AckedOp], report: &mut RuleReport) {
    let mut slots: FxHashMap<(u64, u64), (u64, u64)> = FxHashMap::default();
    for op in acked.iter().filter(|op| op.is_write) {
        let Some((group, term, index)) = op
            .meta
            .and_then(|m| Some((m.group?, m.term?, m.log_index?)))
        else {
            report.skipped += 1;
            continue;
        };
        report.checked += 1;
        let (first_term, first_op) = *slots.entry((group, index)).or_insert((term, op.index));
        if first_op == op.index {
            continue;
        }
        let kind = if first_term == term {
            "duplicate-commit-slot"
        } else {
            "log-index-reused-across-terms"
        };
        report.violation(json!({
            "kind": kind,
            "op": op.index, "other_op": first_op, "key": op.key,
            "group": group, "log_index": index, "term": term, "other_term": first_term,
            "explanation": format!(
                "writes {first_op} (term {first_term}) and {} (term {term}) were both acknowledged \
                 at group {group} log index {index}", op.index),
        }));
    }
    report.unknown_if_nothing_checked(
        "no acknowledged write reports group, term and log index (the store sends no commit metadata)",
    );
}

/// Rule (d): for each process and key, the (route, epoch) positions its acknowledged
/// operations report never go backwards: not a lower epoch of the same route, and not an
/// ancestor of a route it was already served by.
pub fn epochs_monotonic_per_process(acked: &[AckedOp], lineage: &Lineage, report: &mut RuleReport) {
    let mut last: FxHashMap<(u64, &str), (Option<u64>, u64, u64)> = FxHashMap::default();
    for op in acked {
        let (Some(key), Some(m)) = (op.key, op.meta) else {
            report.skipped += 1;
            continue;
        };
        let Some(epoch) = m.route_epoch else {
            report.skipped += 1;
            continue;
        };
        report.checked += 1;
        let now = (m.route_id, epoch, op.index);
        let Some(prev) = last.insert((op.process, key), now) else {
            continue;
        };
        let (prev_route, prev_epoch, prev_op) = prev;
        let backwards = match (prev_route, m.route_id) {
            (Some(a), Some(b)) if a != b => lineage.descends_from(a, b),
            _ => epoch < prev_epoch,
        };
        if backwards {
            report.violation(json!({
                "kind": "epoch-went-backwards",
                "op": op.index, "previous_op": prev_op, "process": op.process, "key": key,
                "route": m.route_id, "epoch": epoch, "previous_route": prev_route, "previous_epoch": prev_epoch,
                "explanation": format!(
                    "process {} saw {key:?} at {} epoch {prev_epoch} (op {prev_op}) and later at \
                     {} epoch {epoch} (op {})", op.process, route_name(prev_route), route_name(m.route_id), op.index),
            }));
        }
    }
    report.unknown_if_nothing_checked("no acknowledged operation reports a route epoch");
}

/// `route 7`, or `an unnamed route` when the store did not report one.
fn route_name(route: Option<u64>) -> String {
    route.map_or_else(|| "an unnamed route".to_string(), |r| format!("route {r}"))
}

/// Job phases at which the source group's fence is complete: the move design fences the
/// source (it rejects writes to the moving range) before the delta copy begins.
const FENCE_COMPLETE_PHASES: &[JobPhase] = &[JobPhase::DeltaCopy];

/// Rule (f): once a move's fence is complete, the source group has lost write authority over
/// the moving range. A write is a violation when the catalog observed *before it was invoked*
/// shows its key's route `WRITE_FENCED` at the group that committed it, with that group's
/// job for the key's range ([`jobs_for_range`]) already past its fence (in `DELTA_COPY`): the
/// source must have rejected it. (Writes invoked while the job is still in `FENCE` may
/// legitimately land before the fence and are carried over by the delta copy, so they are
/// not judged; nor are jobs of other routes, even of the same group; nor jobs ever seen
/// abandoned: the abandon unfences the source, which may then commit a write invoked while
/// the job was in `DELTA_COPY`.)
pub fn no_writes_after_fence(
    acked: &[AckedOp],
    timeline: &CatalogTimeline,
    lineage: &Lineage,
    report: &mut RuleReport,
) {
    if timeline.is_empty() {
        report.unknown_reason = Some(
            "no catalog observations in the history: cannot tell when ranges were fenced".into(),
        );
        return;
    }
    let abandoned: rustc_hash::FxHashSet<u64> = timeline
        .in_time_order()
        .flat_map(|o| {
            o.snapshot
                .jobs
                .iter()
                .filter(|j| j.job_phase().is_some_and(JobPhase::is_abandon_path))
                .map(|j| j.id)
        })
        .collect();
    for ObservedWrite {
        op,
        key,
        meta: m,
        obs,
        current,
    } in writes_in_observed_catalog(acked, timeline, report)
    {
        let Some(group) = m.group else {
            report.skipped += 1;
            continue;
        };
        report.checked += 1;
        if current.state != "WRITE_FENCED" || current.group != group {
            continue;
        }
        let fenced_job = jobs_for_range(&obs.snapshot.jobs, current, key, lineage).find(|j| {
            j.source_group == group
                && j.job_phase()
                    .is_some_and(|p| FENCE_COMPLETE_PHASES.contains(&p))
                && !abandoned.contains(&j.id)
        });
        let Some(job) = fenced_job else { continue };
        report.violation(json!({
            "kind": "write-after-fence",
            "op": op.index, "invoke": op.invoke_index, "key": key,
            "route": current.id, "epoch": m.route_epoch, "group": group, "job": job.id, "job_phase": job.phase,
            "catalog_version": obs.snapshot.version, "catalog_op": obs.op_index,
            "explanation": format!(
                "write {} to {key:?} was acknowledged by group {group}, but catalog version {} (watcher op {}, \
                 observed before the write was invoked at op {}) shows route {} fenced for split job {} in {}: \
                 the source's fence was complete and it had to reject the write",
                op.index, obs.snapshot.version, obs.op_index, op.invoke_index, current.id, job.id, job.phase),
        }));
    }
    report.unknown_if_nothing_checked(
        "no acknowledged write with a committing group was invoked after a catalog observation covering its key",
    );
}

/// An acknowledged write placed in the catalog observed before it was invoked.
struct ObservedWrite<'a> {
    op: &'a AckedOp<'a>,
    key: &'a str,
    meta: &'a CommitMeta,
    obs: &'a CatalogObservation,
    current: &'a RouteRecord,
}

/// The acknowledged writes with metadata and a key that a catalog observation preceding their
/// invoke covers (rules (b) and (f) judge writes against that catalog); the others are
/// counted as skipped.
fn writes_in_observed_catalog<'a>(
    acked: &'a [AckedOp<'a>],
    timeline: &'a CatalogTimeline,
    report: &mut RuleReport,
) -> Vec<ObservedWrite<'a>> {
    let mut out = Vec::new();
    for op in acked.iter().filter(|op| op.is_write) {
        let placed = (|| {
            let (meta, key) = (op.meta?, op.key?);
            let obs = timeline.observed_before(op.invoke_time)?;
            let current = obs.route_for(key)?;
            Some(ObservedWrite {
                op,
                key,
                meta,
                obs,
                current,
            })
        })();
        match placed {
            Some(w) => out.push(w),
            None => report.skipped += 1,
        }
    }
    out
}
