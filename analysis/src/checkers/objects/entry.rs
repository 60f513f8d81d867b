//! The objects checker's registry entry: a run's `objects` workload, or a bare file chosen
//! by `--model objects` (its reads and writes are a register's functions, so `--model auto`
//! judges such a file as registers and leaves this checker out).

use super::{check, FUNCTIONS, NAME};
use crate::checkers::registry::{rules, Applies, Basis, Checker, ModelChoice, RunFacts, Scope, Streaming};
use crate::history::History;
use crate::verdict::CheckerResult;

pub const CHECKER: Checker = Checker {
    name: NAME,
    scope: Scope::ClientOps,
    functions: FUNCTIONS,
    models: &["objects"],
    // No detection-matrix row runs its workload yet.
    matrix_column: false,
    applies,
    check: check_history,
    streaming: Streaming::Whole,
};

fn applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.options.model) {
        (Basis::Run, _) => rules::judges_the_workload(facts, NAME),
        (Basis::Evidence, ModelChoice::Objects) => Applies::Yes,
        (Basis::Evidence, _) => Applies::Omitted,
    }
}

/// Torn object bodies.
fn check_history(history: &History, _facts: &RunFacts) -> CheckerResult {
    check(history)
}
