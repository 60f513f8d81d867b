//! The injected anomalies: for each [`TxnAnomaly`], a few transactions on two fresh keys
//! `x` and `y`, the order of their invocations and completions, and a sentence naming
//! them.
//!
//! Each scenario is provable on its own: its keys are touched by nothing else, all its
//! transactions complete `ok` (G1a's writer `fail`s), and no serial order of them explains
//! what they read (for `realtime`: none that also respects real time). An observer that
//! reads the keys' final state after the others completed makes every committed write
//! visible, so the checker can infer the version order (list-append) and an unread write
//! is never mistaken for a lost one.
//!
//! list-append and rw-register share the scenarios: a read is described by the writes it
//! saw, in order; list-append returns that list, rw-register its last element (or `null`).
//! rw-register's G0 alone differs (its version order must come from reads followed by
//! writes, since registers do not keep history).

use super::{Mop, Outcome, Seen, TxnAnomaly};
use crate::history::txn::TxnModel;

/// One scenario transaction: its micro-ops, what its reads saw (in order) and its end.
pub(super) struct PlannedTxn {
    pub mops: Vec<Mop>,
    pub seen: Vec<Seen>,
    pub outcome: Outcome,
}

/// An entry of the scenario, by transaction number.
#[derive(Clone, Copy, Debug)]
pub(super) enum Event {
    Invoke(usize),
    Complete(usize),
}

pub(super) struct Plan {
    pub txns: Vec<PlannedTxn>,
    pub order: Vec<Event>,
}

/// Where a played scenario transaction landed: its process and its completion's index.
#[derive(Clone, Copy, Debug)]
pub(super) struct TxnRef {
    pub process: u64,
    pub index: u64,
}

/// Builds transactions for one model.
struct Builder {
    model: TxnModel,
}

/// A micro-op of a scenario: write `v`, or read and see the writes listed.
enum Step<'a> {
    W(u64, i64),
    R(u64, &'a [i64]),
}

impl Builder {
    fn txn(&self, steps: &[Step], outcome: Outcome) -> PlannedTxn {
        let mut mops = Vec::with_capacity(steps.len());
        let mut seen = Vec::new();
        for s in steps {
            match *s {
                Step::W(k, v) => mops.push(match self.model {
                    TxnModel::ListAppend => Mop::Append(k, v),
                    TxnModel::RwRegister => Mop::Write(k, v),
                }),
                Step::R(k, writes) => {
                    mops.push(Mop::Read(k));
                    seen.push(match self.model {
                        TxnModel::ListAppend => Seen::List(writes.to_vec()),
                        TxnModel::RwRegister => Seen::Reg(writes.last().copied()),
                    });
                }
            }
        }
        PlannedTxn {
            mops,
            seen,
            outcome,
        }
    }

    fn ok(&self, steps: &[Step]) -> PlannedTxn {
        self.txn(steps, Outcome::Ok)
    }
}

use Event::{Complete as C, Invoke as I};
use Step::{R, W};

/// Two writers overlapping, then an observer.
const OVERLAP_THEN_OBSERVE: [Event; 6] = [I(0), I(1), C(0), C(1), I(2), C(2)];
/// Strictly one after another.
const SEQUENTIAL_3: [Event; 6] = [I(0), C(0), I(1), C(1), I(2), C(2)];

