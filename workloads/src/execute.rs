//! Executing one [`OpSpec`] against a [`KvTarget`] and turning the outcome into history
//! entries: the invocation, and a completion with the same process, `f` and key, the value
//! filled in from the response (by the operation itself: [`crate::operation::Operation::run`]),
//! the classified error, and the store's commit metadata.
//!
//! Invariant: nothing here knows a kind of operation; a failed call completes with the
//! invoke's value, `fail` when definite and `info` when indeterminate.

use crate::client::{CallError, Certainty, KvTarget};
use crate::generators::OpSpec;
use analysis::history::{CommitMeta, Op, OpType, Process};
use serde_json::Value;

/// How an operation ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub kind: OpType,
    pub value: Value,
    pub error: Option<String>,
    pub meta: Option<CommitMeta>,
}

impl Completion {
    /// The store answered and the operation took effect (or, for a read, read `value`).
    pub fn ok(value: Value, meta: Option<CommitMeta>) -> Completion {
        Completion {
            kind: OpType::Ok,
            value,
            error: None,
            meta,
        }
    }

    /// A mutation the store answered: `ok` with the invoke's `value` when applied, else a
    /// definite `fail` saying `reason` (the store definitely did not apply it).
    pub fn applied_or_rejected(
        value: Value,
        applied: bool,
        meta: Option<CommitMeta>,
        reason: &str,
    ) -> Completion {
        if applied {
            Completion::ok(value, meta)
        } else {
            Completion {
                kind: OpType::Fail,
                value,
                error: Some(reason.to_string()),
                meta,
            }
        }
    }

    /// The completion of `spec` after a classified failure.
    pub fn failed(spec: &OpSpec, err: &CallError) -> Completion {
        let kind = match err.certainty {
            Certainty::Definite => OpType::Fail,
            Certainty::Indeterminate => OpType::Info,
        };
        Completion {
            kind,
            value: spec.invoke_value(),
            error: Some(err.history_text()),
            meta: None,
        }
    }
}

/// Register values travel as decimal text; anything else is recorded as a string.
pub fn decode_value(bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes);
    match text.parse::<i64>() {
        Ok(n) => Value::from(n),
        Err(_) => Value::String(text.into_owned()),
    }
}

/// Runs `spec` against `target` (the call's deadline is the target's).
pub async fn execute(target: &dyn KvTarget, spec: &OpSpec) -> Completion {
    spec.run(target)
        .await
        .unwrap_or_else(|err| Completion::failed(spec, &err))
}

/// The `invoke` entry of `spec` (index and time are assigned by the sink).
pub fn invoke_entry(process: u64, node: &str, spec: &OpSpec) -> Op {
    Op {
        index: 0,
        kind: OpType::Invoke,
        process: Process::Client(process),
        f: spec.f().into(),
        key: spec.key().map(Into::into),
        value: spec.invoke_value(),
        time: 0,
        node: Some(node.into()),
        error: None,
        meta: None,
    }
}

/// The completion entry matching [`invoke_entry`].
pub fn completion_entry(process: u64, node: &str, spec: &OpSpec, c: Completion) -> Op {
    Op {
        index: 0,
        kind: c.kind,
        process: Process::Client(process),
        f: spec.f().into(),
        key: spec.key().map(Into::into),
        value: c.value,
        time: 0,
        node: Some(node.into()),
        error: c.error.map(Into::into),
        meta: c.meta.map(Box::new),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::CallKind;
    use crate::kv_ops::{Cas, Write};

    #[test]
    fn values_decode_as_numbers_when_they_are_numbers() {
        assert_eq!(decode_value(b"42"), Value::from(42));
        assert_eq!(decode_value(b"-7"), Value::from(-7));
        assert_eq!(decode_value(b"x1"), Value::from("x1"));
    }

    #[test]
    fn failures_keep_the_invoke_value_and_map_certainty() {
        let spec = OpSpec::new(Cas {
            key: "k".into(),
            expected: 1,
            new: 2,
        });
        let definite = CallError::new(Certainty::Definite, "aborted", "stale epoch");
        let c = Completion::failed(&spec, &definite);
        assert_eq!(c.kind, OpType::Fail);
        assert_eq!(c.value, serde_json::json!([1, 2]));
        assert_eq!(c.error.as_deref(), Some("aborted: stale epoch"));
        let unknown = CallError::timed_out(CallKind::Mutation);
        assert_eq!(Completion::failed(&spec, &unknown).kind, OpType::Info);
    }

    #[test]
    fn entries_pair_up() {
        let spec = OpSpec::new(Write {
            key: "reg/1".into(),
            value: 5,
        });
        let inv = invoke_entry(3, "n1", &spec);
        let done = completion_entry(
            3,
            "n1",
            &spec,
            Completion::applied_or_rejected(spec.invoke_value(), true, None, "rejected"),
        );
        assert_eq!((inv.kind, done.kind), (OpType::Invoke, OpType::Ok));
        assert_eq!(
            (inv.process, inv.f.as_str(), inv.key.as_deref()),
            (done.process, done.f.as_str(), done.key.as_deref())
        );
        assert_eq!(done.value, Value::from(5));
        let rejected =
            Completion::applied_or_rejected(serde_json::json!([1, 2]), false, None, "cas-mismatch");
        assert_eq!(
            (rejected.kind, rejected.error.as_deref()),
            (OpType::Fail, Some("cas-mismatch"))
        );
    }
}
