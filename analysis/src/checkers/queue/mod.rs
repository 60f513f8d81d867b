//! The `queue` checker: an SQS FIFO-like queue (HT-FIFO: message groups, visibility
//! timeout, delete by receipt), history shape in `docs/history-format.md` § Queues.
//!
//! Findings:
//! - `lost`: an acknowledged send never received, although the queue was drained — an `ok`
//!   receive returned nothing after every send ended and at least one visibility timeout
//!   after the last delivery;
//! - `duplicated`: a message received again after a delete of it was acknowledged while
//!   the receipt was surely still valid (the delete completed within the visibility
//!   timeout of the receive it followed, by the same process). A redelivery after a failed
//!   or indeterminate delete, or after the visibility timeout, is not a duplicate;
//! - `unexpected`: a message received that no send had been invoked for before the receive
//!   completed, or whose every send definitely failed;
//! - `order`: within a group, a message first delivered before another whose send was
//!   acknowledged before the first's send was invoked (a FIFO group delivers in send
//!   order; an earlier message still in flight holds the group back).
//!
//! Indeterminate sends may or may not arrive. Verdict: invalid on any finding; unknown
//! when nothing was sent or nothing received, or when acknowledged sends were never
//! received and no drain shows they are gone; else valid. Witnesses name the message, its
//! group, the sends, receives and deletes (history indices) and the faults in flight.

/// Checker name in `results.json`.
pub const NAME: &str = "queue";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::CHECKER;

pub mod model;

use crate::checkers::calls::{self, Outcome};
use crate::checkers::fault_turns::{self, Turn};
use crate::history::History;
use crate::ops;
use crate::verdict::{CheckerResult, Validity};
use model::{Message, Queue};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The functions this checker judges.
pub const FUNCTIONS: &[&str] = &[ops::SEND, ops::RECEIVE, ops::DELETE_MESSAGE];

/// Every kind of finding, in report order.
pub const KINDS: &[&str] = &["lost", "duplicated", "unexpected", "order"];

/// Findings listed per kind (counts are always complete).
const MAX_LISTED: usize = 200;

