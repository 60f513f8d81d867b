//! Writes a history of transactions as Jepsen stores it in EDN: a vector of op maps, one
//! per line, `{:index 0, :time 5, :type :invoke, :process 0, :f :txn, :value [[:append 1 2]
//! [:r 1 nil]]}` — the format Elle's own histories are in, so the same file can be given
//! to faultline and to Elle.
//!
//! Only transactions are written: a register or set history read back from EDN would start
//! from the Knossos initial value (0, not absent), so it would not mean the same history.
//! Invariant: reading the output back with [`super::edn_ops`] gives the same ops (index,
//! type, process, `f`, `value`, time, error), transactions' micro-op functions as keywords
//! (`:append`, `:r`, `:w`) as Elle writes them.

use crate::history::{History, Op, OpType, Process};
use serde_json::Value;
use std::io::{self, Write};

/// Writes `history` (client transactions only) as an EDN vector of op maps.
pub fn write_txn_history<W: Write>(out: &mut W, history: &History) -> io::Result<()> {
    out.write_all(b"[")?;
    let mut text = String::with_capacity(256);
    for (position, op) in history.ops.iter().enumerate() {
        if !crate::formats::validate::is_client_txn(op) {
            return Err(io::Error::other(format!(
                "op {} is not a client transaction: only transaction histories are written as EDN",
                op.index
            )));
        }
        text.clear();
        if position > 0 {
            text.push('\n');
        }
        op_map(op, &history.txn_value(position), &mut text);
        out.write_all(text.as_bytes())?;
    }
    out.write_all(b"]\n")
}

fn op_map(op: &Op, value: &Value, out: &mut String) {
    use std::fmt::Write as _;
    let kind = match op.kind {
        OpType::Invoke => "invoke",
        OpType::Ok => "ok",
        OpType::Fail => "fail",
        OpType::Info => "info",
    };
    let process = match op.process {
        Process::Client(p) => p.to_string(),
        Process::Nemesis => ":nemesis".into(),
        Process::Watcher => ":watcher".into(),
    };
    let _ = write!(
        out,
        "{{:index {}, :time {}, :type :{kind}, :process {process}, :f :{}, :value ",
        op.index, op.time, op.f
    );
    txn_value(value, out);
    if let Some(error) = &op.error {
        out.push_str(", :error ");
        string(error, out);
    }
    out.push('}');
}

/// A transaction's value: micro-op functions become keywords, the rest [`value`].
fn txn_value(v: &Value, out: &mut String) {
    let Value::Array(mops) = v else {
        return value(v, out);
    };
    out.push('[');
    for (i, m) in mops.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        match m.as_array().map(Vec::as_slice) {
            Some([Value::String(f), rest @ ..]) if matches!(f.as_str(), "append" | "r" | "w") => {
                out.push_str("[:");
                out.push_str(f);
                for part in rest {
                    out.push(' ');
                    value(part, out);
                }
                out.push(']');
            }
            _ => value(m, out),
        }
    }
    out.push(']');
}

/// A JSON value as EDN: arrays become vectors, objects maps with string keys.
fn value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("nil"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                value(x, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, x)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                string(k, out);
                out.push(' ');
                value(x, out);
            }
            out.push('}');
        }
    }
}

/// An EDN string literal: the escapes the EDN reader knows, `\uXXXX` for other controls.
fn string(s: &str, out: &mut String) {
    use std::fmt::Write as _;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::edn_ops;
    use crate::history::txn::TXN;
    use serde_json::json;

    fn txn(index: u64, kind: OpType, process: u64, value: Value, error: Option<&str>) -> Op {
        Op {
            index,
            kind,
            process: Process::Client(process),
            f: TXN.into(),
            key: None,
            value,
            time: index * 10,
            node: None,
            error: error.map(Into::into),
            meta: None,
        }
    }

    #[test]
    fn a_transaction_history_reads_back_the_same() {
        let ops = vec![
            txn(
                0,
                OpType::Invoke,
                0,
                json!([["append", 1, 2], ["r", "k\"\n\u{1}", null]]),
                None,
            ),
            txn(1, OpType::Invoke, 1, json!([["append", 3, "x"]]), None),
            txn(
                2,
                OpType::Ok,
                0,
                json!([["append", 1, 2], ["r", "k\"\n\u{1}", [1, "a"]]]),
                None,
            ),
            txn(
                3,
                OpType::Info,
                1,
                json!([["append", 3, "x"]]),
                Some("timed-out"),
            ),
        ];
        let history = History::new(ops);
        let mut out = Vec::new();
        write_txn_history(&mut out, &history).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(
                "[{:index 0, :time 0, :type :invoke, :process 0, :f :txn, :value [[:append 1 2]"
            ),
            "{text}"
        );
        let (back, report) = edn_ops::parse(&text, "h.edn").unwrap();
        assert!(report.warnings.is_empty());
        assert_eq!(back.ops, history.ops);
    }

    #[test]
    fn a_history_with_other_ops_is_refused() {
        let mut op = txn(0, OpType::Invoke, 0, json!(null), None);
        op.f = "read".into();
        let e = write_txn_history(&mut Vec::new(), &History::new(vec![op])).unwrap_err();
        assert!(e.to_string().contains("only transaction histories"), "{e}");
    }
}
