//! The isolation checker's registry entry: when it judges a history and under which
//! transaction model and consistency model.

use super::{check, Opts, TxnModel, NAME};
use crate::checkers::registry::{rules, Applies, Basis, Checker, ModelChoice, RunFacts, Scope, Streaming};
use crate::history::History;
use crate::ops;
use crate::verdict::CheckerResult;

pub const CHECKER: Checker = Checker {
    name: NAME,
    scope: Scope::ClientOps,
    functions: &[ops::TXN],
    models: TxnModel::NAMES,
    // The transaction bugs' rows (refkv's no-read-validation, lock-dropped-on-move,
    // ts-from-receiver) run the transaction workloads.
    matrix_column: true,
    applies,
    check: check_history,
    streaming: Streaming::Whole,
};

/// A run: when its workload declares it. A bare file: `--model list-append|rw-register`,
/// or `--model auto` and a transaction among its client ops.
fn applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.options.model) {
        (Basis::Run, _) => rules::judges_the_workload(facts, NAME),
        (Basis::Evidence, ModelChoice::Isolation(_)) => Applies::Yes,
        (Basis::Evidence, ModelChoice::Auto) => rules::yes_or_omitted(facts.holds_any(&[ops::TXN])),
        (Basis::Evidence, _) => Applies::Omitted,
    }
}

/// The transactions under the requested consistency model (default strict-serializable).
fn check_history(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = Opts {
        model: txn_model(facts, history),
        consistency: facts.options.consistency,
        time_budget: facts.options.isolation_time_budget,
    };
    check(history, &opts)
}

/// The transaction workload to check under: the one `--model` names, else what the
/// history's transactions show (a `w` or a single-value read: rw-register), else
/// list-append.
pub fn txn_model(facts: &RunFacts, history: &History) -> TxnModel {
    if let ModelChoice::Isolation(m) = facts.options.model {
        return m;
    }
    (0..history.ops.len())
        .filter(|&p| history.ops[p].process.client().is_some() && history.ops[p].f == ops::TXN)
        .find_map(|p| {
            crate::formats::txn_check::shape_of(&history.txn_value(p))
                .ok()
                .and_then(|s| s.shows)
        })
        .unwrap_or(TxnModel::ListAppend)
}
