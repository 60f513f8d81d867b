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
//!
//! Per key, [`version_order`] builds the order once and each anomaly family and edge kind
//! has its own function reading it; `internal`, `future-read` and `lost-update` need no
//! version order and live in `txn_rules`.

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

/// Whether a committed txn invoked after `final_after` read some key.
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

/// What one key adds to the [`Analysis`].
#[derive(Default)]
struct KeyOut {
    anomalies: Vec<Anomaly>,
    edges: Vec<Edge>,
    unread: bool,
    uncertain: Option<String>,
}

/// How txn `t` ended.
fn status(txns: &Txns, t: u32) -> Status {
    txns.txns[t as usize].status
}

/// What a key's committed reads say about its version order. Invariants: `order` holds
/// each element once and `pos[order[i]] == i`; `prefix[i]` is whether `reads[i]` is a
/// prefix of `longest`. When every read is, `order` is `longest` with duplicates dropped;
/// else it is only the reads' common prefix and `observed` keeps the positions in
/// `longest`.
struct KeyReads<'a, 'r> {
    reads: &'r Reads<'a>,
    /// The longest read's reader (`None`: the key has no read) and its list.
    longest_reader: Option<u32>,
    longest: &'a [Atom],
    prefix: Vec<bool>,
    order: Vec<Sc<'a>>,
    pos: FxHashMap<Sc<'a>, u32>,
    /// The reads are incompatible: each element's first position in `longest`.
    observed: Option<FxHashMap<Sc<'a>, u32>>,
    /// The index in `longest` of its first repeated element; `usize::MAX`: none.
    first_dup: usize,
}

/// One key: its version order, the anomalies read off it and its data edges. Each
/// anomaly family is found by its own function; their order here fixes the order of the
/// witnesses within each family (the order of the reads) and of the edges.
fn analyze_key<'a>(
    txns: &Txns<'a>,
    k: u32,
    writers: FxHashMap<Sc<'a>, Writer>,
    reads: &Reads<'a>,
    final_after: Option<u64>,
) -> (KeyOrder<'a>, KeyOut) {
    let kr = version_order(txns, &writers, reads);
    let unobserved = unobserved_writers(txns, &kr.pos, &writers);
    let mut out = KeyOut {
        unread: reads.is_empty() && writers.values().any(|w| status(txns, w.txn) == Status::Ok),
        uncertain: kr.observed.as_ref().map(|_| uncertain_order(txns, k, &kr.order)),
        ..KeyOut::default()
    };
    incompatible_order(txns, k, &kr, &mut out.anomalies);
    duplicate_elements(txns, k, &kr, &mut out.anomalies);
    aborted_reads(txns, k, &kr, &writers, &mut out.anomalies);
    garbage_reads(txns, k, &kr, &writers, &mut out.anomalies);
    intermediate_reads(txns, k, reads, &writers, &mut out.anomalies);
    read_edges(txns, &kr, &writers, &unobserved, &mut out.edges);
    write_edges(txns, &kr.order, &writers, &unobserved, &mut out.edges);
    let key = txns.keys[k as usize];
    dirty_updates(txns, key, &kr.order, &writers, &mut out.anomalies);
    if let Some(final_reader) = final_reader(txns, reads, final_after) {
        let seen = seen_in_incompatible_reads(txns, &kr);
        let pos = kr.observed.as_ref().unwrap_or(&kr.pos);
        lost_appends(txns, k, pos, &writers, &seen, final_reader, &mut out.anomalies);
    }
    let agreed_prefix = kr.observed.is_some();
    let (order, pos) = (kr.order, kr.pos);
    (
        KeyOrder {
            order,
            agreed_prefix,
            pos,
            writers,
        },
        out,
    )
}

