//! The set-full checker's registry entry: a run's set workloads, or a bare file chosen by
//! `--model set` or holding set calls.

use super::{check, SetFullOptions, FUNCTIONS, NAME};
use crate::checkers::registry::{rules, Applies, Basis, Checker, ModelChoice, RunFacts, Scope};
use crate::history::History;
use crate::verdict::CheckerResult;

pub const CHECKER: Checker = Checker {
    name: NAME,
    scope: Scope::ClientOps,
    functions: FUNCTIONS,
    models: &["set"],
    matrix_column: true,
    applies,
    check: check_history,
};

fn applies(facts: &RunFacts) -> Applies {
    rules::model_checker_applies(facts, NAME, ModelChoice::Set, FUNCTIONS)
}

/// A run: the store's promise decides whether a stale element is invalid; a bare file:
/// `--linearizable-set`.
fn check_history(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = match facts.basis {
        Basis::Run => SetFullOptions {
            linearizable: facts.linearizable_reads,
        },
        Basis::Evidence => facts.options.set_full.clone(),
    };
    check(history, &opts)
}
