//! The `objects` checker: did every object read return one whole write's body?
//!
//! The client verifies each body it reads (`workloads::objects::body`) and records the
//! read's `ok` value as the write number the body proves whole, `null` for an absent
//! object, or a torn record `{"torn": reason, "write", "length", "expected-length",
//! "writes", "offset"}` (`docs/history-format.md` § Objects). This checker names every torn
//! record as a `torn-object` anomaly: the key, the read (history index of its completion),
//! the node, the reason and the writes whose bytes it holds (with the history indices of
//! those writes' invocations).
//!
//! What it does not judge: a read of an older write after an acknowledged newer one, a
//! lost object, a read of a write never made — per-key linearizability (`linearizable`,
//! which judges the same reads and writes as registers) does.
//!
//! Verdict: invalid on any torn read; unknown when an `ok` read's value is none of the
//! three forms (the history cannot say what was read) or when no read returned a whole
//! object (nothing was verified: missing evidence is never valid); else valid.

/// Checker name in `results.json`.
pub const NAME: &str = "objects";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::CHECKER;

use crate::history::{History, Op, OpType};
use crate::ops;
use crate::verdict::{CheckerResult, Validity};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The functions this checker judges.
pub const FUNCTIONS: &[&str] = &[ops::READ, ops::WRITE];

/// Its one finding.
pub const TORN_OBJECT: &str = "torn-object";

/// Findings listed (counts are always complete).
const MAX_LISTED: usize = 200;

/// What one `ok` read's value says.
enum ReadValue<'a> {
    Whole,
    Absent,
    Torn(&'a serde_json::Map<String, Value>),
    Malformed,
}

fn read_value(v: &Value) -> ReadValue<'_> {
    match v {
        Value::Null => ReadValue::Absent,
        Value::Number(n) if n.is_i64() => ReadValue::Whole,
        Value::Object(m) if m.get("torn").is_some_and(Value::is_string) => ReadValue::Torn(m),
        _ => ReadValue::Malformed,
    }
}

/// Per key, the invoke index of each write number.
fn write_invokes(history: &History) -> BTreeMap<(&str, i64), u64> {
    history
        .ops
        .iter()
        .filter(|o| o.process.client().is_some() && o.kind == OpType::Invoke)
        .filter(|o| o.f == ops::WRITE)
        .filter_map(|o| Some(((o.key.as_deref()?, o.value.as_i64()?), o.index)))
        .collect()
}

