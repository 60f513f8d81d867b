//! List-append: version orders per key, the anomalies read off them, and the data edges.
//!
//! The version order of a key is the longest committed read of it, duplicates dropped
//! (every other read must be a prefix of it, else `incompatible-order`); a key never read
//! but appended once has that one element. From it: `duplicate-elements`, `G1a` (a
//! committed read saw an element a failed txn appended), `garbage-read` (an element nobody
//! appended), `G1b` (a read ended at an append its txn followed with another append to the
//! key), `dirty-update`, `lost-append`; and the edges: ww (the writers of consecutive
//! elements; an append never read follows the last element read), wr (the writer of a
//! read's last element -> the reader), rw (the reader -> the writer of the element after
//! what it read). Where a key's reads are incompatible, its order is only their common
//! prefix: no edge or dirty update rests on a guess between them, and the key is named in
//! [`Analysis::uncertain`]. Failed txns get no edges; info txns get edges like committed ones (an info
//! append never read has no outgoing edge, so it cannot close a cycle). Reads of `info`
//! txns are ignored: their results are unknown.

use super::found::{show_list, tname, txn_json, Analysis, Anomaly, Explain};
use super::graph::{Edge, EdgeKind};
use super::txns::{Arg, Sc, Status, Txns};
use crate::history::txn::MopKind;
use crate::history::txn_table::Atom;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug)]
struct Writer {
    txn: u32,
    /// Its txn appended to the key again afterwards.
    intermediate: bool,
}

/// The inferred state of one key, kept for explaining edges.
#[derive(Default)]
struct KeyOrder<'a> {
    order: Vec<Sc<'a>>,
    /// The reads disagree: `order` is only their common prefix.
    agreed_prefix: bool,
    pos: FxHashMap<Sc<'a>, u32>,
    writers: FxHashMap<Sc<'a>, Writer>,
}

/// The per-key version orders, used by witnesses to explain edges.
pub struct Orders<'a> {
    keys: Vec<KeyOrder<'a>>,
}

/// Runs the list-append analysis.
pub fn analyze<'a>(txns: &Txns<'a>) -> (Analysis, Orders<'a>) {
    let mut out = Analysis::default();
    let writers = index_writers(txns, &mut out);
    let reads = index_reads(txns);
    let final_after = last_append_completion(txns);
    let per_key: Vec<(KeyOrder<'a>, KeyOut)> = writers
        .into_par_iter()
        .zip(reads.into_par_iter())
        .enumerate()
        .map(|(k, (w, r))| analyze_key(txns, k as u32, w, &r, final_after))
        .collect();
    let mut keys = Vec::with_capacity(per_key.len());
    for (order, key_out) in per_key {
        out.anomalies.extend(key_out.anomalies);
        out.edges.extend(key_out.edges);
        if key_out.unread {
            out.unread_keys.push(keys.len() as u32);
        }
        out.uncertain.extend(key_out.uncertain);
        keys.push(order);
    }
    super::txn_rules::list_append_rules(txns, &mut out.anomalies);
    if out.unread_keys.is_empty() && final_after.is_some() && !has_final_reads(txns, final_after) {
        out.notes.push("no final reads (a committed read invoked after every append completed): lost-append was not checked".into());
    }
    (out, Orders { keys })
}

/// Per key: element -> the txn that appended it. A second append of the same element to
/// the same key is a problem: orders could no longer be read off the lists.
fn index_writers<'a>(txns: &Txns<'a>, out: &mut Analysis) -> Vec<FxHashMap<Sc<'a>, Writer>> {
    let mut writers: Vec<FxHashMap<Sc<'a>, Writer>> = vec![FxHashMap::default(); txns.keys.len()];
    let mut last_in_txn: Vec<(u32, Sc<'a>)> = Vec::new();
    for t in 0..txns.txns.len() as u32 {
        last_in_txn.clear();
        for m in txns.mops_of(t) {
            let (MopKind::Append, Arg::Scalar(e)) = (m.kind, m.arg) else {
                continue;
            };
            let w = &mut writers[m.key as usize];
            if let Some(prev) = w.get(&e) {
                if out.problems.len() < 8 {
                    out.problems.push(format!(
                        "{} was appended to key {} twice ({} and {}): appended elements must be unique",
                        e,
                        txns.keys[m.key as usize],
                        tname(txns, prev.txn),
                        tname(txns, t)
                    ));
                }
                continue;
            }
            if let Some(slot) = last_in_txn.iter_mut().find(|(k, _)| *k == m.key) {
                if let Some(p) = w.get_mut(&slot.1) {
                    p.intermediate = true;
                }
                slot.1 = e;
            } else {
                last_in_txn.push((m.key, e));
            }
            w.insert(
                e,
                Writer {
                    txn: t,
                    intermediate: false,
                },
            );
        }
    }
    writers
}

