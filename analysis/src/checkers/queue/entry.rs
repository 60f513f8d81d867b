//! The queue checker's registry entry: a run's queue workload, or a bare file chosen by
//! `--model queue` or holding queue calls.

use super::{check, FUNCTIONS, NAME};
use crate::checkers::registry::{rules, Applies, Checker, ModelChoice, RunFacts, Scope, Streaming};
use crate::history::History;
use crate::verdict::CheckerResult;

pub const CHECKER: Checker = Checker {
    name: NAME,
    scope: Scope::ClientOps,
    functions: FUNCTIONS,
    models: &["queue"],
    // No detection-matrix row runs its workload yet.
    matrix_column: false,
    applies,
    check: check_history,
    streaming: Streaming::Whole,
};

fn applies(facts: &RunFacts) -> Applies {
    rules::model_checker_applies(facts, NAME, ModelChoice::Queue, FUNCTIONS)
}

/// The queue's lost, duplicated, unexpected and per-group order findings.
fn check_history(history: &History, _facts: &RunFacts) -> CheckerResult {
    check(history)
}
