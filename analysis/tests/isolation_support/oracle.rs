//! A brute-force serializability oracle for small transaction histories, independent of
//! the checker under test (it parses the ops' JSON itself).
//!
//! A history is serializable iff some serial order of its committed (`ok`) transactions,
//! plus any subset of its indeterminate ones (`info`, or an invocation never completed),
//! explains every value an `ok` transaction read, replaying the micro-ops one after the
//! other from empty lists / absent registers. `fail`ed transactions take no effect.
//! Orders may be restricted:
//! - real time (strict serializability): a transaction that completed `ok` before another
//!   was invoked comes first;
//! - process order (strong session serializability): a process's `ok` transactions come
//!   in the order it ran them (Elle's process graph links `ok` completions only).
//!
//! The search is a depth-first enumeration that places one transaction at a time, checks
//! its reads at once and prunes on the first mismatch, with a memo of failed
//! (placed set, state) pairs. Exponential: meant for about ten transactions.
//!
//! Reads: list-append reads return the whole list (`null` on an `ok` = unknown, not
//! checked); rw-register reads return the value or `null` for "never written". An `info`
//! transaction's reads are never checked.

use analysis::history::{History, OpType, Process};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Which workload's read semantics apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    ListAppend,
    RwRegister,
}

/// Which orders a serial order must respect besides the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restrict {
    pub realtime: bool,
    pub process: bool,
}

pub const SERIALIZABLE: Restrict = Restrict {
    realtime: false,
    process: false,
};
pub const STRONG_SESSION: Restrict = Restrict {
    realtime: false,
    process: true,
};
pub const STRICT: Restrict = Restrict {
    realtime: true,
    process: false,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Committed,
    Indeterminate,
    Failed,
}

#[derive(Clone, Debug, PartialEq)]
pub enum OMop {
    Append(String, Value),
    Write(String, Value),
    /// The key and what the read returned (`None`: not known).
    Read(String, Option<Value>),
}

/// One transaction: its fate, its process, the history positions of its invocation and
/// completion, and its micro-ops (with read results when `ok`).
#[derive(Clone, Debug)]
pub struct OTxn {
    pub fate: Fate,
    pub process: u64,
    pub invoke: usize,
    pub complete: Option<usize>,
    pub mops: Vec<OMop>,
}

fn key_of(v: &Value) -> String {
    v.to_string()
}

fn parse_mops(value: &Value, with_reads: bool) -> Vec<OMop> {
    let items = value.as_array().expect("txn value is a list");
    items
        .iter()
        .map(|m| {
            let m = m.as_array().expect("micro-op is [f, k, v]");
            let k = key_of(&m[1]);
            match m[0].as_str().expect("micro-op function is a string") {
                "append" => OMop::Append(k, m[2].clone()),
                "w" => OMop::Write(k, m[2].clone()),
                "r" => OMop::Read(k, with_reads.then(|| m[2].clone())),
                other => panic!("unknown micro-op {other}"),
            }
        })
        .collect()
}

/// Pairs each client invocation with its completion (the next completion of its process).
pub fn transactions(history: &History) -> Vec<OTxn> {
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut txns: Vec<OTxn> = Vec::new();
    for (pos, op) in history.ops.iter().enumerate() {
        let Process::Client(p) = op.process else {
            continue;
        };
        match op.kind {
            OpType::Invoke => {
                open.insert(p, txns.len());
                txns.push(OTxn {
                    fate: Fate::Indeterminate,
                    process: p,
                    invoke: pos,
                    complete: None,
                    mops: parse_mops(&op.value, false),
                });
            }
            kind => {
                let i = open
                    .remove(&p)
                    .expect("a completion follows its invocation");
                let t = &mut txns[i];
                t.complete = Some(pos);
                match kind {
                    OpType::Ok => {
                        t.fate = Fate::Committed;
                        t.mops = parse_mops(&op.value, true);
                    }
                    OpType::Fail => t.fate = Fate::Failed,
                    _ => t.fate = Fate::Indeterminate,
                }
            }
        }
    }
    txns
}

/// The store's state during the replay: per key, the list (list-append) or the register.
type State = BTreeMap<String, Value>;

fn read_value(workload: Workload, state: &State, k: &str) -> Value {
    match (state.get(k), workload) {
        (Some(v), _) => v.clone(),
        (None, Workload::ListAppend) => Value::Array(vec![]),
        (None, Workload::RwRegister) => Value::Null,
    }
}

/// Applies a transaction to `state`; false if one of its (checked) reads disagrees.
fn replay(workload: Workload, t: &OTxn, state: &mut State) -> bool {
    for m in &t.mops {
        match m {
            OMop::Append(k, v) => {
                let list = state
                    .entry(k.clone())
                    .or_insert_with(|| Value::Array(vec![]));
                list.as_array_mut()
                    .expect("append to a list")
                    .push(v.clone());
            }
            OMop::Write(k, v) => {
                state.insert(k.clone(), v.clone());
            }
            OMop::Read(k, seen) => {
                let check = t.fate == Fate::Committed;
                match seen {
                    Some(Value::Null) if workload == Workload::ListAppend => {}
                    Some(v) if check && *v != read_value(workload, state, k) => return false,
                    _ => {}
                }
            }
        }
    }
    true
}

struct Search<'a> {
    workload: Workload,
    txns: Vec<&'a OTxn>,
    /// For each transaction, the mask of those that must be placed before it.
    before: Vec<u64>,
    committed: u64,
    failed: HashSet<(u64, String)>,
}

impl Search<'_> {
    fn dfs(&mut self, placed: u64, state: &State) -> bool {
        if placed & self.committed == self.committed {
            return true;
        }
        let memo = (
            placed,
            serde_json::to_string(state).expect("state serialises"),
        );
        if self.failed.contains(&memo) {
            return false;
        }
        for i in 0..self.txns.len() {
            let bit = 1u64 << i;
            if placed & bit != 0 || self.before[i] & !placed != 0 {
                continue;
            }
            let mut next = state.clone();
            if replay(self.workload, self.txns[i], &mut next) && self.dfs(placed | bit, &next) {
                return true;
            }
        }
        self.failed.insert(memo);
        false
    }
}

/// Whether some serial order explains the history under `restrict`.
pub fn serializable(history: &History, workload: Workload, restrict: Restrict) -> bool {
    let all = transactions(history);
    let txns: Vec<&OTxn> = all.iter().filter(|t| t.fate != Fate::Failed).collect();
    assert!(txns.len() <= 63, "the oracle is for small histories");
    let mut before = vec![0u64; txns.len()];
    for (i, t) in txns.iter().enumerate() {
        for (j, u) in txns.iter().enumerate() {
            if i == j || u.fate != Fate::Committed {
                continue;
            }
            let rt = restrict.realtime && u.complete.is_some_and(|c| c < t.invoke);
            let po = restrict.process
                && t.fate == Fate::Committed
                && u.process == t.process
                && u.invoke < t.invoke;
            if rt || po {
                before[i] |= 1 << j;
            }
        }
    }
    let committed = txns
        .iter()
        .enumerate()
        .filter(|(_, t)| t.fate == Fate::Committed)
        .fold(0u64, |m, (i, _)| m | 1 << i);
    let mut search = Search {
        workload,
        txns,
        before,
        committed,
        failed: HashSet::new(),
    };
    search.dfs(0, &State::new())
}
