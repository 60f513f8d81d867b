//! Building sorted-set histories by hand and at random, and a brute-force oracle for
//! their linearizability, for the zset checker's tests.

#![allow(dead_code)]

use analysis::history::{History, Op, OpType, Process};
use serde_json::{json, Value};

/// A history written call by call: `invoke`, then `ok` / `info` / `fail` of a process.
#[derive(Default)]
pub struct H {
    pub ops: Vec<Op>,
}

impl H {
    fn push(&mut self, p: u64, kind: OpType, f: &str, key: &str, value: Value) -> &mut Self {
        let index = self.ops.len() as u64;
        self.ops.push(Op {
            index,
            kind,
            process: Process::Client(p),
            f: f.into(),
            key: Some(key.into()),
            value,
            time: index * 1_000_000,
            node: None,
            error: None,
            meta: None,
        });
        self
    }

    pub fn invoke(&mut self, p: u64, f: &str, value: Value) -> &mut Self {
        self.push(p, OpType::Invoke, f, "z", value)
    }

    fn pending_f(&self, p: u64) -> String {
        self.ops
            .iter()
            .rev()
            .find(|o| o.process == Process::Client(p) && o.kind == OpType::Invoke)
            .map(|o| o.f.to_string())
            .expect("an invoke")
    }

    pub fn ok(&mut self, p: u64, value: Value) -> &mut Self {
        let f = self.pending_f(p);
        self.push(p, OpType::Ok, &f, "z", value)
    }

    pub fn info(&mut self, p: u64) -> &mut Self {
        let f = self.pending_f(p);
        self.push(p, OpType::Info, &f, "z", Value::Null)
    }

    pub fn fail(&mut self, p: u64) -> &mut Self {
        let f = self.pending_f(p);
        self.push(p, OpType::Fail, &f, "z", Value::Null)
    }

    /// A call that runs alone: invoke and `ok` with `reply`.
    pub fn call(&mut self, p: u64, f: &str, value: Value, reply: Value) -> &mut Self {
        self.invoke(p, f, value).ok(p, reply)
    }

    pub fn history(&self) -> History {
        History::new(self.ops.clone())
    }
}

/// One call of a random history, before it is laid out.
#[derive(Clone, Debug)]
struct Plan {
    f: &'static str,
    value: Value,
}

/// A member's contents: `None` absent.
type Contents = Vec<Option<f64>>;

/// The reply `f` gives on `contents` (applying it), as the store would.
fn apply(f: &str, value: &Value, contents: &mut Contents) -> Value {
    let member = |v: &Value| -> usize { v.as_str().unwrap()[1..].parse().unwrap() };
    match f {
        "zadd" => {
            contents[member(&value[0])] = value[1].as_f64();
            value.clone()
        }
        "zincrby" => {
            let m = member(&value[0]);
            let s = contents[m].unwrap_or(0.0) + value[1].as_f64().unwrap();
            contents[m] = Some(s);
            json!([value[0], s])
        }
        "zrem" => {
            let m = member(value);
            let was = contents[m].take().is_some();
            json!([value, was])
        }
        _ => {
            let (lo, hi) = match value {
                Value::Array(b) => (b[0].as_f64().unwrap(), b[1].as_f64().unwrap()),
                _ => (f64::NEG_INFINITY, f64::INFINITY),
            };
            let mut entries: Vec<(f64, usize)> = contents
                .iter()
                .enumerate()
                .filter_map(|(m, s)| s.filter(|s| lo <= *s && *s <= hi).map(|s| (s, m)))
                .collect();
            entries.sort_by(|a, b| a.partial_cmp(b).unwrap());
            json!(entries
                .iter()
                .map(|(s, m)| json!([format!("m{m}"), s]))
                .collect::<Vec<_>>())
        }
    }
}

/// A tiny deterministic generator (xorshift), so a failing seed replays.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn random_plan(rng: &mut Rng, members: u64) -> Plan {
    let member = json!(format!("m{}", rng.below(members)));
    match rng.below(5) {
        0 => Plan {
            f: "zadd",
            value: json!([member, rng.below(4) as f64]),
        },
        1 => Plan {
            f: "zincrby",
            value: json!([member, rng.below(3) as f64 - 1.0]),
        },
        2 => Plan {
            f: "zrem",
            value: member,
        },
        3 => Plan {
            f: "zrange",
            value: Value::Null,
        },
        _ => {
            let lo = rng.below(3) as f64;
            Plan {
                f: "zrangebyscore",
                value: json!([lo, lo + rng.below(3) as f64]),
            }
        }
    }
}

