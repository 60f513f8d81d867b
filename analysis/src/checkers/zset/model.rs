//! A sorted-set history read into its model: per key, the mutations (ZADD, ZINCRBY,
//! ZREM) and the reads (ZRANGE 0 -1, ZRANGEBYSCORE) with their windows, members interned.
//!
//! Invariants: windows are history indices (`invoke` strictly before `done_by`); a
//! mutation that ended `fail` is kept (for counts) but never takes effect; an
//! indeterminate mutation has `done_by == u64::MAX`; only `ok` reads are kept. A value of
//! the wrong shape is an error naming the op, never a panic.

use crate::checkers::calls::{Call, Outcome};
use crate::ops;
use serde_json::Value;
use std::collections::BTreeMap;

/// A member's state in the model: absent, present with a score, or present with a score
/// the history cannot tell (after an indeterminate ZINCRBY).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum State {
    Absent,
    Present(f64),
    PresentUnknown,
}

impl State {
    pub fn present(self) -> bool {
        !matches!(self, State::Absent)
    }
}

/// What a mutation does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MutKind {
    Add(f64),
    /// `reply`: the new score the store answered (an `ok` ZINCRBY).
    Incr {
        delta: f64,
        reply: Option<f64>,
    },
    /// `removed`: the store's answer (an `ok` ZREM).
    Rem {
        removed: Option<bool>,
    },
}

#[derive(Debug, Clone)]
pub struct Mutation {
    pub member: usize,
    pub kind: MutKind,
    pub outcome: Outcome,
    /// History index of the invoke.
    pub invoke: u64,
    /// History index of the `ok`/`fail` completion; `u64::MAX` when indeterminate.
    pub done_by: u64,
    /// Nanoseconds in flight (end `u64::MAX` when it never completed).
    pub span: (u64, u64),
    /// History index of the completion (or of the invoke when there is none).
    pub index: u64,
}

impl Mutation {
    pub fn effective(&self) -> bool {
        self.outcome != Outcome::Fail
    }

    /// The member's state right after this mutation, as far as the history tells.
    pub fn post(&self) -> State {
        match self.kind {
            MutKind::Add(s) => State::Present(s),
            MutKind::Incr { reply: Some(s), .. } => State::Present(s),
            MutKind::Incr { reply: None, .. } => State::PresentUnknown,
            MutKind::Rem { .. } => State::Absent,
        }
    }

