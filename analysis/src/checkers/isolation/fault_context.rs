//! Which faults were under way when an isolation anomaly happened: each witness gets
//! `faults`, the nemesis turns whose recorded span overlaps the time its transactions were
//! in flight, and the turns that acted on one of its keys or held one of its transactions
//! are also named in its `why` (fields in `docs/checkers.md` § isolation, Result).
//!
//! A turn's span is [its `start-<fault>` event, the next `stop-<fault>`] (to the end of the
//! history when it never stopped). A witness's transactions are its `writer` when it names
//! one (a lost append happened when it was written, not when the final read missed it),
//! else every transaction it shows. A `txn-move` turn *held* a witness transaction when that
//! transaction writes exactly the held transaction's keys (`txn.primary` and
//! `txn.secondary_writes` of the event), was invoked before the turn's event and completed
//! at most [`HELD_LEAD`] before it (or after it): the event is recorded once
//! the hold is released (or the coordinator killed), after the transaction was found held,
//! so the held transaction was invoked before it. What an entry names of its turn is read
//! through the types the nemesis wrote it as ([`TxnMoveFacts`], [`JobFacts`],
//! [`ProcessFacts`]), never looked up by name.
//!
//! Invariants: this only annotates — it never changes a verdict, a count or which witnesses
//! are kept — and a history without nemesis events gets no annotation.

use crate::history::txn_move::{TxnMoveFacts, HELD_LEAD};
use crate::history::{
    fault_events, FaultEdge, FaultEvent, History, JobFacts, OpType, Process, ProcessFacts,
};
use crate::verdict::CheckerResult;
use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, VecDeque};

/// At most this many faults are listed per witness (those naming its keys first).
pub const MAX_FAULTS_PER_WITNESS: usize = 6;

/// One fault turn: its start event, its span and, for `txn-move`, what it held and moved.
struct Turn {
    index: u64,
    start: u64,
    stop: u64,
    event: FaultEvent,
    txn_move: Option<TxnMoveFacts>,
}

/// When a transaction (named by its witness op index) was in flight.
#[derive(Clone, Copy)]
struct Span {
    invoke: u64,
    complete: u64,
}

/// Adds `faults` to every anomaly of `result` that overlaps a fault turn of `history`.
pub fn annotate(history: &History, result: &mut CheckerResult) {
    if result.anomalies.is_empty() {
        return;
    }
    let turns = fault_turns(history);
    if turns.is_empty() {
        return;
    }
    let spans = txn_spans(history);
    for witness in result.anomalies.iter_mut() {
        annotate_one(witness, &turns, &spans);
    }
}

fn fault_turns(history: &History) -> Vec<Turn> {
    let end = history.ops.iter().map(|op| op.time).max().unwrap_or(0);
    let mut open: FxHashMap<String, VecDeque<usize>> = FxHashMap::default();
    let mut turns: Vec<Turn> = Vec::new();
    for (op, event) in fault_events(&history.ops) {
        match event.edge {
            FaultEdge::Start => {
                open.entry(event.fault.clone())
                    .or_default()
                    .push_back(turns.len());
                let txn_move = (event.fault == "txn-move")
                    .then(|| TxnMoveFacts::of(&event.value))
                    .flatten();
                turns.push(Turn {
                    index: op.index,
                    start: op.time,
                    stop: end,
                    event,
                    txn_move,
                });
            }
            FaultEdge::Stop => {
                if let Some(i) = open.get_mut(&event.fault).and_then(VecDeque::pop_front) {
                    turns[i].stop = op.time.max(turns[i].start);
                }
            }
        }
    }
    turns
}

/// Each client completion's (and never-completed invoke's) span, by op index.
fn txn_spans(history: &History) -> FxHashMap<u64, Span> {
    let mut pending: FxHashMap<u64, (u64, u64)> = FxHashMap::default();
    let mut spans = FxHashMap::default();
    let end = history.ops.iter().map(|op| op.time).max().unwrap_or(0);
    for op in &history.ops {
        let Process::Client(p) = op.process else {
            continue;
        };
        if op.kind == OpType::Invoke {
            pending.insert(p, (op.index, op.time));
        } else if let Some((_, invoke)) = pending.remove(&p) {
            spans.insert(
                op.index,
                Span {
                    invoke,
                    complete: op.time,
                },
            );
        }
    }
    for (index, invoke) in pending.into_values() {
        spans.insert(
            index,
            Span {
                invoke,
                complete: end,
            },
        );
    }
    spans
}

