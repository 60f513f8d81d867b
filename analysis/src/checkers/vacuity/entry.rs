//! The vacuity checker's registry entry: it judges every run, and a file in which a fault
//! started.

use super::{check, judge, writes, ClientFold, VacuityOptions, NAME};
use crate::checkers::registry::{rules, Applies, Basis, Checker, FoldCheck, RunFacts, Streaming};
use crate::history::{History, Op};
use crate::verdict::CheckerResult;

pub const CHECKER: Checker =
    Checker::of_run(NAME, true, applies, check_history).streams(Streaming::Fold(fold));

/// A run: always — besides the requested faults it catches a run with no acknowledged op,
/// which every other checker may rightly call valid. Evidence: when a fault started.
fn applies(facts: &RunFacts) -> Applies {
    rules::yes_or_omitted(facts.basis == Basis::Run || !facts.nemesis.is_empty())
}

/// Each requested fault took effect at least once (otherwise the run tested nothing).
fn check_history(history: &History, facts: &RunFacts) -> CheckerResult {
    check(history, &options(facts))
}

fn options(facts: &RunFacts) -> VacuityOptions {
    VacuityOptions {
        nemesis: facts.nemesis.clone(),
        ..Default::default()
    }
}

/// The guard as a fold over a history too large to hold ([`Streaming::Fold`]).
struct Fold {
    events: History,
    clients: ClientFold,
    opts: VacuityOptions,
}

fn fold(facts: &RunFacts, events: &History) -> Box<dyn FoldCheck> {
    Box::new(Fold {
        events: History::new(events.ops.clone()),
        clients: ClientFold::new(events),
        opts: options(facts),
    })
}

impl FoldCheck for Fold {
    fn observe(&mut self, op: &Op) {
        let is_write = op.process.client().is_some() && writes(op, &op.value);
        self.clients.observe(op, is_write);
    }

    fn finish(self: Box<Self>) -> CheckerResult {
        judge(&self.events, &self.clients, &self.opts)
    }
}
