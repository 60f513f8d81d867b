//! Choosing and running the checkers that fit a history, and merging their results into
//! a [`Verdict`] — what `faultline analyze` does for each input file.
//!
//! With [`ModelChoice::Auto`] the functions in the history decide: `get`/`put`/`append`
//! → linearizability under the `kv` model; `read`/`write`/`cas` → `cas-register`;
//! `add`/`read-set`/`scan` → the set-full checker. A mixed history gets both checkers; a
//! history of only nemesis/watcher events gets `cas-register` (trivially linearizable); an
//! empty one, or one whose only client ops are `stale-write`s, gets no checker and is
//! `unknown` (checker `history`).

use crate::checkers::linearizable::{self, LinearizableOptions, Model};
use crate::checkers::set_full::{self, SetFullOptions};
use crate::checkers::stale_read;
use crate::history::History;
use crate::verdict::{CheckerResult, Validity, Verdict};
use std::collections::{BTreeMap, BTreeSet};

/// Every client function some checker understands.
/// A stale client's write (see `docs/history-format.md`), judged by epoch-authority.
pub const STALE_WRITE: &str = "stale-write";

pub const KNOWN_FUNCTIONS: &[&str] =
    &["read", "get", "write", "put", "cas", "compare-and-set", "append", "add", "read-set", "scan", STALE_WRITE];

/// Which checkers to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelChoice {
    Auto,
    Linearizable(Model),
    Set,
}

impl ModelChoice {
    pub fn from_name(name: &str) -> Option<ModelChoice> {
        match name {
            "auto" => Some(ModelChoice::Auto),
            "set" | "set-full" => Some(ModelChoice::Set),
            other => Model::from_name(other).map(ModelChoice::Linearizable),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    pub model: Option<ModelChoice>,
    /// The initial register value; `None` = the input format's default.
    pub initial: Option<serde_json::Value>,
    /// Base options of the linearizability checker (budgets); `model` and `initial` are
    /// set per history.
    pub linearizable: LinearizableOptions,
    pub set_full: SetFullOptions,
}

/// A history this command cannot judge at all, pointing at the op (by position) at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AnalyzeError {
    pub position: usize,
    pub message: String,
}

/// The checkers `choice` (after auto-detection) runs on `history`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub linearizable: Option<Model>,
    pub set_full: bool,
}