type Reads<'a> = Vec<(u32, &'a [Atom])>;

/// Per key: the committed reads that returned a list.
fn index_reads<'a>(txns: &Txns<'a>) -> Vec<Reads<'a>> {
    let mut reads: Vec<Reads<'a>> = vec![Vec::new(); txns.keys.len()];
    for (t, x) in txns.txns.iter().enumerate() {
        if x.status != Status::Ok {
            continue;
        }
        for m in txns.mops_of(t as u32) {
            if let (MopKind::Read, Arg::List(l)) = (m.kind, m.arg) {
                reads[m.key as usize].push((t as u32, l));
            }
        }
    }
    reads
}

/// The history index of the last completion of a txn that appends; reads of committed
/// txns invoked after it are final reads. `None` when nothing appends.
fn last_append_completion(txns: &Txns) -> Option<u64> {
    txns.txns
        .iter()
        .enumerate()
        .filter(|(t, _)| {
            txns.mops_of(*t as u32)
                .iter()
                .any(|m| m.kind == MopKind::Append)
        })
        .filter_map(|(_, x)| x.complete)
        .max()
}

fn has_final_reads(txns: &Txns, final_after: Option<u64>) -> bool {
    let Some(f) = final_after else { return false };
    txns.txns.iter().enumerate().any(|(t, x)| {
        x.status == Status::Ok
            && x.invoke > f
            && txns
                .mops_of(t as u32)
                .iter()
                .any(|m| matches!(m.arg, Arg::List(_)))
    })
}

#[derive(Default)]
struct KeyOut {
    anomalies: Vec<Anomaly>,
    edges: Vec<Edge>,
    unread: bool,
    uncertain: Option<String>,
}

