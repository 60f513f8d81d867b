//! Cycle witnesses: a cycle as its transactions and its steps, one sentence per step.
//!
//! Format (`docs/checkers.md` § isolation): `{"type", "cycle": [txn...], "steps": [{"from",
//! "to", "kind", "key"?, "why"}], "why"}` where txns are `{"txn", "process", "value"}` and
//! `from`/`to` are op indices (the completion's). Runs through realtime time points are
//! folded into one realtime step between transactions.

use super::cycles::{fold_steps, Cycle};
use super::found::{tname, txn_json, Explain};
use super::graph::{EdgeKind, Graph};
use super::txns::Txns;
use serde_json::{json, Value};

pub fn cycle_witness(txns: &Txns, g: &Graph, explain: &dyn Explain, cycle: &Cycle) -> Value {
    let steps = fold_steps(g, &cycle.steps);
    let mut txn_list = Vec::new();
    let mut step_list = Vec::new();
    let mut sentences = Vec::new();
    for &(a, b, kind) in &steps {
        txn_list.push(txn_json(txns, a));
        let (key, why) = match kind {
            EdgeKind::Process => (None, process_sentence(txns, a, b)),
            EdgeKind::Realtime => (None, realtime_sentence(txns, a, b)),
            _ => explain.explain(txns, a, b, kind),
        };
        let mut step = json!({
            "from": txns.txns[a as usize].index(), "to": txns.txns[b as usize].index(),
            "kind": kind.as_str(), "why": why,
        });
        if let Some(k) = key {
            step["key"] = k;
        }
        sentences.push(why);
        step_list.push(step);
    }
    let names: Vec<String> = steps.iter().map(|(a, _, _)| tname(txns, *a)).collect();
    json!({
        "type": cycle.name,
        "cycle": txn_list,
        "steps": step_list,
        "why": format!("{}: a cycle {} -> {}. {}", cycle.name, names.join(" -> "), names[0], sentences.join("; ")),
    })
}

fn process_sentence(txns: &Txns, a: u32, b: u32) -> String {
    format!(
        "{} and {} ran in this order on process {}: process",
        tname(txns, a),
        tname(txns, b),
        txns.txns[a as usize].process
    )
}

fn realtime_sentence(txns: &Txns, a: u32, b: u32) -> String {
    format!(
        "{} completed (op {}) before {} was invoked (op {}): realtime",
        tname(txns, a),
        txns.txns[a as usize].index(),
        tname(txns, b),
        txns.txns[b as usize].invoke
    )
}
