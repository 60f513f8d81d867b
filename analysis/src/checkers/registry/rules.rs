//! Building blocks of the checkers' `applies` rules (each rule lives in its checker's
//! `entry` module), reading only [`RunFacts`].
//!
//! Client-op checkers judge a run when its workload declares them, and a bare file when
//! `--model` names them or, with `--model auto`, when the file holds the functions they
//! judge. The others judge by what the store reports (a run) or what the history holds
//! (evidence).

use super::facts::{Basis, ModelChoice, RunFacts};
use super::Applies;

/// A run whose workload declares the checker `name` among those that judge it.
pub fn judges_the_workload(facts: &RunFacts, name: &str) -> Applies {
    yes_or_omitted(facts.judged_by.iter().any(|n| n == name))
}

pub fn yes_or_omitted(yes: bool) -> Applies {
    match yes {
        true => Applies::Yes,
        false => Applies::Omitted,
    }
}

/// A client-op checker chosen by one `--model`: a run when its workload declares it; a
/// bare file when `--model` is `choice`, or `auto` and the file holds one of `functions`.
pub fn model_checker_applies(
    facts: &RunFacts,
    name: &str,
    choice: ModelChoice,
    functions: &[&str],
) -> Applies {
    match (facts.basis, facts.options.model) {
        (Basis::Run, _) => judges_the_workload(facts, name),
        (Basis::Evidence, m) if m == choice => Applies::Yes,
        (Basis::Evidence, ModelChoice::Auto) => yes_or_omitted(facts.holds_any(functions)),
        (Basis::Evidence, _) => Applies::Omitted,
    }
}
