//! Anomalies visible inside single committed transactions or between pairs of them,
//! without version orders: `internal`, `future-read` and `lost-update`.
//!
//! - internal (list-append): a read disagrees with what the txn's own earlier reads and
//!   appends to the key imply (after an append with no earlier read, the read must end with
//!   the elements appended); (rw-register): a read differs from the txn's last write or
//!   earlier read of the key.
//! - future-read (list-append): a read holds an element the same txn appends later.
//! - lost-update: two committed txns read the same state of a key (their first read of
//!   it, before writing it) and both wrote it.

use super::found::{show_list, tname, txn_json, Anomaly};
use super::txns::{Arg, Sc, Status, Txns};
use crate::history::txn::MopKind;
use crate::history::txn_table::Atom;
use rustc_hash::FxHashMap;
use serde_json::json;

/// Txns that read the same state of a key and then wrote it, grouped by (key, length of
/// the state read, its last element).
type Groups<'a, V> = FxHashMap<(u32, usize, Option<Sc<'a>>), Vec<(u32, V)>>;

/// What a txn's own ops say a key holds.
#[derive(Clone)]
enum Expect<'a> {
    /// Exactly this list.
    Known(Vec<Sc<'a>>),
    /// Some unknown prefix followed by these elements.
    EndsWith(Vec<Sc<'a>>),
}

pub fn list_append_rules(txns: &Txns, out: &mut Vec<Anomaly>) {
    let mut groups: Groups<&[Atom]> = FxHashMap::default();
    for t in 0..txns.txns.len() as u32 {
        if txns.txns[t as usize].status != Status::Ok {
            continue;
        }
        internal_list(txns, t, out);
        future_read(txns, t, out);
        // lost-update grouping: the first read of a key, if the txn later appends to it.
        let mops = txns.mops_of(t);
        let mut firsts: Vec<(u32, &[Atom])> = Vec::new();
        let mut wrote: Vec<u32> = Vec::new();
        for m in mops {
            match (m.kind, m.arg) {
                (MopKind::Read, Arg::List(l))
                    if !wrote.contains(&m.key) && !firsts.iter().any(|(k, _)| *k == m.key) =>
                {
                    firsts.push((m.key, l))
                }
                (MopKind::Append, _) if !wrote.contains(&m.key) => {
                    wrote.push(m.key);
                    if let Some((_, l)) = firsts.iter().find(|(k, _)| *k == m.key) {
                        groups
                            .entry((m.key, l.len(), l.last().map(|a| txns.sc(*a))))
                            .or_default()
                            .push((t, l));
                    }
                }
                _ => {}
            }
        }
    }
    lost_updates(txns, groups, |l| show_list(txns.elems(l)), out);
}

fn internal_list<'a>(txns: &Txns<'a>, t: u32, out: &mut Vec<Anomaly>) {
    let mut state: Vec<(u32, Expect<'a>)> = Vec::new();
    for m in txns.mops_of(t) {
        let slot = state.iter().position(|(k, _)| *k == m.key);
        match (m.kind, m.arg) {
            (MopKind::Append, Arg::Scalar(e)) => match slot {
                Some(i) => match &mut state[i].1 {
                    Expect::Known(v) | Expect::EndsWith(v) => v.push(e),
                },
                None => state.push((m.key, Expect::EndsWith(vec![e]))),
            },
            (MopKind::Read, Arg::List(l)) => {
                let got: Vec<Sc> = txns.elems(l).collect();
                if let Some(i) = slot {
                    let ok = match &state[i].1 {
                        Expect::Known(v) => *v == got,
                        Expect::EndsWith(s) => {
                            got.len() >= s.len() && got[got.len() - s.len()..] == s[..]
                        }
                    };
                    if !ok {
                        let expected = match &state[i].1 {
                            Expect::Known(v) => show_list(v.iter().copied()),
                            Expect::EndsWith(s) => format!(
                                "[... {}]",
                                show_list(s.iter().copied()).trim_matches(['[', ']'])
                            ),
                        };
                        let key = txns.keys[m.key as usize];
                        out.push(Anomaly {
                            name: "internal",
                            witness: json!({
                                "type": "internal", "key": key.to_json(), "txn": txn_json(txns, t), "expected": expected,
                                "why": format!("{} read key {} = {}, but its own earlier operations on the key imply {}", tname(txns, t), key, show_list(got.iter().copied()), expected),
                            }),
                        });
                        return;
                    }
                    state[i].1 = Expect::Known(got);
                } else {
                    state.push((m.key, Expect::Known(got)));
                }
            }
            _ => {}
        }
    }
}

fn future_read(txns: &Txns, t: u32, out: &mut Vec<Anomaly>) {
    let mops = txns.mops_of(t);
    for (i, m) in mops.iter().enumerate() {
        let (MopKind::Append, Arg::Scalar(e)) = (m.kind, m.arg) else {
            continue;
        };
        let earlier = mops[..i].iter().find(|r| {
            r.key == m.key && matches!(r.arg, Arg::List(l) if txns.elems(l).any(|x| x == e))
        });
        if let Some(r) = earlier {
            let Arg::List(l) = r.arg else { continue };
            let key = txns.keys[m.key as usize];
            out.push(Anomaly {
                name: "future-read",
                witness: json!({
                    "type": "future-read", "key": key.to_json(), "element": e.to_json(), "txn": txn_json(txns, t),
                    "why": format!("{} read key {} = {}, holding {} before it appended {} itself", tname(txns, t), key, show_list(txns.elems(l)), e, e),
                }),
            });
            return;
        }
    }
}

/// rw-register: `internal` only (a read differing from the txn's last write or read).
pub fn rw_register_rules(txns: &Txns, out: &mut Vec<Anomaly>) {
    let mut groups: Groups<Option<Sc>> = FxHashMap::default();
    for t in 0..txns.txns.len() as u32 {
        if txns.txns[t as usize].status != Status::Ok {
            continue;
        }
        let mut state: Vec<(u32, Option<Sc>)> = Vec::new();
        let mut wrote: Vec<u32> = Vec::new();
        for m in txns.mops_of(t) {
            let slot = state.iter().position(|(k, _)| *k == m.key);
            let val = match m.arg {
                Arg::Scalar(s) => Some(s),
                _ => None,
            };
            match m.kind {
                MopKind::Write => {
                    if !wrote.contains(&m.key) {
                        wrote.push(m.key);
                        if let Some(i) = slot {
                            groups
                                .entry((m.key, 0, state[i].1))
                                .or_default()
                                .push((t, state[i].1));
                        }
                    }
                    match slot {
                        Some(i) => state[i].1 = val,
                        None => state.push((m.key, val)),
                    }
                }
                MopKind::Read => match slot {
                    Some(i) if state[i].1 != val => {
                        let key = txns.keys[m.key as usize];
                        let show = |v: Option<Sc>| v.map_or("nil".to_string(), |s| s.to_string());
                        out.push(Anomaly {
                            name: "internal",
                            witness: json!({
                                "type": "internal", "key": key.to_json(), "txn": txn_json(txns, t),
                                "expected": state[i].1.map(Sc::to_json),
                                "why": format!("{} read key {} = {}, but its own earlier operations on the key imply {}", tname(txns, t), key, show(val), show(state[i].1)),
                            }),
                        });
                        break;
                    }
                    Some(_) => {}
                    None => state.push((m.key, val)),
                },
                MopKind::Append => {}
            }
        }
    }
    lost_updates(
        txns,
        groups,
        |v| v.map_or("nil".to_string(), |s| s.to_string()),
        out,
    );
}

/// Groups of two or more txns that read the same state of a key and then wrote it.
fn lost_updates<V: Copy + PartialEq>(
    txns: &Txns,
    groups: Groups<V>,
    show: impl Fn(V) -> String,
    out: &mut Vec<Anomaly>,
) {
    let mut cases: Vec<(u32, Vec<(u32, V)>)> = groups
        .into_iter()
        .filter(|(_, g)| g.len() >= 2)
        .map(|((k, _, _), g)| (k, g))
        .collect();
    cases.sort_by_key(|(k, g)| (g[0].0, *k));
    for (k, g) in cases {
        let key = txns.keys[k as usize];
        let names: Vec<String> = g.iter().map(|(t, _)| tname(txns, *t)).collect();
        out.push(Anomaly {
            name: "lost-update",
            witness: json!({
                "type": "lost-update", "key": key.to_json(),
                "txns": g.iter().map(|(t, _)| txn_json(txns, *t)).collect::<Vec<_>>(),
                "why": format!("{} all read key {} = {} and then wrote it: all but one update is lost", names.join(", "), key, show(g[0].1)),
            }),
        });
    }
}
