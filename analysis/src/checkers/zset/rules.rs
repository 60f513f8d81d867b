//! The sorted-set rules, each judged without a search (elastickv's suite's rules, on
//! [`candidates`]): per read `unsorted`, `duplicate-members`, `out-of-range`,
//! `unexpected-presence`, `score-mismatch`, `missing-member`, `missing-member-range`,
//! `fractured-read-prefix`; per mutation `impossible-mutation-chain`; per pair of reads
//! `unstable-read-without-mutation`.
//!
//! Invariant: each rule fires only where no linearization of the key's history explains
//! what was seen (the property tests hold them to a brute-force oracle).

use super::candidates::{self, Candidates};
use super::model::{same_score, Key, MutKind, Read, State};
use serde_json::{json, Value};

/// One rule's finding: its witness and the time span its calls were in flight.
pub struct Finding {
    pub kind: &'static str,
    pub witness: Value,
    pub span: (u64, u64),
}

fn finding(kind: &'static str, key: &Key, read: &Read, mut witness: Value) -> Finding {
    witness["kind"] = json!(kind);
    witness["key"] = json!(key.name);
    witness["read"] = json!(read.complete);
    if let Some((lo, hi)) = read.bounds {
        witness["bounds"] = json!([lo, hi]);
    }
    Finding {
        kind,
        witness,
        span: read.span,
    }
}

/// What a read says of a member.
#[derive(Clone, Copy)]
enum Seen {
    Present(f64),
    /// Not returned: absent, or (a range read) present outside the bounds.
    NotReturned,
}

fn seen(read: &Read, member: usize) -> Seen {
    read.observed(member)
        .map_or(Seen::NotReturned, Seen::Present)
}

fn explains(state: State, seen: Seen, read: &Read) -> bool {
    match (state, seen) {
        (State::PresentUnknown, _) => true,
        (State::Present(s), Seen::Present(o)) => same_score(s, o),
        (State::Present(s), Seen::NotReturned) => !read.covers(s),
        (State::Absent, Seen::Present(_)) => false,
        (State::Absent, Seen::NotReturned) => true,
    }
}

/// Every member the key's history names.
fn members(key: &Key) -> std::ops::Range<usize> {
    0..key.members.len()
}

fn names(key: &Key, ids: &[usize]) -> Vec<u64> {
    ids.iter().map(|&id| key.mutations[id].index).collect()
}

/// The rules of one read.
pub fn judge_read(key: &Key, read: &Read, out: &mut Vec<Finding>) {
    shape_rules(key, read, out);
    for member in members(key) {
        let cands = candidates::before(key, member, read.invoke, read.complete, None);
        member_rules(key, read, member, &cands, out);
    }
    fractured_prefix(key, read, out);
}

/// `unsorted`, `duplicate-members`, `out-of-range`: what a read returned on its own.
fn shape_rules(key: &Key, read: &Read, out: &mut Vec<Finding>) {
    let sorted = read.entries.windows(2).all(|w| {
        let ((ma, sa), (mb, sb)) = (w[0], w[1]);
        sa < sb || (sa == sb && key.members[ma] < key.members[mb])
    });
    let entries = || {
        read.entries
            .iter()
            .map(|&(m, s)| json!([key.members[m], s]))
            .collect::<Vec<_>>()
    };
    if !sorted {
        out.push(finding(
            "unsorted",
            key,
            read,
            json!({"entries": entries()}),
        ));
    }
    let mut dupes: Vec<&str> = Vec::new();
    for (i, (m, _)) in read.entries.iter().enumerate() {
        let name = key.members[*m].as_str();
        if read.entries[..i].iter().any(|(o, _)| o == m) && !dupes.contains(&name) {
            dupes.push(name);
        }
    }
    if !dupes.is_empty() {
        out.push(finding(
            "duplicate-members",
            key,
            read,
            json!({"members": dupes}),
        ));
    }
    for &(m, s) in &read.entries {
        if !read.covers(s) {
            out.push(finding(
                "out-of-range",
                key,
                read,
                json!({"member": key.members[m], "score": s}),
            ));
        }
    }
}