    pub fn f(&self) -> &'static str {
        match self.kind {
            MutKind::Add(_) => ops::ZADD,
            MutKind::Incr { .. } => ops::ZINCRBY,
            MutKind::Rem { .. } => ops::ZREM,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Read {
    pub invoke: u64,
    pub complete: u64,
    pub span: (u64, u64),
    /// `ZRANGEBYSCORE`'s inclusive bounds; `None` for a whole read.
    pub bounds: Option<(f64, f64)>,
    /// The entries in the order returned.
    pub entries: Vec<(usize, f64)>,
}

impl Read {
    /// Whether this read would return a member with score `s`.
    pub fn covers(&self, s: f64) -> bool {
        self.bounds.is_none_or(|(lo, hi)| lo <= s && s <= hi)
    }

    /// The score returned for `member` (the first, if returned more than once).
    pub fn observed(&self, member: usize) -> Option<f64> {
        self.entries
            .iter()
            .find(|(m, _)| *m == member)
            .map(|(_, s)| *s)
    }
}

/// One sorted set.
#[derive(Debug, Clone, Default)]
pub struct Key {
    pub name: String,
    pub members: Vec<String>,
    pub mutations: Vec<Mutation>,
    pub reads: Vec<Read>,
    /// Mutation ids per member.
    pub by_member: Vec<Vec<usize>>,
}

impl Key {
    fn member(&mut self, name: &str) -> usize {
        if let Some(i) = self.members.iter().position(|m| m == name) {
            return i;
        }
        self.members.push(name.to_string());
        self.by_member.push(Vec::new());
        self.members.len() - 1
    }
}

/// Scores as equal as a double's text round trip allows.
pub fn same_score(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The per-key model of `calls` (sorted-set calls only), keys in name order.
pub fn read_keys(calls: &[Call]) -> Result<Vec<Key>, String> {
    let mut keys: BTreeMap<String, Key> = BTreeMap::new();
    for call in calls {
        let name = call.invoke.key.as_deref().unwrap_or_default().to_string();
        let key = keys.entry(name.clone()).or_insert_with(|| Key {
            name,
            ..Key::default()
        });
        add_call(key, call).map_err(|e| format!("op {}: {e}", call.last_index()))?;
    }
    Ok(keys.into_values().collect())
}

fn add_call(key: &mut Key, call: &Call) -> Result<(), String> {
    let f = call.invoke.f.as_str();
    if f == ops::ZRANGE || f == ops::ZRANGEBYSCORE {
        return add_read(key, call);
    }
    let (member, kind) = match f {
        ops::ZADD => {
            let (m, s) = member_and_number(&call.invoke.value, "[member, score]")?;
            (m, MutKind::Add(s))
        }
        ops::ZINCRBY => {
            let (m, delta) = member_and_number(&call.invoke.value, "[member, delta]")?;
            let reply = match (call.outcome, call.complete) {
                (Outcome::Ok, Some(c)) => Some(incr_reply(&c.value)?),
                _ => None,
            };
            (m, MutKind::Incr { delta, reply })
        }
        ops::ZREM => {
            let m = call
                .invoke
                .value
                .as_str()
                .ok_or("zrem's value must be the member (a string)")?
                .to_string();
            let removed = match (call.outcome, call.complete) {
                (Outcome::Ok, Some(c)) => Some(rem_reply(&c.value)?),
                _ => None,
            };
            (m, MutKind::Rem { removed })
        }
        other => return Err(format!("`{other}` is not a sorted-set function")),
    };
    let member = key.member(&member);
    key.by_member[member].push(key.mutations.len());
    key.mutations.push(Mutation {
        member,
        kind,
        outcome: call.outcome,
        invoke: call.invoke.index,
        done_by: call.done_by(),
        span: call.span(),
        index: call.last_index(),
    });
    Ok(())
}

fn add_read(key: &mut Key, call: &Call) -> Result<(), String> {
    let (Outcome::Ok, Some(done)) = (call.outcome, call.complete) else {
        return Ok(());
    };
    let bounds = match call.invoke.f.as_str() {
        ops::ZRANGEBYSCORE => {
            let pair = call
                .invoke
                .value
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or("zrangebyscore's value must be [lo, hi]")?;
            Some((score(&pair[0])?, score(&pair[1])?))
        }
        _ => None,
    };
    let list = done
        .value
        .as_array()
        .ok_or("a sorted-set read's ok value must be an array of [member, score]")?;
    let mut entries = Vec::with_capacity(list.len());
    for e in list {
        let (m, s) = member_and_number(e, "[member, score]")?;
        entries.push((key.member(&m), s));
    }
    key.reads.push(Read {
        invoke: call.invoke.index,
        complete: done.index,
        span: call.span(),
        bounds,
        entries,
    });
    Ok(())
}

fn member_and_number(v: &Value, shape: &str) -> Result<(String, f64), String> {
    match v.as_array().map(Vec::as_slice) {
        Some([Value::String(m), n]) => Ok((m.clone(), score(n)?)),
        _ => Err(format!("expected {shape}, got {v}")),
    }
}

/// A score: a JSON number, or Redis's `inf` / `+inf` / `-inf` spelled as a string.
pub fn score(v: &Value) -> Result<f64, String> {
    if let Some(n) = v.as_f64() {
        return Ok(n);
    }
    match v.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("inf" | "+inf" | "infinity" | "+infinity") => Ok(f64::INFINITY),
        Some("-inf" | "-infinity") => Ok(f64::NEG_INFINITY),
        Some(s) => s
            .parse::<f64>()
            .map_err(|_| format!("score {v} is not a number")),
        None => Err(format!("score {v} is not a number")),
    }
}

/// An `ok` ZINCRBY's value: `[member, new score]` (or the new score alone).
fn incr_reply(v: &Value) -> Result<f64, String> {
    match v.as_array().map(Vec::as_slice) {
        Some([_, n]) => score(n),
        _ => {
            score(v).map_err(|_| format!("zincrby's ok value must be [member, new score], got {v}"))
        }
    }
}

/// An `ok` ZREM's value: `[member, removed]` (a boolean, or Redis's 0/1).
fn rem_reply(v: &Value) -> Result<bool, String> {
    let flag = match v.as_array().map(Vec::as_slice) {
        Some([_, f]) => f,
        _ => v,
    };
    match flag {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) if n.as_u64().is_some() => Ok(n.as_u64() != Some(0)),
        _ => Err(format!(
            "zrem's ok value must be [member, removed], got {v}"
        )),
    }
}
