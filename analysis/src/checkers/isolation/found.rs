//! What the per-workload analyses hand to the checker: non-cycle anomalies with their
//! witnesses, the data edges of the dependency graph, and the gaps in the evidence.
//!
//! A witness is a JSON object with at least `type` and `why` (a sentence); transactions
//! appear as `{"txn": <op index of the completion>, "process": p, "value": [...]}`.

use super::graph::{Edge, EdgeKind};
use super::txns::{Sc, Txns};
use serde_json::{json, Value};

/// An anomaly that is not a cycle: its Elle name and its witness.
#[derive(Clone, Debug)]
pub struct Anomaly {
    pub name: &'static str,
    pub witness: Value,
}

/// The result of one workload's analysis (list-append or rw-register).
#[derive(Default)]
pub struct Analysis {
    pub anomalies: Vec<Anomaly>,
    pub edges: Vec<Edge>,
    /// Keys (ids) written by a committed txn and never read by one.
    pub unread_keys: Vec<u32>,
    /// Why the evidence cannot decide (duplicate appends, ...): makes a valid verdict unknown.
    pub problems: Vec<String>,
    /// Why a history with no proscribed anomaly still cannot be called valid (a key whose
    /// version order is unknown, ...): makes a valid verdict unknown, never an invalid one.
    pub uncertain: Vec<String>,
    /// What could not be inferred, for `details`.
    pub notes: Vec<String>,
}

/// Explains a data edge for a witness: the key and a sentence.
pub trait Explain {
    fn explain(&self, txns: &Txns, from: u32, to: u32, kind: EdgeKind) -> (Option<Value>, String);
}

/// `T<index>`: a transaction's name in sentences.
pub fn tname(txns: &Txns, t: u32) -> String {
    format!("T{}", txns.txns[t as usize].index())
}

/// A transaction as witnesses show it.
pub fn txn_json(txns: &Txns, t: u32) -> Value {
    let x = &txns.txns[t as usize];
    json!({"txn": x.index(), "process": x.process, "value": txns.value_json(t)})
}

/// A list as Elle prints it: `[1 2 3]`.
pub fn show_list<'a>(items: impl Iterator<Item = Sc<'a>>) -> String {
    let parts: Vec<String> = items.map(|e| e.to_string()).collect();
    format!("[{}]", parts.join(" "))
}
