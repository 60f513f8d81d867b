//! The numbers of the page's **Transactions** section, for a history of `txn` ops
//! (`--workload append` or `rw-register`, `docs/history-format.md` § Transactions):
//! committed / aborted / info, transactions by length, read-only / writing, and per key the
//! appends (writes) acknowledged and indeterminate with the longest list (the last value)
//! an `ok` read returned.
//!
//! The summary is folded one completion at a time ([`TxnSummaryBuilder::accept`]) while
//! the report streams the history, so it never holds the history: its memory is one entry
//! per key. A transaction is counted at its completion, with the completion's micro-ops (the
//! reader requires them there too), so invokes are not parsed; the caller, which keeps each
//! process' open invoke anyway, hands over those that never completed at the end
//! ([`TxnSummaryBuilder::never_completed`]). The caller passes each entry's micro-ops
//! beside it: from a whole history, [`analysis::history::History::txn_value`] (a
//! compact-form history keeps them in its table and leaves `op.value` null); streaming,
//! `op.value`, which the JSON Lines reader ([`analysis::formats::jsonl::JsonlReader`], JSON
//! form) always fills for a transaction.
//!
//! Invariants, as the isolation checker counts (`analysis/src/checkers/isolation/txns.rs`):
//! a transaction is committed (`ok`), aborted (`fail`) or info (`info`, or its invoke never
//! completed); its micro-ops are its completion's, else (never completed) its invoke's;
//! `committed + aborted + info` is the number of transaction invokes. An append (write) is
//! acknowledged when its transaction committed and indeterminate when it is info; aborted
//! ones are not counted. A key's final list length is the longest list any `ok` read of it
//! returned (`null` reads as `[]`), its last value read the value of the `ok` read completed
//! last in history order. Keys are compared as JSON (`1` and `"1"` differ).

use analysis::history::txn::{MopKind, TxnModel, TxnScalar, TXN};
use analysis::history::{Op, OpType};
use serde_json::Value;
use std::collections::HashMap;

/// Keys listed in the per-key table; the rest are counted.
pub const KEYS_LISTED: usize = 20;
/// Transaction lengths counted one by one; longer ones share the last bucket.
pub const LENGTHS: usize = 4;

/// What happened to one key over the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyStats {
    /// Appends (writes) in committed transactions.
    pub acknowledged: u64,
    /// Appends (writes) in info or never-completed transactions.
    pub indeterminate: u64,
    /// Longest list an `ok` read returned (list-append); `None` if never read.
    pub longest_read: Option<usize>,
    /// What the `ok` read completed last returned (rw-register); `None` if never read.
    pub last_read: Option<Seen>,
}

/// What a micro-op's value holds, as far as the summary needs it: a read's list is kept as
/// its length only (reading never copies a list).
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// `null`: not read yet (an invoke), or rw-register's read of nothing.
    Null,
    /// A list-append read's list, by its length.
    List(usize),
    /// A written value, or what an rw-register read returned.
    Scalar(TxnScalar),
}

/// One micro-op as the summary reads it.
#[derive(Debug)]
struct Mop {
    kind: MopKind,
    key: TxnScalar,
    value: Seen,
}

/// The micro-ops of a transaction's `value`, or `None` if it is not a list of
/// `[function, key, value]` micro-ops with scalar keys (which the reader refuses).
fn mops_of(value: &Value) -> Option<Vec<Mop>> {
    let scalar = |v: &Value| match v {
        Value::Number(n) => n.as_i64().map(TxnScalar::Int),
        Value::String(s) => Some(TxnScalar::Str(s.clone())),
        _ => None,
    };
    value
        .as_array()?
        .iter()
        .map(|m| {
            let [f, k, v] = m.as_array()?.as_slice() else {
                return None;
            };
            let kind = match f.as_str()? {
                "append" => MopKind::Append,
                "r" => MopKind::Read,
                "w" => MopKind::Write,
                _ => return None,
            };
            let value = match v {
                Value::Null => Seen::Null,
                Value::Array(list) => Seen::List(list.len()),
                other => Seen::Scalar(scalar(other)?),
            };
            Some(Mop {
                kind,
                key: scalar(k)?,
                value,
            })
        })
        .collect()
}