fn annotate_one(witness: &mut Value, turns: &[Turn], spans: &FxHashMap<u64, Span>) {
    let focus = focus_txns(witness);
    let in_flight: Vec<Span> = focus
        .iter()
        .filter_map(|t| t["txn"].as_u64().and_then(|i| spans.get(&i).copied()))
        .collect();
    let (Some(from), Some(to)) = (
        in_flight.iter().map(|s| s.invoke).min(),
        in_flight.iter().map(|s| s.complete).max(),
    ) else {
        return;
    };
    let keys = witness_keys(witness, &focus);
    let mut named = Vec::new();
    let mut others = Vec::new();
    for turn in turns {
        let held = held_txn(turn, &focus, spans);
        let overlaps = turn.start <= to && turn.stop >= from;
        if !overlaps && held.is_none() {
            continue;
        }
        let on_keys: Vec<String> = turn_keys(turn)
            .into_iter()
            .filter(|k| keys.contains(k))
            .collect();
        let entry = fault_entry(turn, held, &on_keys);
        if held.is_some() || !on_keys.is_empty() {
            named.push(entry);
        } else {
            others.push(entry);
        }
    }
    if named.is_empty() && others.is_empty() {
        return;
    }
    let sentences: Vec<String> = named
        .iter()
        .filter_map(|e| e["why"].as_str().map(str::to_string))
        .collect();
    if !sentences.is_empty() {
        if let Some(why) = witness["why"].as_str() {
            witness["why"] = Value::String(format!("{why}. Under way: {}", sentences.join("; ")));
        }
    }
    let listed: Vec<Value> = named
        .into_iter()
        .chain(others)
        .take(MAX_FAULTS_PER_WITNESS)
        .collect();
    witness["faults"] = Value::Array(listed);
}

/// The transactions whose time a witness is about: its `writer`, else every one it shows.
fn focus_txns(witness: &Value) -> Vec<Value> {
    if let Some(writer) = witness.get("writer").filter(|w| w.get("txn").is_some()) {
        return vec![writer.clone()];
    }
    let mut out = Vec::new();
    collect_txns(witness, &mut out);
    out
}

fn collect_txns(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) if m.get("txn").is_some_and(Value::is_u64) && m.contains_key("value") => {
            out.push(v.clone())
        }
        Value::Object(m) => m.values().for_each(|x| collect_txns(x, out)),
        Value::Array(a) => a.iter().for_each(|x| collect_txns(x, out)),
        _ => {}
    }
}

/// A key as the witness and the fault events spell it.
fn key_text(v: &Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

/// The keys a transaction writes (`append` / `w` micro-ops).
fn written_keys(txn: &Value) -> BTreeSet<String> {
    let mops = txn["value"].as_array().into_iter().flatten();
    mops.filter(|m| matches!(m[0].as_str(), Some("append" | "w")))
        .filter(|m| !m[1].is_null())
        .map(|m| key_text(&m[1]))
        .collect()
}

/// The witness's keys: its `key`, its steps' keys and the keys its transactions touch.
fn witness_keys(witness: &Value, focus: &[Value]) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    if let Some(k) = witness.get("key") {
        keys.insert(key_text(k));
    }
    for step in witness["steps"].as_array().into_iter().flatten() {
        if let Some(k) = step.get("key") {
            keys.insert(key_text(k));
        }
    }
    for txn in focus {
        for m in txn["value"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| !m[1].is_null())
        {
            keys.insert(key_text(&m[1]));
        }
    }
    keys
}

/// The keys a fault turn names: a split's key, a `txn-move`'s moved key.
fn turn_keys(turn: &Turn) -> Vec<String> {
    let moved = turn.txn_move.as_ref().and_then(|m| m.moved_key.clone());
    turn.event
        .value
        .split_key()
        .map(str::to_string)
        .into_iter()
        .chain(moved)
        .collect()
}