/// Checks the queue calls of `history`.
pub fn check(history: &History) -> CheckerResult {
    let q = match calls::pair(history, FUNCTIONS).and_then(|c| model::read_queue(&c)) {
        Ok(q) => q,
        Err(why) => {
            let mut r = CheckerResult::new(Validity::Unknown);
            r.reason = Some(format!("queue: {why}"));
            return r;
        }
    };
    let turns = fault_turns::turns(history);
    let mut found: Vec<(&'static str, Value, (u64, u64))> = Vec::new();
    let drained = drained(&q);
    for m in &q.messages {
        if drained && m.acknowledged() && m.deliveries.is_empty() {
            found.push(("lost", message_json(&q, m), (first_send_time(m), u64::MAX)));
        }
        duplicated(&q, m, &mut found);
        unexpected(&q, m, &mut found);
    }
    order(&q, &mut found);
    assemble(&q, found, &turns, drained)
}

fn first_send_time(m: &Message) -> u64 {
    m.sends.iter().map(|s| s.invoke_time).min().unwrap_or(0)
}

fn message_json(q: &Queue, m: &Message) -> Value {
    json!({
        "message": m.body,
        "group": m.group,
        "sends": m.sends.iter().map(|s| s.index()).collect::<Vec<_>>(),
        "receives": m.deliveries.iter().map(|(r, _)| q.receives[*r].window.complete).collect::<Vec<_>>(),
        "deletes": m.deletes.iter().map(|d| d.index()).collect::<Vec<_>>(),
    })
}

/// An `ok` receive returned nothing after every send ended (an indeterminate one: was
/// invoked) and a visibility timeout after the last delivery completed.
pub fn drained(q: &Queue) -> bool {
    let sends_over = q
        .messages
        .iter()
        .flat_map(|m| m.sends.iter())
        .map(|s| s.index())
        .max()
        .unwrap_or(0);
    let last_delivery = q
        .receives
        .iter()
        .map(|r| {
            r.window
                .complete_time
                .saturating_add(r.visibility_ns.unwrap_or(0))
        })
        .max()
        .unwrap_or(0);
    q.empty_receives
        .iter()
        .any(|&(index, time)| index > sends_over && time > last_delivery)
}

/// Deliveries after a delete that surely took effect.
fn duplicated(q: &Queue, m: &Message, found: &mut Vec<(&'static str, Value, (u64, u64))>) {
    for d in m.deletes.iter().filter(|d| d.outcome == Outcome::Ok) {
        // The receive this delete followed: the same process's latest delivery before it.
        let Some(&(rid, _)) = m.deliveries.iter().rev().find(|(r, _)| {
            let w = &q.receives[*r].window;
            w.process == d.process && w.complete < d.invoke
        }) else {
            continue;
        };
        let got = &q.receives[rid];
        let Some(vt) = got.visibility_ns else {
            continue;
        };
        if d.complete_time >= got.window.invoke_time.saturating_add(vt) {
            continue;
        }
        if let Some(&(again, _)) = m
            .deliveries
            .iter()
            .find(|(r, _)| q.receives[*r].window.invoke > d.complete)
        {
            let redelivery = &q.receives[again].window;
            let mut w = message_json(q, m);
            w["delete"] = json!(d.complete);
            w["deleted_receive"] = json!(got.window.complete);
            w["redelivery"] = json!(redelivery.complete);
            found.push((
                "duplicated",
                w,
                (got.window.invoke_time, redelivery.complete_time),
            ));
        }
    }
}

/// A delivery no send explains.
fn unexpected(q: &Queue, m: &Message, found: &mut Vec<(&'static str, Value, (u64, u64))>) {
    let Some(&(rid, _)) = m
        .deliveries
        .iter()
        .min_by_key(|(r, _)| q.receives[*r].window.complete)
    else {
        return;
    };
    let got = &q.receives[rid].window;
    let why = if m.sends.is_empty() {
        "never sent"
    } else if m.sends.iter().all(|s| s.outcome == Outcome::Fail) {
        "its every send failed"
    } else if m.sends.iter().all(|s| s.invoke > got.complete) {
        "received before it was sent"
    } else {
        return;
    };
    let mut w = message_json(q, m);
    w["why"] = json!(why);
    w["receive"] = json!(got.complete);
    found.push(("unexpected", w, (got.invoke_time, got.complete_time)));
}

/// Where a message was first delivered: (receive invoke, receive complete, position).
fn first_delivery(q: &Queue, m: &Message) -> Option<(u64, u64, usize, u64, u64)> {
    m.deliveries
        .iter()
        .map(|&(r, pos)| {
            let w = &q.receives[r].window;
            (w.invoke, w.complete, pos, w.invoke_time, w.complete_time)
        })
        .min_by_key(|d| (d.1, d.2))
}

/// What the order rule needs of one message, computed once.
struct Ordered {
    id: usize,
    /// Its first send's invoke index.
    sent: u64,
    /// Its first acknowledged send's completion index.
    acked: Option<u64>,
    first: (u64, u64, usize, u64, u64),
}

/// Per group: `a` first delivered before `b`, though `b`'s send was acknowledged before
/// `a`'s was invoked.
fn order(q: &Queue, found: &mut Vec<(&'static str, Value, (u64, u64))>) {
    let mut groups: BTreeMap<&str, Vec<Ordered>> = BTreeMap::new();
    for (id, m) in q.messages.iter().enumerate() {
        let (Some(first), Some(sent)) =
            (first_delivery(q, m), m.sends.iter().map(|s| s.invoke).min())
        else {
            continue;
        };
        let acked = m
            .sends
            .iter()
            .filter(|s| s.outcome == Outcome::Ok)
            .map(|s| s.complete)
            .min();
        groups.entry(m.group.as_str()).or_default().push(Ordered {
            id,
            sent,
            acked,
            first,
        });
    }
    for list in groups.values() {
        for a in list {
            for b in list {
                let Some(b_acked) = b.acked else { continue };
                if a.id == b.id || b_acked >= a.sent {
                    continue;
                }
                let (da, db) = (a.first, b.first);
                if da.1 < db.0 || (da.1 == db.1 && da.2 < db.2) {
                    let (ma, mb) = (&q.messages[a.id], &q.messages[b.id]);
                    let w = json!({
                        "message": ma.body,
                        "group": ma.group,
                        "before": mb.body,
                        "sends": [ma.sends.iter().map(|s| s.index()).collect::<Vec<_>>(), mb.sends.iter().map(|s| s.index()).collect::<Vec<_>>()],
                        "receives": [da.1, db.1],
                    });
                    found.push(("order", w, (da.3, db.4)));
                }
            }
        }
    }
}

fn assemble(
    q: &Queue,
    found: Vec<(&'static str, Value, (u64, u64))>,
    turns: &[Turn],
    drained: bool,
) -> CheckerResult {
    let mut r = CheckerResult::new(Validity::Valid);
    let mut per_kind: BTreeMap<&str, u64> = KINDS.iter().map(|k| (*k, 0)).collect();
    for (kind, mut w, span) in found {
        let n = per_kind.entry(kind).or_insert(0);
        *n += 1;
        if *n as usize > MAX_LISTED {
            continue;
        }
        w["kind"] = json!(kind);
        let faults = fault_turns::overlapping(turns, span.0, span.1);
        if !faults.is_empty() {
            w["faults"] = json!(faults);
        }
        r.anomalies.push(w);
    }
    let acked = q.messages.iter().filter(|m| m.acknowledged()).count();
    let received = q
        .messages
        .iter()
        .filter(|m| !m.deliveries.is_empty())
        .count();
    let never = q
        .messages
        .iter()
        .filter(|m| m.acknowledged() && m.deliveries.is_empty())
        .count();
    for (kind, n) in &per_kind {
        r.counts.insert(format!("{kind}-count"), *n);
    }
    for (name, n) in [
        ("message-count", q.messages.len()),
        ("acknowledged-count", acked),
        ("received-count", received),
        ("never-received-count", never),
        ("receive-count", q.receives.len() + q.empty_receives.len()),
    ] {
        r.counts.insert(name.into(), n as u64);
    }
    r.details = json!({ "drained": drained });
    let problems: Vec<String> = per_kind
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    if !problems.is_empty() {
        r.valid = Validity::Invalid;
        r.reason = Some(format!("queue: {}", problems.join(", ")));
    } else if acked == 0 || received == 0 {
        r.valid = Validity::Unknown;
        r.reason = Some(format!(
            "queue: {} — nothing to judge",
            if acked == 0 {
                "no send was acknowledged"
            } else {
                "no message was received"
            }
        ));
    } else if never > 0 && !drained {
        r.valid = Validity::Unknown;
        r.reason = Some(format!("queue: {never} acknowledged messages were never received and no empty receive after a visibility timeout shows the queue drained"));
    }
    r
}
