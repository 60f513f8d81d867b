//! The crashes checker's registry entry: it judges where faultline watched the nodes.

use super::{check, CrashesOptions, NAME};
use crate::checkers::registry::{Applies, Basis, Checker, RunFacts};
use crate::history::History;
use crate::verdict::CheckerResult;

pub const CHECKER: Checker = Checker::of_run(NAME, false, applies, check_history);

/// Where faultline watched the nodes (a run on its own cluster; evidence: lifecycle
/// events); an exit it cannot see is no evidence of anything.
fn applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.lifecycle_watched) {
        (_, true) => Applies::Yes,
        (Basis::Run, false) => Applies::NotApplicable(format!(
            "--cluster {}: faultline does not run the nodes, so it cannot see them exit",
            facts.cluster
        )),
        (Basis::Evidence, false) => Applies::Omitted,
    }
}

fn check_history(history: &History, _facts: &RunFacts) -> CheckerResult {
    check(history, &CrashesOptions::default())
}
