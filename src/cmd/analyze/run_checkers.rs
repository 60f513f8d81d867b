//! The run-level checkers (epoch-authority, split, vacuity) for histories that are not a
//! run directory's (those are judged by the run's own registry, see `run_dir`): each is
//! added when the history holds its evidence — commit metadata or catalog observations
//! (epoch-authority; `not-applicable` without metadata unless the catalog itself breaks
//! rule (e)), a split in the catalog or a forced split (split), nemesis events (vacuity,
//! for the kinds that were started).

use analysis::catalog::is_catalog_event;
use analysis::checkers::{epoch_authority, split, vacuity};
use analysis::history::{History, Process};
use analysis::verdict::{CheckerResult, Validity, Verdict};
use std::collections::BTreeSet;

/// `verdict` plus the run-level checkers whose evidence the history holds.
pub fn add_evidence_checkers(history: &History, verdict: Verdict) -> Verdict {
    let mut checkers = verdict.checkers;
    let has_meta = history.ops.iter().any(|o| o.meta.is_some());
    let has_catalog = history.ops.iter().any(is_catalog_event);
    if has_meta || has_catalog {
        let result = epoch_authority::check(history, &Default::default());
        let result = if has_meta { result } else { without_commit_metadata(result) };
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
    Verdict::from_checkers(checkers)
}

/// epoch-authority on a history with catalog observations but no commit metadata (stock
/// elastickv): only rule (e) has evidence, so unless it found a violation the checker does
/// not apply — as for a run against such a store — rather than `unknown` for want of
/// metadata the store never sends.
fn without_commit_metadata(mut result: CheckerResult) -> CheckerResult {
    if result.valid == Validity::Invalid {
        return result;
    }
    result.valid = Validity::NotApplicable;
    result.reason = Some(
        "no op carries commit metadata (`meta`), which rules (a)-(d) and (f) need, so the checker does not apply; \
         rule (e) found no violation in the catalog"
            .into(),
    );
    result
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
