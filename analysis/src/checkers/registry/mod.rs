//! The one checker registry: every checker a verdict can hold, each declaring its `NAME`,
//! the client functions it judges, the `--model` names that choose it for a bare file,
//! whether it is a detection-matrix column, and the rule that decides — once, before
//! anything is checked — whether it judges a history, is `not-applicable` (with the
//! reason) or is left out. `faultline analyze`'s plan and `--model` list, the known client
//! functions and the matrix columns are all derived from [`REGISTRY`]; adding a checker is its
//! module (with an `entry` declaring it) and one line in the `checkers!` table.
//!
//! The decision reads only [`RunFacts`]: for a `faultline test` run (and `analyze` of its
//! directory) the workload and what the db reports ([`Basis::Run`]); for `analyze` of a
//! bare history file what the history holds and the options asked for ([`Basis::Evidence`],
//! [`RunFacts::from_evidence`]). Invariants: a checker marked not-applicable never runs; a
//! checker that runs is never re-marked afterwards; a checker is left out only where it has
//! nothing to judge, never to hide a verdict.

mod facts;
pub mod rules;
pub mod streaming;

pub use facts::{Basis, CheckOptions, ModelChoice, RunFacts};
pub use streaming::{FoldCheck, PartCheck, Streaming};

use crate::history::History;
use crate::verdict::{CheckerResult, Validity, Verdict};
use std::collections::BTreeMap;

/// Whether a checker judges a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applies {
    Yes,
    /// Reported `not-applicable` with this reason, without running.
    NotApplicable(String),
    /// Left out of the verdict: nothing of its kind to judge.
    Omitted,
}

/// What a checker judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The workload's client operations (a bare file: chosen by `--model`).
    ClientOps,
    /// The run: faults, the route catalog, node processes, commit metadata.
    Run,
}

/// One checker of the registry.
pub struct Checker {
    pub name: &'static str,
    pub scope: Scope,
    /// The client functions (`Op.f`) it judges; a bare file's client op of any other
    /// function is an error.
    pub functions: &'static [&'static str],
    /// The `faultline analyze --model` names that choose it for a bare file.
    pub models: &'static [&'static str],
    /// A column of the detection matrix (`faultline matrix`).
    pub matrix_column: bool,
    pub applies: fn(&RunFacts) -> Applies,
    pub check: fn(&History, &RunFacts) -> CheckerResult,
    /// How it judges a run's history too large to hold ([`Streaming`]).
    pub streaming: Streaming,
}

impl Checker {
    /// A checker of the run (faults, catalog, processes) that judges no client function and
    /// that no `--model` chooses.
    pub const fn of_run(
        name: &'static str,
        matrix_column: bool,
        applies: fn(&RunFacts) -> Applies,
        check: fn(&History, &RunFacts) -> CheckerResult,
    ) -> Checker {
        Checker {
            name,
            scope: Scope::Run,
            functions: &[],
            models: &[],
            matrix_column,
            applies,
            check,
            streaming: Streaming::Whole,
        }
    }

    /// This checker, judging a large history as `streaming` says.
    pub const fn streams(self, streaming: Streaming) -> Checker {
        Checker { streaming, ..self }
    }
}

/// Every checker, in report order (the matrix shows its columns in this order): the
/// `checkers!` table of `analysis/src/checkers/mod.rs`, each entry declared in its module.
pub const REGISTRY: &[Checker] = super::ALL;

/// Every client function some checker judges, in registry order.
pub fn known_functions() -> Vec<&'static str> {
    let mut fs: Vec<&'static str> = Vec::new();
    for f in REGISTRY.iter().flat_map(|c| c.functions.iter().copied()) {
        if !fs.contains(&f) {
            fs.push(f);
        }
    }
    fs
}

/// `faultline analyze --model` values: `auto`, then each checker's models.
pub fn model_names() -> Vec<&'static str> {
    std::iter::once("auto")
        .chain(REGISTRY.iter().flat_map(|c| c.models.iter().copied()))
        .collect()
}

/// The detection matrix's checker columns, in registry order.
pub fn matrix_columns() -> Vec<&'static str> {
    REGISTRY
        .iter()
        .filter(|c| c.matrix_column)
        .map(|c| c.name)
        .collect()
}

/// The decision for every checker, in registry order, made before any runs.
pub fn plan(facts: &RunFacts) -> Vec<(&'static Checker, Applies)> {
    REGISTRY.iter().map(|c| (c, (c.applies)(facts))).collect()
}

