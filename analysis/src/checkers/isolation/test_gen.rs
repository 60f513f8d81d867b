//! Test-only generator of list-append histories from a simulated serial store, for the
//! checker's own tests and its performance measurements (SYNTH's `txn_synth` is the real
//! generator). Every transaction takes effect atomically at its invoke, so the history is
//! strict-serializable; `info` transactions take effect or not at random; keys retire after
//! `max_appends` appends (a fresh key takes the slot) and every live key is read at the end.
//! With `inject_g_single`, one transaction in the middle appends to two keys and the next one
//! reads both, its read of the first missing that append: a G-single-item.

use crate::history::{History, Op, OpType, Process};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

pub struct GenConfig {
    pub txns: usize,
    pub keys: usize,
    pub processes: usize,
    pub info: f64,
    pub max_appends: usize,
    pub inject_g_single: bool,
    pub seed: u64,
}

struct Pending {
    invoke_value: Value,
    result: Value,
    info: bool,
}

/// The simulated serial store and the history written so far.
struct Sim {
    rng: Xoshiro256PlusPlus,
    ops: Vec<Op>,
    /// Key id → its list.
    store: Vec<Vec<u64>>,
    /// Slot → the live key id in it.
    slots: Vec<usize>,
    next_elem: u64,
    /// Each process slot: its process id and its transaction in flight.
    procs: Vec<(u64, Option<Pending>)>,
    next_proc: u64,
}

pub fn generate(cfg: &GenConfig) -> History {
    let mut sim = Sim::new(cfg);
    let inject_at = cfg.inject_g_single.then_some(cfg.txns / 2);
    let mut started = 0usize;
    while started < cfg.txns || sim.procs.iter().any(|(_, p)| p.is_some()) {
        let slot = sim.rng.random_range(0..sim.procs.len());
        if sim.procs[slot].1.is_some() {
            sim.complete(slot);
            continue;
        }
        if started >= cfg.txns {
            continue;
        }
        started += 1;
        if inject_at == Some(started) {
            sim.g_single_pair(sim.procs[slot].0);
        } else {
            sim.invoke_random_txn(slot, cfg);
        }
    }
    sim.final_reads();
    History::new(sim.ops)
}

impl Sim {
    fn new(cfg: &GenConfig) -> Sim {
        Sim {
            rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed),
            ops: Vec::with_capacity(cfg.txns * 2 + cfg.keys * 2),
            store: vec![Vec::new(); cfg.keys],
            slots: (0..cfg.keys).collect(),
            next_elem: 1,
            procs: (0..cfg.processes as u64).map(|p| (p, None)).collect(),
            next_proc: cfg.processes as u64,
        }
    }

    fn push(&mut self, kind: OpType, p: u64, value: Value) {
        let op = txn_op(self.ops.len() as u64, kind, p, value);
        self.ops.push(op);
    }

    /// Completes the transaction in flight in `slot`; an `info` one retires its process.
    fn complete(&mut self, slot: usize) {
        let p = self.procs[slot].0;
        let Some(pending) = self.procs[slot].1.take() else {
            return;
        };
        if pending.info {
            self.push(OpType::Info, p, pending.invoke_value);
            self.procs[slot].0 = self.next_proc;
            self.next_proc += 1;
        } else {
            self.push(OpType::Ok, p, pending.result);
        }
    }

    /// The injected pair, run serially on `p`: an append to two keys, then a read of both
    /// that misses the first append.
    fn g_single_pair(&mut self, p: u64) {
        let (k1, k2) = (self.slots[0], self.slots[1]);
        let (e1, e2) = (self.next_elem, self.next_elem + 1);
        self.next_elem += 2;
        let w = json!([["append", k1, e1], ["append", k2, e2]]);
        self.push(OpType::Invoke, p, w.clone());
        self.store[k1].push(e1);
        self.store[k2].push(e2);
        self.push(OpType::Ok, p, w);
        let seen1: Vec<u64> = self.store[k1][..self.store[k1].len() - 1].to_vec();
        self.push(OpType::Invoke, p, json!([["r", k1, null], ["r", k2, null]]));
        let both = json!([["r", k1, seen1], ["r", k2, self.store[k2].clone()]]);
        self.push(OpType::Ok, p, both);
    }

    /// Invokes 1–4 random appends and reads in `slot`, applied at once (an `info` one
    /// applied or not at random), then retires full keys.
    fn invoke_random_txn(&mut self, slot: usize, cfg: &GenConfig) {
        let p = self.procs[slot].0;
        let mut mops: Vec<(bool, usize)> = Vec::new(); // (is_append, key)
        for _ in 0..self.rng.random_range(1..=4usize) {
            let is_append = self.rng.random_bool(0.5);
            let key = self.slots[self.rng.random_range(0..self.slots.len())];
            mops.push((is_append, key));
        }
        let info = self.rng.random_bool(cfg.info);
        let applies = !info || self.rng.random_bool(0.5);
        let mut invoke = Vec::new();
        let mut result = Vec::new();
        for (is_append, k) in mops {
            if is_append {
                let e = self.next_elem;
                self.next_elem += 1;
                invoke.push(json!(["append", k, e]));
                result.push(json!(["append", k, e]));
                if applies {
                    self.store[k].push(e);
                }
            } else {
                invoke.push(json!(["r", k, null]));
                result.push(json!(["r", k, self.store[k].clone()]));
            }
        }
        self.retire_full_keys(cfg.max_appends);
        self.push(OpType::Invoke, p, Value::Array(invoke.clone()));
        self.procs[slot].1 = Some(Pending {
            invoke_value: Value::Array(invoke),
            result: Value::Array(result),
            info,
        });
    }

    fn retire_full_keys(&mut self, max_appends: usize) {
        for s in self.slots.iter_mut() {
            if self.store[*s].len() >= max_appends {
                *s = self.store.len();
                self.store.push(Vec::new());
            }
        }
    }

    /// Reads every key that was ever appended to, serially on the first slot's process.
    fn final_reads(&mut self) {
        let p = self.procs[0].0;
        let store = std::mem::take(&mut self.store);
        for (k, list) in store.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
            self.push(OpType::Invoke, p, json!([["r", k, null]]));
            self.push(OpType::Ok, p, json!([["r", k, list]]));
        }
    }
}

/// The `index`-th entry of a test history: a `txn` op of process `p`, its time following
/// its index.
pub(super) fn txn_op(index: u64, kind: OpType, p: u64, value: Value) -> Op {
    Op {
        index,
        kind,
        process: Process::Client(p),
        f: crate::history::txn::TXN.into(),
        key: None,
        value,
        time: index * 1000,
        node: None,
        error: None,
        meta: None,
    }
}