/// `unexpected-presence`, `score-mismatch`, `missing-member`(`-range`).
fn member_rules(key: &Key, read: &Read, member: usize, c: &Candidates, out: &mut Vec<Finding>) {
    let states: Vec<State> = c.states(key).collect();
    let name = &key.members[member];
    let allowed: Vec<Value> = states
        .iter()
        .map(|s| match s {
            State::Absent => json!(null),
            State::Present(x) => json!(x),
            State::PresentUnknown => json!("unknown"),
        })
        .collect();
    let last = names(key, &c.last);
    match seen(read, member) {
        Seen::Present(score) if !states.iter().any(|s| s.present()) => out.push(finding(
            "unexpected-presence",
            key,
            read,
            json!({"member": name, "score": score, "possible_last": last}),
        )),
        Seen::Present(score) if !states.iter().any(|&s| explains(s, Seen::Present(score), read)) => {
            out.push(finding(
                "score-mismatch",
                key,
                read,
                json!({"member": name, "observed": score, "allowed": allowed, "possible_last": last}),
            ))
        }
        Seen::NotReturned if !states.is_empty() && states.iter().all(|s| s.present()) => {
            let in_range = states
                .iter()
                .all(|s| matches!(s, State::Present(x) if read.covers(*x)));
            match read.bounds {
                None => out.push(finding(
                    "missing-member",
                    key,
                    read,
                    json!({"member": name, "allowed": allowed, "possible_last": last}),
                )),
                Some(_) if in_range => out.push(finding(
                    "missing-member-range",
                    key,
                    read,
                    json!({"member": name, "allowed": allowed, "possible_last": last}),
                )),
                Some(_) => {}
            }
        }
        _ => {}
    }
}

/// `fractured-read-prefix`: what the read shows of one member forces mutations of
/// another into its prefix, yet the read shows that other member as if they had not
/// happened. A member's shown state needs one of the mutations that explain it to have
/// taken effect before the read, and each of those was invoked at or after the earliest
/// of them; so every `ok` mutation completed before that point precedes the read.
fn fractured_prefix(key: &Key, read: &Read, out: &mut Vec<Finding>) {
    let mut anchor: Option<(usize, u64, Vec<usize>)> = None;
    for member in members(key) {
        let c = candidates::before(key, member, read.invoke, read.complete, None);
        let s = seen(read, member);
        if c.initial && explains(State::Absent, s, read) {
            continue;
        }
        let producers: Vec<usize> = c
            .last
            .iter()
            .copied()
            .filter(|&id| explains(key.mutations[id].post(), s, read))
            .collect();
        let Some(from) = producers.iter().map(|&id| key.mutations[id].invoke).min() else {
            continue;
        };
        if from > read.invoke && anchor.as_ref().is_none_or(|(_, t, _)| from > *t) {
            anchor = Some((member, from, producers));
        }
    }
    let Some((anchor_member, from, producers)) = anchor else {
        return;
    };
    for member in members(key).filter(|&m| m != anchor_member) {
        let s = seen(read, member);
        let at_read = candidates::before(key, member, read.invoke, read.complete, None);
        if !at_read.states(key).any(|st| explains(st, s, read)) {
            continue; // already reported by the member's own rules
        }
        let forced = candidates::before(key, member, from, read.complete, None);
        if forced.states(key).any(|st| explains(st, s, read)) {
            continue;
        }
        let predecessors: Vec<u64> = key.by_member[member]
            .iter()
            .map(|&id| &key.mutations[id])
            .filter(|m| m.effective() && m.done_by >= read.invoke && m.done_by < from)
            .map(|m| m.index)
            .collect();
        let shown = match s {
            Seen::Present(x) => json!(x),
            Seen::NotReturned => json!(null),
        };
        out.push(finding(
            "fractured-read-prefix",
            key,
            read,
            json!({
                "visible_member": key.members[anchor_member],
                "visible_ops": names(key, &producers),
                "member": key.members[member],
                "shown": shown,
                "forced_predecessors": predecessors,
            }),
        ));
    }
}

