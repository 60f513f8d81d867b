//! The run-level checkers (epoch-authority, split, vacuity, crashes) for histories that are
//! not a run directory's (those are judged by the run's own registry, see `run_dir`): each
//! is added when the history holds its evidence — commit metadata or catalog observations
//! (epoch-authority), a split in the catalog or a forced split (split), nemesis events
//! (vacuity, for the kinds that were started), node-watch or node-exit events (crashes).
//!
//! A history with catalog observations but no commit metadata that names groups, terms,
//! routes or epochs (a store that sends none, such as elastickv: its writes carry only a
//! log index) can only break epoch-authority's catalog rule; anything short of
//! `invalid` is then `not-applicable` (nothing to attribute writes to epochs with), never
//! `unknown` — the same verdict a run against such a store gets.

use analysis::catalog::is_catalog_event;
use analysis::checkers::{crashes, epoch_authority, split, vacuity};
use analysis::history::{events, fault_events, CommitMeta, FaultEdge, History, Process};
use analysis::verdict::{Validity, Verdict};
use std::collections::BTreeSet;

/// `verdict` plus the run-level checkers whose evidence the history holds.
pub fn add_evidence_checkers(history: &History, verdict: Verdict) -> Verdict {
    let mut checkers = verdict.checkers;
    let has_meta = history.ops.iter().any(|o| o.meta.as_ref().is_some_and(attributes_epochs));
    let has_catalog = history.ops.iter().any(is_catalog_event);
    if has_meta || has_catalog {
        let mut result = epoch_authority::check(history, &Default::default());
        if !has_meta && result.valid != Validity::Invalid {
            result.valid = Validity::NotApplicable;
            result.reason = Some("no operation carries commit metadata (group, term, log index, route epoch), so writes cannot be attributed to ownership epochs; the catalog observations broke no catalog rule".into());
        }
        checkers.insert(epoch_authority::NAME.into(), result);
    }
    let started = started_fault_kinds(history);
    if has_catalog && (started.contains("split") || catalog_changed(history)) {
        checkers.insert(split::NAME.into(), split::check(history, &Default::default()));
    }
    if !started.is_empty() {
        let opts = vacuity::VacuityOptions { nemesis: started.into_iter().collect(), ..Default::default() };
        checkers.insert(vacuity::NAME.into(), vacuity::check(history, &opts));
    }
    let lifecycle_event = |f: &str| f == events::NODE_WATCH || f == events::NODE_EXIT;
    if history.ops.iter().any(|o| o.process == Process::Watcher && lifecycle_event(&o.f)) {
        checkers.insert(crashes::NAME.into(), crashes::check(history, &Default::default()));
    }
    Verdict::from_checkers(checkers)
}

/// Commit metadata epoch-authority can use: a log index or a serving node alone (what
/// elastickv's RawPut and faultline's leader reads record) attributes nothing to an epoch.
fn attributes_epochs(meta: &CommitMeta) -> bool {
    meta.group.is_some() || meta.term.is_some() || meta.route_id.is_some() || meta.route_epoch.is_some() || meta.catalog_version.is_some()
}

/// Kinds of the nemesis's `start-<kind>` events.
fn started_fault_kinds(history: &History) -> BTreeSet<String> {
    fault_events(&history.ops).filter(|(_, e)| e.edge == FaultEdge::Start).map(|(_, e)| e.fault).collect()
}

/// The watcher saw more than one distinct set of routes.
fn catalog_changed(history: &History) -> bool {
    let mut first: Option<&serde_json::Value> = None;
    for op in history.ops.iter().filter(|o| is_catalog_event(o)) {
        let routes = &op.value["routes"];
        match first {
            None => first = Some(routes),
            Some(f) if f != routes => return true,
            Some(_) => {}
        }
    }
    false
}
