//! The linearizable checker's registry entry: the functions it judges, the `--model` names
//! that choose it, when it judges a history and under which model.
//!
//! A run checks its register operations under `cas-register` with keys absent at the start;
//! a bare file under the model `--model` names or its functions suggest
//! ([`bare_linearizable_model`]) with the format's initial value.

use super::parts::KeyParts;
use super::{check, LinearizableOptions, Model, NAME};
use crate::checkers::registry::{
    rules, Applies, Basis, Checker, ModelChoice, PartCheck, RunFacts, Scope, Streaming,
};
use crate::checkers::stale_read;
use crate::history::History;
use crate::ops;
use crate::verdict::CheckerResult;

pub const CHECKER: Checker = Checker {
    name: NAME,
    scope: Scope::ClientOps,
    functions: &[
        ops::READ,
        ops::GET,
        ops::WRITE,
        ops::PUT,
        ops::CAS,
        ops::COMPARE_AND_SET,
        ops::APPEND,
    ],
    models: &["register", "cas-register", "kv"],
    matrix_column: true,
    applies,
    check: check_history,
    streaming: Streaming::ByKey(run_parts),
};

/// The functions that make `--model auto` pick linearizability under the `kv` model.
pub const KV_FUNCTIONS: &[&str] = &[ops::GET, ops::PUT, ops::APPEND];
/// The functions that make `--model auto` pick linearizability under `cas-register`.
pub const REGISTER_FUNCTIONS: &[&str] = &[ops::READ, ops::WRITE, ops::CAS, ops::COMPARE_AND_SET];

/// The register functions a run's linearizability checker judges.
const RUN_REGISTER_FNS: &[&str] = &[ops::READ, ops::WRITE, ops::CAS, ops::GET, ops::PUT];

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

/// A run: when its workload declares it. A bare file: when it has a model.
fn applies(facts: &RunFacts) -> Applies {
    match facts.basis {
        Basis::Run => rules::judges_the_workload(facts, NAME),
        Basis::Evidence => rules::yes_or_omitted(bare_linearizable_model(facts).is_some()),
    }
}

/// Linearizability per key; each anomaly's proven cause (a stale read, ...) from the whole
/// history.
fn check_history(history: &History, facts: &RunFacts) -> CheckerResult {
    match (facts.basis, bare_linearizable_model(facts)) {
        (Basis::Evidence, Some(model)) => check_bare(history, facts, model),
        _ => check_run(history, facts),
    }
}

/// A run's register operations, cas-register model, keys absent at the start.
fn check_run(history: &History, facts: &RunFacts) -> CheckerResult {
    let mut parts = RunParts::new(facts);
    parts.absorb(history);
    Box::new(parts).finish()
}

/// A run's linearizability, one part of its history at a time ([`Streaming::ByKey`]).
struct RunParts(KeyParts);

impl RunParts {
    /// The run's budgets (`facts.options`), under cas-register with keys absent.
    fn new(facts: &RunFacts) -> RunParts {
        let opts = LinearizableOptions {
            model: Model::CasRegister,
            initial: serde_json::Value::Null,
            ..facts.options.linearizable.clone()
        };
        RunParts(KeyParts::new(opts).only(RUN_REGISTER_FNS))
    }
}

fn run_parts(facts: &RunFacts) -> Box<dyn PartCheck> {
    Box::new(RunParts::new(facts))
}

impl PartCheck for RunParts {
    /// The part's register ops are searched; each witness's proven cause comes from the
    /// whole part (nemesis events included).
    fn absorb(&mut self, part: &History) {
        self.0.absorb(part, |witnesses| {
            let initial = serde_json::Value::Null;
            stale_read::annotate_each(part, &initial, witnesses.iter_mut().map(|w| &mut **w));
        });
    }

    fn finish(self: Box<Self>) -> CheckerResult {
        let mut result = self.0.finish();
        stale_read::count_stale_keys(&mut result);
        result
    }
}

fn check_bare(history: &History, facts: &RunFacts, model: Model) -> CheckerResult {
    let opts = LinearizableOptions {
        model,
        initial: facts.options.initial.clone(),
        ..facts.options.linearizable.clone()
    };
    let mut result = check(history, &opts);
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
