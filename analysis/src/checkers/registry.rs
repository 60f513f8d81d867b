//! The one checker registry: every checker a verdict can hold, each a `NAME` and a
//! `check`, with the rule that decides — once, before anything is checked — whether it
//! judges a history, is `not-applicable` (with the reason) or is left out.
//!
//! The decision reads only [`RunFacts`]: for a `faultline test` run (and `analyze` of its
//! directory) the workload and what the db reports ([`Basis::Run`]); for `analyze` of a
//! bare history file what the history holds ([`Basis::Evidence`], [`RunFacts::from_evidence`]).
//! Invariants: a checker marked not-applicable never runs; a checker that runs is never
//! re-marked afterwards; a checker is left out only where it has nothing to judge, never to
//! hide a verdict. The client-op checkers of a bare file are chosen by
//! [`crate::analyze::plan`] (model options of its own); everything else is here.

use crate::catalog::is_catalog_event;
use crate::checkers::{crashes, epoch_authority, linearizable, set_full, split, stale_read, vacuity};
use crate::history::{events, fault_events, CommitMeta, FaultEdge, History, Op, Process};
use crate::verdict::{CheckerResult, Validity, Verdict};
use std::collections::{BTreeMap, BTreeSet};

/// Where the facts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// A run: its options and its db's declaration.
    Run,
    /// A history file on its own: what it holds.
    Evidence,
}

/// What the checkers may need to know about a history besides its ops.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub basis: Basis,
    /// The run's workload (`hotspot`, `register`, `set`, ...); empty for evidence.
    pub workload: String,
    /// The checkers the run's workload declares as judging its client operations
    /// (`workloads::generators::WorkloadSpec::checkers`); empty for evidence, whose
    /// client-op checkers [`crate::analyze::plan`] chooses.
    pub judged_by: Vec<String>,
    /// Nemesis kinds requested (a run) or started (evidence).
    pub nemesis: Vec<String>,
    /// The store's name, for reasons.
    pub store: String,
    /// The store promises linearizable reads.
    pub linearizable_reads: bool,
    /// Commit metadata that attributes writes to route epochs (group, term, route, epoch).
    pub commit_meta: bool,
    /// A versioned route catalog.
    pub catalog: bool,
    /// The store splits ranges at all.
    pub splits: bool,
    /// Splits are expected: a hotspot workload with auto-split on, or the split nemesis
    /// (evidence: the split nemesis started, or the catalog changed).
    pub splits_expected: bool,
    /// Keys of the hot range (the workload's hot prefix), for the split checker.
    pub hot_prefix: Option<String>,
    /// The store's split cooldown in seconds.
    pub split_cooldown_s: Option<f64>,
    /// faultline ran the nodes and watched their processes (evidence: lifecycle events).
    pub lifecycle_watched: bool,
    /// How the nodes ran (`docker`, `netns`, `external`, `in-process`), for reasons; empty
    /// for evidence.
    pub cluster: String,
}

/// Whether a checker judges a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applies {
    Yes,
    /// Reported `not-applicable` with this reason, without running.
    NotApplicable(String),
    /// Left out of the verdict: nothing of its kind to judge.
    Omitted,
}

/// One checker of the registry.
pub struct Checker {
    pub name: &'static str,
    pub applies: fn(&RunFacts) -> Applies,
    pub check: fn(&History, &RunFacts) -> CheckerResult,
}

/// Every checker, in report order.
pub const REGISTRY: &[Checker] = &[
    Checker { name: linearizable::NAME, applies: linearizable_applies, check: check_linearizable },
    Checker { name: set_full::NAME, applies: set_full_applies, check: check_set_full },
    Checker { name: vacuity::NAME, applies: vacuity_applies, check: check_vacuity },
    Checker { name: epoch_authority::NAME, applies: epoch_applies, check: check_epoch_authority },
    Checker { name: split::NAME, applies: split_applies, check: check_split },
    Checker { name: crashes::NAME, applies: crashes_applies, check: check_crashes },
];

/// The decision for every checker, in registry order, made before any runs.
pub fn plan(facts: &RunFacts) -> Vec<(&'static Checker, Applies)> {
    REGISTRY.iter().map(|c| (c, (c.applies)(facts))).collect()
}

/// Runs the applicable checkers into `checkers` (a run's each with its `check_ms`) and
/// writes the not-applicable ones with their reasons.
pub fn run_into(history: &History, facts: &RunFacts, checkers: &mut BTreeMap<String, CheckerResult>) {
    for (checker, applies) in plan(facts) {
        let result = match applies {
            Applies::Omitted => continue,
            Applies::NotApplicable(reason) => not_applicable(reason),
            Applies::Yes if facts.basis == Basis::Run => timed(|| (checker.check)(history, facts)),
            Applies::Yes => (checker.check)(history, facts),
        };
        checkers.insert(checker.name.to_string(), result);
    }
}

