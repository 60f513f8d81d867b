//! Choosing and running the checkers that fit a bare history file, and merging their
//! results into a [`Verdict`] — what `faultline analyze` does for each input file that is
//! not a run directory's.
//!
//! The choice is the checker registry's ([`crate::checkers::registry`]): with
//! [`ModelChoice::Auto`] the functions in the history decide (`get`/`put`/`append` →
//! linearizability under the `kv` model; `read`/`write`/`cas` → `cas-register`;
//! `add`/`read-set`/`scan` → set-full; `txn` → isolation). A mixed history gets several
//! checkers; a history of only nemesis/watcher events gets `cas-register` (trivially
//! linearizable); an empty one, or one whose only client ops are `stale-write`s, gets no
//! checker and is `unknown` (checker `history`). [`analyze`] runs the
//! client-op checkers; [`analyze_evidence`] adds the run-level ones the history's evidence
//! calls for.

use crate::checkers::isolation::ConsistencyModel;
use crate::checkers::linearizable::LinearizableOptions;
use crate::checkers::registry::{self, CheckOptions, RunFacts, Scope};
use crate::checkers::set_full::SetFullOptions;
use crate::history::History;
use crate::verdict::{CheckerResult, Validity, Verdict};
use std::collections::BTreeMap;
use std::time::Duration;

pub use crate::checkers::registry::ModelChoice;
pub use crate::ops::STALE_WRITE;

#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    pub model: Option<ModelChoice>,
    /// The initial register value; `None` = the input format's default.
    pub initial: Option<serde_json::Value>,
    /// Base options of the linearizability checker (budgets); `model` and `initial` are
    /// set per history.
    pub linearizable: LinearizableOptions,
    pub set_full: SetFullOptions,
    /// Isolation: the consistency model (`None`: strict-serializable).
    pub consistency: Option<ConsistencyModel>,
    /// Isolation: the cycle search's wall-time budget.
    pub isolation_time_budget: Option<Duration>,
}

impl AnalyzeOptions {
    /// The registry's options for a history whose format starts registers at `default_initial`.
    pub fn check_options(&self, default_initial: serde_json::Value) -> CheckOptions {
        CheckOptions {
            model: self.model.unwrap_or_default(),
            initial: self.initial.clone().unwrap_or(default_initial),
            linearizable: self.linearizable.clone(),
            set_full: self.set_full.clone(),
            consistency: self.consistency.unwrap_or_default(),
            isolation_time_budget: self.isolation_time_budget,
            zset: Default::default(),
        }
    }
}

/// A history this command cannot judge at all, pointing at the op (by position) at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AnalyzeError {
    pub position: usize,
    pub message: String,
}