/// The scenario of `anomaly` on keys `[x, y]`. `TxnAnomaly::None` has no transactions.
pub(super) fn plan(anomaly: TxnAnomaly, model: TxnModel, [x, y]: [u64; 2]) -> Plan {
    let b = Builder { model };
    let (txns, order): (Vec<PlannedTxn>, &[Event]) = match anomaly {
        TxnAnomaly::None => (vec![], &[]),
        TxnAnomaly::G0 if model == TxnModel::RwRegister => (
            vec![
                b.ok(&[W(x, 1), R(y, &[2]), W(y, 1)]),
                b.ok(&[W(y, 2), R(x, &[1]), W(x, 2)]),
                b.ok(&[R(x, &[1, 2]), R(y, &[2, 1])]),
            ],
            &OVERLAP_THEN_OBSERVE,
        ),
        TxnAnomaly::G0 => (
            vec![
                b.ok(&[W(x, 1), W(y, 1)]),
                b.ok(&[W(x, 2), W(y, 2)]),
                b.ok(&[R(x, &[1, 2]), R(y, &[2, 1])]),
            ],
            &OVERLAP_THEN_OBSERVE,
        ),
        TxnAnomaly::G1a => (
            vec![b.txn(&[W(x, 1)], Outcome::Fail), b.ok(&[R(x, &[1])])],
            &[I(0), C(0), I(1), C(1)],
        ),
        TxnAnomaly::G1b => (
            vec![
                b.ok(&[W(x, 1), W(x, 2)]),
                b.ok(&[R(x, &[1])]),
                b.ok(&[R(x, &[1, 2])]),
            ],
            &[I(0), I(1), C(1), C(0), I(2), C(2)],
        ),
        TxnAnomaly::G1c => (
            vec![
                b.ok(&[W(x, 1), R(y, &[1])]),
                b.ok(&[W(y, 1), R(x, &[1])]),
                b.ok(&[R(x, &[1]), R(y, &[1])]),
            ],
            &OVERLAP_THEN_OBSERVE,
        ),
        TxnAnomaly::GSingle => (
            vec![
                b.ok(&[W(x, 1), W(y, 1)]),
                b.ok(&[R(x, &[]), R(y, &[1])]),
                b.ok(&[R(x, &[1]), R(y, &[1])]),
            ],
            &[I(0), I(1), C(1), C(0), I(2), C(2)],
        ),
        TxnAnomaly::G2Item => (
            vec![
                b.ok(&[R(x, &[]), W(y, 1)]),
                b.ok(&[R(y, &[]), W(x, 1)]),
                b.ok(&[R(x, &[1]), R(y, &[1])]),
            ],
            &OVERLAP_THEN_OBSERVE,
        ),
        TxnAnomaly::LostUpdate => (
            vec![
                b.ok(&[R(x, &[]), W(x, 1)]),
                b.ok(&[R(x, &[]), W(x, 2)]),
                b.ok(&[R(x, &[1, 2])]),
            ],
            &OVERLAP_THEN_OBSERVE,
        ),
        TxnAnomaly::Internal => (
            vec![b.ok(&[W(x, 1), R(x, &[])]), b.ok(&[R(x, &[1])])],
            &[I(0), C(0), I(1), C(1)],
        ),
        TxnAnomaly::DuplicateElements => (
            vec![
                b.ok(&[W(x, 1)]),
                b.ok(&[R(x, &[1, 1])]),
                b.ok(&[R(x, &[1])]),
            ],
            &SEQUENTIAL_3,
        ),
        TxnAnomaly::Realtime => (
            vec![b.ok(&[W(x, 1)]), b.ok(&[R(x, &[])]), b.ok(&[R(x, &[1])])],
            &SEQUENTIAL_3,
        ),
    };
    Plan {
        txns,
        order: order.to_vec(),
    }
}

/// The sentence `injected` carries: the class, the keys and the transactions by process
/// and completion index.
pub(super) fn describe(
    anomaly: TxnAnomaly,
    model: TxnModel,
    [x, y]: [u64; 2],
    t: &[TxnRef],
) -> String {
    let who = |i: usize| {
        format!(
            "process {}'s txn (completed at index {})",
            t[i].process, t[i].index
        )
    };
    let wrote = match model {
        TxnModel::ListAppend => "appended",
        TxnModel::RwRegister => "wrote",
    };
    let empty = match model {
        TxnModel::ListAppend => "[]",
        TxnModel::RwRegister => "null",
    };
    let observer = |i: usize| format!("; {} read the final state", who(i));
    match anomaly {
        TxnAnomaly::None => String::new(),
        TxnAnomaly::G0 => format!(
            "G0 (write cycle) on keys {x} and {y}: {} {wrote} 1 to both and {} {wrote} 2 to both, \
             installed in opposite orders on the two keys{}",
            who(0),
            who(1),
            observer(2)
        ),
        TxnAnomaly::G1a => format!("G1a (aborted read) on key {x}: {} read the 1 that failed {} {wrote}", who(1), who(0)),
        TxnAnomaly::G1b => format!(
            "G1b (intermediate read) on key {x}: {} read the 1 that {} {wrote} before its own 2{}",
            who(1),
            who(0),
            observer(2)
        ),
        TxnAnomaly::G1c => format!(
            "G1c (circular information flow) on keys {x} and {y}: {} {wrote} {x} and read the other's {y}, \
             {} {wrote} {y} and read the other's {x}{}",
            who(0),
            who(1),
            observer(2)
        ),
        TxnAnomaly::GSingle => format!(
            "G-single (read skew) on keys {x} and {y}: {} {wrote} 1 to both; {} read {x} = {empty} but {y} \
             with the 1{}",
            who(0),
            who(1),
            observer(2)
        ),
        TxnAnomaly::G2Item => format!(
            "G2-item (write skew) on keys {x} and {y}: {} read {x} = {empty} and {wrote} {y}; {} read {y} = \
             {empty} and {wrote} {x}{}",
            who(0),
            who(1),
            observer(2)
        ),
        TxnAnomaly::LostUpdate => format!(
            "lost-update on key {x}: {} and {} both read {x} = {empty} and both {wrote} to it{}",
            who(0),
            who(1),
            observer(2)
        ),
        TxnAnomaly::Internal => format!(
            "internal on key {x}: {} {wrote} 1 and then read {x} = {empty}{}",
            who(0),
            observer(1)
        ),
        TxnAnomaly::DuplicateElements => format!(
            "duplicate-elements on key {x}: {} read [1, 1] after {} appended 1 once{}",
            who(1),
            who(0),
            observer(2)
        ),
        TxnAnomaly::Realtime => format!(
            "realtime on key {x}: {} read {x} = {empty} although it began after {} {wrote} 1 and completed{}",
            who(1),
            who(0),
            observer(2)
        ),
    }
}