/// The Transactions section's numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TxnSummary {
    /// The workload the transactions show (an append or a list read: list-append; a write
    /// or a single-value read: rw-register), `None` when no micro-op told.
    pub model: Option<TxnModel>,
    pub committed: u64,
    pub aborted: u64,
    pub info: u64,
    /// Transactions with 0, 1, .., [`LENGTHS`] micro-ops, and more than that (last).
    pub by_length: [u64; LENGTHS + 2],
    /// Transactions of reads only, and with at least one append or write.
    pub read_only: u64,
    pub writing: u64,
    pub keys: HashMap<TxnScalar, KeyStats>,
}

impl TxnSummary {
    /// The keys of the per-key table: most appends (writes) first (acknowledged +
    /// indeterminate), ties by key; at most [`KEYS_LISTED`].
    pub fn top_keys(&self) -> Vec<(&TxnScalar, &KeyStats)> {
        let mut keys: Vec<(&TxnScalar, &KeyStats)> = self.keys.iter().collect();
        keys.sort_by(|a, b| {
            (b.1.acknowledged + b.1.indeterminate)
                .cmp(&(a.1.acknowledged + a.1.indeterminate))
                .then_with(|| a.0.cmp(b.0))
        });
        keys.truncate(KEYS_LISTED);
        keys
    }
}

/// Folds a history's transactions into a [`TxnSummary`], one entry at a time.
#[derive(Debug, Default)]
pub struct TxnSummaryBuilder {
    summary: TxnSummary,
    seen: bool,
}

impl TxnSummaryBuilder {
    /// Takes a history entry with its micro-ops `value` (its op's `value` in the JSON form,
    /// [`analysis::history::History::txn_value`] otherwise) and counts a transaction's
    /// completion. Invokes, entries other than client transactions, and values that do not
    /// parse as micro-ops (the reader has refused those already) are ignored.
    pub fn accept(&mut self, op: &Op, value: &Value) {
        if op.process.client().is_none() || op.f != TXN || op.kind == OpType::Invoke {
            return;
        }
        self.seen = true;
        self.end(op.kind, mops_of(value).unwrap_or_default());
    }

    /// Counts the invoke of a transaction that never completed (`info`, with its micro-ops);
    /// call it for each one before [`TxnSummaryBuilder::finish`].
    pub fn never_completed(&mut self, op: &Op, value: &Value) {
        if op.process.client().is_none() || op.f != TXN {
            return;
        }
        self.seen = true;
        self.end(OpType::Info, mops_of(value).unwrap_or_default());
    }

    /// The summary; `None` when no transaction was seen.
    pub fn finish(self) -> Option<TxnSummary> {
        self.seen.then_some(self.summary)
    }

    /// One transaction ended `kind` (`info` for never), with these micro-ops.
    fn end(&mut self, kind: OpType, mops: Vec<Mop>) {
        let s = &mut self.summary;
        match kind {
            OpType::Ok => s.committed += 1,
            OpType::Fail => s.aborted += 1,
            _ => s.info += 1,
        }
        s.by_length[mops.len().min(LENGTHS + 1)] += 1;
        if mops.iter().any(|m| m.kind != MopKind::Read) {
            s.writing += 1;
        } else {
            s.read_only += 1;
        }
        for m in mops {
            if s.model.is_none() {
                s.model = model_shown(&m);
            }
            if kind == OpType::Fail {
                // Aborted: none of it took effect, and what it read is no evidence.
                s.keys.entry(m.key).or_default();
                continue;
            }
            let stats = s.keys.entry(m.key).or_default();
            match (m.kind, kind) {
                (MopKind::Read, OpType::Ok) => {
                    let len = match &m.value {
                        Seen::List(n) => Some(*n),
                        Seen::Null => Some(0),
                        Seen::Scalar(_) => None,
                    };
                    if let Some(len) = len {
                        stats.longest_read = Some(stats.longest_read.unwrap_or(0).max(len));
                    }
                    stats.last_read = Some(m.value);
                }
                (MopKind::Read, _) => {}
                (_, OpType::Ok) => stats.acknowledged += 1,
                _ => stats.indeterminate += 1,
            }
        }
    }
}

