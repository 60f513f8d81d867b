//! The run-level checkers (epoch-authority, split, vacuity, crashes) for histories that are
//! not a run directory's (those are judged by the run's own registry, see `run_dir`): each
//! is added when the history holds its evidence — commit metadata or catalog observations
//! (epoch-authority), a split in the catalog or a forced split (split), nemesis events
//! (vacuity, for the kinds that were started), node-watch or node-exit events (crashes).

use analysis::catalog::is_catalog_event;
use analysis::checkers::{crashes, epoch_authority, split, vacuity};
use analysis::history::{events, History, Process};
use analysis::verdict::Verdict;
use std::collections::BTreeSet;

/// `verdict` plus the run-level checkers whose evidence the history holds.
pub fn add_evidence_checkers(history: &History, verdict: Verdict) -> Verdict {
    let mut checkers = verdict.checkers;
    let has_meta = history.ops.iter().any(|o| o.meta.is_some());
    let has_catalog = history.ops.iter().any(is_catalog_event);
    if has_meta || has_catalog {
        checkers.insert(epoch_authority::NAME.into(), epoch_authority::check(history, &Default::default()));
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

/// Kinds of the nemesis's `start-<kind>` events.
fn started_fault_kinds(history: &History) -> BTreeSet<String> {
    history
        .ops
        .iter()
        .filter(|o| o.process == Process::Nemesis)
        .filter_map(|o| o.f.strip_prefix("start-").map(str::to_string))
        .collect()
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
