//! Transactions as the workloads issue them: Elle's list-append and rw-register micro-ops,
//! their history form (`docs/history-format.md` § Transactions), what a client's answer
//! fills in, and the [`Txn`] operation, which runs through the client's transaction
//! capability ([`crate::client::TxnClient`]).
//!
//! Invariants: the invoke's `value` is the micro-ops with every read's value `null`; the
//! `ok` completion's `value` is the same micro-ops in the same order with each read's value
//! replaced by what the store returned (a list for list-append, a value or `null` for
//! rw-register); a `fail`/`info` completion repeats the invoke's value. Written values are
//! integers unique across the run, so they are unique per key.

use crate::client::{CallError, CallKind, CallResult, Certainty, KvTarget};
use crate::execute::Completion;
use crate::operation::Operation;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use std::any::Any;

/// The history function of a micro-op.
pub const APPEND: &str = "append";
pub const READ: &str = "r";
pub const WRITE: &str = "w";

/// What a read of a key returns in this workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadShape {
    /// The whole list (list-append).
    List,
    /// The register's one value, or nothing (rw-register).
    Register,
}

/// One micro-op of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mop {
    /// Append `value` to the list at `key`.
    Append { key: String, value: i64 },
    /// Overwrite the register at `key` with `value`.
    Write { key: String, value: i64 },
    /// Read `key` (a list or a register, as `shape` says).
    Read { key: String, shape: ReadShape },
}

impl Mop {
    pub fn key(&self) -> &str {
        match self {
            Mop::Append { key, .. } | Mop::Write { key, .. } | Mop::Read { key, .. } => key,
        }
    }

    pub fn is_read(&self) -> bool {
        matches!(self, Mop::Read { .. })
    }

    /// The micro-op as the invoke records it (a read's value `null`).
    pub fn invoke_json(&self) -> Value {
        match self {
            Mop::Append { key, value } => json!([APPEND, key, value]),
            Mop::Write { key, value } => json!([WRITE, key, value]),
            Mop::Read { key, .. } => json!([READ, key, null]),
        }
    }
}

/// The invoke's `value` of a transaction.
pub fn invoke_value(mops: &[Mop]) -> Value {
    Value::Array(mops.iter().map(Mop::invoke_json).collect())
}

/// The `ok` completion's `value`: the micro-ops with each read's value from `read`
/// (`read[i]` answers `mops[i]`; a write's entry is ignored). `None` when `read` does not
/// have one entry per micro-op, or a list read is not a list (the answer is not the
/// transaction's).
pub fn completed_value(mops: &[Mop], read: Vec<Value>) -> Option<Value> {
    if read.len() != mops.len() {
        return None;
    }
    let mut out = Vec::with_capacity(mops.len());
    for (mop, got) in mops.iter().zip(read) {
        out.push(match mop {
            Mop::Read {
                key,
                shape: ReadShape::List,
            } if got.is_array() => json!([READ, key, got]),
            Mop::Read {
                shape: ReadShape::List,
                ..
            } => return None,
            Mop::Read {
                key,
                shape: ReadShape::Register,
            } => json!([READ, key, got]),
            other => other.invoke_json(),
        });
    }
    Some(Value::Array(out))
}

/// Whether any micro-op writes (a failed call of such a transaction may have committed).
pub fn writes(mops: &[Mop]) -> bool {
    mops.iter().any(|m| !m.is_read())
}

/// A transaction of micro-ops (history `f` = `txn`, no `key`), run by a client that has
/// the transaction capability; a client without it fails it definitely, unsent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    pub mops: Vec<Mop>,
}

impl Txn {
    /// The keys it touches, in micro-op order (a key once per micro-op).
    fn keys(&self) -> String {
        self.mops
            .iter()
            .map(Mop::key)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Runs the transaction; an answer that does not fit its micro-ops is a bad response
    /// (the transaction may have committed, so indeterminate when it writes).
    async fn transact(&self, client: &dyn KvTarget) -> CallResult<Completion> {
        let Some(t) = client.as_txn() else {
            return Err(CallError::new(
                Certainty::Definite,
                "unimplemented",
                "this client cannot run transactions",
            ));
        };
        let read = t.transact(&self.mops).await?;
        let answered = read.len();
        completed_value(&self.mops, read).map(|value| Completion::ok(value, None)).ok_or_else(|| {
            let why = format!("a transaction of {} micro-ops answered {answered} values, or a list read answered no list", self.mops.len());
            CallError::bad_response(self.call_kind(), why)
        })
    }
}

impl Operation for Txn {
    fn f(&self) -> &'static str {
        analysis::ops::TXN
    }
    fn invoke_value(&self) -> Value {
        invoke_value(&self.mops)
    }
    fn call_kind(&self) -> CallKind {
        if writes(&self.mops) {
            CallKind::Mutation
        } else {
            CallKind::Read
        }
    }
    fn describe(&self) -> String {
        match self.call_kind() {
            CallKind::Read => format!("txn read of {}", self.keys()),
            CallKind::Mutation => format!("txn of {}", self.keys()),
        }
    }
    fn run<'a>(&'a self, client: &'a dyn KvTarget) -> BoxFuture<'a, CallResult<Completion>> {
        self.transact(client).boxed()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn la() -> Vec<Mop> {
        vec![
            Mop::Append {
                key: "la/1".into(),
                value: 7,
            },
            Mop::Read {
                key: "la/1".into(),
                shape: ReadShape::List,
            },
        ]
    }

    #[test]
    fn the_invoke_has_null_reads_and_the_ok_has_what_was_read() {
        assert_eq!(
            invoke_value(&la()),
            json!([["append", "la/1", 7], ["r", "la/1", null]])
        );
        let done = completed_value(&la(), vec![Value::Null, json!([3, 7])]).unwrap();
        assert_eq!(done, json!([["append", "la/1", 7], ["r", "la/1", [3, 7]]]));
    }

    #[test]
    fn a_register_read_keeps_null_for_never_written() {
        let mops = vec![
            Mop::Read {
                key: "rw/2".into(),
                shape: ReadShape::Register,
            },
            Mop::Write {
                key: "rw/2".into(),
                value: 4,
            },
        ];
        assert_eq!(
            completed_value(&mops, vec![Value::Null, Value::Null]).unwrap(),
            json!([["r", "rw/2", null], ["w", "rw/2", 4]])
        );
        assert!(writes(&mops));
        assert!(!writes(&mops[..1]));
    }

    #[test]
    fn an_answer_of_the_wrong_length_or_shape_is_refused() {
        assert_eq!(completed_value(&la(), vec![Value::Null]), None);
        assert_eq!(
            completed_value(&la(), vec![Value::Null, json!(3)]),
            None,
            "a list read answered with a scalar"
        );
    }
}
