//! Client calls paired with their completions: the shape the model checkers (`zset`,
//! `queue`) read a history in.
//!
//! Invariants: calls are in invoke order; a completion belongs to the latest invoke of its
//! process (the history format's rule); a call that never completed has no completion and
//! counts as indeterminate. A completion without a pending invoke is an error naming its
//! index, never a panic.

use crate::history::{History, Op, OpType, Process};
use rustc_hash::FxHashMap;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Fail,
    /// `info`, or no completion at all: it may take effect at any time after its invoke.
    Indeterminate,
}

/// One client call of the functions asked for.
#[derive(Debug, Clone, Copy)]
pub struct Call<'h> {
    pub invoke: &'h Op,
    pub complete: Option<&'h Op>,
    pub outcome: Outcome,
}

impl Call<'_> {
    /// The history index after which the call surely took effect (if it did): its `ok`
    /// completion; `u64::MAX` for an indeterminate call, which may take effect any time.
    pub fn done_by(&self) -> u64 {
        match (self.outcome, self.complete) {
            (Outcome::Ok, Some(c)) | (Outcome::Fail, Some(c)) => c.index,
            _ => u64::MAX,
        }
    }

    /// The index of its completion, or of its invoke when it never completed.
    pub fn last_index(&self) -> u64 {
        self.complete.map_or(self.invoke.index, |c| c.index)
    }

    /// The time span the call was in flight, in nanoseconds (to the end when it never
    /// completed).
    pub fn span(&self) -> (u64, u64) {
        (self.invoke.time, self.complete.map_or(u64::MAX, |c| c.time))
    }
}

/// The client calls of `functions` in `history`, in invoke order.
pub fn pair<'h>(history: &'h History, functions: &[&str]) -> Result<Vec<Call<'h>>, String> {
    let mut calls: Vec<Call<'h>> = Vec::new();
    let mut pending: FxHashMap<u64, usize> = FxHashMap::default();
    for op in &history.ops {
        let Process::Client(p) = op.process else {
            continue;
        };
        if !functions.contains(&op.f.as_str()) {
            continue;
        }
        if op.kind == OpType::Invoke {
            pending.insert(p, calls.len());
            calls.push(Call {
                invoke: op,
                complete: None,
                outcome: Outcome::Indeterminate,
            });
            continue;
        }
        let Some(at) = pending.remove(&p) else {
            return Err(format!(
                "op {}: `{}` completion of process {p} without a pending invoke",
                op.index, op.f
            ));
        };
        if calls[at].invoke.f != op.f {
            return Err(format!(
                "op {}: `{}` completes process {p}'s `{}` (op {})",
                op.index, op.f, calls[at].invoke.f, calls[at].invoke.index
            ));
        }
        calls[at].complete = Some(op);
        calls[at].outcome = match op.kind {
            OpType::Ok => Outcome::Ok,
            OpType::Fail => Outcome::Fail,
            _ => Outcome::Indeterminate,
        };
    }
    Ok(calls)
}
