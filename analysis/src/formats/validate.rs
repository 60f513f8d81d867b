//! Structural checks every history reader applies, op by op, as it reads: indices
//! strictly increase, and a client process alternates invoke and completion (a process
//! runs one operation at a time, so a completion belongs to the pending invoke of its
//! process, with the same function). Nemesis and watcher entries are single events and
//! are not paired; a `node-exit` event must name its node. A transaction's value must parse,
//! and all transactions fit one workload ([`super::txn_check`]).

use super::txn_check::{shape_of_mops, TxnShape, TxnWorkload};
use crate::history::txn::{parse_txn, MicroOp};
use crate::history::{events, Op, OpType, Process};
use crate::ops;
use rustc_hash::FxHashMap;

/// The invoke a process is waiting on.
#[derive(Debug, Clone)]
struct Pending {
    f: String,
    key: Option<String>,
    line: usize,
}

#[derive(Debug, Default)]
pub struct Validator {
    last_index: Option<u64>,
    pending: FxHashMap<u64, Pending>,
    txn_workload: TxnWorkload,
}

/// A transaction parsed as a reader reads it: its micro-ops and its shape, or the parser's
/// sentence saying why it is not one.
pub type ParsedTxn = Result<(Vec<MicroOp>, TxnShape), String>;

/// Whether `op` is a client's transaction (whose `value` must parse as micro-ops).
pub fn is_client_txn(op: &Op) -> bool {
    op.process.client().is_some() && op.f == ops::TXN
}

/// Parses a transaction's micro-ops (`value`, as JSON) and computes its shape.
pub fn parse_txn_value(value: &serde_json::Value) -> ParsedTxn {
    let mops = parse_txn(value).map_err(|e| e.to_string())?;
    let shape = shape_of_mops(&mops)?;
    Ok((mops, shape))
}

impl Validator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks `op` (read at `line`) against what came before; the error is a sentence
    /// without the location, which the caller adds.
    pub fn accept(&mut self, op: &Op, line: usize) -> Result<(), String> {
        let txn = is_client_txn(op).then(|| parse_txn_value(&op.value));
        self.accept_parsed(op, line, txn.as_ref()).map(|_| ())
    }

    /// [`Validator::accept`] with the transaction already parsed (`Some` exactly for a
    /// client's transaction: [`is_client_txn`]), which a reader may do on all cores and
    /// without the op's `value`. Returns the micro-ops of an accepted transaction.
    pub fn accept_parsed<'t>(
        &mut self,
        op: &Op,
        line: usize,
        txn: Option<&'t ParsedTxn>,
    ) -> Result<Option<&'t [MicroOp]>, String> {
        self.accept_structure(op, line)?;
        match txn {
            Some(parsed) => {
                let (mops, shape) = parsed.as_ref().map_err(Clone::clone)?;
                self.txn_workload.accept(shape, mops, line)?;
                Ok(Some(mops))
            }
            None => Ok(None),
        }
    }

    fn accept_structure(&mut self, op: &Op, line: usize) -> Result<(), String> {
        if let Some(last) = self.last_index {
            if op.index <= last {
                return Err(format!(
                    "index {} does not increase (the previous entry had index {last})",
                    op.index
                ));
            }
        }
        self.last_index = Some(op.index);
        let Process::Client(p) = op.process else {
            return accept_event(op);
        };
        if op.f.is_empty() {
            return Err("empty function `f`".to_string());
        }
        match op.kind {
            OpType::Invoke => self.accept_invoke(p, op, line),
            _ => self.accept_completion(p, op),
        }
    }

    fn accept_invoke(&mut self, p: u64, op: &Op, line: usize) -> Result<(), String> {
        if let Some(prev) = self.pending.get(&p) {
            return Err(format!(
                "process {p} invokes `{}` while its `{}` invoked at line {} has not completed \
                 (a process runs one operation at a time)",
                op.f, prev.f, prev.line
            ));
        }
        self.pending.insert(
            p,
            Pending {
                f: op.f.to_string(),
                key: op.key.as_deref().map(str::to_string),
                line,
            },
        );
        Ok(())
    }

    fn accept_completion(&mut self, p: u64, op: &Op) -> Result<(), String> {
        let Some(inv) = self.pending.remove(&p) else {
            return Err(format!(
                "`{}` completion ({}) of process {p}, which has no pending invoke",
                op.f,
                op.kind.name()
            ));
        };
        if inv.f != op.f {
            return Err(format!(
                "process {p} completes `{}` but its pending invoke at line {} is `{}`",
                op.f, inv.line, inv.f
            ));
        }
        if op.key.is_some() && inv.key.is_some() && op.key.as_deref() != inv.key.as_deref() {
            return Err(format!(
                "process {p} completes key {:?} but its pending invoke at line {} was for key {:?}",
                op.key.as_deref().unwrap_or_default(),
                inv.line,
                inv.key.as_deref().unwrap_or_default()
            ));
        }
        Ok(())
    }
}