/// Finds the first client op whose function no checker knows.
pub fn check_functions(history: &History) -> Result<(), AnalyzeError> {
    for (position, op) in history.ops.iter().enumerate() {
        if op.process.client().is_some() && !KNOWN_FUNCTIONS.contains(&op.f.as_str()) {
            return Err(AnalyzeError {
                position,
                message: format!(
                    "op {} has unknown function {:?}; the checkers know {}",
                    op.index,
                    op.f,
                    KNOWN_FUNCTIONS.join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// Decides which checkers to run.
pub fn plan(history: &History, choice: ModelChoice) -> Plan {
    match choice {
        ModelChoice::Linearizable(m) => Plan { linearizable: Some(m), set_full: false },
        ModelChoice::Set => Plan { linearizable: None, set_full: true },
        ModelChoice::Auto => {
            let fs: BTreeSet<&str> = history
                .ops
                .iter()
                .filter(|op| op.process.client().is_some())
                .map(|op| op.f.as_str())
                .collect();
            let any = |names: &[&str]| names.iter().any(|n| fs.contains(n));
            let linearizable = if any(&["get", "put", "append"]) {
                Some(Model::Kv)
            } else if any(&["read", "write", "cas", "compare-and-set"]) || (fs.is_empty() && !history.is_empty()) {
                // No client op at all (only nemesis or watcher events): trivially
                // linearizable, and the checker says so with its counts.
                Some(Model::CasRegister)
            } else {
                None
            };
            Plan { linearizable, set_full: any(&["add", "read-set", "scan"]) }
        }
    }
}

/// Runs the planned checkers and merges their results.
pub fn analyze(
    history: &History,
    default_initial: serde_json::Value,
    opts: &AnalyzeOptions,
) -> Result<Verdict, AnalyzeError> {
    check_functions(history)?;
    let plan = plan(history, opts.model.unwrap_or(ModelChoice::Auto));
    let mut checkers = BTreeMap::new();
    if let Some(model) = plan.linearizable {
        let lin_opts = LinearizableOptions {
            model,
            initial: opts.initial.clone().unwrap_or(default_initial),
            ..opts.linearizable.clone()
        };
        let mut result = linearizable::check(history, &lin_opts);
        stale_read::annotate(history, &mut result);
        note_model(&mut result, model);
        checkers.insert(linearizable::NAME.to_string(), result);
    }
    if plan.set_full {
        checkers.insert(set_full::NAME.to_string(), set_full::check(history, &opts.set_full));
    }
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

/// Records the model used, so a reader of `results.json` knows what was assumed.
fn note_model(result: &mut CheckerResult, model: Model) {
    match &mut result.details {
        serde_json::Value::Object(map) => {
            map.entry("model").or_insert_with(|| model.name().into());
        }
        serde_json::Value::Null => result.details = serde_json::json!({ "model": model.name() }),
        _ => {}
    }
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
    fn auto_picks_models_from_functions() {
        let h = |fs: &[&str]| {
            History::new(fs.iter().enumerate().map(|(i, f)| op(2 * i as u64, OpType::Invoke, f, serde_json::Value::Null)).collect())
        };
        assert_eq!(plan(&h(&["read", "cas"]), ModelChoice::Auto), Plan { linearizable: Some(Model::CasRegister), set_full: false });
        assert_eq!(plan(&h(&["get", "append"]), ModelChoice::Auto), Plan { linearizable: Some(Model::Kv), set_full: false });
        assert_eq!(plan(&h(&["write", "add", "scan"]), ModelChoice::Auto), Plan { linearizable: Some(Model::CasRegister), set_full: true });
        assert_eq!(plan(&h(&[]), ModelChoice::Auto), Plan { linearizable: None, set_full: false });
        let mut nemesis_only = op(0, OpType::Info, "start-partition", serde_json::json!({"effective": true}));
        nemesis_only.process = Process::Nemesis;
        let only_events = History::new(vec![nemesis_only]);
        assert_eq!(plan(&only_events, ModelChoice::Auto), Plan { linearizable: Some(Model::CasRegister), set_full: false });
        assert_eq!(ModelChoice::from_name("kv-append"), Some(ModelChoice::Linearizable(Model::Kv)));
        assert_eq!(ModelChoice::from_name("bogus"), None);
    }

    #[test]
    fn unknown_function_is_an_error_naming_the_op() {
        let h = History::new(vec![op(0, OpType::Invoke, "read", serde_json::Value::Null), op(1, OpType::Invoke, "frob", 1.into())]);
        let e = analyze(&h, serde_json::Value::Null, &AnalyzeOptions::default()).unwrap_err();
        assert_eq!(e.position, 1);
        assert!(e.message.contains("op 1 has unknown function \"frob\""), "{e}");
    }

    #[test]
    fn a_history_with_nothing_to_check_is_unknown() {
        let v = analyze(&History::default(), serde_json::Value::Null, &AnalyzeOptions::default()).unwrap();
        assert_eq!(v.valid, Validity::Unknown);
        assert!(v.checkers["history"].reason.is_some());
    }

    #[test]
    fn a_history_of_only_stale_writes_is_unknown_and_says_why() {
        let ops = vec![op(0, OpType::Invoke, STALE_WRITE, serde_json::json!({"value": 1, "group": 1, "epoch": 1})),
                       op(1, OpType::Ok, STALE_WRITE, serde_json::json!({"value": 1, "group": 1, "epoch": 1}))];
        let v = analyze(&History::new(ops), serde_json::Value::Null, &AnalyzeOptions::default()).unwrap();
        assert_eq!(v.checkers.keys().collect::<Vec<_>>(), ["history"]);
        assert_eq!(v.valid, Validity::Unknown);
        let reason = v.checkers["history"].reason.clone().unwrap_or_default();
        assert!(reason.contains("only client operations are stale-writes"), "{reason}");
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
        let v = analyze(&History::new(ops), serde_json::Value::Null, &AnalyzeOptions::default()).unwrap();
        assert_eq!(v.checkers.keys().collect::<Vec<_>>(), ["linearizable", "set-full"]);
        assert_eq!(v.valid, Validity::Valid, "{v:?}");
        assert_eq!(v.checkers["linearizable"].details["model"], "cas-register");
    }
}