/// A random small history of `calls` calls on one key over `members` members, by
/// `procs` processes: each call takes effect at a random moment within its window (an
/// indeterminate one maybe never), replies come from a real sorted set, and with
/// `corrupt` percent chance one `ok` reply is then altered.
pub fn random_history(seed: u64, calls: usize, procs: u64, members: u64, corrupt: u64) -> History {
    let mut rng = Rng::new(seed);
    let mut h = H::default();
    let mut contents: Contents = vec![None; members as usize];
    // Per process: the planned call in flight, whether it took effect, its reply.
    let mut flight: Vec<Option<(Plan, Option<Value>, u8)>> = vec![None; procs as usize];
    let mut started = 0;
    while started < calls || flight.iter().any(Option::is_some) {
        let p = rng.below(procs) as usize;
        match flight[p].take() {
            None if started < calls => {
                let plan = random_plan(&mut rng, members);
                h.invoke(p as u64, plan.f, plan.value.clone());
                // outcome: 0 ok, 1 info, 2 fail
                let outcome = match rng.below(10) {
                    0 if plan.f.starts_with("zr") && plan.f != "zrem" => 0,
                    0 => 1,
                    1 if !plan.f.starts_with("zrange") => 2,
                    _ => 0,
                };
                flight[p] = Some((plan, None, outcome));
                started += 1;
            }
            None => {}
            Some((plan, None, outcome)) if outcome != 2 && rng.chance(50) => {
                let reply = apply(plan.f, &plan.value, &mut contents);
                flight[p] = Some((plan, Some(reply), outcome));
            }
            Some((plan, reply, outcome)) => {
                if outcome == 0 && reply.is_none() {
                    // an ok call takes effect before it completes
                    let r = apply(plan.f, &plan.value, &mut contents);
                    h.ok(p as u64, r);
                } else if outcome == 0 {
                    h.ok(p as u64, reply.unwrap());
                } else if outcome == 1 {
                    h.info(p as u64);
                } else {
                    h.fail(p as u64);
                }
            }
        }
    }
    if rng.chance(corrupt) {
        corrupt_one(&mut h, &mut rng);
    }
    h.history()
}

fn corrupt_one(h: &mut H, rng: &mut Rng) {
    let oks: Vec<usize> = (0..h.ops.len())
        .filter(|&i| h.ops[i].kind == OpType::Ok && h.ops[i].f != "zadd")
        .collect();
    if oks.is_empty() {
        return;
    }
    let op = &mut h.ops[oks[rng.below(oks.len() as u64) as usize]];
    op.value = match op.f.as_str() {
        "zincrby" => json!([op.value[0], op.value[1].as_f64().unwrap() + 1.0]),
        "zrem" => json!([op.value[0], !op.value[1].as_bool().unwrap()]),
        _ => {
            let mut entries = op.value.as_array().cloned().unwrap_or_default();
            match rng.below(3) {
                0 if !entries.is_empty() => {
                    entries.remove(rng.below(entries.len() as u64) as usize);
                }
                1 if !entries.is_empty() => {
                    let i = rng.below(entries.len() as u64) as usize;
                    entries[i] = json!([entries[i][0], entries[i][1].as_f64().unwrap() + 1.0]);
                }
                _ => entries.push(json!(["m0", 9.0])),
            }
            json!(entries)
        }
    };
}

/// One call as the oracle sees it.
struct OCall {
    f: String,
    value: Value,
    reply: Option<Value>,
    invoke: u64,
    /// `None`: indeterminate.
    complete: Option<u64>,
}

/// Brute force: is there a subset of the indeterminate mutations and an order of them and
/// the `ok` calls, respecting real time, in which every `ok` reply is what a sorted set
/// answers?
pub fn oracle_linearizable(history: &History, members: usize) -> bool {
    let mut calls: Vec<OCall> = Vec::new();
    let mut open: std::collections::HashMap<Process, usize> = Default::default();
    for op in &history.ops {
        match op.kind {
            OpType::Invoke => {
                open.insert(op.process, calls.len());
                calls.push(OCall {
                    f: op.f.to_string(),
                    value: op.value.clone(),
                    reply: None,
                    invoke: op.index,
                    complete: None,
                });
            }
            kind => {
                let i = open.remove(&op.process).unwrap();
                match kind {
                    OpType::Ok => {
                        calls[i].reply = Some(op.value.clone());
                        calls[i].complete = Some(op.index);
                    }
                    OpType::Fail => calls[i].f = "failed".into(),
                    _ => {}
                }
            }
        }
    }
    calls.retain(|c| c.f != "failed" && (c.complete.is_some() || !c.f.starts_with("zrange")));
    let mut used = vec![false; calls.len()];
    search(&calls, &mut used, &mut vec![None; members])
}

fn search(calls: &[OCall], used: &mut Vec<bool>, contents: &mut Contents) -> bool {
    if calls
        .iter()
        .zip(used.iter())
        .all(|(c, u)| *u || c.complete.is_none())
    {
        return true;
    }
    for i in 0..calls.len() {
        if used[i] {
            continue;
        }
        // real time: nothing unplaced completed before this one was invoked
        let blocked = calls
            .iter()
            .zip(used.iter())
            .any(|(o, u)| !*u && o.complete.is_some_and(|c| c < calls[i].invoke));
        if blocked {
            continue;
        }
        let mut next = contents.clone();
        let reply = apply(&calls[i].f, &calls[i].value, &mut next);
        if calls[i]
            .reply
            .as_ref()
            .is_some_and(|r| !same_reply(&calls[i].f, r, &reply))
        {
            continue;
        }
        used[i] = true;
        if search(calls, used, &mut next) {
            return true;
        }
        used[i] = false;
    }
    false
}

fn same_reply(f: &str, got: &Value, model: &Value) -> bool {
    match f {
        "zadd" => true,
        _ => got == model,
    }
}
