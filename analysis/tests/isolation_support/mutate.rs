//! Seeded mutations of transaction histories, to reach shapes a correct store never
//! produces: a read dropped or altered, two list elements swapped, a transaction marked
//! `fail` or `info`, two neighbouring entries of different processes swapped, a process's
//! last completion dropped (an invocation never answered: indeterminate).
//!
//! Every mutation keeps the history well formed (each completion follows its process's
//! invocation, indices run 0, 1, 2, ...) and keeps `fail`/`info` completions carrying their
//! invocation's value, as Jepsen writes them. Whether the result is still serializable is
//! for the oracle to say.

use analysis::history::{History, OpType};
use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;
use serde_json::Value;

/// The kinds of mutation, for counting what the tests exercised.
pub const KINDS: [&str; 7] = [
    "drop-read",
    "alter-read",
    "swap-elements",
    "mark-fail",
    "mark-info",
    "swap-entries",
    "drop-completion",
];

/// Positions of `ok` completions with at least one read micro-op.
fn ok_reads(h: &History) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (pos, op) in h.ops.iter().enumerate() {
        if op.kind != OpType::Ok {
            continue;
        }
        if let Some(mops) = op.value.as_array() {
            for (i, m) in mops.iter().enumerate() {
                if m[0] == "r" {
                    out.push((pos, i));
                }
            }
        }
    }
    out
}

/// The invocation position of the completion at `pos`.
fn invocation_of(h: &History, pos: usize) -> usize {
    let p = h.ops[pos].process;
    (0..pos)
        .rev()
        .find(|&i| h.ops[i].process == p && h.ops[i].kind == OpType::Invoke)
        .expect("completion has an invocation")
}

/// Every value some micro-op of the history wrote, per key (as JSON text of the key).
fn written_values(h: &History, key: &Value) -> Vec<Value> {
    let mut vals = Vec::new();
    for op in &h.ops {
        if op.kind != OpType::Invoke {
            continue;
        }
        for m in op.value.as_array().into_iter().flatten() {
            if m[0] != "r" && m[1] == *key && !vals.contains(&m[2]) {
                vals.push(m[2].clone());
            }
        }
    }
    vals
}

/// Applies one random mutation; returns its kind, or `None` if none applied.
pub fn mutate(
    h: &mut History,
    rng: &mut Xoshiro256PlusPlus,
    list_append: bool,
) -> Option<&'static str> {
    for _ in 0..8 {
        let kind = KINDS[rng.random_range(0..KINDS.len())];
        if apply(h, rng, kind, list_append) {
            for (i, op) in h.ops.iter_mut().enumerate() {
                op.index = i as u64;
            }
            return Some(kind);
        }
    }
    None
}

fn pick<T: Copy>(rng: &mut Xoshiro256PlusPlus, items: &[T]) -> Option<T> {
    (!items.is_empty()).then(|| items[rng.random_range(0..items.len())])
}

fn apply(h: &mut History, rng: &mut Xoshiro256PlusPlus, kind: &str, list_append: bool) -> bool {
    match kind {
        "drop-read" => {
            let Some((pos, i)) = pick(rng, &ok_reads(h)) else {
                return false;
            };
            let inv = invocation_of(h, pos);
            h.ops[pos].value.as_array_mut().unwrap().remove(i);
            h.ops[inv].value.as_array_mut().unwrap().remove(i);
            true
        }
        "alter-read" => {
            let Some((pos, i)) = pick(rng, &ok_reads(h)) else {
                return false;
            };
            let key = h.ops[pos].value[i][1].clone();
            let written = written_values(h, &key);
            let read = &mut h.ops[pos].value[i][2];
            let new = if list_append {
                let mut list = read.as_array().cloned().unwrap_or_default();
                match rng.random_range(0..3) {
                    0 if !list.is_empty() => {
                        list.pop();
                    }
                    1 if !list.is_empty() => {
                        list.remove(rng.random_range(0..list.len()));
                    }
                    _ => match pick(rng, &(0..written.len()).collect::<Vec<_>>()) {
                        Some(w) => list.push(written[w].clone()),
                        None => list.push(Value::from(99)),
                    },
                }
                Value::Array(list)
            } else {
                match pick(rng, &(0..=written.len()).collect::<Vec<_>>()) {
                    Some(w) if w < written.len() => written[w].clone(),
                    _ => Value::Null,
                }
            };
            if *read == new {
                return false;
            }
            *read = new;
            true
        }
        "swap-elements" => {
            let candidates: Vec<(usize, usize)> = ok_reads(h)
                .into_iter()
                .filter(|&(pos, i)| {
                    h.ops[pos].value[i][2]
                        .as_array()
                        .is_some_and(|l| l.len() >= 2)
                })
                .collect();
            let Some((pos, i)) = pick(rng, &candidates) else {
                return false;
            };
            let list = h.ops[pos].value[i][2].as_array_mut().unwrap();
            let a = rng.random_range(0..list.len() - 1);
            list.swap(a, a + 1);
            true
        }
        "mark-fail" | "mark-info" => {
            let oks: Vec<usize> = (0..h.ops.len())
                .filter(|&p| h.ops[p].kind == OpType::Ok)
                .collect();
            let Some(pos) = pick(rng, &oks) else {
                return false;
            };
            let inv = invocation_of(h, pos);
            h.ops[pos].value = h.ops[inv].value.clone();
            h.ops[pos].kind = if kind == "mark-fail" {
                OpType::Fail
            } else {
                OpType::Info
            };
            true
        }
        "swap-entries" => {
            let swappable: Vec<usize> = (0..h.ops.len().saturating_sub(1))
                .filter(|&p| h.ops[p].process != h.ops[p + 1].process)
                .collect();
            let Some(p) = pick(rng, &swappable) else {
                return false;
            };
            h.ops.swap(p, p + 1);
            let (t0, t1) = (h.ops[p].time, h.ops[p + 1].time);
            h.ops[p].time = t0.min(t1);
            h.ops[p + 1].time = t0.max(t1);
            true
        }
        "drop-completion" => {
            let last_of_process: Vec<usize> = (0..h.ops.len())
                .filter(|&p| h.ops[p].kind != OpType::Invoke)
                .filter(|&p| h.ops[p + 1..].iter().all(|o| o.process != h.ops[p].process))
                .collect();
            let Some(p) = pick(rng, &last_of_process) else {
                return false;
            };
            h.ops.remove(p);
            true
        }
        _ => unreachable!("unknown mutation {kind}"),
    }
}
