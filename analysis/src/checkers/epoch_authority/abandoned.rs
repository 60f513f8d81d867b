//! Rule (a), for abandoned moves: the target of an abandoned split job never became the
//! range's owner, so it must not commit writes for it under the job's new epoch.
//!
//! A job allocates its `new_epoch` at the start, but only the step into CUTOVER publishes
//! it, and CUTOVER cannot be abandoned. A write acknowledged by the job's target group under
//! that epoch, for a key of the job's moving range, invoked after the catalog showed the job
//! ABANDONING or ABANDONED (the source is again the range's owner) is a second authority.
//! Judged only when the store reports the job's `new_epoch` and no observation ever shows a
//! route at that epoch (it was truly never published): otherwise nothing is said, so this
//! can never create a violation a correct store could produce.

use super::acked::AckedOp;
use super::report::RuleReport;
use crate::catalog::{jobs_for_range, CatalogTimeline, Lineage};
use crate::history::JobPhase;
use rustc_hash::FxHashSet;
use serde_json::json;

/// Adds a `committed-under-abandoned-epoch` witness to `report` (rule (a)) per write the
/// target of an abandoned job committed under its unpublished new epoch.
pub fn no_writes_under_abandoned_epochs(
    acked: &[AckedOp],
    timeline: &CatalogTimeline,
    lineage: &Lineage,
    report: &mut RuleReport,
) {
    let published: FxHashSet<u64> = timeline
        .in_time_order()
        .flat_map(|o| o.snapshot.routes.iter().map(|r| r.epoch))
        .collect();
    for op in acked.iter().filter(|op| op.is_write) {
        let Some((meta, key)) = op.meta.zip(op.key) else {
            continue;
        };
        let (Some(route), Some(epoch), Some(group)) = (meta.route_id, meta.route_epoch, meta.group)
        else {
            continue;
        };
        if published.contains(&epoch) {
            continue;
        }
        let Some(obs) = timeline.observed_before(op.invoke_time) else {
            continue;
        };
        let Some(current) = obs.route_for(key) else {
            continue;
        };
        let abandoned = jobs_for_range(&obs.snapshot.jobs, current, key, lineage).find(|j| {
            j.target_group == group
                && j.new_epoch == Some(epoch)
                && current.group != group
                && j.job_phase().is_some_and(JobPhase::is_abandon_path)
        });
        let Some(job) = abandoned else { continue };
        report.violation(json!({
            "kind": "committed-under-abandoned-epoch",
            "op": op.index, "invoke": op.invoke_index, "key": key,
            "route": route, "epoch": epoch, "group": group, "job": job.id, "job_phase": job.phase,
            "catalog_group": current.group, "catalog_version": obs.snapshot.version, "catalog_op": obs.op_index,
            "explanation": format!(
                "write {} to {key:?} was acknowledged by group {group} under epoch {epoch}, the new epoch of split \
                 job {} which catalog version {} (watcher op {}, observed before the write was invoked at op {}) \
                 shows {} with the range back at group {}: that epoch was never published, the target never owned \
                 the range",
                op.index, job.id, obs.snapshot.version, obs.op_index, op.invoke_index, job.phase, current.group),
        }));
    }
}
