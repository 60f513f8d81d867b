//! The epoch-authority checker's registry entry: it judges a run whose store reports a
//! route catalog and commit metadata, and a file that holds either.

use super::{check, EpochAuthorityOptions, NAME};
use crate::checkers::registry::{Applies, Basis, Checker, RunFacts, Scope, Streaming};
use crate::history::History;
use crate::ops;
use crate::verdict::{CheckerResult, Validity};

pub const CHECKER: Checker = Checker {
    name: NAME,
    scope: Scope::Run,
    functions: &[ops::STALE_WRITE],
    models: &[],
    matrix_column: true,
    applies,
    check: check_history,
    streaming: Streaming::Whole,
};

/// A run: when the store reports both a catalog and commit metadata. Evidence: when the
/// history holds either (with a catalog alone only the catalog rule can be broken).
fn applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.catalog, facts.commit_meta) {
        (Basis::Run, true, true) => Applies::Yes,
        (Basis::Run, false, _) => Applies::NotApplicable(format!(
            "{} has no route catalog or route epochs",
            facts.store
        )),
        (Basis::Run, true, false) => Applies::NotApplicable(format!(
            "{} reports no commit metadata (group, term, log index, route epoch) for this \
             workload's operations",
            facts.store
        )),
        (Basis::Evidence, false, false) => Applies::Omitted,
        (Basis::Evidence, _, _) => Applies::Yes,
    }
}

/// Rules (a)–(f). Without commit metadata (evidence of a store that sends none, such as
/// elastickv: its writes carry only a log index) only the catalog rule can be broken:
/// anything short of `invalid` is then `not-applicable`, the verdict a run of such a store
/// gets.
fn check_history(history: &History, facts: &RunFacts) -> CheckerResult {
    let result = check(history, &EpochAuthorityOptions::default());
    if facts.commit_meta || result.valid == Validity::Invalid {
        return result;
    }
    let mut r = result;
    r.valid = Validity::NotApplicable;
    r.reason = Some(
        "no operation carries commit metadata (group, term, log index, route epoch), so \
         writes cannot be attributed to ownership epochs; the catalog observations broke no \
         catalog rule"
            .into(),
    );
    r
}