/// `impossible-mutation-chain`: an `ok` ZINCRBY whose reply is no possible previous score
/// plus its delta, or an `ok` ZREM whose answer (removed or not) no possible previous
/// state gives.
pub fn judge_replies(key: &Key, out: &mut Vec<Finding>) {
    for (id, m) in key.mutations.iter().enumerate() {
        let ok_reply = matches!(
            m.kind,
            MutKind::Incr { reply: Some(_), .. } | MutKind::Rem { removed: Some(_) }
        );
        if !ok_reply {
            continue;
        }
        let c = candidates::before(key, m.member, m.invoke, m.done_by, Some(id));
        let possible = c.states(key).any(|prev| reply_possible(m.kind, prev));
        if possible {
            continue;
        }
        let previous: Vec<Value> = c
            .states(key)
            .map(|s| match s {
                State::Absent => json!(null),
                State::Present(x) => json!(x),
                State::PresentUnknown => json!("unknown"),
            })
            .collect();
        let reply = match m.kind {
            MutKind::Incr { delta, reply } => json!({"delta": delta, "reply": reply}),
            MutKind::Rem { removed } => json!({"removed": removed}),
            MutKind::Add(_) => json!(null),
        };
        out.push(Finding {
            kind: "impossible-mutation-chain",
            witness: json!({
                "kind": "impossible-mutation-chain",
                "key": key.name,
                "op": m.index,
                "f": m.f(),
                "member": key.members[m.member],
                "reply": reply,
                "possible_previous": previous,
                "possible_last": names(key, &c.last),
            }),
            span: m.span,
        });
    }
}

/// Whether a mutation's `ok` reply can follow the state `prev`.
pub fn reply_possible(kind: MutKind, prev: State) -> bool {
    match (kind, prev) {
        (_, State::PresentUnknown) => true,
        (
            MutKind::Incr {
                delta,
                reply: Some(r),
            },
            State::Present(s),
        ) => same_score(s + delta, r),
        (
            MutKind::Incr {
                delta,
                reply: Some(r),
            },
            State::Absent,
        ) => same_score(delta, r),
        (MutKind::Rem { removed: Some(r) }, st) => r == st.present(),
        _ => true,
    }
}

/// `unstable-read-without-mutation`: two reads, one completed before the other began,
/// show a member differently although no mutation of it was in flight from the first's
/// invoke to the second's completion. Reported once per (first read, member).
pub fn judge_stability(key: &Key, out: &mut Vec<Finding>) {
    let mut reads: Vec<&Read> = key.reads.iter().collect();
    reads.sort_by_key(|r| r.invoke);
    for (i, first) in reads.iter().enumerate() {
        for member in members(key) {
            let quiet_until = key.by_member[member]
                .iter()
                .map(|&id| &key.mutations[id])
                .filter(|m| m.effective() && m.done_by >= first.invoke)
                .map(|m| m.invoke)
                .min()
                .unwrap_or(u64::MAX);
            let second = reads[i + 1..]
                .iter()
                .take_while(|r| r.invoke < quiet_until)
                .filter(|r| r.invoke > first.complete && r.complete < quiet_until)
                .find(|r| differ(first, r, member));
            if let Some(second) = second {
                out.push(Finding {
                    kind: "unstable-read-without-mutation",
                    witness: json!({
                        "kind": "unstable-read-without-mutation",
                        "key": key.name,
                        "member": key.members[member],
                        "first_read": first.complete,
                        "second_read": second.complete,
                        "first": first.observed(member),
                        "second": second.observed(member),
                    }),
                    span: (first.span.0, second.span.1),
                });
            }
        }
    }
}

/// Two reads of an unchanged member disagree where both would show it.
fn differ(a: &Read, b: &Read, member: usize) -> bool {
    match (a.observed(member), b.observed(member)) {
        (Some(x), Some(y)) => !same_score(x, y),
        (Some(x), None) => b.covers(x),
        (None, Some(y)) => a.covers(y),
        (None, None) => false,
    }
}
