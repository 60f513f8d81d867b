//! The set-full checker's registry entry: a run's set workloads, or a bare file chosen by
//! `--model set` or holding set calls.

use super::parts::SetParts;
use super::{check, SetFullOptions, FUNCTIONS, NAME};
use crate::checkers::registry::{
    rules, Applies, Basis, Checker, ModelChoice, PartCheck, RunFacts, Scope, Streaming,
};
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
    streaming: Streaming::ByKey(run_parts),
};

fn applies(facts: &RunFacts) -> Applies {
    rules::model_checker_applies(facts, NAME, ModelChoice::Set, FUNCTIONS)
}

/// A run: the store's promise decides whether a stale element is invalid; a bare file:
/// `--linearizable-set`.
fn check_history(history: &History, facts: &RunFacts) -> CheckerResult {
    check(history, &options(facts))
}

fn options(facts: &RunFacts) -> SetFullOptions {
    match facts.basis {
        Basis::Run => SetFullOptions {
            linearizable: facts.linearizable_reads,
        },
        Basis::Evidence => facts.options.set_full.clone(),
    }
}

fn run_parts(facts: &RunFacts) -> Box<dyn PartCheck> {
    Box::new(SetParts::new(options(facts)))
}

impl PartCheck for SetParts {
    fn absorb(&mut self, part: &History) {
        SetParts::absorb(self, part)
    }

    fn finish(self: Box<Self>) -> CheckerResult {
        SetParts::finish(*self)
    }
}
