//! Hand-written histories for the linearizability checker tests: one line per entry,
//! `(process, type, f, key, value)`, a negative process meaning the nemesis.
#![allow(dead_code)]

use analysis::history::{History, Op, OpType, Process};
use serde_json::Value;

/// One history line: process, type, f, key, value.
pub type Line<'a> = (i64, &'a str, &'a str, Option<&'a str>, Value);

/// The history of `lines`, entry `i` at index `i` and time `1000 * i`.
pub fn history(lines: &[Line]) -> History {
    let ops = lines
        .iter()
        .enumerate()
        .map(|(i, (p, t, f, key, value))| Op {
            index: i as u64,
            kind: match *t {
                "invoke" => OpType::Invoke,
                "ok" => OpType::Ok,
                "fail" => OpType::Fail,
                _ => OpType::Info,
            },
            process: if *p < 0 { Process::Nemesis } else { Process::Client(*p as u64) },
            f: f.to_string(),
            key: key.map(str::to_string),
            value: value.clone(),
            time: 1000 * i as u64,
            node: None,
            error: None,
            meta: None,
        })
        .collect();
    History::new(ops)
}
