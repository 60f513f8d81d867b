//! How each checker of the registry is called: one `check_*` function per checker, turning
//! [`RunFacts`] (and the user's [`super::facts::CheckOptions`]) into the checker's options.
//!
//! A run checks register operations under `cas-register` with keys absent at the start; a
//! bare file under the model `--model` names or its functions suggest
//! ([`rules::bare_linearizable_model`]) with the format's initial value.

use super::facts::{Basis, RunFacts};
use super::rules;
use crate::checkers::{
    crashes, epoch_authority, isolation, linearizable, queue, set_full, split, stale_read, vacuity,
    zset,
};
use crate::history::{History, Op, Process};
use crate::ops;
use crate::verdict::{CheckerResult, Validity};

/// The register functions a run's linearizability checker judges.
const RUN_REGISTER_FNS: &[&str] = &[ops::READ, ops::WRITE, ops::CAS, ops::GET, ops::PUT];

/// Linearizability per key; each anomaly's proven cause (a stale read, ...) from the whole
/// history.
pub fn check_linearizable(history: &History, facts: &RunFacts) -> CheckerResult {
    match (facts.basis, rules::bare_linearizable_model(facts)) {
        (Basis::Evidence, Some(model)) => check_bare_linearizable(history, facts, model),
        _ => check_run_linearizable(history),
    }
}

/// A run's register operations, cas-register model, keys absent at the start.
fn check_run_linearizable(history: &History) -> CheckerResult {
    let ops: Vec<Op> = history
        .ops
        .iter()
        .filter(|op| {
            matches!(op.process, Process::Client(_)) && RUN_REGISTER_FNS.contains(&op.f.as_str())
        })
        .cloned()
        .collect();
    let opts = linearizable::LinearizableOptions {
        model: linearizable::Model::CasRegister,
        ..Default::default()
    };
    let mut result = linearizable::check(&History::new(ops), &opts);
    stale_read::annotate(history, &mut result);
    result
}

fn check_bare_linearizable(
    history: &History,
    facts: &RunFacts,
    model: linearizable::Model,
) -> CheckerResult {
    let opts = linearizable::LinearizableOptions {
        model,
        initial: facts.options.initial.clone(),
        ..facts.options.linearizable.clone()
    };
    let mut result = linearizable::check(history, &opts);
    stale_read::annotate(history, &mut result);
    note_model(&mut result, model.name());
    result
}

/// Records the model used, so a reader of `results.json` knows what was assumed.
fn note_model(result: &mut CheckerResult, model: &str) {
    match &mut result.details {
        serde_json::Value::Object(map) => {
            map.entry("model").or_insert_with(|| model.into());
        }
        serde_json::Value::Null => result.details = serde_json::json!({ "model": model }),
        _ => {}
    }
}

/// A run: the store's promise decides whether a stale element is invalid; a bare file:
/// `--linearizable-set`.
pub fn check_set_full(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = match facts.basis {
        Basis::Run => set_full::SetFullOptions {
            linearizable: facts.linearizable_reads,
        },
        Basis::Evidence => facts.options.set_full.clone(),
    };
    set_full::check(history, &opts)
}

/// The transactions under the requested consistency model (default strict-serializable).
pub fn check_isolation(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = isolation::Opts {
        model: rules::txn_model(facts, history),
        consistency: facts.options.consistency,
        time_budget: facts.options.isolation_time_budget,
    };
    isolation::check(history, &opts)
}

/// Sorted sets: the rules, then each key's whole-read linearizability within the budget.
pub fn check_zset(history: &History, facts: &RunFacts) -> CheckerResult {
    zset::check(history, &facts.options.zset)
}

/// The queue's lost, duplicated, unexpected and per-group order findings.
pub fn check_queue(history: &History, _facts: &RunFacts) -> CheckerResult {
    queue::check(history)
}

/// Each requested fault took effect at least once (otherwise the run tested nothing).
pub fn check_vacuity(history: &History, facts: &RunFacts) -> CheckerResult {
    vacuity::check(
        history,
        &vacuity::VacuityOptions {
            nemesis: facts.nemesis.clone(),
            ..Default::default()
        },
    )
}

/// Rules (a)–(f). Without commit metadata (evidence of a store that sends none, such as
/// elastickv: its writes carry only a log index) only the catalog rule can be broken:
/// anything short of `invalid` is then `not-applicable`, the verdict a run of such a store
/// gets.
pub fn check_epoch_authority(history: &History, facts: &RunFacts) -> CheckerResult {
    let result =
        epoch_authority::check(history, &epoch_authority::EpochAuthorityOptions::default());
    if facts.commit_meta || result.valid == Validity::Invalid {
        return result;
    }
    let mut r = result;
    r.valid = Validity::NotApplicable;
    r.reason = Some("no operation carries commit metadata (group, term, log index, route epoch), so writes cannot be attributed to ownership epochs; the catalog observations broke no catalog rule".into());
    r
}

/// Auto-splits (or forced ones) judged with the run's hot prefix and the store's cooldown.
pub fn check_split(history: &History, facts: &RunFacts) -> CheckerResult {
    let opts = split::SplitOptions {
        hot_prefix: facts.hot_prefix.clone(),
        cooldown_s: facts.split_cooldown_s,
        ..Default::default()
    };
    split::check(history, &opts)
}

pub fn check_crashes(history: &History, _facts: &RunFacts) -> CheckerResult {
    crashes::check(history, &crashes::CrashesOptions::default())
}