/// The verdict of the applicable checkers. `problems` are facts about the run itself
/// (interrupted, cluster never ready, ...): each makes the run at best unknown.
pub fn run(history: &History, facts: &RunFacts, problems: &[String]) -> Verdict {
    let mut checkers = BTreeMap::new();
    run_into(history, facts, &mut checkers);
    if !problems.is_empty() {
        let mut run = CheckerResult::new(Validity::Unknown);
        run.reason = Some(problems.join("; "));
        checkers.insert("run".to_string(), run);
    }
    Verdict::from_checkers(checkers)
}

fn not_applicable(reason: String) -> CheckerResult {
    let mut r = CheckerResult::new(Validity::NotApplicable);
    r.reason = Some(reason);
    r
}

fn timed(check: impl FnOnce() -> CheckerResult) -> CheckerResult {
    let started = std::time::Instant::now();
    let mut result = check();
    if let serde_json::Value::Object(m) = &mut result.details {
        m.insert("check_ms".into(), serde_json::json!(started.elapsed().as_millis() as u64));
    }
    result
}

impl RunFacts {
    /// The facts a history file holds on its own: commit metadata and catalog
    /// observations, splits (the split nemesis started, or the catalog changed), the
    /// faults that started, node-lifecycle events.
    pub fn from_evidence(history: &History) -> RunFacts {
        let started: BTreeSet<String> =
            fault_events(&history.ops).filter(|(_, e)| e.edge == FaultEdge::Start).map(|(_, e)| e.fault).collect();
        let catalog = history.ops.iter().any(is_catalog_event);
        let lifecycle_event = |o: &Op| o.process == Process::Watcher && (o.f == events::NODE_WATCH || o.f == events::NODE_EXIT);
        RunFacts {
            basis: Basis::Evidence,
            workload: String::new(),
            judged_by: Vec::new(),
            splits_expected: catalog && (started.contains(split::events::SPLIT_FAULT) || catalog_changed(history)),
            nemesis: started.into_iter().collect(),
            store: "the store".into(),
            linearizable_reads: true,
            commit_meta: history.ops.iter().any(|o| o.meta.as_ref().is_some_and(attributes_epochs)),
            catalog,
            splits: catalog,
            hot_prefix: None,
            split_cooldown_s: None,
            lifecycle_watched: history.ops.iter().any(lifecycle_event),
            cluster: String::new(),
        }
    }
}

/// Commit metadata epoch-authority can use: a log index or a serving node alone (what
/// elastickv's RawPut and faultline's leader reads record) attributes nothing to an epoch.
fn attributes_epochs(meta: &CommitMeta) -> bool {
    meta.group.is_some() || meta.term.is_some() || meta.route_id.is_some() || meta.route_epoch.is_some() || meta.catalog_version.is_some()
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

/// A run whose workload declares the checker `name` among those that judge it.
fn judges_the_workload(facts: &RunFacts, name: &str) -> Applies {
    match facts.basis == Basis::Run && facts.judged_by.iter().any(|n| n == name) {
        true => Applies::Yes,
        false => Applies::Omitted,
    }
}

fn linearizable_applies(facts: &RunFacts) -> Applies {
    judges_the_workload(facts, linearizable::NAME)
}

fn set_full_applies(facts: &RunFacts) -> Applies {
    judges_the_workload(facts, set_full::NAME)
}

/// A run: always — besides the requested faults it catches a run with no acknowledged op,
/// which every other checker may rightly call valid. Evidence: when a fault started.
fn vacuity_applies(facts: &RunFacts) -> Applies {
    match facts.basis == Basis::Run || !facts.nemesis.is_empty() {
        true => Applies::Yes,
        false => Applies::Omitted,
    }
}

/// A run: when the store reports both a catalog and commit metadata. Evidence: when the
/// history holds either (with a catalog alone only the catalog rule can be broken).
fn epoch_applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.catalog, facts.commit_meta) {
        (Basis::Run, true, true) => Applies::Yes,
        (Basis::Run, false, _) => Applies::NotApplicable(format!("{} has no route catalog or route epochs", facts.store)),
        (Basis::Run, true, false) => {
            Applies::NotApplicable(format!("{} reports no commit metadata (group, term, log index, route epoch)", facts.store))
        }
        (Basis::Evidence, false, false) => Applies::Omitted,
        (Basis::Evidence, _, _) => Applies::Yes,
    }
}

/// A run: when the store splits ranges and the run expects splits. Evidence: when the
/// history holds a catalog and a split was forced or the catalog changed.
fn split_applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.splits, facts.splits_expected) {
        (Basis::Run, false, _) => Applies::NotApplicable(format!("{} does not split ranges", facts.store)),
        (Basis::Run, true, false) => {
            Applies::NotApplicable("no split expected: neither a hotspot workload with auto-split nor the split nemesis".into())
        }
        (_, true, true) => Applies::Yes,
        (Basis::Evidence, _, _) => Applies::Omitted,
    }
}

