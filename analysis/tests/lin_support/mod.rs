//! Shared support of the linearizability checker tests: hand-written histories, one line
//! per entry `(process, type, f, key, value)` (a negative process meaning the nemesis), and
//! the brute-force oracle of the property tests — every order of every allowed subset of
//! ops, against a cas-register (`read`, `write`, `cas`) that also knows the kv model's
//! `append` (absent counts as the empty string). The oracle is exponential; only for
//! histories of about ten ops.
#![allow(dead_code)]

use analysis::history::{History, Op, OpType, Process};
use serde_json::Value;

/// One history line: process, type, f, key, value.
pub type Line<'a> = (i64, &'a str, &'a str, Option<&'a str>, Value);

/// The history of `lines`, entry `i` at index `i` and time `1000 * i`.
pub fn history(lines: &[Line]) -> History {
    let ops = lines
        .iter()
        .enumerate()
        .map(|(i, (p, t, f, key, value))| Op {
            index: i as u64,
            kind: match *t {
                "invoke" => OpType::Invoke,
                "ok" => OpType::Ok,
                "fail" => OpType::Fail,
                _ => OpType::Info,
            },
            process: if *p < 0 {
                Process::Nemesis
            } else {
                Process::Client(*p as u64)
            },
            f: (*f).into(),
            key: key.map(Into::into),
            value: value.clone(),
            time: 1000 * i as u64,
            node: None,
            error: None,
            meta: None,
        })
        .collect();
    History::new(ops)
}

/// One op as the oracle sees it: kind, values, outcome, positions.
#[derive(Clone, Debug)]
pub struct Rec {
    pub f: &'static str,
    pub value: Value,
    pub outcome: OpType,
    pub read: Value,
    pub call: usize,
    pub ret: usize,
}

/// The ops the oracle must place (`true`) or may place or leave out (`false`).
pub fn oracle_ops(recs: &[Rec]) -> Vec<(Rec, bool)> {
    recs.iter()
        .filter(|r| r.outcome != OpType::Fail && !(r.f == "read" && r.outcome != OpType::Ok))
        .map(|r| (r.clone(), r.outcome == OpType::Ok))
        .collect()
}

fn step(state: &Value, r: &Rec) -> Option<Value> {
    match r.f {
        "read" => (r.read == *state).then(|| state.clone()),
        "write" => Some(r.value.clone()),
        "append" => Some(Value::String(format!(
            "{}{}",
            state.as_str().unwrap_or(""),
            r.value.as_str().unwrap_or("")
        ))),
        _ if r.value[0] == *state => Some(r.value[1].clone()),
        _ if r.outcome == OpType::Info => Some(state.clone()),
        _ => None,
    }
}

/// Exhaustive search: extend the order with any op that no unplaced determinate op must
/// precede (returned before its call); indeterminate ops may also stay out forever.
pub fn oracle(ops: &[(Rec, bool)], placed: &mut Vec<bool>, state: &Value) -> bool {
    let all_required_placed = ops
        .iter()
        .zip(placed.iter())
        .all(|((_, required), p)| *p || !required);
    if all_required_placed {
        return true;
    }
    for i in 0..ops.len() {
        if placed[i] {
            continue;
        }
        let call = ops[i].0.call;
        let blocked = ops
            .iter()
            .zip(placed.iter())
            .any(|((r, required), p)| !p && *required && r.ret < call);
        if blocked {
            continue;
        }
        if let Some(next) = step(state, &ops[i].0) {
            placed[i] = true;
            let ok = oracle(ops, placed, &next);
            placed[i] = false;
            if ok {
                return true;
            }
        }
    }
    false
}

/// Whether the oracle finds a linearization of `recs` from `initial`.
pub fn linearizable(recs: &[Rec], initial: &Value) -> bool {
    let ops = oracle_ops(recs);
    oracle(&ops, &mut vec![false; ops.len()], initial)
}
