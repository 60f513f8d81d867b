//! Executing one [`OpSpec`] against a [`KvTarget`] and turning the outcome into history
//! entries: the invocation, and a completion with the same process, `f` and key, the value
//! filled in from the response, the classified error, and the store's commit metadata.

use crate::client::{CallError, Certainty, KvTarget};
use crate::generators::OpSpec;
use crate::txn::Mop;
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
    fn ok(value: Value, meta: Option<CommitMeta>) -> Completion {
        Completion { kind: OpType::Ok, value, error: None, meta }
    }

    /// The completion of `spec` after a classified failure.
    pub fn failed(spec: &OpSpec, err: &CallError) -> Completion {
        let kind = match err.certainty {
            Certainty::Definite => OpType::Fail,
            Certainty::Indeterminate => OpType::Info,
        };
        Completion { kind, value: spec.invoke_value(), error: Some(err.history_text()), meta: None }
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

fn encode_value(v: i64) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// Runs `spec` against `target` (the call's deadline is the target's).
pub async fn execute(target: &dyn KvTarget, spec: &OpSpec) -> Completion {
    let result = match spec {
        OpSpec::Read { key } => target
            .read(key.as_bytes())
            .await
            .map(|r| Completion::ok(r.value.as_deref().map_or(Value::Null, decode_value), r.meta)),
        OpSpec::Write { key, value } => target
            .write(key.as_bytes(), &encode_value(*value))
            .await
            .map(|r| applied_or_rejected(spec, r.applied, r.meta, "rejected")),
        OpSpec::Cas { key, expected, new } => target
            .cas(key.as_bytes(), Some(&encode_value(*expected)), &encode_value(*new))
            .await
            .map(|r| applied_or_rejected(spec, r.applied, r.meta, "cas-mismatch")),
        OpSpec::Add { key, element } => target
            .write(key.as_bytes(), &encode_value(*element))
            .await
            .map(|r| applied_or_rejected(spec, r.applied, r.meta, "rejected")),
        OpSpec::Scan { start, end } => target.scan(start.as_bytes(), end.as_bytes(), 0).await.map(|r| {
            let keys: Vec<Value> = r.pairs.iter().map(|(k, _)| Value::String(String::from_utf8_lossy(k).into_owned())).collect();
            let meta = if r.metas.len() == 1 { r.metas.into_iter().next() } else { None };
            Completion::ok(Value::Array(keys), meta)
        }),
        OpSpec::Txn { mops } => transact(target, spec, mops).await,
    };
    result.unwrap_or_else(|err| Completion::failed(spec, &err))
}

/// Runs a transaction; an answer that does not fit its micro-ops is a bad response (the
/// transaction may have committed, so indeterminate when it writes).
async fn transact(target: &dyn KvTarget, spec: &OpSpec, mops: &[Mop]) -> Result<Completion, CallError> {
    let Some(t) = target.transactional() else {
        return Err(CallError::new(Certainty::Definite, "unimplemented", "this client cannot run transactions"));
    };
    let read = t.transact(mops).await?;
    let answered = read.len();
    crate::txn::completed_value(mops, read)
        .map(|value| Completion::ok(value, None))
        .ok_or_else(|| CallError::bad_response(spec.call_kind(), format!("a transaction of {} micro-ops answered {answered} values, or a list read answered no list", mops.len())))
}

/// A store that answered `success = false` definitely did not apply the mutation.
fn applied_or_rejected(spec: &OpSpec, applied: bool, meta: Option<CommitMeta>, reason: &str) -> Completion {
    if applied {
        Completion::ok(spec.invoke_value(), meta)
    } else {
        Completion { kind: OpType::Fail, value: spec.invoke_value(), error: Some(reason.to_string()), meta }
    }
}

/// The `invoke` entry of `spec` (index and time are assigned by the sink).
pub fn invoke_entry(process: u64, node: &str, spec: &OpSpec) -> Op {
    Op {
        index: 0,
        kind: OpType::Invoke,
        process: Process::Client(process),
        f: spec.f().to_string(),
        key: spec.key().map(str::to_string),
        value: spec.invoke_value(),
        time: 0,
        node: Some(node.to_string()),
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
        f: spec.f().to_string(),
        key: spec.key().map(str::to_string),
        value: c.value,
        time: 0,
        node: Some(node.to_string()),
        error: c.error,
        meta: c.meta,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::CallKind;

    #[test]
    fn values_decode_as_numbers_when_they_are_numbers() {
        assert_eq!(decode_value(b"42"), Value::from(42));
        assert_eq!(decode_value(b"-7"), Value::from(-7));
        assert_eq!(decode_value(b"x1"), Value::from("x1"));
    }

    #[test]
    fn failures_keep_the_invoke_value_and_map_certainty() {
        let spec = OpSpec::Cas { key: "k".into(), expected: 1, new: 2 };
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
        let spec = OpSpec::Write { key: "reg/1".into(), value: 5 };
        let inv = invoke_entry(3, "n1", &spec);
        let done = completion_entry(3, "n1", &spec, applied_or_rejected(&spec, true, None, "rejected"));
        assert_eq!((inv.kind, done.kind), (OpType::Invoke, OpType::Ok));
        assert_eq!((inv.process, inv.f.as_str(), inv.key.as_deref()), (done.process, done.f.as_str(), done.key.as_deref()));
        assert_eq!(done.value, Value::from(5));
        let rejected = applied_or_rejected(&OpSpec::Cas { key: "k".into(), expected: 1, new: 2 }, false, None, "cas-mismatch");
        assert_eq!((rejected.kind, rejected.error.as_deref()), (OpType::Fail, Some("cas-mismatch")));
    }
}
