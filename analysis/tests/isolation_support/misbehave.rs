//! Small random transaction histories of a store that misbehaves on purpose, for
//! differential tests of the isolation checker against the brute-force oracle.
//!
//! The store holds per key a list (list-append) or a register with its past values
//! (rw-register). Transactions are invoked and completed with random interleaving across
//! a few processes; a transaction takes effect at its completion. Each one may misbehave:
//! - `stale`: its reads see an older state (a prefix of the list, an earlier register
//!   value, or the initial nil);
//! - `drop`: its writes are acknowledged but never applied;
//! - `partial`: only some of its writes are applied;
//! - `duplicate`: an append is applied twice;
//! - `reorder`: a read returns two neighbouring elements swapped;
//! - `fail-visible`: it completes `fail` but its writes are applied;
//! - `info`: it completes `info` (or never completes) and its writes are applied or not.
//!
//! A transaction may read a key several times and read it after writing it, so reads that
//! are not a key's first micro-op are exercised. Invariants: every written value is unique
//! per history (values count up from 1); each completion follows its process's invocation;
//! `fail` and `info` completions carry their invocation's value; indices run 0, 1, 2, ...

use analysis::history::{History, Op, OpType, Process};
use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;
use serde_json::{json, Value};

/// The misbehaviours, for counting what the tests exercised.
pub const FAULTS: [&str; 8] = [
    "none",
    "stale",
    "drop",
    "partial",
    "duplicate",
    "reorder",
    "fail-visible",
    "info",
];

/// One key's state: every version it held, oldest first (list-append: whole lists;
/// rw-register: register values, `Null` first).
struct Key {
    versions: Vec<Value>,
}

struct Store {
    list_append: bool,
    keys: Vec<Key>,
}

impl Store {
    fn current(&self, k: usize) -> &Value {
        self.keys[k].versions.last().expect("a key has a version")
    }

    fn apply(&mut self, k: usize, v: &Value, twice: bool) {
        let next = if self.list_append {
            let mut list = self.current(k).as_array().cloned().unwrap_or_default();
            list.push(v.clone());
            if twice {
                list.push(v.clone());
            }
            Value::Array(list)
        } else {
            v.clone()
        };
        self.keys[k].versions.push(next);
    }

    fn stale(&self, k: usize, rng: &mut Xoshiro256PlusPlus) -> Value {
        let vs = &self.keys[k].versions;
        vs[rng.random_range(0..vs.len())].clone()
    }
}

/// A generated history and the misbehaviours it holds.
pub struct Misbehaved {
    pub history: History,
    pub faults: Vec<&'static str>,
}

struct Pending {
    process: u64,
    mops: Vec<(bool, usize, Value)>,
    fault: &'static str,
    invoke: Value,
}

/// A history of 2 to 7 transactions over 1 to 3 keys and 1 to 3 processes.
pub fn generate(rng: &mut Xoshiro256PlusPlus, list_append: bool) -> Misbehaved {
    let n_keys = rng.random_range(1..=3usize);
    let initial = if list_append { json!([]) } else { Value::Null };
    let mut store = Store {
        list_append,
        keys: (0..n_keys)
            .map(|_| Key {
                versions: vec![initial.clone()],
            })
            .collect(),
    };
    let n_txns = rng.random_range(2..=7usize);
    let n_procs = rng.random_range(1..=3u64);
    let mut next_value = 1u64;
    let mut next_process = n_procs;
    let mut free: Vec<u64> = (0..n_procs).collect();
    let mut pending: Vec<Pending> = Vec::new();
    let mut ops: Vec<Op> = Vec::new();
    let mut faults = Vec::new();
    let mut started = 0;
    while started < n_txns || !pending.is_empty() {
        if free.is_empty() && pending.is_empty() {
            // Every process hangs on a transaction never completed: a fresh one carries on.
            free.push(next_process);
            next_process += 1;
        }
        let invoke =
            started < n_txns && !free.is_empty() && (pending.is_empty() || rng.random_bool(0.5));
        if invoke {
            let process = free.swap_remove(rng.random_range(0..free.len()));
            let mut mops = Vec::new();
            for _ in 0..rng.random_range(1..=4) {
                let k = rng.random_range(0..n_keys);
                if rng.random_bool(0.5) {
                    mops.push((true, k, Value::Null));
                } else {
                    mops.push((false, k, json!(next_value)));
                    next_value += 1;
                }
            }
            let fault = if rng.random_bool(0.5) {
                "none"
            } else {
                FAULTS[rng.random_range(1..FAULTS.len())]
            };
            let value = txn_value(list_append, &mops);
            push(&mut ops, OpType::Invoke, process, value.clone());
            pending.push(Pending {
                process,
                mops,
                fault,
                invoke: value,
            });
            started += 1;
            continue;
        }
        let p = pending.swap_remove(rng.random_range(0..pending.len()));
        faults.push(p.fault);
        let (kind, applies) = match p.fault {
            "fail-visible" => (OpType::Fail, true),
            "info" => (OpType::Info, rng.random_bool(0.5)),
            "drop" => (OpType::Ok, false),
            _ => (OpType::Ok, true),
        };
        let mut done = Vec::new();
        for (i, (is_read, k, v)) in p.mops.iter().enumerate() {
            if *is_read {
                let mut seen = if p.fault == "stale" && rng.random_bool(0.7) {
                    store.stale(*k, rng)
                } else {
                    store.current(*k).clone()
                };
                if p.fault == "reorder" {
                    if let Some(list) = seen.as_array_mut().filter(|l| l.len() >= 2) {
                        let a = rng.random_range(0..list.len() - 1);
                        list.swap(a, a + 1);
                    }
                }
                done.push((true, *k, seen));
                continue;
            }
            let skip = !applies || (p.fault == "partial" && rng.random_bool(0.5));
            if !skip {
                let twice = p.fault == "duplicate" && i == 0;
                store.apply(*k, v, twice);
            }
            done.push((false, *k, v.clone()));
        }
        if kind == OpType::Info && rng.random_bool(0.3) {
            // Never completed: the process is gone for good.
            continue;
        }
        let value = if kind == OpType::Ok {
            txn_value(list_append, &done)
        } else {
            p.invoke.clone()
        };
        push(&mut ops, kind, p.process, value);
        if kind == OpType::Info {
            free.push(next_process);
            next_process += 1;
        } else {
            free.push(p.process);
        }
    }
    Misbehaved {
        history: History::new(ops),
        faults,
    }
}

fn txn_value(list_append: bool, mops: &[(bool, usize, Value)]) -> Value {
    let write = if list_append { "append" } else { "w" };
    Value::Array(
        mops.iter()
            .map(|(is_read, k, v)| json!([if *is_read { "r" } else { write }, k, v]))
            .collect(),
    )
}

fn push(ops: &mut Vec<Op>, kind: OpType, p: u64, value: Value) {
    let index = ops.len() as u64;
    ops.push(Op {
        index,
        kind,
        process: Process::Client(p),
        f: "txn".into(),
        key: None,
        value,
        time: index * 1000,
        node: None,
        error: None,
        meta: None,
    });
}