/// Finds the first client op whose function no checker knows.
pub fn check_functions(history: &History) -> Result<(), AnalyzeError> {
    let known = registry::known_functions();
    for (position, op) in history.ops.iter().enumerate() {
        if op.process.client().is_some() && !known.contains(&op.f.as_str()) {
            return Err(AnalyzeError {
                position,
                message: format!(
                    "op {} has unknown function {:?}; the checkers know {}",
                    op.index,
                    op.f,
                    known.join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// Runs the client-op checkers the registry plans for `history` and merges their results.
pub fn analyze(
    history: &History,
    default_initial: serde_json::Value,
    opts: &AnalyzeOptions,
) -> Result<Verdict, AnalyzeError> {
    check_functions(history)?;
    let facts = RunFacts::from_evidence(history).with_options(opts.check_options(default_initial));
    let mut checkers = BTreeMap::new();
    registry::run_scopes_into(history, &facts, &[Scope::ClientOps], &mut checkers);
    if checkers.is_empty() {
        let mut r = CheckerResult::new(Validity::Unknown);
        r.reason = Some(nothing_checked_reason(history));
        checkers.insert("history".to_string(), r);
    }
    Ok(Verdict::from_checkers(checkers))
}

/// Why the history checkers had nothing to check: no client op at all, or only stale
/// writes, which no history checker reads (epoch-authority judges them, when the file holds
/// its evidence).
fn nothing_checked_reason(history: &History) -> String {
    if history.ops.iter().any(|op| op.process.client().is_some()) {
        format!(
            "the history's only client operations are {STALE_WRITE}s, which neither linearizability nor set-full \
             reads (epoch-authority judges them when the history holds commit metadata or a catalog), so no register \
             or set operation was checked"
        )
    } else {
        "the history has no client operation any checker understands, so nothing was checked".into()
    }
}

/// `verdict` plus the run-level checkers whose evidence the history holds (commit metadata
/// or catalog observations, a split, nemesis events, node-lifecycle events).
pub fn analyze_evidence(history: &History, verdict: Verdict) -> Verdict {
    let mut checkers = verdict.checkers;
    registry::run_scopes_into(
        history,
        &RunFacts::from_evidence(history),
        &[Scope::Run],
        &mut checkers,
    );
    Verdict::from_checkers(checkers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, OpType, Process};

    fn op(index: u64, kind: OpType, f: &str, value: serde_json::Value) -> Op {
        Op {
            index,
            kind,
            process: Process::Client(index / 2),
            f: f.into(),
            key: None,
            value,
            time: index,
            node: None,
            error: None,
            meta: None,
        }
    }

    #[test]
    fn a_history_of_only_stale_writes_is_unknown_and_says_why() {
        let ops = vec![
            op(
                0,
                OpType::Invoke,
                STALE_WRITE,
                serde_json::json!({"value": 1, "group": 1, "epoch": 1}),
            ),
            op(
                1,
                OpType::Ok,
                STALE_WRITE,
                serde_json::json!({"value": 1, "group": 1, "epoch": 1}),
            ),
        ];
        let v = analyze(
            &History::new(ops),
            serde_json::Value::Null,
            &AnalyzeOptions::default(),
        )
        .unwrap();
        assert_eq!(v.checkers.keys().collect::<Vec<_>>(), ["history"]);
        assert_eq!(v.valid, Validity::Unknown);
        let reason = v.checkers["history"].reason.clone().unwrap_or_default();
        assert!(
            reason.contains("only client operations are stale-writes"),
            "{reason}"
        );
    }

    #[test]
    fn auto_picks_models_from_functions() {
        let h = |fs: &[&str]| {
            History::new(
                fs.iter()
                    .enumerate()
                    .map(|(i, f)| op(2 * i as u64, OpType::Invoke, f, serde_json::Value::Null))
                    .collect(),
            )
        };
        let chosen =
            |h: &History| analyze(h, serde_json::Value::Null, &AnalyzeOptions::default()).unwrap();
        assert_eq!(
            chosen(&h(&["read", "cas"])).checkers["linearizable"].details["model"],
            "cas-register"
        );
        assert_eq!(
            chosen(&h(&["get", "append"])).checkers["linearizable"].details["model"],
            "kv"
        );
        assert_eq!(
            chosen(&h(&["write", "add", "scan"]))
                .checkers
                .keys()
                .collect::<Vec<_>>(),
            ["linearizable", "set-full"]
        );
        assert_eq!(
            chosen(&h(&[])).checkers.keys().collect::<Vec<_>>(),
            ["history"]
        );
        let mut nemesis_only = op(
            0,
            OpType::Info,
            "start-partition",
            serde_json::json!({"effective": true}),
        );
        nemesis_only.process = Process::Nemesis;
        let only_events = chosen(&History::new(vec![nemesis_only]));
        assert_eq!(
            only_events.checkers.keys().collect::<Vec<_>>(),
            ["linearizable"]
        );
        assert_eq!(
            only_events.checkers["linearizable"].details["model"],
            "cas-register"
        );
    }

    #[test]
    fn unknown_function_is_an_error_naming_the_op() {
        let h = History::new(vec![
            op(0, OpType::Invoke, "read", serde_json::Value::Null),
            op(1, OpType::Invoke, "frob", 1.into()),
        ]);
        let e = analyze(&h, serde_json::Value::Null, &AnalyzeOptions::default()).unwrap_err();
        assert_eq!(e.position, 1);
        assert!(
            e.message.contains("op 1 has unknown function \"frob\""),
            "{e}"
        );
    }

    #[test]
    fn a_history_with_nothing_to_check_is_unknown() {
        let v = analyze(
            &History::default(),
            serde_json::Value::Null,
            &AnalyzeOptions::default(),
        )
        .unwrap();
        assert_eq!(v.valid, Validity::Unknown);
        assert!(v.checkers["history"].reason.is_some());
    }

    #[test]
    fn mixed_history_gets_both_checkers() {
        let ops = vec![
            op(0, OpType::Invoke, "write", 1.into()),
            op(1, OpType::Ok, "write", 1.into()),
            op(2, OpType::Invoke, "add", 5.into()),
            op(3, OpType::Ok, "add", 5.into()),
            op(4, OpType::Invoke, "read-set", serde_json::Value::Null),
            op(5, OpType::Ok, "read-set", serde_json::json!([5])),
        ];
        let v = analyze(
            &History::new(ops),
            serde_json::Value::Null,
            &AnalyzeOptions::default(),
        )
        .unwrap();
        assert_eq!(
            v.checkers.keys().collect::<Vec<_>>(),
            ["linearizable", "set-full"]
        );
        assert_eq!(v.valid, Validity::Valid, "{v:?}");
        assert_eq!(v.checkers["linearizable"].details["model"], "cas-register");
    }
}