/// The workload a micro-op shows, if it shows one.
fn model_shown(m: &Mop) -> Option<TxnModel> {
    match (m.kind, &m.value) {
        (MopKind::Append, _) | (MopKind::Read, Seen::List(_)) => Some(TxnModel::ListAppend),
        (MopKind::Write, _) | (MopKind::Read, Seen::Scalar(_)) => Some(TxnModel::RwRegister),
        (MopKind::Read, Seen::Null) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::formats::jsonl::read_history_parallel_as;
    use analysis::formats::TxnForm;
    use analysis::history::History;

    /// The summary of a whole history, each op's micro-ops read through `txn_value`, the
    /// invokes never completed handed over at the end.
    fn summary_of(history: &History) -> Option<TxnSummary> {
        let mut builder = TxnSummaryBuilder::default();
        let mut open: HashMap<u64, usize> = HashMap::new();
        for (position, op) in history.ops.iter().enumerate() {
            if let Some(p) = op.process.client() {
                match op.kind {
                    OpType::Invoke => open.insert(p, position),
                    _ => open.remove(&p),
                };
            }
            builder.accept(op, &history.txn_value(position));
        }
        for position in open.into_values() {
            builder.never_completed(&history.ops[position], &history.txn_value(position));
        }
        builder.finish()
    }

    /// A list-append history: p0 commits an append and a read, p1 commits two appends, p2
    /// aborts one, p3 times out on one, p4 never completes one, p0 reads both keys at the end.
    const LIST_APPEND: &str = r#"{"index": 0, "type": "invoke", "process": 0, "f": "txn", "value": [["append", 1, 1], ["r", 1, null]], "time": 10}
{"index": 1, "type": "invoke", "process": 1, "f": "txn", "value": [["append", 1, 2], ["append", "k2", 1]], "time": 11}
{"index": 2, "type": "ok", "process": 0, "f": "txn", "value": [["append", 1, 1], ["r", 1, [1]]], "time": 20}
{"index": 3, "type": "ok", "process": 1, "f": "txn", "value": [["append", 1, 2], ["append", "k2", 1]], "time": 21}
{"index": 4, "type": "invoke", "process": 2, "f": "txn", "value": [["append", 1, 3]], "time": 30}
{"index": 5, "type": "fail", "process": 2, "f": "txn", "value": [["append", 1, 3]], "time": 31}
{"index": 6, "type": "invoke", "process": 3, "f": "txn", "value": [["append", "k2", 2]], "time": 32}
{"index": 7, "type": "info", "process": 3, "f": "txn", "value": [["append", "k2", 2]], "error": "timed-out", "time": 40}
{"index": 8, "type": "invoke", "process": 4, "f": "txn", "value": [["append", 1, 4], ["r", 1, null], ["r", "k2", null], ["append", 3, 1], ["r", 3, null]], "time": 41}
{"index": 9, "type": "invoke", "process": 0, "f": "txn", "value": [["r", 1, null], ["r", "k2", null], ["r", 3, null]], "time": 50}
{"index": 10, "type": "ok", "process": 0, "f": "txn", "value": [["r", 1, [1, 2]], ["r", "k2", [1]], ["r", 3, null]], "time": 60}
"#;

    fn check_list_append(s: &TxnSummary) {
        assert_eq!(s.model, Some(TxnModel::ListAppend));
        assert_eq!(
            (s.committed, s.aborted, s.info),
            (3, 1, 2),
            "p4's invoke never completed: info"
        );
        assert_eq!(
            s.by_length,
            [0, 2, 2, 1, 0, 1],
            "lengths 1, 1, 2, 2, 3 and one of 5"
        );
        assert_eq!((s.read_only, s.writing), (1, 5));
        let k1 = &s.keys[&TxnScalar::Int(1)];
        assert_eq!(
            (k1.acknowledged, k1.indeterminate, k1.longest_read),
            (2, 1, Some(2)),
            "the aborted append is not counted"
        );
        let k2 = &s.keys[&TxnScalar::Str("k2".into())];
        assert_eq!(
            (k2.acknowledged, k2.indeterminate, k2.longest_read),
            (1, 1, Some(1))
        );
        let k3 = &s.keys[&TxnScalar::Int(3)];
        assert_eq!(
            (k3.acknowledged, k3.indeterminate, k3.longest_read),
            (0, 1, Some(0)),
            "a null read is the empty list"
        );
        assert_eq!(s.keys.len(), 3);
        let top: Vec<String> = s.top_keys().iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(top, ["1", "\"k2\"", "3"], "most appends first");
    }

    #[test]
    fn list_append_counts_lengths_and_final_lists_from_a_json_history() {
        let (history, _) =
            read_history_parallel_as(LIST_APPEND.as_bytes(), "t", TxnForm::Json).unwrap();
        check_list_append(&summary_of(&history).unwrap());
    }

    #[test]
    fn a_compact_history_gives_the_same_summary() {
        let (history, _) =
            read_history_parallel_as(LIST_APPEND.as_bytes(), "t", TxnForm::Compact).unwrap();
        assert!(
            history.txn_table.is_some() && history.ops[2].value.is_null(),
            "the micro-ops are in the table"
        );
        check_list_append(&summary_of(&history).unwrap());
    }

    #[test]
    fn streaming_entries_gives_the_same_summary() {
        let keep: Vec<std::ops::RangeInclusive<u64>> = Vec::new();
        let mut builder = crate::report::load::Builder::new(&keep);
        for op in analysis::formats::jsonl::JsonlReader::new(LIST_APPEND.as_bytes(), "t") {
            builder.accept(op.unwrap());
        }
        check_list_append(&builder.finish().txns.unwrap());
    }

    #[test]
    fn rw_register_keeps_acknowledged_writes_and_the_last_value_read() {
        let text = r#"{"index": 0, "type": "invoke", "process": 0, "f": "txn", "value": [["w", 1, 5]]}
{"index": 1, "type": "ok", "process": 0, "f": "txn", "value": [["w", 1, 5]]}
{"index": 2, "type": "invoke", "process": 1, "f": "txn", "value": [["r", 1, null], ["r", 2, null]]}
{"index": 3, "type": "invoke", "process": 0, "f": "txn", "value": [["w", 1, 6], ["r", 1, null]]}
{"index": 4, "type": "ok", "process": 0, "f": "txn", "value": [["w", 1, 6], ["r", 1, 6]]}
{"index": 5, "type": "ok", "process": 1, "f": "txn", "value": [["r", 1, 5], ["r", 2, null]]}
"#;
        let (history, _) =
            read_history_parallel_as(text.as_bytes(), "t", TxnForm::Compact).unwrap();
        let s = summary_of(&history).unwrap();
        assert_eq!(s.model, Some(TxnModel::RwRegister));
        assert_eq!((s.committed, s.read_only, s.writing), (3, 1, 2));
        let k1 = &s.keys[&TxnScalar::Int(1)];
        assert_eq!(k1.acknowledged, 2);
        assert_eq!(
            k1.last_read,
            Some(Seen::Scalar(TxnScalar::Int(5))),
            "the read completed last, not the one invoked last"
        );
        assert_eq!(s.keys[&TxnScalar::Int(2)].last_read, Some(Seen::Null));
    }

    #[test]
    fn a_history_without_transactions_has_no_summary() {
        let text = "{\"index\": 0, \"type\": \"invoke\", \"process\": 0, \"f\": \"write\", \"key\": \"k\", \"value\": 1}\n";
        let (history, _) =
            read_history_parallel_as(text.as_bytes(), "t", TxnForm::Compact).unwrap();
        assert_eq!(summary_of(&history), None);
    }
}