/// Where faultline watched the nodes (a run on its own cluster; evidence: lifecycle
/// events); an exit it cannot see is no evidence of anything.
fn crashes_applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.lifecycle_watched) {
        (_, true) => Applies::Yes,
        (Basis::Run, false) => {
            Applies::NotApplicable(format!("--cluster {}: faultline does not run the nodes, so it cannot see them exit", facts.cluster))
        }
        (Basis::Evidence, false) => Applies::Omitted,
    }
}

const REGISTER_FNS: &[&str] = &["read", "write", "cas", "get", "put"];

/// Linearizability per key of the register operations, cas-register model, keys absent at
/// the start; each anomaly's proven cause (a stale read, ...) from the whole history.
fn check_linearizable(history: &History, _facts: &RunFacts) -> CheckerResult {
    let ops: Vec<Op> = history
        .ops
        .iter()
        .filter(|op| matches!(op.process, Process::Client(_)) && REGISTER_FNS.contains(&op.f.as_str()))
        .cloned()
        .collect();
    let opts = linearizable::LinearizableOptions { model: linearizable::Model::CasRegister, ..Default::default() };
    let mut result = linearizable::check(&History::new(ops), &opts);
    stale_read::annotate(history, &mut result);
    result
}

fn check_set_full(history: &History, facts: &RunFacts) -> CheckerResult {
    set_full::check(history, &set_full::SetFullOptions { linearizable: facts.linearizable_reads })
}

/// Each requested fault took effect at least once (otherwise the run tested nothing).
fn check_vacuity(history: &History, facts: &RunFacts) -> CheckerResult {
    vacuity::check(history, &vacuity::VacuityOptions { nemesis: facts.nemesis.clone(), ..Default::default() })
}

/// Rules (a)–(f). Without commit metadata (evidence of a store that sends none, such as
/// elastickv: its writes carry only a log index) only the catalog rule can be broken:
/// anything short of `invalid` is then `not-applicable`, the verdict a run of such a store
/// gets.
fn check_epoch_authority(history: &History, facts: &RunFacts) -> CheckerResult {
    let result = epoch_authority::check(history, &epoch_authority::EpochAuthorityOptions::default());
    if facts.commit_meta || result.valid == Validity::Invalid {
        return result;
    }
    let mut r = result;
    r.valid = Validity::NotApplicable;
    r.reason = Some("no operation carries commit metadata (group, term, log index, route epoch), so writes cannot be attributed to ownership epochs; the catalog observations broke no catalog rule".into());
    r
}

/// Auto-splits (or forced ones) judged with the run's hot prefix and the store's cooldown.
fn check_split(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = split::SplitOptions { hot_prefix: facts.hot_prefix.clone(), cooldown_s: facts.split_cooldown_s, ..Default::default() };
    split::check(history, &opts)
}

fn check_crashes(history: &History, _facts: &RunFacts) -> CheckerResult {
    crashes::check(history, &crashes::CrashesOptions::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, OpType};
    use serde_json::json;

    fn decisions(facts: &RunFacts) -> Vec<(&'static str, Applies)> {
        plan(facts).into_iter().map(|(c, a)| (c.name, a)).collect()
    }

    fn nemesis_event(f: &str) -> Op {
        Op {
            index: 0,
            kind: OpType::Info,
            process: Process::Nemesis,
            f: f.into(),
            key: None,
            value: json!({"targets": [], "effective": true}),
            time: 0,
            node: None,
            error: None,
            meta: None,
        }
    }

    #[test]
    fn every_checker_is_registered_once_under_its_own_name() {
        let mut names: Vec<&str> = REGISTRY.iter().map(|c| c.name).collect();
        assert_eq!(names, ["linearizable", "set-full", "vacuity", "epoch-authority", "split", "crashes"]);
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
    }

    #[test]
    fn a_bare_history_without_evidence_gets_no_run_level_checker() {
        let facts = RunFacts::from_evidence(&History::default());
        assert!(decisions(&facts).iter().all(|(_, a)| *a == Applies::Omitted), "{:?}", decisions(&facts));
    }

    #[test]
    fn evidence_of_a_started_fault_brings_vacuity_for_that_fault() {
        let h = History::new(vec![nemesis_event("start-kill"), nemesis_event("stop-kill")]);
        let facts = RunFacts::from_evidence(&h);
        assert_eq!(facts.nemesis, ["kill"]);
        let applies: Vec<&str> = decisions(&facts).into_iter().filter(|(_, a)| *a == Applies::Yes).map(|(n, _)| n).collect();
        assert_eq!(applies, ["vacuity"]);
    }
}
