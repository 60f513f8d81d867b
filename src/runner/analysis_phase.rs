//! The analysis phase: runs every checker that applies to the run's workload over the
//! recorded history and merges their results into the verdict (`results.json`). The list of
//! checkers is a plain registry, so adding one is adding an entry.

use analysis::checkers::{linearizable, set_full, vacuity};
use analysis::history::{History, Op, Process};
use analysis::verdict::{CheckerResult, Validity, Verdict};
use std::collections::BTreeMap;

/// What the checkers may need to know about the run besides its history.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub workload: String,
    /// Nemesis kinds requested (`partition`, `kill`, ...).
    pub nemesis: Vec<String>,
    /// The store promises linearizable reads (refkv does).
    pub linearizable_reads: bool,
}

/// One checker of the registry.
pub struct CheckerEntry {
    pub name: &'static str,
    /// Whether the checker has anything to judge in this kind of run.
    pub applies: fn(&RunFacts) -> bool,
    pub run: fn(&History, &RunFacts) -> CheckerResult,
}

/// Every checker the runner knows, in report order.
pub fn registry() -> Vec<CheckerEntry> {
    vec![
        CheckerEntry {
            name: "linearizable",
            applies: |f| f.workload == "hotspot" || f.workload == "register",
            run: check_linearizable,
        },
        CheckerEntry { name: "set-full", applies: |f| f.workload == "hotspot" || f.workload == "set", run: check_set_full },
        CheckerEntry { name: vacuity::NAME, applies: |f| !f.nemesis.is_empty(), run: check_vacuity },
    ]
}

const REGISTER_FNS: &[&str] = &["read", "write", "cas", "get", "put"];

/// Linearizability per key of the register operations, cas-register model, keys absent at
/// the start.
fn check_linearizable(history: &History, _facts: &RunFacts) -> CheckerResult {
    let ops: Vec<Op> = history
        .ops
        .iter()
        .filter(|op| matches!(op.process, Process::Client(_)) && REGISTER_FNS.contains(&op.f.as_str()))
        .cloned()
        .collect();
    let opts = linearizable::LinearizableOptions { model: linearizable::Model::CasRegister, ..Default::default() };
    linearizable::check(&History::new(ops), &opts)
}

fn check_set_full(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = set_full::SetFullOptions { linearizable: facts.linearizable_reads };
    set_full::check(history, &opts)
}

/// Each requested fault took effect at least once (otherwise the run tested nothing).
fn check_vacuity(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = vacuity::VacuityOptions { nemesis: facts.nemesis.clone(), ..Default::default() };
    vacuity::check(history, &opts)
}

/// Runs the applicable checkers. `problems` are facts about the run itself (interrupted,
/// cluster never ready, history write error, ...): each makes the run at best unknown.
pub fn analyse(history: &History, facts: &RunFacts, problems: &[String]) -> Verdict {
    let mut checkers = BTreeMap::new();
    for entry in registry() {
        if !(entry.applies)(facts) {
            continue;
        }
        let started = std::time::Instant::now();
        let mut result = (entry.run)(history, facts);
        if let serde_json::Value::Object(m) = &mut result.details {
            m.insert("check_ms".into(), serde_json::json!(started.elapsed().as_millis() as u64));
        }
        checkers.insert(entry.name.to_string(), result);
    }
    if !problems.is_empty() {
        let mut run = CheckerResult::new(Validity::Unknown);
        run.reason = Some(problems.join("; "));
        checkers.insert("run".to_string(), run);
    }
    Verdict::from_checkers(checkers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::history::OpType;
    use serde_json::json;

    fn op(index: u64, process: u64, kind: OpType, f: &str, key: &str, value: serde_json::Value) -> Op {
        Op { index, kind, process: Process::Client(process), f: f.into(), key: Some(key.into()), value, time: index * 10, node: None, error: None, meta: None }
    }

    fn facts() -> RunFacts {
        RunFacts { workload: "register".into(), nemesis: vec![], linearizable_reads: true }
    }

    #[test]
    fn a_stale_read_makes_the_verdict_invalid() {
        let h = History::new(vec![
            op(0, 1, OpType::Invoke, "write", "k", json!(1)),
            op(1, 1, OpType::Ok, "write", "k", json!(1)),
            op(2, 2, OpType::Invoke, "read", "k", json!(null)),
            op(3, 2, OpType::Ok, "read", "k", json!(null)),
        ]);
        let v = analyse(&h, &facts(), &[]);
        assert_eq!(v.valid, Validity::Invalid, "{v:?}");
        assert!(v.checkers.contains_key("linearizable"));
        assert!(!v.checkers.contains_key("set-full"), "set-full does not apply to register runs");
    }

    #[test]
    fn a_valid_history_of_an_interrupted_run_is_unknown() {
        let h = History::new(vec![
            op(0, 1, OpType::Invoke, "write", "k", json!(1)),
            op(1, 1, OpType::Ok, "write", "k", json!(1)),
            op(2, 2, OpType::Invoke, "read", "k", json!(null)),
            op(3, 2, OpType::Ok, "read", "k", json!(1)),
        ]);
        assert_eq!(analyse(&h, &facts(), &[]).valid, Validity::Valid);
        let v = analyse(&h, &facts(), &["interrupted".to_string()]);
        assert_eq!(v.valid, Validity::Unknown);
        assert_eq!(v.checkers["run"].reason.as_deref(), Some("interrupted"));
    }
}