/// The key's version order, as Elle infers list-append's: the longest committed read,
/// duplicates dropped; a key never read and appended once has that one element. Where
/// some read is not a prefix of the longest, the order is cut to what every read agrees
/// on, so that no edge (or dirty update) rests on a guess between them.
fn version_order<'a, 'r>(
    txns: &Txns<'a>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    reads: &'r Reads<'a>,
) -> KeyReads<'a, 'r> {
    // The longest read and its own reader: another read of the same length may differ.
    let (longest_reader, longest): (Option<u32>, &'a [Atom]) = reads
        .iter()
        .max_by_key(|(_, l)| l.len())
        .map_or((None, &[]), |(t, l)| (Some(*t), *l));
    let (mut order, mut pos, first_dup) = distinct_elements(txns, longest);
    if reads.is_empty() && writers.len() == 1 {
        let (&e, _) = writers.iter().next().expect("one writer");
        pos.insert(e, 0);
        order.push(e);
    }
    let prefix: Vec<bool> = reads.iter().map(|(_, l)| is_prefix(l, longest)).collect();
    let mut observed = None;
    if prefix.contains(&false) {
        let common = reads.iter().fold(longest.len(), |n, (_, l)| {
            n.min(l.iter().zip(longest).take_while(|(a, b)| a == b).count())
        });
        let (agreed, agreed_pos, _) = distinct_elements(txns, &longest[..common]);
        observed = Some(std::mem::replace(&mut pos, agreed_pos));
        order = agreed;
    }
    KeyReads {
        reads,
        longest_reader,
        longest,
        prefix,
        order,
        pos,
        observed,
        first_dup,
    }
}

/// The elements of `list` in order, each once, with their positions, and the index in
/// `list` of its first repeated element (`usize::MAX`: none).
fn distinct_elements<'a>(
    txns: &Txns<'a>,
    list: &'a [Atom],
) -> (Vec<Sc<'a>>, FxHashMap<Sc<'a>, u32>, usize) {
    let mut order: Vec<Sc<'a>> = Vec::with_capacity(list.len());
    let mut pos: FxHashMap<Sc<'a>, u32> = FxHashMap::default();
    let mut first_dup = usize::MAX;
    for (i, e) in txns.elems(list).enumerate() {
        if let std::collections::hash_map::Entry::Vacant(slot) = pos.entry(e) {
            slot.insert(order.len() as u32);
            order.push(e);
        } else {
            first_dup = first_dup.min(i);
        }
    }
    (order, pos, first_dup)
}

/// Whether `list` is a prefix of `longest`. Reads that share the table's chain (the same
/// start) are prefixes of each other without comparing elements.
fn is_prefix(list: &[Atom], longest: &[Atom]) -> bool {
    list.len() <= longest.len()
        && (std::ptr::eq(list.as_ptr(), longest.as_ptr())
            || list.iter().zip(longest).all(|(a, b)| a == b))
}

/// The `uncertain` note of a key whose reads are incompatible.
fn uncertain_order(txns: &Txns, k: u32, agreed: &[Sc]) -> String {
    format!(
        "key {}: its reads are incompatible, so its version order is unknown past their common prefix {}; cycles that would need it are not judged",
        txns.keys[k as usize],
        show_list(agreed.iter().copied())
    )
}

/// The txns, sorted and each once, that appended an element outside the version order
/// and did not fail: their appends come after every element in it.
fn unobserved_writers<'a>(
    txns: &Txns<'a>,
    pos: &FxHashMap<Sc<'a>, u32>,
    writers: &FxHashMap<Sc<'a>, Writer>,
) -> Vec<u32> {
    let mut u: Vec<u32> = writers
        .iter()
        .filter(|(e, w)| !pos.contains_key(*e) && status(txns, w.txn) != Status::Fail)
        .map(|(_, w)| w.txn)
        .collect();
    u.sort_unstable();
    u.dedup();
    u
}

/// Elle's `incompatible-order`: two reads of the key neither of which is a prefix of the
/// other. Invariant: at most one per key, for its first read that is not a prefix of the
/// longest read, paired with the longest.
fn incompatible_order<'a>(txns: &Txns<'a>, k: u32, kr: &KeyReads<'a, '_>, out: &mut Vec<Anomaly>) {
    let first = kr.reads.iter().zip(&kr.prefix).find(|(_, p)| !**p);
    if let Some((&(r, list), _)) = first {
        let longest = (kr.longest_reader.expect("a longest read"), kr.longest);
        out.push(incompatible(txns, k, (r, list), longest));
    }
}

/// Elle's `duplicate-elements`: a read that holds an element more than once. A read that
/// is a prefix of the longest has one when it reaches the longest read's first repeat.
/// Invariant: at most one per read.
fn duplicate_elements<'a>(txns: &Txns<'a>, k: u32, kr: &KeyReads<'a, '_>, out: &mut Vec<Anomaly>) {
    for (&(r, list), &prefix) in kr.reads.iter().zip(&kr.prefix) {
        let repeats = if prefix {
            kr.first_dup < list.len()
        } else {
            let mut set = FxHashSet::default();
            !txns.elems(list).all(|e| set.insert(e))
        };
        if repeats {
            out.push(duplicates(txns, k, r, list));
        }
    }
}

/// Whether an element with writer `w` (`None`: nobody appended it) must not be seen by a
/// committed read: its writer failed, or it has none.
fn is_unsound(txns: &Txns, w: Option<&Writer>) -> bool {
    w.is_none_or(|w| status(txns, w.txn) == Status::Fail)
}

/// The first element of `list` that a failed txn appended or that nobody appended, with
/// its writer (`None`: nobody).
fn first_unsound_element<'a>(
    txns: &Txns<'a>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    list: &'a [Atom],
) -> Option<(Sc<'a>, Option<Writer>)> {
    txns.elems(list)
        .map(|e| (e, writers.get(&e).copied()))
        .find(|(_, w)| is_unsound(txns, w.as_ref()))
}

