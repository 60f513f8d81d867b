//! The fault turns of a history (a `start-<fault>` event to the next `stop-<fault>`, or to
//! the end) and which of them overlap a time span: the `faults` a model checker's witness
//! names, so a reader sees what the nemesis was doing while the anomaly's calls were in
//! flight.
//!
//! Invariants: only annotates, never judges; a history without nemesis events yields no
//! turn.

use crate::history::{fault_events, FaultEdge, History};
use serde_json::{json, Value};

/// One fault turn.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The index of its `start-<fault>` event.
    pub event: u64,
    pub fault: String,
    pub targets: Vec<String>,
    pub start: u64,
    /// `u64::MAX` when it never stopped.
    pub stop: u64,
}

/// Every turn of `history`, in start order.
pub fn turns(history: &History) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    for (op, event) in fault_events(history.ops.iter()) {
        match event.edge {
            FaultEdge::Start => turns.push(Turn {
                event: op.index,
                fault: event.fault,
                targets: event.value.targets,
                start: op.time,
                stop: u64::MAX,
            }),
            FaultEdge::Stop => {
                if let Some(t) = turns
                    .iter_mut()
                    .rev()
                    .find(|t| t.fault == event.fault && t.stop == u64::MAX)
                {
                    t.stop = op.time;
                }
            }
        }
    }
    turns
}

/// The turns overlapping `[from, to]` (nanoseconds), as witness entries
/// `{"kind", "event", "targets"}`.
pub fn overlapping(turns: &[Turn], from: u64, to: u64) -> Vec<Value> {
    turns
        .iter()
        .filter(|t| t.start <= to && t.stop >= from)
        .map(|t| json!({"kind": t.fault, "event": t.event, "targets": t.targets}))
        .collect()
}
