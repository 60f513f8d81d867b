//! One key's register operations, paired and reduced to what the stale-read proof needs:
//! writes (with the value they write and whether they were acknowledged, failed or are of
//! unknown outcome) and acknowledged reads (with the value they returned).
//!
//! Invariants: a completion belongs to the latest invoke of its process (a process runs
//! one op at a time); an op that never completed is of unknown outcome; times are the
//! history's nanoseconds. Ops of other keys, other processes (nemesis, watcher) and
//! functions that neither read nor write a register are skipped.

use crate::history::{History, Op, OpType, Process};
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::collections::BTreeMap;

/// How a write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Acked,
    Failed,
    /// `info` or never completed: it may have taken effect at any time after its invoke.
    Unknown,
}

/// A write (`write`/`put`, the new value of a `cas`, `delete` as a write of `null`).
#[derive(Debug, Clone)]
pub struct Write<'h> {
    pub invoke: &'h Op,
    pub done: Option<&'h Op>,
    pub value: Value,
    pub outcome: Outcome,
}

impl Write<'_> {
    /// Time of the acknowledgement, for acknowledged writes.
    pub fn ack_time(&self) -> Option<u64> {
        (self.outcome == Outcome::Acked).then(|| self.done.map_or(self.invoke.time, |d| d.time))
    }
}

/// An acknowledged read and the value it returned.
#[derive(Debug, Clone)]
pub struct Read<'h> {
    pub invoke: &'h Op,
    pub done: &'h Op,
}

impl Read<'_> {
    pub fn value(&self) -> &Value {
        &self.done.value
    }

    /// The node that served the read: the one the store reported in its commit metadata,
    /// else the node the client sent it to.
    pub fn served_by(&self) -> Option<&str> {
        let meta_node = self.done.meta.as_ref().and_then(|m| m.node.as_deref());
        meta_node
            .or(self.done.node.as_deref())
            .or(self.invoke.node.as_deref())
    }
}

/// The writes and acknowledged reads of one key, each list in invoke order.
#[derive(Debug, Default)]
pub struct KeyOps<'h> {
    pub writes: Vec<Write<'h>>,
    pub reads: Vec<Read<'h>>,
}

fn is_read(f: &str) -> bool {
    crate::ops::is_single_key_read(f)
}

/// The value an invoke of `f` writes, or `None` when `f` does not write a register.
fn written_value(op: &Op) -> Option<Value> {
    match op.f.as_str() {
        "write" | "put" => Some(op.value.clone()),
        "cas" | "compare-and-set" => op.value.get(1).cloned(),
        "delete" => Some(Value::Null),
        _ => None,
    }
}

type Pair<'h> = (&'h Op, Option<&'h Op>);

/// Every client invoke with its completion (`None` = never completed), in invoke order.
fn pairs(history: &History) -> Vec<Pair<'_>> {
    let mut open: FxHashMap<u64, &Op> = FxHashMap::default();
    let mut pairs: Vec<Pair> = Vec::new();
    for op in &history.ops {
        let Process::Client(process) = op.process else {
            continue;
        };
        if op.kind == OpType::Invoke {
            if let Some(previous) = open.insert(process, op) {
                pairs.push((previous, None));
            }
        } else if let Some(invoke) = open.remove(&process) {
            pairs.push((invoke, Some(op)));
        }
    }
    pairs.extend(open.into_values().map(|invoke| (invoke, None)));
    pairs.sort_by_key(|(invoke, _)| invoke.index);
    pairs
}

fn reduce<'h>(pairs: impl Iterator<Item = Pair<'h>>) -> KeyOps<'h> {
    let mut ops = KeyOps::default();
    for (invoke, done) in pairs {
        let kind = done.map(|d| d.kind);
        if is_read(&invoke.f) {
            if let (Some(done), Some(OpType::Ok)) = (done, kind) {
                ops.reads.push(Read { invoke, done });
            }
        } else if let Some(value) = written_value(invoke) {
            let outcome = match kind {
                Some(OpType::Ok) => Outcome::Acked,
                Some(OpType::Fail) => Outcome::Failed,
                _ => Outcome::Unknown,
            };
            ops.writes.push(Write {
                invoke,
                done,
                value,
                outcome,
            });
        }
    }
    ops
}

/// The register ops of `key` (`None` = the single register of a keyless history).
pub fn key_ops<'h>(history: &'h History, key: Option<&str>) -> KeyOps<'h> {
    reduce(
        pairs(history)
            .into_iter()
            .filter(|(i, _)| i.key.as_deref() == key),
    )
}

/// The register ops of every key, in key order.
pub fn all_keys(history: &History) -> BTreeMap<Option<&str>, KeyOps<'_>> {
    let mut by_key: BTreeMap<Option<&str>, Vec<Pair>> = BTreeMap::new();
    for pair in pairs(history) {
        by_key.entry(pair.0.key.as_deref()).or_default().push(pair);
    }
    by_key
        .into_iter()
        .map(|(k, p)| (k, reduce(p.into_iter())))
        .collect()
}