fn analyze_key<'a>(
    txns: &Txns<'a>,
    k: u32,
    writers: FxHashMap<Sc<'a>, Writer>,
    reads: &Reads<'a>,
    final_after: Option<u64>,
) -> (KeyOrder<'a>, KeyOut) {
    let mut out = KeyOut::default();
    let status = |t: u32| txns.txns[t as usize].status;
    let key = txns.keys[k as usize];
    // The longest read and its own reader: another read of the same length may differ.
    let (longest_txn, longest): (Option<u32>, &'a [Atom]) = reads
        .iter()
        .max_by_key(|(_, l)| l.len())
        .map_or((None, &[]), |(t, l)| (Some(*t), *l));
    let mut order: Vec<Sc<'a>> = Vec::with_capacity(longest.len());
    let mut pos: FxHashMap<Sc<'a>, u32> = FxHashMap::default();
    let mut first_dup = usize::MAX;
    for (i, e) in txns.elems(longest).enumerate() {
        if let std::collections::hash_map::Entry::Vacant(slot) = pos.entry(e) {
            slot.insert(order.len() as u32);
            order.push(e);
        } else {
            first_dup = first_dup.min(i);
        }
    }
    if reads.is_empty() && writers.len() == 1 {
        let (&e, _) = writers.iter().next().expect("one writer");
        pos.insert(e, 0);
        order.push(e);
    }
    let is_prefix = |list: &[Atom]| {
        list.len() <= longest.len()
            && (std::ptr::eq(list.as_ptr(), longest.as_ptr())
                || list.iter().zip(longest).all(|(a, b)| a == b))
    };
    // Incompatible reads leave the version order unknown past what every read agrees on:
    // edges (and dirty updates) come from that common prefix only, never from a guess.
    let compatible = reads.iter().all(|(_, l)| is_prefix(l));
    let mut observed = None;
    if !compatible {
        observed = Some(std::mem::take(&mut pos));
        let common = reads.iter().fold(longest.len(), |n, (_, l)| {
            n.min(l.iter().zip(longest).take_while(|(a, b)| a == b).count())
        });
        order.clear();
        for e in txns.elems(&longest[..common]) {
            if let std::collections::hash_map::Entry::Vacant(slot) = pos.entry(e) {
                slot.insert(order.len() as u32);
                order.push(e);
            }
        }
        out.uncertain = Some(format!(
            "key {key}: its reads are incompatible, so its version order is unknown past their common prefix {}; cycles that would need it are not judged",
            show_list(order.iter().copied())
        ));
    }
    out.unread = reads.is_empty() && writers.values().any(|w| status(w.txn) == Status::Ok);
    let first_with = |pred: &dyn Fn(Option<&Writer>) -> bool| {
        txns.elems(longest)
            .position(|e| pred(writers.get(&e)))
            .unwrap_or(usize::MAX)
    };
    let first_failed = first_with(&|w| w.is_some_and(|w| status(w.txn) == Status::Fail));
    let first_garbage = first_with(&|w| w.is_none());
    let unobserved: Vec<u32> = {
        let mut u: Vec<u32> = writers
            .iter()
            .filter(|(e, w)| !pos.contains_key(*e) && status(w.txn) != Status::Fail)
            .map(|(_, w)| w.txn)
            .collect();
        u.sort_unstable();
        u.dedup();
        u
    };
    let mut reported_incompatible = false;
    let mut seen_elsewhere: FxHashSet<Sc<'a>> = FxHashSet::default();
    for &(r, list) in reads {
        // Reads that share the table's chain (the same start) are prefixes of each other.
        if is_prefix(list) {
            let n = list.len();
            if first_dup < n {
                out.anomalies.push(duplicates(txns, k, r, list));
            }
            if first_failed < n {
                out.anomalies.push(aborted_read(
                    txns,
                    k,
                    r,
                    list,
                    txns.sc(longest[first_failed]),
                    writers[&txns.sc(longest[first_failed])].txn,
                ));
            }
            if first_garbage < n {
                out.anomalies.push(garbage_read(
                    txns,
                    k,
                    r,
                    list,
                    txns.sc(longest[first_garbage]),
                ));
            }
        } else {
            if !reported_incompatible {
                reported_incompatible = true;
                out.anomalies.push(incompatible(
                    txns,
                    k,
                    (r, list),
                    (longest_txn.expect("a longest read"), longest),
                ));
            }
            let mut set = FxHashSet::default();
            if !txns.elems(list).all(|e| set.insert(e)) {
                out.anomalies.push(duplicates(txns, k, r, list));
            }
            for e in txns.elems(list) {
                seen_elsewhere.insert(e);
                match writers.get(&e) {
                    Some(w) if status(w.txn) == Status::Fail => {
                        out.anomalies.push(aborted_read(txns, k, r, list, e, w.txn));
                        break;
                    }
                    None => {
                        out.anomalies.push(garbage_read(txns, k, r, list, e));
                        break;
                    }
                    _ => {}
                }
            }
        }
        read_edges(
            txns,
            k,
            r,
            list,
            &order,
            &pos,
            &writers,
            &unobserved,
            &mut out,
        );
    }
    write_edges(txns, &order, &writers, &unobserved, &mut out.edges);
    dirty_updates(txns, key, &order, &writers, &mut out.anomalies);
    let has_final =
        final_after.is_some_and(|f| reads.iter().any(|(r, _)| txns.txns[*r as usize].invoke > f));
    if has_final {
        lost_appends(
            txns,
            k,
            observed.as_ref().unwrap_or(&pos),
            &writers,
            &seen_elsewhere,
            reads,
            final_after.unwrap_or(0),
            &mut out.anomalies,
        );
    }
    let _ = key;
    (
        KeyOrder {
            order,
            agreed_prefix: observed.is_some(),
            pos,
            writers,
        },
        out,
    )
}

#[allow(clippy::too_many_arguments)]
fn read_edges<'a>(
    txns: &Txns<'a>,
    k: u32,
    r: u32,
    list: &[Atom],
    order: &[Sc<'a>],
    pos: &FxHashMap<Sc<'a>, u32>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    unobserved: &[u32],
    out: &mut KeyOut,
) {
    let status = |t: u32| txns.txns[t as usize].status;
    let next = match list.last() {
        None => 0,
        Some(v) => {
            let last = txns.sc(*v);
            if let Some(w) = writers.get(&last) {
                if w.intermediate && w.txn != r {
                    out.anomalies
                        .push(intermediate_read(txns, k, r, list, last, w.txn));
                }
                if status(w.txn) != Status::Fail && w.txn != r {
                    out.edges.push(Edge {
                        from: w.txn,
                        to: r,
                        kind: EdgeKind::Wr,
                    });
                }
            }
            match pos.get(&last) {
                Some(p) => *p as usize + 1,
                None => return,
            }
        }
    };
    if next < order.len() {
        if let Some(w) = writers.get(&order[next]) {
            if status(w.txn) != Status::Fail && w.txn != r {
                out.edges.push(Edge {
                    from: r,
                    to: w.txn,
                    kind: EdgeKind::Rw,
                });
            }
        }
    } else {
        out.edges
            .extend(unobserved.iter().filter(|u| **u != r).map(|&u| Edge {
                from: r,
                to: u,
                kind: EdgeKind::Rw,
            }));
    }
}

fn write_edges<'a>(
    txns: &Txns<'a>,
    order: &[Sc<'a>],
    writers: &FxHashMap<Sc<'a>, Writer>,
    unobserved: &[u32],
    edges: &mut Vec<Edge>,
) {
    let live = |e: &Sc<'a>| {
        writers
            .get(e)
            .filter(|w| txns.txns[w.txn as usize].status != Status::Fail)
            .map(|w| w.txn)
    };
    for pair in order.windows(2) {
        if let (Some(a), Some(b)) = (live(&pair[0]), live(&pair[1])) {
            if a != b {
                edges.push(Edge {
                    from: a,
                    to: b,
                    kind: EdgeKind::Ww,
                });
            }
        }
    }
    if let Some(a) = order.last().and_then(live) {
        edges.extend(unobserved.iter().filter(|u| **u != a).map(|&u| Edge {
            from: a,
            to: u,
            kind: EdgeKind::Ww,
        }));
    }
}

