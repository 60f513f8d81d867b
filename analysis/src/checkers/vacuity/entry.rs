//! The vacuity checker's registry entry: it judges every run, and a file in which a fault
//! started.

use super::{check, VacuityOptions, NAME};
use crate::checkers::registry::{rules, Applies, Basis, Checker, RunFacts};
use crate::history::History;
use crate::verdict::CheckerResult;

pub const CHECKER: Checker = Checker::of_run(NAME, true, applies, check_history);

/// A run: always — besides the requested faults it catches a run with no acknowledged op,
/// which every other checker may rightly call valid. Evidence: when a fault started.
fn applies(facts: &RunFacts) -> Applies {
    rules::yes_or_omitted(facts.basis == Basis::Run || !facts.nemesis.is_empty())
}

/// Each requested fault took effect at least once (otherwise the run tested nothing).
fn check_history(history: &History, facts: &RunFacts) -> CheckerResult {
    check(
        history,
        &VacuityOptions {
            nemesis: facts.nemesis.clone(),
            ..Default::default()
        },
    )
}
