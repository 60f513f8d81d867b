//! When each checker of the registry judges a history: one `*_applies` function per
//! checker, reading only [`RunFacts`].
//!
//! Client-op checkers (linearizable, set-full, isolation) judge a run when its workload
//! declares them, and a bare file when `--model` names them or, with `--model auto`, when
//! the file holds the functions they judge. The others judge by what the store reports (a
//! run) or what the history holds (evidence).

use super::facts::{Basis, ModelChoice, RunFacts};
use super::Applies;
use crate::checkers::linearizable::Model;
use crate::checkers::{isolation, linearizable, queue, set_full, zset};
use crate::history::txn::TxnModel;
use crate::ops;

/// The functions that make `--model auto` pick linearizability under the `kv` model.
pub const KV_FUNCTIONS: &[&str] = &[ops::GET, ops::PUT, ops::APPEND];
/// The functions that make `--model auto` pick linearizability under `cas-register`.
pub const REGISTER_FUNCTIONS: &[&str] = &[ops::READ, ops::WRITE, ops::CAS, ops::COMPARE_AND_SET];

/// A run whose workload declares the checker `name` among those that judge it.
fn judges_the_workload(facts: &RunFacts, name: &str) -> Applies {
    yes_or_omitted(facts.judged_by.iter().any(|n| n == name))
}

fn yes_or_omitted(yes: bool) -> Applies {
    match yes {
        true => Applies::Yes,
        false => Applies::Omitted,
    }
}

/// The linearizability model a bare file is checked under, if any: the one `--model`
/// names, or by its functions (`kv` for get/put/append, else `cas-register` for
/// read/write/cas — and for a history of only nemesis or watcher events, which is then
/// trivially linearizable and says so with its counts).
pub fn bare_linearizable_model(facts: &RunFacts) -> Option<Model> {
    match facts.options.model {
        ModelChoice::Linearizable(m) => Some(m),
        ModelChoice::Auto if facts.holds_any(KV_FUNCTIONS) => Some(Model::Kv),
        ModelChoice::Auto if facts.holds_any(REGISTER_FUNCTIONS) => Some(Model::CasRegister),
        ModelChoice::Auto if facts.functions.is_empty() && facts.has_entries => {
            Some(Model::CasRegister)
        }
        _ => None,
    }
}

pub fn linearizable_applies(facts: &RunFacts) -> Applies {
    match facts.basis {
        Basis::Run => judges_the_workload(facts, linearizable::NAME),
        Basis::Evidence => yes_or_omitted(bare_linearizable_model(facts).is_some()),
    }
}

pub fn set_full_applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.options.model) {
        (Basis::Run, _) => judges_the_workload(facts, set_full::NAME),
        (Basis::Evidence, ModelChoice::Set) => Applies::Yes,
        (Basis::Evidence, ModelChoice::Auto) => {
            yes_or_omitted(facts.holds_any(set_full::FUNCTIONS))
        }
        (Basis::Evidence, _) => Applies::Omitted,
    }
}

/// A run: when its workload declares it. A bare file: `--model list-append|rw-register`,
/// or `--model auto` and a transaction among its client ops.
pub fn isolation_applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.options.model) {
        (Basis::Run, _) => judges_the_workload(facts, isolation::NAME),
        (Basis::Evidence, ModelChoice::Isolation(_)) => Applies::Yes,
        (Basis::Evidence, ModelChoice::Auto) => yes_or_omitted(facts.holds_any(&[ops::TXN])),
        (Basis::Evidence, _) => Applies::Omitted,
    }
}

/// A run: when its workload declares it. A bare file: `--model zset`, or `--model auto`
/// and a sorted-set call among its client ops.
pub fn zset_applies(facts: &RunFacts) -> Applies {
    model_checker_applies(facts, zset::NAME, ModelChoice::Zset, zset::FUNCTIONS)
}

/// A run: when its workload declares it. A bare file: `--model queue`, or `--model auto`
/// and a queue call among its client ops.
pub fn queue_applies(facts: &RunFacts) -> Applies {
    model_checker_applies(facts, queue::NAME, ModelChoice::Queue, queue::FUNCTIONS)
}

fn model_checker_applies(
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

/// The transaction workload to check under: the one `--model` names, else what the
/// history's transactions show (a `w` or a single-value read: rw-register), else
/// list-append.
pub fn txn_model(facts: &RunFacts, history: &crate::history::History) -> TxnModel {
    if let ModelChoice::Isolation(m) = facts.options.model {
        return m;
    }
    (0..history.ops.len())
        .filter(|&p| history.ops[p].process.client().is_some() && history.ops[p].f == ops::TXN)
        .find_map(|p| {
            crate::formats::txn_check::shape_of(&history.txn_value(p))
                .ok()
                .and_then(|s| s.shows)
        })
        .unwrap_or(TxnModel::ListAppend)
}

/// A run: always — besides the requested faults it catches a run with no acknowledged op,
/// which every other checker may rightly call valid. Evidence: when a fault started.
pub fn vacuity_applies(facts: &RunFacts) -> Applies {
    yes_or_omitted(facts.basis == Basis::Run || !facts.nemesis.is_empty())
}

/// A run: when the store reports both a catalog and commit metadata. Evidence: when the
/// history holds either (with a catalog alone only the catalog rule can be broken).
pub fn epoch_applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.catalog, facts.commit_meta) {
        (Basis::Run, true, true) => Applies::Yes,
        (Basis::Run, false, _) => Applies::NotApplicable(format!("{} has no route catalog or route epochs", facts.store)),
        (Basis::Run, true, false) => {
            Applies::NotApplicable(format!("{} reports no commit metadata (group, term, log index, route epoch) for this workload's operations", facts.store))
        }
        (Basis::Evidence, false, false) => Applies::Omitted,
        (Basis::Evidence, _, _) => Applies::Yes,
    }
}

/// A run: when the store splits ranges and the run expects splits. Evidence: when the
/// history holds a catalog and a split was forced or the catalog changed.
pub fn split_applies(facts: &RunFacts) -> Applies {
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

/// Where faultline watched the nodes (a run on its own cluster; evidence: lifecycle
/// events); an exit it cannot see is no evidence of anything.
pub fn crashes_applies(facts: &RunFacts) -> Applies {
    match (facts.basis, facts.lifecycle_watched) {
        (_, true) => Applies::Yes,
        (Basis::Run, false) => Applies::NotApplicable(format!(
            "--cluster {}: faultline does not run the nodes, so it cannot see them exit",
            facts.cluster
        )),
        (Basis::Evidence, false) => Applies::Omitted,
    }
}
