//! Acknowledged client operations: each `ok` completion paired with its invoke.
//!
//! A process runs one operation at a time, so a completion belongs to the latest invoke of
//! the same process. Only acknowledged (`ok`) operations carry authority claims; `fail`
//! took no effect and `info` may or may not have.

use crate::history::{CommitMeta, History, OpType, Process};
use crate::ops;
use rustc_hash::FxHashMap;

/// Functions that change the store (`stale-write`: a write sent straight to a group under
/// the epoch a stale client still holds).
pub const WRITE_FNS: &[&str] = &[
    ops::WRITE,
    ops::PUT,
    ops::CAS,
    ops::ADD,
    ops::DELETE,
    ops::APPEND,
    ops::INSERT,
    ops::STALE_WRITE,
];

/// How the history's stale writes ended: attempted (invoked), acknowledged (`ok`),
/// rejected (`fail`), indeterminate (`info`, or never completed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StaleWriteCounts {
    pub attempted: u64,
    pub acknowledged: u64,
    pub rejected: u64,
    pub indeterminate: u64,
}

fn stale_writes(history: &History) -> impl Iterator<Item = &crate::history::Op> {
    history
        .ops
        .iter()
        .filter(|o| o.process.client().is_some() && o.f == ops::STALE_WRITE)
}

/// History indices of the acknowledged (`ok`) stale-write completions.
pub fn stale_write_oks(history: &History) -> impl Iterator<Item = u64> + '_ {
    stale_writes(history)
        .filter(|o| o.kind == OpType::Ok)
        .map(|o| o.index)
}

pub fn stale_write_counts(history: &History) -> StaleWriteCounts {
    let mut c = StaleWriteCounts::default();
    for op in stale_writes(history) {
        match op.kind {
            OpType::Invoke => c.attempted += 1,
            OpType::Ok => c.acknowledged += 1,
            OpType::Fail => c.rejected += 1,
            OpType::Info => {}
        }
    }
    c.indeterminate = c.attempted.saturating_sub(c.acknowledged + c.rejected);
    c
}

/// One acknowledged client operation.
#[derive(Debug, Clone, Copy)]
pub struct AckedOp<'h> {
    pub process: u64,
    pub f: &'h str,
    pub key: Option<&'h str>,
    /// History `index` of the invoke (the completion's own when no invoke was recorded).
    pub invoke_index: u64,
    pub invoke_time: u64,
    /// History `index` of the `ok` completion.
    pub index: u64,
    pub meta: Option<&'h CommitMeta>,
    pub is_write: bool,
}

/// Every acknowledged client operation of `history`, in completion order.
pub fn acknowledged_ops(history: &History) -> Vec<AckedOp<'_>> {
    let mut open: FxHashMap<u64, usize> = FxHashMap::default();
    let mut acked = Vec::new();
    for (pos, op) in history.ops.iter().enumerate() {
        let Process::Client(process) = op.process else {
            continue;
        };
        if op.kind == OpType::Invoke {
            open.insert(process, pos);
            continue;
        }
        let invoke = open.remove(&process).map(|p| &history.ops[p]);
        if op.kind != OpType::Ok {
            continue;
        }
        let key = op
            .key
            .as_deref()
            .or_else(|| invoke.and_then(|i| i.key.as_deref()));
        acked.push(AckedOp {
            process,
            f: op.f.as_str(),
            key,
            invoke_index: invoke.map_or(op.index, |i| i.index),
            invoke_time: invoke.map_or(op.time, |i| i.time),
            index: op.index,
            meta: op.meta.as_deref(),
            is_write: WRITE_FNS.contains(&op.f.as_str()),
        });
    }
    acked
}