/// Elle's dirty update: in version order, a committed append directly after (possibly
/// through indeterminate ones) an append of a failed txn.
fn dirty_updates<'a>(
    txns: &Txns<'a>,
    key: Sc<'a>,
    order: &[Sc<'a>],
    writers: &FxHashMap<Sc<'a>, Writer>,
    out: &mut Vec<Anomaly>,
) {
    let mut t1: Option<u32> = None; // None: the initial state, committed
    let mut vs: Vec<Sc<'a>> = Vec::new();
    let status = |t: Option<u32>| t.map_or(Status::Ok, |t| txns.txns[t as usize].status);
    for &v in order {
        let Some(w) = writers.get(&v) else { continue };
        let t2 = Some(w.txn);
        match (status(t1), status(t2)) {
            (Status::Fail, Status::Ok) => {
                vs.push(v);
                let (a, b) = (t1.expect("a failed txn"), w.txn);
                out.push(Anomaly {
                    name: "dirty-update",
                    witness: json!({
                        "type": "dirty-update", "key": key.to_json(),
                        "values": vs.iter().map(|e| e.to_json()).collect::<Vec<_>>(),
                        "txns": [txn_json(txns, a), txn_json(txns, b)],
                        "why": format!("{} appended {} to key {} after {}, which {} appended and then failed (versions {})",
                            tname(txns, b), v, key, vs[0], tname(txns, a), show_list(vs.iter().copied())),
                    }),
                });
                t1 = t2;
                vs = vec![v];
            }
            (_, Status::Info) | (Status::Fail, Status::Fail) => vs.push(v),
            _ => {
                t1 = t2;
                vs = vec![v];
            }
        }
    }
}

