//! rw-register: the version facts that are certain, the anomalies read off them, and the
//! data edges.
//!
//! Registers are overwritten, so reads do not reveal the order of writes. What is certain:
//! every key starts at nil, before every written value; a committed read of value v comes
//! after the (unique) write of v. Hence, for every external read (a read not preceded in
//! its txn by a write of the key): wr (the txn whose last write of the key was v -> the
//! reader) and rw (a reader of nil -> every txn that wrote the key). The order between two written values is
//! not inferred (no ww edges, no rw edges from reads of non-nil values); `details.notes`
//! says so. Also found, for every committed read of another txn's value (after the
//! reader's own write of the key too): `G1a` (a value a failed txn wrote), `G1b` (a value
//! its writer overwrote in the same txn), `garbage-read` (a value nobody wrote).

use super::found::{tname, txn_json, Analysis, Anomaly, Explain};
use super::graph::{Edge, EdgeKind};
use super::txns::{Arg, Sc, Status, Txns};
use crate::history::txn::MopKind;
use rustc_hash::FxHashMap;
use serde_json::json;

#[derive(Clone, Copy)]
struct Writer {
    txn: u32,
    intermediate: bool,
}

/// Per key: value -> writer; for explaining edges.
pub struct Registers<'a> {
    writers: Vec<FxHashMap<Sc<'a>, Writer>>,
}

/// Every read of txn `t` not preceded in it by a write of the same key (its external
/// reads), each distinct (key, value read) once; `None`: nil.
fn external_reads<'a>(txns: &Txns<'a>, t: u32) -> Vec<(u32, Option<Sc<'a>>)> {
    let mut written: Vec<u32> = Vec::new();
    let mut out: Vec<(u32, Option<Sc<'a>>)> = Vec::new();
    for m in txns.mops_of(t) {
        match (m.kind, m.arg) {
            (MopKind::Write, _) => written.push(m.key),
            (MopKind::Read, arg) if !written.contains(&m.key) => {
                let v = match arg {
                    Arg::Scalar(s) => Some(s),
                    _ => None,
                };
                if !out.contains(&(m.key, v)) {
                    out.push((m.key, v));
                }
            }
            _ => {}
        }
    }
    out
}

/// The values txn `t` read after writing the key itself that are not its own latest
/// write: (key, value). They are `internal` anomalies; a value another txn wrote is also
/// judged as a read of that txn's write (G1a, G1b, garbage-read), as Adya's G1a and G1b
/// are about any read of another transaction's version.
fn reads_after_own_write<'a>(txns: &Txns<'a>, t: u32) -> Vec<(u32, Sc<'a>)> {
    let mut last: Vec<(u32, Option<Sc<'a>>)> = Vec::new();
    let mut out: Vec<(u32, Sc<'a>)> = Vec::new();
    for m in txns.mops_of(t) {
        let v = match m.arg {
            Arg::Scalar(s) => Some(s),
            _ => None,
        };
        let slot = last.iter().position(|(k, _)| *k == m.key);
        match (m.kind, slot, v) {
            (MopKind::Write, Some(i), _) => last[i].1 = v,
            (MopKind::Write, None, _) => last.push((m.key, v)),
            (MopKind::Read, Some(i), Some(v))
                if last[i].1 != Some(v) && !out.contains(&(m.key, v)) =>
            {
                out.push((m.key, v))
            }
            _ => {}
        }
    }
    out
}

/// Runs the rw-register analysis.
pub fn analyze<'a>(txns: &Txns<'a>) -> (Analysis, Registers<'a>) {
    let mut out = Analysis::default();
    let (writers, key_writers) = index_writers(txns, &mut out);
    let mut read_keys = vec![false; txns.keys.len()];
    for t in 0..txns.txns.len() as u32 {
        if txns.txns[t as usize].status == Status::Ok {
            judge_reads(txns, t, &writers, &key_writers, &mut read_keys, &mut out);
        }
    }
    for (k, w) in writers.iter().enumerate() {
        if !read_keys[k]
            && w.values()
                .any(|w| txns.txns[w.txn as usize].status == Status::Ok)
        {
            out.unread_keys.push(k as u32);
        }
    }
    super::txn_rules::rw_register_rules(txns, &mut out.anomalies);
    out.notes.push(
        "rw-register: the order of written values is not inferred (only that nil, the initial state, precedes them all); \
         ww edges and rw edges from reads of written values are therefore absent"
            .into(),
    );
    (out, Registers { writers })
}

/// Per key: value -> the txn that wrote it (marked intermediate when the txn wrote the
/// key again), and the txns that did not fail and wrote the key, in txn order. A second
/// write of the same value to a key is a problem: reads could no longer name their writer.
fn index_writers<'a>(
    txns: &Txns<'a>,
    out: &mut Analysis,
) -> (Vec<FxHashMap<Sc<'a>, Writer>>, Vec<Vec<u32>>) {
    let mut writers: Vec<FxHashMap<Sc<'a>, Writer>> = vec![FxHashMap::default(); txns.keys.len()];
    let mut key_writers: Vec<Vec<u32>> = vec![Vec::new(); txns.keys.len()];
    let mut last: Vec<(u32, Sc<'a>)> = Vec::new();
    for t in 0..txns.txns.len() as u32 {
        last.clear();
        for m in txns.mops_of(t) {
            let (MopKind::Write, Arg::Scalar(v)) = (m.kind, m.arg) else {
                continue;
            };
            let w = &mut writers[m.key as usize];
            if let Some(prev) = w.get(&v) {
                if out.problems.len() < 8 {
                    out.problems.push(format!(
                        "{} was written to key {} twice ({} and {}): written values must be unique",
                        v,
                        txns.keys[m.key as usize],
                        tname(txns, prev.txn),
                        tname(txns, t)
                    ));
                }
                continue;
            }
            if let Some(slot) = last.iter_mut().find(|(k, _)| *k == m.key) {
                if let Some(p) = w.get_mut(&slot.1) {
                    p.intermediate = true;
                }
                slot.1 = v;
            } else {
                last.push((m.key, v));
                if txns.txns[t as usize].status != Status::Fail {
                    key_writers[m.key as usize].push(t);
                }
            }
            w.insert(
                v,
                Writer {
                    txn: t,
                    intermediate: false,
                },
            );
        }
    }
    (writers, key_writers)
}

/// The reads of committed txn `t`: each external read gives its edges (a read of nil: rw
/// to every other txn that wrote the key; a read of a value: [`read_of_value`]); each read
/// of another txn's value after `t`'s own write is judged too. Marks every key `t` read.
fn judge_reads<'a>(
    txns: &Txns<'a>,
    t: u32,
    writers: &[FxHashMap<Sc<'a>, Writer>],
    key_writers: &[Vec<u32>],
    read_keys: &mut [bool],
    out: &mut Analysis,
) {
    for (k, v) in external_reads(txns, t) {
        read_keys[k as usize] = true;
        match v {
            None => out
                .edges
                .extend(
                    key_writers[k as usize]
                        .iter()
                        .filter(|w| **w != t)
                        .map(|&w| Edge {
                            from: t,
                            to: w,
                            kind: EdgeKind::Rw,
                        }),
                ),
            Some(v) => read_of_value(txns, &writers[k as usize], t, k, v, out),
        }
    }
    for (k, v) in reads_after_own_write(txns, t) {
        judge_foreign_value(txns, &writers[k as usize], t, k, v, out);
    }
    // Reads after the txn's own write of the key are internal; still mark the key read.
    for m in txns.mops_of(t) {
        if m.kind == MopKind::Read {
            read_keys[m.key as usize] = true;
        }
    }
}

/// A committed read of another txn's value: judged by [`judge_foreign_value`], and a wr
/// edge from its writer when that is a plain read of its final write.
fn read_of_value<'a>(
    txns: &Txns<'a>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    t: u32,
    k: u32,
    v: Sc<'a>,
    out: &mut Analysis,
) {
    if let Some(w) = judge_foreign_value(txns, writers, t, k, v, out) {
        out.edges.push(Edge {
            from: w,
            to: t,
            kind: EdgeKind::Wr,
        });
    }
}

