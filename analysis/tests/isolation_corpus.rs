//! A corpus of the shapes where the isolation checker and Elle have disagreed, each with
//! the verdict and anomaly names Adya's definitions give under the models named. Where
//! faultline's answer differs from Elle's, the comment says what Elle answers and why
//! faultline's is the right one (docs/checkers.md, "Differences from Elle", lists them).
//!
//! A history is written as entries `[process, type, value]`: `invoke` (reads blanked to
//! `null` when written with results), `ok`, `fail` and `info` (`fail`/`info` repeat the
//! invocation's value), or `txn` (an invocation and its `ok` at once). Indices and times
//! follow the order of the entries.

mod isolation_support;

use analysis::checkers::isolation::{ConsistencyModel, TxnModel};
use analysis::history::{History, Op, OpType, Process};
use isolation_support::{anomaly_types, run};
use serde_json::{json, Value};
use std::collections::HashMap;

struct Case {
    name: &'static str,
    model: TxnModel,
    entries: Value,
    /// (consistency model, verdict, anomaly names proscribed by it)
    expect: &'static [(&'static str, &'static str, &'static [&'static str])],
}

fn blank_reads(v: &Value) -> Value {
    let mops = v.as_array().expect("a txn value is a list");
    Value::Array(
        mops.iter()
            .map(|m| {
                if m[0] == "r" {
                    json!(["r", m[1], null])
                } else {
                    m.clone()
                }
            })
            .collect(),
    )
}

fn history(entries: &Value) -> History {
    let mut ops: Vec<Op> = Vec::new();
    let mut invoked: HashMap<u64, Value> = HashMap::new();
    let mut push = |p: u64, kind: OpType, value: Value| {
        let index = ops.len() as u64;
        ops.push(Op {
            index,
            kind,
            process: Process::Client(p),
            f: "txn".into(),
            key: None,
            value,
            time: index * 1000,
            node: None,
            error: None,
            meta: None,
        });
    };
    for e in entries.as_array().expect("entries are a list") {
        let p = e[0].as_u64().expect("a process number");
        let v = &e[2];
        match e[1].as_str().expect("an entry type") {
            "txn" => {
                push(p, OpType::Invoke, blank_reads(v));
                push(p, OpType::Ok, v.clone());
            }
            "invoke" => {
                invoked.insert(p, blank_reads(v));
                push(p, OpType::Invoke, blank_reads(v));
            }
            "ok" => push(p, OpType::Ok, v.clone()),
            "fail" => push(p, OpType::Fail, invoked[&p].clone()),
            "info" => push(p, OpType::Info, invoked[&p].clone()),
            other => panic!("unknown entry type {other}"),
        }
    }
    History::new(ops)
}

const RW: TxnModel = TxnModel::RwRegister;
const LA: TxnModel = TxnModel::ListAppend;

fn cases() -> Vec<Case> {
    vec![
        // Adya G1a: T2 read a value only a failed transaction wrote. Its read is not the
        // key's first micro-op in T2. Elle: G1a too.
        Case {
            name: "rw-g1a-on-a-second-read",
            model: RW,
            entries: json!([
                [0, "invoke", [["w", 0, 1]]],
                [0, "fail", null],
                [1, "txn", [["r", 0, null], ["r", 0, 1]]],
                [2, "txn", [["w", 1, 5]]],
                [1, "txn", [["r", 1, 5]]],
            ]),
            expect: &[
                ("read-committed", "invalid", &["G1a"]),
                ("serializable", "invalid", &["G1a", "internal"]),
                // G1a is allowed; the rest (a wr edge on key 1) is fine.
                ("read-uncommitted", "valid", &[]),
            ],
        },
        // Adya G1b: T2 read 1, which T1 overwrote with 2 in the same transaction; T2 read it
        // after its own write of the key (so it is also `internal`).
        Case {
            name: "rw-g1b-after-the-readers-own-write",
            model: RW,
            entries: json!([
                [0, "txn", [["w", 0, 1], ["w", 0, 2]]],
                [1, "txn", [["w", 0, 3], ["r", 0, 1]]],
            ]),
            expect: &[
                ("read-committed", "invalid", &["G1b"]),
                ("serializable", "invalid", &["G1b", "internal"]),
            ],
        },
        // A committed write nobody reads adds only ww edges, and any order of them
        // serialises: valid. Elle: valid (faultline said unknown before).
        Case {
            name: "rw-a-key-nobody-reads",
            model: RW,
            entries: json!([
                [0, "txn", [["w", 0, 1], ["w", 1, 1]]],
                [1, "txn", [["r", 1, 1]]],
            ]),
            expect: &[
                ("serializable", "valid", &[]),
                ("strict-serializable", "valid", &[]),
            ],
        },
        Case {
            name: "la-a-key-nobody-reads",
            model: LA,
            entries: json!([
                [0, "txn", [["append", "x", 1], ["append", "y", 1]]],
                [1, "txn", [["r", "x", [1]]]],
            ]),
            expect: &[("strict-serializable", "valid", &[])],
        },
        // Two equally long reads of x that differ: x's order is not a list's, so the G0
        // through x's ww edge exists only under a guessed order. Elle takes one read as
        // the order and reports G0 or not depending on which read comes first; faultline
        // reports incompatible-order (proscribed from read-committed up) and, where that
        // is allowed, says unknown: no proof either way.
        Case {
            name: "la-equal-length-incompatible-reads",
            model: LA,
            entries: json!([
                [0, "invoke", [["append", "x", 1], ["append", "y", 3]]],
                [1, "invoke", [["append", "x", 2], ["append", "y", 4]]],
                [0, "ok", [["append", "x", 1], ["append", "y", 3]]],
                [1, "ok", [["append", "x", 2], ["append", "y", 4]]],
                [2, "txn", [["r", "x", [1, 2]]]],
                [3, "txn", [["r", "x", [2, 1]]]],
                [2, "txn", [["r", "y", [4, 3]]]],
            ]),
            expect: &[
                ("read-uncommitted", "unknown", &[]),
                ("read-committed", "invalid", &["incompatible-order"]),
            ],
        },
        Case {
            name: "la-equal-length-incompatible-reads-swapped",
            model: LA,
            entries: json!([
                [0, "invoke", [["append", "x", 1], ["append", "y", 3]]],
                [1, "invoke", [["append", "x", 2], ["append", "y", 4]]],
                [0, "ok", [["append", "x", 1], ["append", "y", 3]]],
                [1, "ok", [["append", "x", 2], ["append", "y", 4]]],
                [2, "txn", [["r", "x", [2, 1]]]],
                [3, "txn", [["r", "x", [1, 2]]]],
                [2, "txn", [["r", "y", [4, 3]]]],
            ]),
            expect: &[
                ("read-uncommitted", "unknown", &[]),
                ("read-committed", "invalid", &["incompatible-order"]),
            ],
        },
        // A read of an element nobody appended. Elle has no rule for it (its dirty-update
        // pass stops on an assertion, "No transaction wrote"); no serial order of the
        // transactions can produce it, so it is proscribed by every model.
        Case {
            name: "la-garbage-read",
            model: LA,
            entries: json!([
                [0, "txn", [["append", "x", 1]]],
                [1, "txn", [["r", "x", [1, 7]]]],
            ]),
            expect: &[
                ("read-uncommitted", "invalid", &["garbage-read"]),
                ("strict-serializable", "invalid", &["garbage-read"]),
            ],
        },
        // An `ok` read of nil is the empty list (clients report a missing list as nil).
        // Elle's internal check compares nil with [] literally and calls this `internal`.
        Case {
            name: "la-nil-and-empty-are-one-state",
            model: LA,
            entries: json!([
                [0, "txn", [["append", "y", 1]]],
                [
                    1,
                    "txn",
                    [["r", "x", null], ["r", "x", []], ["r", "y", [1]]]
                ],
            ]),
            expect: &[("strict-serializable", "valid", &[])],
        },
        // Two transactions read the same (empty) state of x and both appended to it: a lost
        // update. Elle groups reads by their literal value, so nil and [] fall apart and it
        // reports no lost-update.
        Case {
            name: "la-lost-update-through-nil-and-empty",
            model: LA,
            entries: json!([
                [0, "invoke", [["r", "x", null], ["append", "x", 1]]],
                [1, "invoke", [["r", "x", []], ["append", "x", 2]]],
                [0, "ok", [["r", "x", null], ["append", "x", 1]]],
                [1, "ok", [["r", "x", []], ["append", "x", 2]]],
                [2, "txn", [["r", "x", [1, 2]]]],
            ]),
            expect: &[
                ("cursor-stability", "invalid", &["lost-update"]),
                ("read-committed", "valid", &[]),
            ],
        },
    ]
}

#[test]
fn every_corpus_shape_gets_the_verdict_and_names_of_adyas_definitions() {
    let mut failures = Vec::new();
    for case in cases() {
        let h = history(&case.entries);
        for (model, verdict, names) in case.expect {
            let cm: ConsistencyModel = model.parse().expect("a known model");
            let r = run(&h, case.model, cm);
            let got: Vec<String> = anomaly_types(&r).into_iter().collect();
            let want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            if r.valid.as_str() != *verdict || got != want {
                failures.push(format!(
                    "{} under {model}: expected {verdict} {want:?}, got {} {got:?} ({})",
                    case.name,
                    r.valid.as_str(),
                    r.reason.unwrap_or_default()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