/// Committed appends to a key with a final read that no read ever observed.
#[allow(clippy::too_many_arguments)]
fn lost_appends<'a>(
    txns: &Txns<'a>,
    k: u32,
    pos: &FxHashMap<Sc<'a>, u32>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    seen_elsewhere: &FxHashSet<Sc<'a>>,
    reads: &Reads<'a>,
    final_after: u64,
    out: &mut Vec<Anomaly>,
) {
    let key = txns.keys[k as usize];
    let final_reader = reads
        .iter()
        .find(|(r, _)| txns.txns[*r as usize].invoke > final_after)
        .map(|(r, _)| *r)
        .expect("a final read");
    let mut lost: Vec<(u32, Sc<'a>)> = writers
        .iter()
        .filter(|(e, w)| {
            txns.txns[w.txn as usize].status == Status::Ok
                && !pos.contains_key(*e)
                && !seen_elsewhere.contains(*e)
        })
        .map(|(e, w)| (w.txn, *e))
        .collect();
    lost.sort_unstable();
    for (w, e) in lost {
        out.push(Anomaly {
            name: "lost-append",
            witness: json!({
                "type": "lost-append", "key": key.to_json(), "element": e.to_json(),
                "writer": txn_json(txns, w), "final_read": txn_json(txns, final_reader),
                "why": format!("{}'s acknowledged append of {} to key {} was never observed, though {} read key {} after every append had completed",
                    tname(txns, w), e, key, tname(txns, final_reader), key),
            }),
        });
    }
}

fn list_of<'a>(txns: &Txns<'a>, l: &'a [Atom]) -> String {
    show_list(txns.elems(l))
}

fn incompatible<'a>(
    txns: &Txns<'a>,
    k: u32,
    a: (u32, &'a [Atom]),
    b: (u32, &'a [Atom]),
) -> Anomaly {
    let key = txns.keys[k as usize];
    Anomaly {
        name: "incompatible-order",
        witness: json!({
            "type": "incompatible-order", "key": key.to_json(), "values": [txns.list_json(a.1), txns.list_json(b.1)],
            "txns": [txn_json(txns, a.0), txn_json(txns, b.0)],
            "why": format!("{} read key {} = {} and {} read {}: neither is a prefix of the other, so no single order of appends explains both",
                tname(txns, a.0), key, list_of(txns, a.1), tname(txns, b.0), list_of(txns, b.1)),
        }),
    }
}

fn duplicates<'a>(txns: &Txns<'a>, k: u32, r: u32, list: &'a [Atom]) -> Anomaly {
    let key = txns.keys[k as usize];
    let mut seen = FxHashSet::default();
    let mut dups: Vec<Sc> = txns.elems(list).filter(|e| !seen.insert(*e)).collect();
    dups.dedup();
    Anomaly {
        name: "duplicate-elements",
        witness: json!({
            "type": "duplicate-elements", "key": key.to_json(), "txn": txn_json(txns, r),
            "duplicates": dups.iter().map(|e| e.to_json()).collect::<Vec<_>>(),
            "why": format!("{} read key {} = {}, which holds {} more than once", tname(txns, r), key, list_of(txns, list), show_list(dups.iter().copied())),
        }),
    }
}

fn aborted_read<'a>(txns: &Txns<'a>, k: u32, r: u32, list: &'a [Atom], e: Sc, w: u32) -> Anomaly {
    let key = txns.keys[k as usize];
    Anomaly {
        name: "G1a",
        witness: json!({
            "type": "G1a", "key": key.to_json(), "element": e.to_json(),
            "reader": txn_json(txns, r), "writer": txn_json(txns, w),
            "why": format!("{} read key {} = {}, and {} was appended by {}, which failed", tname(txns, r), key, list_of(txns, list), e, tname(txns, w)),
        }),
    }
}

fn garbage_read<'a>(txns: &Txns<'a>, k: u32, r: u32, list: &'a [Atom], e: Sc) -> Anomaly {
    let key = txns.keys[k as usize];
    Anomaly {
        name: "garbage-read",
        witness: json!({
            "type": "garbage-read", "key": key.to_json(), "element": e.to_json(), "reader": txn_json(txns, r),
            "why": format!("{} read key {} = {}, but no transaction ever appended {} to it", tname(txns, r), key, list_of(txns, list), e),
        }),
    }
}