/// Runs the applicable checkers into `checkers` (a run's each with its `check_ms`) and
/// writes the not-applicable ones with their reasons.
pub fn run_into(
    history: &History,
    facts: &RunFacts,
    checkers: &mut BTreeMap<String, CheckerResult>,
) {
    run_scopes_into(history, facts, &[Scope::ClientOps, Scope::Run], checkers);
}

/// [`run_into`] for the checkers of `scopes` only.
pub fn run_scopes_into(
    history: &History,
    facts: &RunFacts,
    scopes: &[Scope],
    checkers: &mut BTreeMap<String, CheckerResult>,
) {
    for (checker, applies) in plan(facts)
        .into_iter()
        .filter(|(c, _)| scopes.contains(&c.scope))
    {
        let result = match applies {
            Applies::Omitted => continue,
            Applies::NotApplicable(reason) => not_applicable(reason),
            Applies::Yes if facts.basis == Basis::Run => {
                timed(|| guarded(checker.name, || (checker.check)(history, facts)))
            }
            Applies::Yes => guarded(checker.name, || (checker.check)(history, facts)),
        };
        checkers.insert(checker.name.to_string(), result);
    }
}

/// The verdict of the applicable checkers. `problems` are facts about the run itself
/// (interrupted, cluster never ready, ...): each makes the run at best unknown.
pub fn run(history: &History, facts: &RunFacts, problems: &[String]) -> Verdict {
    let mut checkers = BTreeMap::new();
    run_into(history, facts, &mut checkers);
    verdict_of(checkers, problems)
}

/// The verdict of the checkers' results and the run's `problems` (checker `run`).
pub fn verdict_of(mut checkers: BTreeMap<String, CheckerResult>, problems: &[String]) -> Verdict {
    if !problems.is_empty() {
        let mut run = CheckerResult::new(Validity::Unknown);
        run.reason = Some(problems.join("; "));
        checkers.insert("run".to_string(), run);
    }
    Verdict::from_checkers(checkers)
}

pub(crate) fn not_applicable(reason: String) -> CheckerResult {
    let mut r = CheckerResult::new(Validity::NotApplicable);
    r.reason = Some(reason);
    r
}

/// Runs one checker; a panic in it (a faultline bug) makes that checker `unknown`, naming
/// the panic, instead of ending the analysis: the other checkers still judge, and the run
/// still gets its `results.json`.
pub(crate) fn guarded(name: &str, check: impl FnOnce() -> CheckerResult) -> CheckerResult {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(check))
        .unwrap_or_else(|payload| panicked(name, payload))
}

/// The `unknown` result of checker `name` that panicked with `payload`.
pub(crate) fn panicked(name: &str, payload: Box<dyn std::any::Any + Send>) -> CheckerResult {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    let mut r = CheckerResult::new(Validity::Unknown);
    r.reason = Some(format!(
        "the {name} checker failed (a faultline bug; please report it with the \
         history): {message}"
    ));
    r
}

fn timed(check: impl FnOnce() -> CheckerResult) -> CheckerResult {
    let started = std::time::Instant::now();
    let mut result = check();
    note_check_ms(&mut result, started.elapsed());
    result
}