/// The witness transaction a `txn-move` turn held, if one matches (module doc).
fn held_txn(turn: &Turn, focus: &[Value], spans: &FxHashMap<u64, Span>) -> Option<u64> {
    let held = turn.txn_move.as_ref()?.txn.as_ref()?;
    let keys: BTreeSet<String> = held.written_keys().map(str::to_string).collect();
    let earliest = turn.start.saturating_sub(HELD_LEAD.as_nanos() as u64);
    let mut matching = focus
        .iter()
        .filter(|t| written_keys(t) == keys)
        .filter_map(|t| {
            let index = t["txn"].as_u64()?;
            let span = spans.get(&index)?;
            (span.complete >= earliest && span.invoke <= turn.start).then_some(index)
        });
    let first = matching.next()?;
    matching.all(|i| i == first).then_some(first)
}

fn fault_entry(turn: &Turn, held: Option<u64>, on_keys: &[String]) -> Value {
    let mut entry = Map::new();
    entry.insert("index".into(), json!(turn.index));
    entry.insert("f".into(), json!(turn.event.f()));
    if let Some(e) = turn.event.value.effective {
        entry.insert("effective".into(), json!(e));
    }
    if !turn.event.value.targets.is_empty() {
        entry.insert("targets".into(), json!(turn.event.value.targets));
    }
    entry.extend(named_facts(turn));
    if let Some(mode) = &turn.event.value.mode {
        entry.insert("mode".into(), json!(mode));
    }
    if let Some(k) = turn.event.value.split_key() {
        entry.insert("key".into(), json!(k));
    }
    if let Some(t) = held {
        entry.insert("held_txn".into(), json!(t));
    }
    entry.insert("why".into(), json!(fault_sentence(turn, held, on_keys)));
    Value::Object(entry)
}

/// What an entry repeats of its turn's typed facts, where the event names them: the job
/// facts of any turn, what a `txn-move` turn held and moved, and what a kill killed.
fn named_facts(turn: &Turn) -> Map<String, Value> {
    let value = &turn.event.value;
    let own = match &turn.txn_move {
        Some(t) => json!({
            "aim": Some(&t.aim).filter(|a| !a.is_empty()),
            "moved_key": t.moved_key,
            "killed": t.killed,
            "split": t.split,
        }),
        None => json!({"killed": ProcessFacts::of(value).and_then(|p| p.killed)}),
    };
    let job = serde_json::to_value(JobFacts::of(value)).unwrap_or_default();
    [own, job]
        .into_iter()
        .filter_map(|v| match v {
            Value::Object(fields) => Some(fields),
            _ => None,
        })
        .flatten()
        .filter(|(_, v)| !v.is_null())
        .collect()
}

fn fault_sentence(turn: &Turn, held: Option<u64>, on_keys: &[String]) -> String {
    let facts = turn.txn_move.clone().unwrap_or_default();
    let moved = match (&facts.moved_key, facts.job.route_id, facts.job.target_group) {
        (Some(k), Some(r), Some(g)) => format!(" moved key {k} (route {r}) to group {g}"),
        (Some(k), _, _) => format!(" moved key {k}"),
        _ => String::new(),
    };
    let phase = facts
        .job
        .phase_seen
        .as_ref()
        .map(|p| format!(", released in {p}"))
        .unwrap_or_default();
    let name = format!("{} (op {})", turn.event.fault, turn.index);
    let killed = facts.killed == Some(true);
    let node = turn.event.value.targets.join(", ");
    match held {
        Some(t) if killed => format!("{name} held T{t} after its primary's commit and killed its coordinator {node}"),
        Some(t) => format!("{name} held T{t} at its commit point,{moved}{phase}"),
        None if killed => format!("{name} killed {node}, the coordinator of a transaction it held after its primary's commit"),
        None if !moved.is_empty() && !on_keys.is_empty() => format!("{name}{moved}{phase}"),
        None if !on_keys.is_empty() => {
            let keys: Vec<&str> = on_keys.iter().map(String::as_str).collect();
            format!("{name} acted at key {}", keys.join(", "))
        }
        None => {
            let targets = &turn.event.value.targets;
            let on = if targets.is_empty() { String::new() } else { format!(" on {}", targets.join(", ")) };
            format!("{name}{on} was under way")
        }
    }
}