fn intermediate_read<'a>(
    txns: &Txns<'a>,
    k: u32,
    r: u32,
    list: &'a [Atom],
    e: Sc,
    w: u32,
) -> Anomaly {
    let key = txns.keys[k as usize];
    Anomaly {
        name: "G1b",
        witness: json!({
            "type": "G1b", "key": key.to_json(), "element": e.to_json(),
            "reader": txn_json(txns, r), "writer": txn_json(txns, w),
            "why": format!("{} read key {} = {}, ending at {}, which {} appended and then appended to key {} again: an intermediate state",
                tname(txns, r), key, list_of(txns, list), e, tname(txns, w), key),
        }),
    }
}

impl Explain for Orders<'_> {
    fn explain(&self, txns: &Txns, a: u32, b: u32, kind: EdgeKind) -> (Option<Value>, String) {
        let (ta, tb) = (tname(txns, a), tname(txns, b));
        match kind {
            EdgeKind::Ww => {
                for m in txns.mops_of(b) {
                    let (MopKind::Append, Arg::Scalar(e)) = (m.kind, m.arg) else {
                        continue;
                    };
                    let ko = &self.keys[m.key as usize];
                    let key = txns.keys[m.key as usize];
                    let prev = match ko.pos.get(&e) {
                        Some(0) => continue,
                        Some(p) => ko.order[*p as usize - 1],
                        None => match ko.order.last() {
                            Some(l) => *l,
                            None => continue,
                        },
                    };
                    if ko.writers.get(&prev).map(|w| w.txn) == Some(a) {
                        let tail = if ko.pos.contains_key(&e) {
                            ""
                        } else if ko.agreed_prefix {
                            " (past the prefix every read of the key agrees on, so after it)"
                        } else {
                            " (never read, so after every element read)"
                        };
                        return (Some(key.to_json()), format!("{tb} appended {e} to key {key} after {ta}'s append of {prev}{tail}: ww"));
                    }
                }
            }
            EdgeKind::Wr => {
                for m in txns.mops_of(b) {
                    let (MopKind::Read, Arg::List(l)) = (m.kind, m.arg) else {
                        continue;
                    };
                    let Some(last) = l.last().map(|a| txns.sc(*a)) else {
                        continue;
                    };
                    let ko = &self.keys[m.key as usize];
                    if ko.writers.get(&last).map(|w| w.txn) == Some(a) {
                        let key = txns.keys[m.key as usize];
                        return (Some(key.to_json()), format!("{tb} read key {key} = {}, whose last element {last} {ta} appended: wr", list_of(txns, l)));
                    }
                }
            }
            EdgeKind::Rw => {
                for m in txns.mops_of(a) {
                    let (MopKind::Read, Arg::List(l)) = (m.kind, m.arg) else {
                        continue;
                    };
                    let ko = &self.keys[m.key as usize];
                    let key = txns.keys[m.key as usize];
                    let next = match l.last().map(|a| txns.sc(*a)) {
                        None => 0,
                        Some(last) => match ko.pos.get(&last) {
                            Some(p) => *p as usize + 1,
                            None => continue,
                        },
                    };
                    if let Some(e) = ko.order.get(next) {
                        if ko.writers.get(e).map(|w| w.txn) == Some(b) {
                            let after = if next == 0 {
                                ", the first element".to_string()
                            } else {
                                format!(" after {}", ko.order[next - 1])
                            };
                            return (
                                Some(key.to_json()),
                                format!(
                                    "{ta} read key {key} = {} and {tb} appended {e}{after}: rw",
                                    list_of(txns, l)
                                ),
                            );
                        }
                    } else if let Some(e) = ko
                        .writers
                        .iter()
                        .find(|(e, w)| w.txn == b && !ko.pos.contains_key(*e))
                        .map(|(e, _)| *e)
                    {
                        let why = if ko.agreed_prefix {
                            "past the prefix every read of the key agrees on"
                        } else {
                            "which no read saw"
                        };
                        return (Some(key.to_json()), format!("{ta} read key {key} = {} and {tb} appended {e}, {why}, so after it: rw", list_of(txns, l)));
                    }
                }
            }
            _ => {}
        }
        (None, format!("{ta} precedes {tb}: {}", kind.as_str()))
    }
}
