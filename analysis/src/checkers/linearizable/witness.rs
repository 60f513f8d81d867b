//! The failure witness of a key: what a person needs to find the bug — the key, the op
//! that could not be linearized, the longest linearizable prefix the search found (ops by
//! history index, with times), the state it leaves the key in, and the ops concurrent
//! with the culprit.

use super::model::Action;
use super::prepare::{KeyHistory, PreparedOp};
use super::search::Failure;
use crate::history::History;
use serde_json::{json, Value};

/// At most this many prefix ops (the last ones) are listed.
const PREFIX_SHOWN: usize = 64;
/// At most this many concurrent ops are listed (those invoked closest to the culprit).
const CONCURRENT_SHOWN: usize = 24;

/// Builds the anomaly object for a non-linearizable key.
pub fn witness(
    history: &History,
    key: &KeyHistory,
    failure: &Failure,
    state_after: Value,
) -> Value {
    let stuck = &key.ops[failure.stuck_op as usize];
    let shown_from = failure.best.len().saturating_sub(PREFIX_SHOWN);
    let prefix: Vec<Value> = failure.best[shown_from..]
        .iter()
        .map(|&i| op_json(history, &key.ops[i as usize]))
        .collect();
    let in_prefix = {
        let mut s = fixedbitset::FixedBitSet::with_capacity(key.ops.len());
        failure.best.iter().for_each(|&i| s.insert(i as usize));
        s
    };
    let concurrent = concurrent_ops(history, key, failure.stuck_op, |i| in_prefix.contains(i));
    let culprit = op_json(history, stuck);
    json!({
        "type": "not-linearizable",
        "key": key.key,
        "op": culprit,
        "explanation": explanation(history, stuck, &state_after),
        "state_after_prefix": state_after,
        "prefix_length": failure.best.len(),
        "prefix_truncated": shown_from > 0,
        "prefix": prefix,
        "concurrent": concurrent,
    })
}

/// The ops of `key` overlapping op `stuck` in real time (those invoked closest to it),
/// in call order, each marked with `in_prefix`.
pub(super) fn concurrent_ops(
    history: &History,
    key: &KeyHistory,
    stuck: u32,
    in_prefix: impl Fn(usize) -> bool,
) -> Vec<Value> {
    let culprit = &key.ops[stuck as usize];
    let mut concurrent: Vec<(usize, &PreparedOp)> = key
        .ops
        .iter()
        .enumerate()
        .filter(|(i, o)| *i != stuck as usize && overlaps(o, culprit))
        .collect();
    concurrent.sort_by_key(|(_, o)| o.call.abs_diff(culprit.call));
    concurrent.truncate(CONCURRENT_SHOWN);
    concurrent.sort_by_key(|(_, o)| o.call);
    concurrent
        .into_iter()
        .map(|(i, o)| {
            let mut v = op_json(history, o);
            v["in_prefix"] = in_prefix(i).into();
            v
        })
        .collect()
}

/// Two ops overlap in real time if each was invoked before the other returned.
fn overlaps(a: &PreparedOp, b: &PreparedOp) -> bool {
    a.call < b.ret && b.call < a.ret
}

pub(super) fn op_json(history: &History, op: &PreparedOp) -> Value {
    let invoke = &history.ops[op.call as usize];
    let mut v = json!({
        "index": invoke.index,
        "process": invoke.process,
        "f": invoke.f,
        "value": invoke.value,
        "time": invoke.time,
    });
    if op.is_determinate() {
        let done = &history.ops[op.ret as usize];
        v["completion_index"] = done.index.into();
        v["completion_time"] = done.time.into();
        v["result"] = done.value.clone();
    } else {
        v["outcome"] = "indeterminate".into();
    }
    v
}

fn explanation(history: &History, stuck: &PreparedOp, state_after: &Value) -> String {
    let invoke = &history.ops[stuck.call as usize];
    let what = match stuck.action {
        Action::Read(_) => format!(
            "{} returned {}",
            invoke.f,
            history
                .ops
                .get(stuck.ret as usize)
                .map(|c| c.value.to_string())
                .unwrap_or_default()
        ),
        Action::Cas { .. } => format!("cas {} succeeded", invoke.value),
        _ => format!("{} {} completed", invoke.f, invoke.value),
    };
    format!(
        "op index {} ({what}) cannot be linearized: no order of the ops before its completion allows it; \
         the longest linearizable prefix leaves the value at {state_after}",
        invoke.index
    )
}
