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

pub fn generate(cfg: &GenConfig) -> History {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let mut ops: Vec<Op> = Vec::with_capacity(cfg.txns * 2 + cfg.keys * 2);
    let mut store: Vec<Vec<u64>> = Vec::new(); // key id -> list
    let mut slots: Vec<usize> = Vec::new(); // slot -> live key id
    for _ in 0..cfg.keys {
        slots.push(store.len());
        store.push(Vec::new());
    }
    let mut next_elem = 1u64;
    let mut procs: Vec<(u64, Option<Pending>)> =
        (0..cfg.processes as u64).map(|p| (p, None)).collect();
    let mut next_proc = cfg.processes as u64;
    let mut started = 0usize;
    let inject_at = if cfg.inject_g_single {
        Some(cfg.txns / 2)
    } else {
        None
    };
    let push = |ops: &mut Vec<Op>, kind: OpType, p: u64, value: Value| {
        let op = txn_op(ops.len() as u64, kind, p, value);
        ops.push(op);
    };
    while started < cfg.txns || procs.iter().any(|(_, p)| p.is_some()) {
        let slot = rng.random_range(0..procs.len());
        let p = procs[slot].0;
        if let Some(pending) = procs[slot].1.take() {
            if pending.info {
                push(&mut ops, OpType::Info, p, pending.invoke_value);
                procs[slot].0 = next_proc;
                next_proc += 1;
            } else {
                push(&mut ops, OpType::Ok, p, pending.result);
            }
            continue;
        }
        if started >= cfg.txns {
            continue;
        }
        started += 1;
        let mut mops: Vec<(bool, usize)> = Vec::new(); // (is_append, key)
        if inject_at == Some(started) {
            // Run the injected pair serially on this process.
            let (k1, k2) = (slots[0], slots[1]);
            let (e1, e2) = (next_elem, next_elem + 1);
            next_elem += 2;
            let w = json!([["append", k1, e1], ["append", k2, e2]]);
            push(&mut ops, OpType::Invoke, p, w.clone());
            store[k1].push(e1);
            store[k2].push(e2);
            push(&mut ops, OpType::Ok, p, w);
            let seen1: Vec<u64> = store[k1][..store[k1].len() - 1].to_vec();
            push(
                &mut ops,
                OpType::Invoke,
                p,
                json!([["r", k1, null], ["r", k2, null]]),
            );
            push(
                &mut ops,
                OpType::Ok,
                p,
                json!([["r", k1, seen1], ["r", k2, store[k2].clone()]]),
            );
            continue;
        }
        for _ in 0..rng.random_range(1..=4usize) {
            mops.push((
                rng.random_bool(0.5),
                slots[rng.random_range(0..slots.len())],
            ));
        }
        let info = rng.random_bool(cfg.info);
        let applies = !info || rng.random_bool(0.5);
        let mut invoke = Vec::new();
        let mut result = Vec::new();
        for (is_append, k) in mops {
            if is_append {
                let e = next_elem;
                next_elem += 1;
                invoke.push(json!(["append", k, e]));
                result.push(json!(["append", k, e]));
                if applies {
                    store[k].push(e);
                }
            } else {
                invoke.push(json!(["r", k, null]));
                result.push(json!(["r", k, store[k].clone()]));
            }
        }
        // Retire full keys.
        for s in slots.iter_mut() {
            if store[*s].len() >= cfg.max_appends {
                *s = store.len();
                store.push(Vec::new());
            }
        }
        push(&mut ops, OpType::Invoke, p, Value::Array(invoke.clone()));
        procs[slot].1 = Some(Pending {
            invoke_value: Value::Array(invoke),
            result: Value::Array(result),
            info,
        });
    }
    // Final reads of every key that was ever appended to, serially.
    let p = procs[0].0;
    for (k, list) in store.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
        push(&mut ops, OpType::Invoke, p, json!([["r", k, null]]));
        push(&mut ops, OpType::Ok, p, json!([["r", k, list]]));
    }
    History::new(ops)
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