/// The index in the longest read of its first element whose writer matches `pred`
/// (`None`: nobody appended it); `usize::MAX`: none.
fn first_in_longest<'a>(
    txns: &Txns<'a>,
    kr: &KeyReads<'a, '_>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    pred: impl Fn(Option<&Writer>) -> bool,
) -> usize {
    txns.elems(kr.longest)
        .position(|e| pred(writers.get(&e)))
        .unwrap_or(usize::MAX)
}

/// Adya's G1a (aborted read): a committed read saw an element a failed txn appended. A
/// prefix of the longest read has one when it reaches the longest read's first such
/// element; another read when its first unsound element is one. Invariant: at most one
/// per read.
fn aborted_reads<'a>(
    txns: &Txns<'a>,
    k: u32,
    kr: &KeyReads<'a, '_>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    out: &mut Vec<Anomaly>,
) {
    let first_failed = first_in_longest(txns, kr, writers, |w| {
        w.is_some_and(|w| status(txns, w.txn) == Status::Fail)
    });
    for (&(r, list), &prefix) in kr.reads.iter().zip(&kr.prefix) {
        if prefix {
            if first_failed < list.len() {
                let e = txns.sc(kr.longest[first_failed]);
                out.push(aborted_read(txns, k, r, list, e, writers[&e].txn));
            }
        } else if let Some((e, Some(w))) = first_unsound_element(txns, writers, list) {
            out.push(aborted_read(txns, k, r, list, e, w.txn));
        }
    }
}

/// Elle's `garbage-read`: a committed read saw an element nobody appended. A prefix of
/// the longest read has one when it reaches the longest read's first such element;
/// another read when its first unsound element is one. Invariant: at most one per read.
fn garbage_reads<'a>(
    txns: &Txns<'a>,
    k: u32,
    kr: &KeyReads<'a, '_>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    out: &mut Vec<Anomaly>,
) {
    let first_garbage = first_in_longest(txns, kr, writers, |w| w.is_none());
    for (&(r, list), &prefix) in kr.reads.iter().zip(&kr.prefix) {
        if prefix {
            if first_garbage < list.len() {
                let e = txns.sc(kr.longest[first_garbage]);
                out.push(garbage_read(txns, k, r, list, e));
            }
        } else if let Some((e, None)) = first_unsound_element(txns, writers, list) {
            out.push(garbage_read(txns, k, r, list, e));
        }
    }
}

/// Adya's G1b (intermediate read): a read ended at an element its writer followed with
/// another append to the key. Invariant: at most one per read, never for a txn's read
/// of its own append.
fn intermediate_reads<'a>(
    txns: &Txns<'a>,
    k: u32,
    reads: &Reads<'a>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    out: &mut Vec<Anomaly>,
) {
    for &(r, list) in reads {
        let Some(last) = list.last().map(|a| txns.sc(*a)) else {
            continue;
        };
        if let Some(w) = writers.get(&last) {
            if w.intermediate && w.txn != r {
                out.push(intermediate_read(txns, k, r, list, last, w.txn));
            }
        }
    }
}

/// The wr and rw edges of the key's reads, in read order: wr from the writer of a read's
/// last element to the reader, then the read's rw edges ([`rw_edges`]). Invariants: no
/// edge touches a failed txn or joins a txn to itself; a read whose last element is
/// outside the version order gives no rw edge.
fn read_edges<'a>(
    txns: &Txns<'a>,
    kr: &KeyReads<'a, '_>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    unobserved: &[u32],
    edges: &mut Vec<Edge>,
) {
    for &(r, list) in kr.reads {
        let next = match list.last().map(|a| txns.sc(*a)) {
            None => 0,
            Some(last) => {
                if let Some(w) = writers.get(&last) {
                    if status(txns, w.txn) != Status::Fail && w.txn != r {
                        edges.push(Edge {
                            from: w.txn,
                            to: r,
                            kind: EdgeKind::Wr,
                        });
                    }
                }
                match kr.pos.get(&last) {
                    Some(p) => *p as usize + 1,
                    None => continue,
                }
            }
        };
        rw_edges(txns, r, next, &kr.order, writers, unobserved, edges);
    }
}