/// The anomaly of a torn read `op` whose record is `torn`.
fn torn_anomaly(
    op: &Op,
    torn: &serde_json::Map<String, Value>,
    writes: &BTreeMap<(&str, i64), u64>,
) -> Value {
    let key = op.key.as_deref().unwrap_or("");
    let of_writes: Vec<Value> = torn
        .get("writes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .map(|w| json!({"write": w, "invoke": writes.get(&(key, w))}))
        .collect();
    json!({
        "kind": TORN_OBJECT,
        "key": key,
        "read": op.index,
        "node": op.node,
        "reason": torn["torn"],
        "write": torn.get("write"),
        "length": torn.get("length"),
        "expected-length": torn.get("expected-length"),
        "offset": torn.get("offset"),
        "writes": of_writes,
    })
}

/// Checks every `ok` object read of `history`.
pub fn check(history: &History) -> CheckerResult {
    let writes = write_invokes(history);
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut anomalies = Vec::new();
    let mut malformed: Option<u64> = None;
    let client_ok = history
        .ops
        .iter()
        .filter(|o| o.process.client().is_some() && o.kind == OpType::Ok);
    for op in client_ok {
        let name = match (op.f.as_str(), read_value(&op.value)) {
            (ops::WRITE, _) => "ok-writes",
            (ops::READ, ReadValue::Whole) => "whole-reads",
            (ops::READ, ReadValue::Absent) => "absent-reads",
            (ops::READ, ReadValue::Torn(t)) => {
                if anomalies.len() < MAX_LISTED {
                    anomalies.push(torn_anomaly(op, t, &writes));
                }
                "torn-reads"
            }
            (ops::READ, ReadValue::Malformed) => {
                malformed.get_or_insert(op.index);
                "malformed-reads"
            }
            _ => continue,
        };
        *counts.entry(name.to_string()).or_default() += 1;
    }
    verdict(counts, anomalies, malformed)
}

fn verdict(
    counts: BTreeMap<String, u64>,
    anomalies: Vec<Value>,
    malformed: Option<u64>,
) -> CheckerResult {
    let count = |k: &str| counts.get(k).copied().unwrap_or(0);
    let (valid, reason) = match (count("torn-reads"), malformed, count("whole-reads")) {
        (torn @ 1.., _, _) => (
            Validity::Invalid,
            Some(format!(
                "{torn} object read(s) returned a body that is not one whole write's ({TORN_OBJECT})"
            )),
        ),
        (0, Some(index), _) => (
            Validity::Unknown,
            Some(format!(
                "the read completed at index {index} recorded neither a write number, null nor a torn record"
            )),
        ),
        (0, None, 0) => (
            Validity::Unknown,
            Some("no read returned an object: no body was verified".to_string()),
        ),
        _ => (Validity::Valid, None),
    };
    let mut r = CheckerResult::new(valid);
    r.reason = reason;
    r.counts = counts;
    r.anomalies = anomalies;
    r.details = json!({});
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Process;

    fn op(index: u64, kind: OpType, f: &str, value: Value) -> Op {
        Op {
            index,
            kind,
            process: Process::Client(index % 3),
            f: f.into(),
            key: Some("obj/00000".into()),
            value,
            time: index,
            node: Some("n1".into()),
            error: None,
            meta: None,
        }
    }

    fn write_then_read(read: Value) -> History {
        History::new(vec![
            op(0, OpType::Invoke, ops::WRITE, json!(1)),
            op(1, OpType::Ok, ops::WRITE, json!(1)),
            op(2, OpType::Invoke, ops::WRITE, json!(2)),
            op(3, OpType::Ok, ops::WRITE, json!(2)),
            op(4, OpType::Invoke, ops::READ, Value::Null),
            op(5, OpType::Ok, ops::READ, read),
        ])
    }

    #[test]
    fn a_whole_read_is_valid() {
        let r = check(&write_then_read(json!(2)));
        assert_eq!(r.valid, Validity::Valid);
        assert_eq!(r.counts["whole-reads"], 1);
        assert_eq!(r.counts["ok-writes"], 2);
    }

    #[test]
    fn a_mixed_body_is_a_torn_object_naming_both_writes() {
        let torn = json!({"torn": "mixed", "write": 2, "length": 2_097_216,
            "expected-length": 2_097_216, "writes": [2, 1], "offset": 1_048_576});
        let r = check(&write_then_read(torn));
        assert_eq!(r.valid, Validity::Invalid);
        assert!(r.reason.unwrap().contains(TORN_OBJECT));
        let a = &r.anomalies[0];
        assert_eq!(a["kind"], TORN_OBJECT);
        assert_eq!((a["read"].clone(), a["reason"].clone()), (json!(5), json!("mixed")));
        assert_eq!(
            a["writes"],
            json!([{"write": 2, "invoke": 2}, {"write": 1, "invoke": 0}])
        );
    }

    #[test]
    fn a_truncated_body_is_a_torn_object() {
        let torn = json!({"torn": "truncated", "write": 2, "length": 4096,
            "expected-length": 10_000, "writes": [2], "offset": 4096});
        let r = check(&write_then_read(torn));
        assert_eq!(r.valid, Validity::Invalid);
        assert_eq!(r.anomalies[0]["reason"], "truncated");
        assert_eq!(r.counts["torn-reads"], 1);
    }

    #[test]
    fn an_unreadable_header_is_a_torn_object_of_no_write() {
        let torn = json!({"torn": "unreadable-header", "write": null, "length": 3,
            "expected-length": null, "writes": [], "offset": 0});
        let r = check(&write_then_read(torn));
        assert_eq!(r.valid, Validity::Invalid);
        assert_eq!(r.anomalies[0]["writes"], json!([]));
    }

    #[test]
    fn no_whole_read_is_unknown_never_valid() {
        let r = check(&write_then_read(Value::Null));
        assert_eq!(r.valid, Validity::Unknown);
        assert!(r.reason.unwrap().contains("no body was verified"));
        assert_eq!(check(&History::new(vec![])).valid, Validity::Unknown);
    }

    #[test]
    fn a_read_value_of_no_known_form_is_unknown() {
        let r = check(&write_then_read(json!("2")));
        assert_eq!(r.valid, Validity::Unknown);
        assert!(r.reason.unwrap().contains("index 5"));
    }
}
