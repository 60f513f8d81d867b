//! Property tests of the set-full checker against a simulated linearizable set: any history
//! it produces is never invalid (and, with every add taking effect before it is
//! acknowledged, has no stale element either); a final read missing one acknowledged
//! element makes exactly that element lost; a read repeating an element makes it
//! duplicated.

use analysis::checkers::set_full::{check, SetFullOptions};
use analysis::history::{History, Op, OpType, Process};
use analysis::verdict::Validity;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// A small deterministic generator (the test only needs reproducible variety).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone)]
enum Busy {
    Add { element: i64, applied: bool },
    Read { snapshot: Option<Vec<i64>> },
}

struct Sim {
    ops: Vec<Op>,
    set: BTreeSet<i64>,
    next_element: i64,
    acknowledged: Vec<i64>,
}

impl Sim {
    fn record(&mut self, kind: OpType, process: u64, f: &str, value: Value) {
        let index = self.ops.len() as u64;
        let op = Op {
            index,
            kind,
            process: Process::Client(process),
            f: f.into(),
            key: None,
            value,
            time: index * 100,
            node: None,
            error: None,
            meta: None,
        };
        self.ops.push(op);
    }

    /// Advances one process by one step: invoke, take effect, or complete.
    fn step(
        &mut self,
        rng: &mut Rng,
        process: u64,
        busy: &mut Option<Busy>,
        next_process: &mut u64,
    ) -> u64 {
        match busy.take() {
            None => {
                if rng.below(4) == 0 {
                    self.record(OpType::Invoke, process, "read-set", Value::Null);
                    *busy = Some(Busy::Read { snapshot: None });
                } else {
                    let element = self.next_element;
                    self.next_element += 1;
                    self.record(OpType::Invoke, process, "add", json!(element));
                    *busy = Some(Busy::Add {
                        element,
                        applied: false,
                    });
                }
                process
            }
            Some(Busy::Add {
                element,
                applied: false,
            }) => {
                match rng.below(10) {
                    0 => self.record(OpType::Fail, process, "add", json!(element)),
                    1 => {
                        // Crash before taking effect; the add may still happen later or never.
                        self.record(OpType::Info, process, "add", json!(element));
                        if rng.below(2) == 0 {
                            self.set.insert(element);
                        }
                        *next_process += 1;
                        return *next_process;
                    }
                    _ => {
                        self.set.insert(element);
                        *busy = Some(Busy::Add {
                            element,
                            applied: true,
                        });
                    }
                }
                process
            }
            Some(Busy::Add {
                element,
                applied: true,
            }) => {
                if rng.below(10) == 0 {
                    self.record(OpType::Info, process, "add", json!(element));
                    *next_process += 1;
                    return *next_process;
                }
                self.record(OpType::Ok, process, "add", json!(element));
                self.acknowledged.push(element);
                process
            }
            Some(Busy::Read { snapshot: None }) => {
                *busy = Some(Busy::Read {
                    snapshot: Some(self.set.iter().copied().collect()),
                });
                process
            }
            Some(Busy::Read {
                snapshot: Some(seen),
            }) => {
                self.record(OpType::Ok, process, "read-set", json!(seen));
                process
            }
        }
    }
}

/// A history of `steps` steps by `procs` processes over a linearizable set.
fn simulate(seed: u64, procs: usize, steps: usize) -> Sim {
    let mut rng = Rng(seed | 1);
    let mut sim = Sim {
        ops: Vec::new(),
        set: BTreeSet::new(),
        next_element: 0,
        acknowledged: Vec::new(),
    };
    let mut slots: Vec<(u64, Option<Busy>)> = (0..procs as u64).map(|p| (p, None)).collect();
    let mut next_process = procs as u64;
    for _ in 0..steps {
        let i = rng.below(procs as u64) as usize;
        let (process, mut busy) = (slots[i].0, slots[i].1.take());
        let process = sim.step(&mut rng, process, &mut busy, &mut next_process);
        slots[i] = (process, busy);
    }
    sim
}

/// Appends a read by a fresh process, after everything else, returning `seen`.
fn final_read(sim: &mut Sim, seen: Vec<i64>) {
    let process = 1_000_000;
    sim.record(OpType::Invoke, process, "read-set", Value::Null);
    sim.record(OpType::Ok, process, "read-set", json!(seen));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn a_linearizable_set_is_never_invalid_and_never_stale(seed in any::<u64>(), procs in 1usize..6, steps in 10usize..300) {
        let sim = simulate(seed, procs, steps);
        let h = History::new(sim.ops);
        let r = check(&h, &SetFullOptions { linearizable: true });
        prop_assert_ne!(r.valid, Validity::Invalid, "{:?}", r);
        prop_assert_eq!(r.counts["lost-count"], 0);
        prop_assert_eq!(r.counts["stale-count"], 0);
    }

    #[test]
    fn a_final_read_missing_an_acknowledged_element_loses_exactly_it(seed in any::<u64>(), procs in 1usize..6, steps in 20usize..300, pick in any::<u64>()) {
        let mut sim = simulate(seed, procs, steps);
        prop_assume!(!sim.acknowledged.is_empty());
        let victim = sim.acknowledged[(pick % sim.acknowledged.len() as u64) as usize];
        let seen: Vec<i64> = sim.set.iter().copied().filter(|&e| e != victim).collect();
        final_read(&mut sim, seen);
        let r = check(&History::new(sim.ops), &SetFullOptions::default());
        prop_assert_eq!(r.valid, Validity::Invalid);
        prop_assert_eq!(r.counts["lost-count"], 1);
        let lost: Vec<serde_json::Value> = r.anomalies.iter().filter(|a| a["kind"] == "lost").map(|a| a["element"].clone()).collect();
        prop_assert_eq!(lost, vec![json!(victim)]);
    }

    #[test]
    fn a_read_repeating_an_element_duplicates_exactly_it(seed in any::<u64>(), procs in 1usize..6, steps in 20usize..300, pick in any::<u64>()) {
        let mut sim = simulate(seed, procs, steps);
        let present: Vec<i64> = sim.set.iter().copied().collect();
        prop_assume!(!present.is_empty());
        let twin = present[(pick % present.len() as u64) as usize];
        let mut seen = present.clone();
        seen.push(twin);
        final_read(&mut sim, seen);
        let r = check(&History::new(sim.ops), &SetFullOptions::default());
        prop_assert_eq!(r.valid, Validity::Invalid);
        let dups: Vec<serde_json::Value> = r.anomalies.iter().filter(|a| a["kind"] == "duplicated").map(|a| a["element"].clone()).collect();
        prop_assert_eq!(dups, vec![json!(twin)]);
    }
}