/// The rw edges of reader `r`, whose read ends before `order[next]`: to that element's
/// writer, or, when it read the whole order, to every txn whose append is unobserved.
fn rw_edges<'a>(
    txns: &Txns<'a>,
    r: u32,
    next: usize,
    order: &[Sc<'a>],
    writers: &FxHashMap<Sc<'a>, Writer>,
    unobserved: &[u32],
    edges: &mut Vec<Edge>,
) {
    let rw = |to: u32| Edge {
        from: r,
        to,
        kind: EdgeKind::Rw,
    };
    if next < order.len() {
        if let Some(w) = writers.get(&order[next]) {
            if status(txns, w.txn) != Status::Fail && w.txn != r {
                edges.push(rw(w.txn));
            }
        }
    } else {
        edges.extend(unobserved.iter().filter(|u| **u != r).map(|&u| rw(u)));
    }
}

/// ww edges (Elle's list-append ww inference): from the writer of each element to the
/// writer of the next in the version order, and from the writer of the last to every
/// txn whose append is unobserved. Invariant: no edge touches a failed txn or joins a
/// txn to itself.
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

/// Elle's `dirty-update`: in version order, a committed append directly after (possibly
/// through indeterminate ones) an append of a failed txn. Invariant: read off the version
/// order only, so never past the prefix incompatible reads agree on.
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

/// The first read of the key invoked after every append completed (a final read);
/// `None` when there is none, or nothing appends.
fn final_reader(txns: &Txns, reads: &Reads, final_after: Option<u64>) -> Option<u32> {
    let f = final_after?;
    reads
        .iter()
        .find(|(r, _)| txns.txns[*r as usize].invoke > f)
        .map(|(r, _)| *r)
}

/// Every element the reads that are not prefixes of the longest show: appends
/// `lost_appends` must not call unobserved although they are outside the version order.
/// The whole read counts, also past an aborted or unknown element (reported on its own as
/// `G1a` or `garbage-read`): an element a read returned was observed.
fn seen_in_incompatible_reads<'a>(txns: &Txns<'a>, kr: &KeyReads<'a, '_>) -> FxHashSet<Sc<'a>> {
    kr.reads
        .iter()
        .zip(&kr.prefix)
        .filter(|(_, p)| !**p)
        .flat_map(|(&(_, list), _)| txns.elems(list))
        .collect()
}

/// Elle's `lost-append`: a committed append to a key with a final read that no read ever
/// observed (`pos`: the elements of the longest read). Invariant: only checked with a
/// final read, so an append still in flight is never called lost; one per lost element.
fn lost_appends<'a>(
    txns: &Txns<'a>,
    k: u32,
    pos: &FxHashMap<Sc<'a>, u32>,
    writers: &FxHashMap<Sc<'a>, Writer>,
    seen_elsewhere: &FxHashSet<Sc<'a>>,
    final_reader: u32,
    out: &mut Vec<Anomaly>,
) {
    let key = txns.keys[k as usize];
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
        let found = match kind {
            EdgeKind::Ww => self.explain_ww(txns, a, b),
            EdgeKind::Wr => self.explain_wr(txns, a, b),
            EdgeKind::Rw => self.explain_rw(txns, a, b),
            _ => None,
        };
        found.unwrap_or_else(|| {
            let (ta, tb) = (tname(txns, a), tname(txns, b));
            (None, format!("{ta} precedes {tb}: {}", kind.as_str()))
        })
    }
}

/// An explained edge: the key and a sentence.
type Explained = (Option<Value>, String);

impl Orders<'_> {
    /// A ww edge a -> b: an append of `b` directly after one of `a` in a key's version
    /// order (or, never read, after the last element read).
    fn explain_ww(&self, txns: &Txns, a: u32, b: u32) -> Option<Explained> {
        let (ta, tb) = (tname(txns, a), tname(txns, b));
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
                return Some((Some(key.to_json()), format!("{tb} appended {e} to key {key} after {ta}'s append of {prev}{tail}: ww")));
            }
        }
        None
    }

    /// A wr edge a -> b: a read of `b` whose last element `a` appended.
    fn explain_wr(&self, txns: &Txns, a: u32, b: u32) -> Option<Explained> {
        let (ta, tb) = (tname(txns, a), tname(txns, b));
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
                return Some((Some(key.to_json()), format!("{tb} read key {key} = {}, whose last element {last} {ta} appended: wr", list_of(txns, l))));
            }
        }
        None
    }

    /// An rw edge a -> b: a read of `a` and the append of `b` right after what it read
    /// (or, past the version order, an append no read saw).
    fn explain_rw(&self, txns: &Txns, a: u32, b: u32) -> Option<Explained> {
        let (ta, tb) = (tname(txns, a), tname(txns, b));
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
                    return Some((
                        Some(key.to_json()),
                        format!(
                            "{ta} read key {key} = {} and {tb} appended {e}{after}: rw",
                            list_of(txns, l)
                        ),
                    ));
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
                return Some((Some(key.to_json()), format!("{ta} read key {key} = {} and {tb} appended {e}, {why}, so after it: rw", list_of(txns, l))));
            }
        }
        None
    }
}