/// Judges txn `t`'s read of value `v` of key `k` as a read of another txn's write:
/// `garbage-read` (nobody wrote it), `G1a` (its writer failed), `G1b` (its writer overwrote
/// it). Returns the writer when the read is a plain read of another txn's final write.
fn judge_foreign_value<'a>(
    txns: &Txns<'a>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    t: u32,
    k: u32,
    v: Sc<'a>,
    out: &mut Analysis,
) -> Option<u32> {
    let key = txns.keys[k as usize];
    let Some(w) = writers.get(&v) else {
        out.anomalies.push(Anomaly {
            name: "garbage-read",
            witness: json!({"type": "garbage-read", "key": key.to_json(), "element": v.to_json(), "reader": txn_json(txns, t),
                "why": format!("{} read key {} = {}, but no transaction ever wrote {} to it", tname(txns, t), key, v, v)}),
        });
        return None;
    };
    if w.txn == t {
        return None;
    }
    if txns.txns[w.txn as usize].status == Status::Fail {
        out.anomalies.push(Anomaly {
            name: "G1a",
            witness: json!({"type": "G1a", "key": key.to_json(), "element": v.to_json(), "reader": txn_json(txns, t), "writer": txn_json(txns, w.txn),
                "why": format!("{} read key {} = {}, which {} wrote and then failed", tname(txns, t), key, v, tname(txns, w.txn))}),
        });
        return None;
    }
    if w.intermediate {
        out.anomalies.push(Anomaly {
            name: "G1b",
            witness: json!({"type": "G1b", "key": key.to_json(), "element": v.to_json(), "reader": txn_json(txns, t), "writer": txn_json(txns, w.txn),
                "why": format!("{} read key {} = {}, which {} wrote and then overwrote in the same transaction: an intermediate state", tname(txns, t), key, v, tname(txns, w.txn))}),
        });
        return None;
    }
    Some(w.txn)
}

impl Explain for Registers<'_> {
    fn explain(
        &self,
        txns: &Txns,
        a: u32,
        b: u32,
        kind: EdgeKind,
    ) -> (Option<serde_json::Value>, String) {
        let (ta, tb) = (tname(txns, a), tname(txns, b));
        match kind {
            EdgeKind::Wr => {
                for (k, v) in external_reads(txns, b) {
                    if let Some(v) = v {
                        if self.writers[k as usize].get(&v).map(|w| w.txn) == Some(a) {
                            let key = txns.keys[k as usize];
                            return (
                                Some(key.to_json()),
                                format!("{tb} read key {key} = {v}, which {ta} wrote: wr"),
                            );
                        }
                    }
                }
            }
            EdgeKind::Rw => {
                for (k, v) in external_reads(txns, a) {
                    if v.is_some() {
                        continue;
                    }
                    let written = txns.mops_of(b).iter().find_map(|m| match (m.kind, m.arg) {
                        (MopKind::Write, Arg::Scalar(x)) if m.key == k => Some(x),
                        _ => None,
                    });
                    if let Some(x) = written {
                        let key = txns.keys[k as usize];
                        return (Some(key.to_json()), format!("{ta} read key {key} = nil, the initial state, and {tb} wrote {x}: rw"));
                    }
                }
            }
            _ => {}
        }
        (None, format!("{ta} precedes {tb}: {}", kind.as_str()))
    }
}