/// Checks the shape of the nemesis and watcher events a checker relies on: a `node-exit`
/// must name its node and describe the exit in an object.
fn accept_event(op: &Op) -> Result<(), String> {
    if op.process != Process::Watcher || op.f != events::NODE_EXIT {
        return Ok(());
    }
    if !op.value.is_object() {
        return Err(format!(
            "`node-exit` event needs an object `value` (exit_code, signal, expected, ...), got {}",
            op.value
        ));
    }
    if crate::checkers::crashes::exit_node(op).is_none() {
        return Err("`node-exit` event names no node: give it a `node` field".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn op(index: u64, kind: OpType, process: u64, f: &str) -> Op {
        Op {
            index,
            kind,
            process: Process::Client(process),
            f: f.into(),
            key: None,
            value: Value::Null,
            time: index,
            node: None,
            error: None,
            meta: None,
        }
    }

    #[test]
    fn accepts_a_balanced_history_and_leaves_crashed_invokes_pending() {
        let mut v = Validator::new();
        v.accept(&op(0, OpType::Invoke, 1, "read"), 1).unwrap();
        v.accept(&op(1, OpType::Invoke, 2, "write"), 2).unwrap();
        v.accept(&op(2, OpType::Ok, 1, "read"), 3).unwrap();
        v.accept(&op(3, OpType::Invoke, 1, "cas"), 4).unwrap();
        // Process 2's write never completed: still pending, so its completion is accepted.
        v.accept(&op(4, OpType::Info, 2, "write"), 5).unwrap();
    }

    #[test]
    fn rejects_double_invoke_orphan_completion_mismatch_and_bad_index() {
        let mut v = Validator::new();
        v.accept(&op(0, OpType::Invoke, 1, "read"), 1).unwrap();
        let e = v.accept(&op(1, OpType::Invoke, 1, "read"), 2).unwrap_err();
        assert!(
            e.contains("has not completed") && e.contains("line 1"),
            "{e}"
        );

        let mut v = Validator::new();
        let e = v.accept(&op(0, OpType::Ok, 7, "read"), 1).unwrap_err();
        assert!(e.contains("no pending invoke"), "{e}");

        let mut v = Validator::new();
        v.accept(&op(0, OpType::Invoke, 1, "read"), 1).unwrap();
        let e = v.accept(&op(1, OpType::Ok, 1, "write"), 2).unwrap_err();
        assert!(e.contains("pending invoke at line 1 is `read`"), "{e}");

        let mut v = Validator::new();
        v.accept(&op(5, OpType::Invoke, 1, "read"), 1).unwrap();
        let e = v.accept(&op(5, OpType::Invoke, 2, "read"), 2).unwrap_err();
        assert!(e.contains("does not increase"), "{e}");
    }

    #[test]
    fn a_node_exit_must_name_its_node_and_have_an_object_value() {
        let mut exit = op(0, OpType::Info, 0, "node-exit");
        exit.process = Process::Watcher;
        exit.value = serde_json::json!({"exit_code": 2});
        let e = Validator::new().accept(&exit, 1).unwrap_err();
        assert!(e.contains("names no node"), "{e}");
        exit.value = serde_json::json!({"node": "n2", "exit_code": 2});
        Validator::new().accept(&exit, 1).unwrap();
        exit.value = Value::Null;
        exit.node = Some("n2".into());
        let e = Validator::new().accept(&exit, 1).unwrap_err();
        assert!(e.contains("object `value`"), "{e}");
    }

    #[test]
    fn nemesis_events_are_not_paired() {
        let mut v = Validator::new();
        let mut n = op(0, OpType::Info, 0, "start-partition");
        n.process = Process::Nemesis;
        v.accept(&n, 1).unwrap();
        n.index = 1;
        v.accept(&n, 2).unwrap();
    }
}