/// Records how long a run's checker took (`check_ms` in its details).
pub(crate) fn note_check_ms(result: &mut CheckerResult, took: std::time::Duration) {
    if let serde_json::Value::Object(m) = &mut result.details {
        m.insert(
            "check_ms".into(),
            serde_json::json!(took.as_millis() as u64),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checker_that_panics_is_unknown_naming_the_panic_and_a_sound_one_is_untouched() {
        let panicked = guarded("isolation", || panic!("index 7 out of range"));
        assert_eq!(panicked.valid, Validity::Unknown);
        let reason = panicked.reason.expect("a reason");
        assert!(reason.contains("isolation"), "{reason}");
        assert!(reason.contains("index 7 out of range"), "{reason}");
        let formatted = guarded("split", || panic!("{} of {}", 3, 4));
        assert!(formatted.reason.unwrap().contains("3 of 4"));
        let sound = guarded("split", || CheckerResult::new(Validity::Valid));
        assert_eq!((sound.valid, sound.reason), (Validity::Valid, None));
    }
    use crate::checkers::linearizable;
    use crate::history::{Op, OpType, Process};
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
        assert_eq!(
            names,
            [
                "linearizable",
                "set-full",
                "isolation",
                "zset",
                "queue",
                "objects",
                "epoch-authority",
                "split",
                "vacuity",
                "crashes"
            ]
        );
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
    }

    #[test]
    fn a_bare_history_without_evidence_gets_no_run_level_checker() {
        let facts = RunFacts::from_evidence(&History::default());
        assert!(
            decisions(&facts)
                .iter()
                .all(|(_, a)| *a == Applies::Omitted),
            "{:?}",
            decisions(&facts)
        );
    }

    #[test]
    fn evidence_of_a_started_fault_brings_vacuity_for_that_fault() {
        let h = History::new(vec![
            nemesis_event("start-kill"),
            nemesis_event("stop-kill"),
        ]);
        let facts = RunFacts::from_evidence(&h);
        assert_eq!(facts.nemesis, ["kill"]);
        let applies: Vec<&str> = decisions(&facts)
            .into_iter()
            .filter(|(_, a)| *a == Applies::Yes)
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            applies,
            ["linearizable", "vacuity"],
            "only events: trivially linearizable, and the fault's vacuity"
        );
    }

    fn client_history(fs: &[&str]) -> History {
        let op = |i: usize, f: &str| Op {
            process: Process::Client(i as u64),
            f: f.into(),
            kind: OpType::Invoke,
            ..nemesis_event(f)
        };
        History::new(fs.iter().enumerate().map(|(i, f)| op(i, f)).collect())
    }

    fn bare_plan(fs: &[&str], model: ModelChoice) -> Vec<&'static str> {
        let facts = RunFacts::from_evidence(&client_history(fs)).with_options(CheckOptions {
            model,
            ..Default::default()
        });
        decisions(&facts)
            .into_iter()
            .filter(|(_, a)| *a == Applies::Yes)
            .map(|(n, _)| n)
            .collect()
    }

    #[test]
    fn a_bare_file_gets_the_client_checkers_of_its_functions() {
        assert_eq!(
            bare_plan(&["read", "cas"], ModelChoice::Auto),
            ["linearizable"]
        );
        assert_eq!(
            bare_plan(&["write", "add", "scan"], ModelChoice::Auto),
            ["linearizable", "set-full"]
        );
        assert_eq!(bare_plan(&["txn"], ModelChoice::Auto), ["isolation"]);
        assert_eq!(bare_plan(&["zadd", "zrange"], ModelChoice::Auto), ["zset"]);
        assert_eq!(
            bare_plan(&["send", "receive"], ModelChoice::Auto),
            ["queue"]
        );
        assert_eq!(bare_plan(&["read"], ModelChoice::Zset), ["zset"]);
        assert_eq!(
            bare_plan(&["read", "write"], ModelChoice::Objects),
            ["objects"]
        );
        assert_eq!(bare_plan(&["txn", "read"], ModelChoice::Set), ["set-full"]);
        assert_eq!(
            bare_plan(
                &["read"],
                ModelChoice::Isolation(crate::history::txn::TxnModel::RwRegister)
            ),
            ["isolation"]
        );
        let kv = RunFacts::from_evidence(&client_history(&["get", "append"]));
        assert_eq!(
            linearizable::bare_linearizable_model(&kv),
            Some(linearizable::Model::Kv)
        );
    }

    #[test]
    fn every_model_name_chooses_its_own_checker() {
        for checker in REGISTRY {
            for name in checker.models {
                let model = ModelChoice::from_name(name)
                    .unwrap_or_else(|| panic!("--model {name} does not parse"));
                assert_eq!(bare_plan(&[], model), [checker.name], "--model {name}");
            }
        }
        assert_eq!(
            model_names(),
            [
                "auto",
                "register",
                "cas-register",
                "kv",
                "set",
                "list-append",
                "rw-register",
                "zset",
                "queue",
                "objects"
            ]
        );
        assert_eq!(
            ModelChoice::from_name("kv-append"),
            Some(ModelChoice::Linearizable(linearizable::Model::Kv))
        );
        assert_eq!(ModelChoice::from_name("bogus"), None);
    }

    #[test]
    fn derived_lists_keep_their_established_contents() {
        assert_eq!(
            known_functions(),
            [
                "read",
                "get",
                "write",
                "put",
                "cas",
                "compare-and-set",
                "append",
                "add",
                "read-set",
                "scan",
                "txn",
                "zadd",
                "zincrby",
                "zrem",
                "zrange",
                "zrangebyscore",
                "send",
                "receive",
                "delete-message",
                "stale-write"
            ]
        );
        assert_eq!(
            matrix_columns(),
            [
                "linearizable",
                "set-full",
                "isolation",
                "epoch-authority",
                "split",
                "vacuity"
            ]
        );
    }
}
