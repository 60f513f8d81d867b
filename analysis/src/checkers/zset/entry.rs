//! The zset checker's registry entry: a run's sorted-set workload, or a bare file chosen by
//! `--model zset` or holding sorted-set calls.

use super::{check, FUNCTIONS, NAME};
use crate::checkers::registry::{rules, Applies, Checker, ModelChoice, RunFacts, Scope, Streaming};
use crate::history::History;
use crate::verdict::CheckerResult;

pub const CHECKER: Checker = Checker {
    name: NAME,
    scope: Scope::ClientOps,
    functions: FUNCTIONS,
    models: &["zset"],
    // No detection-matrix row runs its workload yet.
    matrix_column: false,
    applies,
    check: check_history,
    streaming: Streaming::Whole,
};

fn applies(facts: &RunFacts) -> Applies {
    rules::model_checker_applies(facts, NAME, ModelChoice::Zset, FUNCTIONS)
}

/// Sorted sets: the rules, then each key's whole-read linearizability within the budget.
fn check_history(history: &History, facts: &RunFacts) -> CheckerResult {
    check(history, &facts.options.zset)
}
