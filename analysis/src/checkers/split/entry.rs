//! The split checker's registry entry: it judges a run of a splitting store that expects
//! splits, and a file whose catalog shows a split.

use super::{check, SplitOptions, NAME};
use crate::checkers::registry::{Applies, Basis, Checker, RunFacts};
use crate::history::History;
use crate::verdict::CheckerResult;

pub const CHECKER: Checker = Checker::of_run(NAME, true, applies, check_history);

/// A run: when the store splits ranges and the run expects splits. Evidence: when the
/// history holds a catalog and a split was forced or the catalog changed.
fn applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.splits, facts.splits_expected) {
        (Basis::Run, false, _) => {
            Applies::NotApplicable(format!("{} does not split ranges", facts.store))
        }
        (Basis::Run, true, false) => Applies::NotApplicable(
            "no split expected: neither a hotspot workload with auto-split nor the split nemesis"
                .into(),
        ),
        (_, true, true) => Applies::Yes,
        (Basis::Evidence, _, _) => Applies::Omitted,
    }
}

/// Auto-splits (or forced ones) judged with the run's hot prefix and the store's cooldown.
fn check_history(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = SplitOptions {
        hot_prefix: facts.hot_prefix.clone(),
        cooldown_s: facts.split_cooldown_s,
        ..Default::default()
    };
    check(history, &opts)
}
