//! Synthetic transaction histories (Elle's list-append and rw-register workloads) for the
//! isolation checker's benchmarks and tests, optionally with one injected, provable anomaly.
//!
//! The simulation is a strictly serializable store: one global state, and every
//! transaction takes effect atomically at one instant between its invocation and its
//! completion. Concurrency comes from advancing one randomly chosen client process by one
//! step at a time (invoke, take effect, complete), so transactions overlap as they do
//! against a real store.
//!
//! Invariants (tests rely on them):
//! - the same [`TxnSynthConfig`] always gives the same history;
//! - without an anomaly the history is strict-serializable: the instants at which the
//!   transactions took effect are a serial order that explains every read and respects
//!   real time and process order;
//! - every written value is unique per key (1, 2, 3, ... on each key), so a read names
//!   the writes it saw;
//! - a transaction has `min_len..=max_len` micro-ops, each a read or a write (append in
//!   list-append) with equal odds; keys are chosen with Elle's exponential skew over a
//!   pool of `keys` live keys, and a key that has taken `max_writes_per_key` writes is
//!   retired and replaced by a fresh key (as Elle does), so reads stay short;
//! - a transaction fails (`fail`, no effect) with probability `fail` and crashes (`info`)
//!   with probability `indeterminate`; a crashed transaction takes effect or not (a coin
//!   flip) and its process is replaced by a fresh process number, as Jepsen does. `fail`
//!   and `info` completions carry the invocation's value (reads `null`);
//! - with `final_reads`, after everything else has completed, each live key is read once
//!   by a one-read transaction (these are extra to `txns`);
//! - an injected anomaly ([`TxnAnomaly`]) is played on two keys no other transaction
//!   touches ([`SCENARIO_KEYS`]), by fresh processes, at a random point in the middle of
//!   the run (see `txn_synth/scenario.rs`); it is then the only violation in the history, and it is
//!   provable: no serial order of the committed transactions (plus any subset of the
//!   crashed ones) explains it under the strongest model that proscribes it. The run
//!   around it is the very run generated without the anomaly.
//!
//! [`generate_txn_each`] hands the ops out one at a time, for runs too large to hold: a
//! [`History`] keeps every read's list as JSON values, most of a big run's memory.

mod scenario;

use crate::history::txn::{TxnModel, TXN};
use crate::history::{History, Op, OpType, Process};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// The anomaly class to inject (`--anomaly`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnAnomaly {
    None,
    G0,
    G1a,
    G1b,
    G1c,
    GSingle,
    G2Item,
    LostUpdate,
    Internal,
    DuplicateElements,
    Realtime,
}

impl TxnAnomaly {
    /// Every class, in the order of [`TxnAnomaly::NAMES`].
    pub const ALL: [TxnAnomaly; 11] = [
        TxnAnomaly::None,
        TxnAnomaly::G0,
        TxnAnomaly::G1a,
        TxnAnomaly::G1b,
        TxnAnomaly::G1c,
        TxnAnomaly::GSingle,
        TxnAnomaly::G2Item,
        TxnAnomaly::LostUpdate,
        TxnAnomaly::Internal,
        TxnAnomaly::DuplicateElements,
        TxnAnomaly::Realtime,
    ];

    /// The names `--anomaly` accepts.
    pub const NAMES: &'static [&'static str] = &[
        "none",
        "G0",
        "G1a",
        "G1b",
        "G1c",
        "G-single",
        "G2-item",
        "lost-update",
        "internal",
        "duplicate-elements",
        "realtime",
    ];

    pub fn as_str(self) -> &'static str {
        let i = Self::ALL
            .iter()
            .position(|a| *a == self)
            .expect("every class is in ALL");
        Self::NAMES[i]
    }

    /// Whether this class can be injected into a history of `model`.
    pub fn applies_to(self, model: TxnModel) -> bool {
        !(self == TxnAnomaly::DuplicateElements && model == TxnModel::RwRegister)
    }
}

impl fmt::Display for TxnAnomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TxnAnomaly {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match Self::NAMES.iter().position(|n| *n == s) {
            Some(i) => Ok(Self::ALL[i]),
            None => Err(format!(
                "anomaly {s:?}: expected one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct TxnSynthConfig {
    pub model: TxnModel,
    /// Number of client transactions (not counting an injected scenario's or final reads).
    pub txns: u64,
    /// Live keys at any time.
    pub keys: u32,
    /// Concurrent client processes.
    pub concurrency: u32,
    /// Probability that a transaction crashes (completes `info`).
    pub indeterminate: f64,
    pub min_len: usize,
    pub max_len: usize,
    /// Writes a key takes before it is retired for a fresh one.
    pub max_writes_per_key: u32,
    pub anomaly: TxnAnomaly,
    pub seed: u64,
    /// Probability that a transaction fails (completes `fail`, no effect).
    pub fail: f64,
    /// Read every live key once after everything else.
    pub final_reads: bool,
}

impl Default for TxnSynthConfig {
    fn default() -> Self {
        TxnSynthConfig {
            model: TxnModel::ListAppend,
            txns: 1000,
            keys: 10,
            concurrency: 10,
            indeterminate: 0.0,
            min_len: 1,
            max_len: 4,
            max_writes_per_key: 32,
            anomaly: TxnAnomaly::None,
            seed: 0,
            fail: 0.0,
            final_reads: false,
        }
    }
}

impl TxnSynthConfig {
    /// Checks the configuration; the error names the bad setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.keys == 0 {
            return Err("--keys must be at least 1".into());
        }
        if self.concurrency == 0 {
            return Err("--concurrency must be at least 1".into());
        }
        if self.min_len == 0 || self.min_len > self.max_len {
            return Err(format!(
                "transaction length {}..={} must satisfy 1 <= min <= max",
                self.min_len, self.max_len
            ));
        }
        if self.max_writes_per_key == 0 {
            return Err("max writes per key must be at least 1".into());
        }
        for (name, p) in [
            ("--indeterminate", self.indeterminate),
            ("fail probability", self.fail),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} must be a probability in [0, 1], got {p}"));
            }
        }
        if self.indeterminate + self.fail > 1.0 {
            return Err(format!(
                "--indeterminate {} plus fail probability {} exceed 1",
                self.indeterminate, self.fail
            ));
        }
        if !self.anomaly.applies_to(self.model) {
            return Err(format!(
                "anomaly {} cannot be injected into a {} history",
                self.anomaly, self.model
            ));
        }
        Ok(())
    }
}

/// A generated history and, when an anomaly was injected, a sentence saying where.
#[derive(Clone, Debug)]
pub struct TxnSynth {
    pub history: History,
    pub injected: Option<String>,
}

/// Generates a whole history in memory; errors only on a bad configuration.
pub fn generate_txn(cfg: &TxnSynthConfig) -> Result<TxnSynth, String> {
    let mut ops = Vec::with_capacity(2 * cfg.txns as usize + 2 * cfg.keys as usize + 8);
    let injected = generate_txn_each(cfg, |op| ops.push(op))?;
    Ok(TxnSynth {
        history: History::new(ops),
        injected,
    })
}

/// Generates the same history as [`generate_txn`] but hands each op to `sink` in index
/// order instead of keeping them (for writing a large history straight to a file).
/// Returns the injection sentence.
pub fn generate_txn_each(
    cfg: &TxnSynthConfig,
    mut sink: impl FnMut(Op),
) -> Result<Option<String>, String> {
    cfg.validate()?;
    let mut sim = Sim::new(cfg, &mut sink);
    sim.run();
    if sim.injection_pending() {
        sim.inject();
    }
    if cfg.final_reads {
        sim.final_reads();
    }
    Ok(sim.injected.take())
}

/// The two keys of an injected scenario (this and the next): far above the keys of any
/// practical run (a run uses `keys` keys plus one per `max_writes_per_key` writes), so the
/// scenario shares no key with the run and the run's own key numbers stay what they are
/// without it.
pub const SCENARIO_KEYS: u64 = 1_000_000_000;

/// A micro-op as the simulation holds it: keys and values are integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mop {
    Append(u64, i64),
    Write(u64, i64),
    Read(u64),
}

/// What a read returned (list-append: the list; rw-register: the value or nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    List(Vec<i64>),
    Reg(Option<i64>),
}

fn mop_json(mop: Mop, seen: Option<&Seen>) -> Value {
    let (f, k, v) = match (mop, seen) {
        (Mop::Append(k, v), _) => ("append", k, Value::from(v)),
        (Mop::Write(k, v), _) => ("w", k, Value::from(v)),
        (Mop::Read(k), None) => ("r", k, Value::Null),
        (Mop::Read(k), Some(Seen::List(l))) => (
            "r",
            k,
            Value::Array(l.iter().map(|e| Value::from(*e)).collect()),
        ),
        (Mop::Read(k), Some(Seen::Reg(r))) => ("r", k, r.map_or(Value::Null, Value::from)),
    };
    Value::Array(vec![Value::from(f), Value::from(k), v])
}

/// A transaction's value: on an invocation (or a `fail`/`info`) `seen` is empty.
fn txn_json(mops: &[Mop], seen: &[Seen]) -> Value {
    let mut reads = seen.iter();
    Value::Array(
        mops.iter()
            .map(|m| match m {
                Mop::Read(_) => mop_json(*m, reads.next()),
                _ => mop_json(*m, None),
            })
            .collect(),
    )
}

/// Nanoseconds between two entries: 1 to 50 µs, a fixed function of the position so that
/// the clock does not draw from the simulation's random numbers.
fn time_step(index: u64) -> u64 {
    let mut z = index.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    1_000 + (z ^ (z >> 31)) % 49_000
}

/// How a transaction ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    Fail,
    Info,
}

impl Outcome {
    fn op_type(self) -> OpType {
        match self {
            Outcome::Ok => OpType::Ok,
            Outcome::Fail => OpType::Fail,
            Outcome::Info => OpType::Info,
        }
    }
    fn error(self) -> Option<String> {
        match self {
            Outcome::Ok => None,
            Outcome::Fail => Some("aborted".into()),
            Outcome::Info => Some("timeout".into()),
        }
    }
}

/// The state of one key in the global store.
#[derive(Clone, Debug, Default)]
struct KeyState {
    /// list-append: the list.
    list: Vec<i64>,
    /// rw-register: the current value.
    reg: Option<i64>,
    /// Writes issued so far (the next write's value is this plus one).
    writes: u32,
}

/// Elle's exponential key choice over the live-key pool: slot `i + 1` is `base` times as
/// likely as slot `i`. Elle's base is 2; with more than 10 live keys we flatten it to
/// `2^(10/keys)` so that the hottest slot is 1024 times as likely as the coldest and every
/// key is used.
struct KeyPool {
    slots: Vec<u64>,
    base: f64,
    scale: f64,
}

impl KeyPool {
    fn new(keys: u32) -> Self {
        let n = keys as f64;
        let base = 2f64.powf((10.0 / n).min(1.0));
        let scale = (base.powf(n) - 1.0) * base / (base - 1.0);
        KeyPool {
            slots: (0..keys as u64).collect(),
            base,
            scale,
        }
    }

    fn pick_slot(&self, rng: &mut Xoshiro256PlusPlus) -> usize {
        let u: f64 = rng.random();
        let i = ((u * self.scale + self.base).ln() / self.base.ln() - 1.0).floor();
        (i.max(0.0) as usize).min(self.slots.len() - 1)
    }
}

#[derive(Debug)]
struct InFlight {
    mops: Vec<Mop>,
    seen: Vec<Seen>,
}

#[derive(Debug)]
enum Phase {
    Idle,
    Invoked(InFlight),
    Applied(InFlight, Outcome),
}

struct Sim<'a> {
    cfg: &'a TxnSynthConfig,
    sink: &'a mut dyn FnMut(Op),
    rng: Xoshiro256PlusPlus,
    pool: KeyPool,
    /// Indexed by key id; ids `0..keys` are the first pool, later ids fresh keys.
    keys: Vec<KeyState>,
    procs: Vec<(u64, Phase)>,
    next_index: u64,
    time: u64,
    invoked: u64,
    next_process: u64,
    /// Inject the anomaly before the `inject_at`-th invocation (`None`: nothing to do).
    inject_at: Option<u64>,
    injected: Option<String>,
}

impl<'a> Sim<'a> {
    fn new(cfg: &'a TxnSynthConfig, sink: &'a mut dyn FnMut(Op)) -> Self {
        // The injection point has its own generator, so that a history with an anomaly is
        // the same run as the one without, plus the scenario.
        let mut place = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x5ce7_a410);
        let inject_at = match cfg.anomaly {
            TxnAnomaly::None => None,
            _ => Some(cfg.txns / 4 + place.random_range(0..=cfg.txns / 2)),
        };
        Sim {
            cfg,
            sink,
            rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed),
            pool: KeyPool::new(cfg.keys),
            keys: vec![KeyState::default(); cfg.keys as usize],
            procs: (0..cfg.concurrency as u64)
                .map(|p| (p, Phase::Idle))
                .collect(),
            next_index: 0,
            time: 0,
            invoked: 0,
            next_process: cfg.concurrency as u64,
            inject_at,
            injected: None,
        }
    }

    fn injection_pending(&self) -> bool {
        self.inject_at.is_some()
    }

    fn run(&mut self) {
        let mut busy = 0usize;
        loop {
            if self.invoked == self.cfg.txns && busy == 0 {
                return;
            }
            let p = self.rng.random_range(0..self.procs.len());
            let phase = std::mem::replace(&mut self.procs[p].1, Phase::Idle);
            let id = self.procs[p].0;
            self.procs[p].1 = match phase {
                Phase::Idle if self.invoked < self.cfg.txns => {
                    if self.inject_at.is_some_and(|at| self.invoked >= at) {
                        self.inject();
                    }
                    busy += 1;
                    Phase::Invoked(self.invoke(id))
                }
                Phase::Idle => Phase::Idle,
                Phase::Invoked(mut t) => {
                    let outcome = self.apply(&mut t);
                    Phase::Applied(t, outcome)
                }
                Phase::Applied(t, outcome) => {
                    busy -= 1;
                    self.complete(id, &t, outcome);
                    if outcome == Outcome::Info {
                        self.procs[p].0 = self.fresh_process();
                    }
                    Phase::Idle
                }
            };
        }
    }

    fn fresh_process(&mut self) -> u64 {
        self.next_process += 1;
        self.next_process - 1
    }

    fn fresh_key(&mut self) -> u64 {
        self.keys.push(KeyState::default());
        self.keys.len() as u64 - 1
    }

    /// Builds a transaction as Elle's generator does and emits its invocation.
    fn invoke(&mut self, process: u64) -> InFlight {
        let len = self.rng.random_range(self.cfg.min_len..=self.cfg.max_len);
        let mut mops = Vec::with_capacity(len);
        while mops.len() < len {
            let slot = self.pool.pick_slot(&mut self.rng);
            let key = self.pool.slots[slot];
            if self.rng.random_bool(0.5) {
                mops.push(Mop::Read(key));
                continue;
            }
            let state = &mut self.keys[key as usize];
            if state.writes >= self.cfg.max_writes_per_key {
                self.pool.slots[slot] = self.fresh_key();
                continue;
            }
            state.writes += 1;
            let v = state.writes as i64;
            mops.push(match self.cfg.model {
                TxnModel::ListAppend => Mop::Append(key, v),
                TxnModel::RwRegister => Mop::Write(key, v),
            });
        }
        self.invoked += 1;
        self.emit(OpType::Invoke, process, txn_json(&mops, &[]), None);
        InFlight {
            mops,
            seen: Vec::new(),
        }
    }

    /// The transaction's instant: it takes effect (or not) atomically now.
    fn apply(&mut self, t: &mut InFlight) -> Outcome {
        let r: f64 = self.rng.random();
        let outcome = if r < self.cfg.fail {
            Outcome::Fail
        } else if r < self.cfg.fail + self.cfg.indeterminate {
            Outcome::Info
        } else {
            Outcome::Ok
        };
        let takes_effect = match outcome {
            Outcome::Ok => true,
            Outcome::Fail => false,
            Outcome::Info => self.rng.random_bool(0.5),
        };
        if takes_effect {
            t.seen = self.execute(&t.mops);
        }
        outcome
    }

    /// Runs the micro-ops against the global state, returning what the reads saw.
    fn execute(&mut self, mops: &[Mop]) -> Vec<Seen> {
        let mut seen = Vec::new();
        for m in mops {
            match *m {
                Mop::Append(k, v) => self.keys[k as usize].list.push(v),
                Mop::Write(k, v) => self.keys[k as usize].reg = Some(v),
                Mop::Read(k) => seen.push(self.read(k)),
            }
        }
        seen
    }

    fn read(&self, k: u64) -> Seen {
        let state = &self.keys[k as usize];
        match self.cfg.model {
            TxnModel::ListAppend => Seen::List(state.list.clone()),
            TxnModel::RwRegister => Seen::Reg(state.reg),
        }
    }

    fn complete(&mut self, process: u64, t: &InFlight, outcome: Outcome) {
        let value = match outcome {
            Outcome::Ok => txn_json(&t.mops, &t.seen),
            Outcome::Fail | Outcome::Info => txn_json(&t.mops, &[]),
        };
        self.emit(outcome.op_type(), process, value, outcome.error());
    }

    fn emit(&mut self, kind: OpType, process: u64, value: Value, error: Option<String>) {
        self.time += time_step(self.next_index);
        (self.sink)(Op {
            index: self.next_index,
            kind,
            process: Process::Client(process),
            f: TXN.into(),
            key: None,
            value,
            time: self.time,
            node: None,
            error: error.map(Into::into),
            meta: None,
        });
        self.next_index += 1;
    }

    /// Plays the configured anomaly's scenario now, on fresh keys and processes.
    fn inject(&mut self) {
        self.inject_at = None;
        let keys = [SCENARIO_KEYS, SCENARIO_KEYS + 1];
        let plan = scenario::plan(self.cfg.anomaly, self.cfg.model, keys);
        let mut refs = Vec::with_capacity(plan.txns.len());
        for _ in &plan.txns {
            refs.push(scenario::TxnRef {
                process: self.fresh_process(),
                index: 0,
            });
        }
        for event in &plan.order {
            match *event {
                scenario::Event::Invoke(i) => {
                    let value = txn_json(&plan.txns[i].mops, &[]);
                    self.emit(OpType::Invoke, refs[i].process, value, None);
                }
                scenario::Event::Complete(i) => {
                    let t = &plan.txns[i];
                    let value = match t.outcome {
                        Outcome::Ok => txn_json(&t.mops, &t.seen),
                        _ => txn_json(&t.mops, &[]),
                    };
                    refs[i].index = self.next_index;
                    self.emit(
                        t.outcome.op_type(),
                        refs[i].process,
                        value,
                        t.outcome.error(),
                    );
                }
            }
        }
        self.injected = Some(scenario::describe(
            self.cfg.anomaly,
            self.cfg.model,
            keys,
            &refs,
        ));
    }

    /// One read of each live key, one after another, after everything else completed.
    fn final_reads(&mut self) {
        let mut live = self.pool.slots.clone();
        live.sort_unstable();
        for (i, k) in live.into_iter().enumerate() {
            let process = self.procs[i % self.procs.len()].0;
            let mops = [Mop::Read(k)];
            let seen = [self.read(k)];
            self.emit(OpType::Invoke, process, txn_json(&mops, &[]), None);
            self.emit(OpType::Ok, process, txn_json(&mops, &seen), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn cfg(model: TxnModel) -> TxnSynthConfig {
        TxnSynthConfig {
            model,
            txns: 400,
            keys: 4,
            concurrency: 6,
            indeterminate: 0.05,
            fail: 0.05,
            max_writes_per_key: 5,
            ..Default::default()
        }
    }

    #[test]
    fn anomaly_names_parse_and_print() {
        for name in TxnAnomaly::NAMES {
            assert_eq!(name.parse::<TxnAnomaly>().unwrap().to_string(), *name);
        }
        assert!("G2".parse::<TxnAnomaly>().unwrap_err().contains("G2-item"));
    }

    #[test]
    fn same_seed_same_history() {
        let a = generate_txn(&cfg(TxnModel::ListAppend)).unwrap().history;
        let b = generate_txn(&cfg(TxnModel::ListAppend)).unwrap().history;
        assert_eq!(a, b);
        let c = generate_txn(&TxnSynthConfig {
            seed: 1,
            ..cfg(TxnModel::ListAppend)
        })
        .unwrap()
        .history;
        assert_ne!(a, c);
    }

    #[test]
    fn every_invocation_completes_once_and_crashed_processes_are_replaced() {
        for model in [TxnModel::ListAppend, TxnModel::RwRegister] {
            let h = generate_txn(&cfg(model)).unwrap().history;
            let mut open: HashMap<Process, Value> = HashMap::new();
            let mut retired: HashSet<Process> = HashSet::new();
            let (mut info, mut fail) = (0, 0);
            for (i, op) in h.ops.iter().enumerate() {
                assert_eq!(op.index, i as u64);
                assert_eq!(op.f, TXN);
                assert!(
                    !retired.contains(&op.process),
                    "process {} used after it crashed",
                    op.process
                );
                match op.kind {
                    OpType::Invoke => assert!(open.insert(op.process, op.value.clone()).is_none()),
                    kind => {
                        let invoked = open
                            .remove(&op.process)
                            .expect("completion after invocation");
                        if kind != OpType::Ok {
                            assert_eq!(op.value, invoked, "fail/info carry the invocation's value");
                        }
                        if kind == OpType::Info {
                            info += 1;
                            retired.insert(op.process);
                        }
                        fail += (kind == OpType::Fail) as u32;
                    }
                }
            }
            assert!(open.is_empty());
            assert_eq!(h.ops.len(), 800);
            assert!(info > 0 && fail > 0, "{model}: {info} info, {fail} fail");
        }
    }

    #[test]
    fn transactions_have_bounded_lengths_unique_writes_and_retired_keys() {
        for model in [TxnModel::ListAppend, TxnModel::RwRegister] {
            let c = TxnSynthConfig {
                min_len: 2,
                max_len: 3,
                ..cfg(model)
            };
            let h = generate_txn(&c).unwrap().history;
            let mut writes: HashMap<u64, HashSet<i64>> = HashMap::new();
            for op in h.ops.iter().filter(|o| o.kind == OpType::Invoke) {
                let mops = op.value.as_array().unwrap();
                assert!((2..=3).contains(&mops.len()));
                for m in mops {
                    let (f, k) = (m[0].as_str().unwrap(), m[1].as_u64().unwrap());
                    match (model, f) {
                        (_, "r") => assert!(m[2].is_null()),
                        (TxnModel::ListAppend, "append") | (TxnModel::RwRegister, "w") => {
                            assert!(
                                writes.entry(k).or_default().insert(m[2].as_i64().unwrap()),
                                "{m} written twice"
                            );
                        }
                        _ => panic!("{model} has no {f}"),
                    }
                }
            }
            assert!(
                writes.values().all(|w| w.len() <= 5),
                "a key took more than max_writes_per_key writes"
            );
            assert!(writes.len() > 4, "keys were retired and replaced");
        }
    }

    #[test]
    fn list_reads_are_prefixes_of_one_order_per_key() {
        let h = generate_txn(&cfg(TxnModel::ListAppend)).unwrap().history;
        let mut longest: HashMap<u64, Vec<Value>> = HashMap::new();
        let mut reads = Vec::new();
        for op in h.ops.iter().filter(|o| o.kind == OpType::Ok) {
            for m in op.value.as_array().unwrap().iter().filter(|m| m[0] == "r") {
                let list = m[2].as_array().unwrap().clone();
                let k = m[1].as_u64().unwrap();
                let l = longest.entry(k).or_default();
                if list.len() > l.len() {
                    *l = list.clone();
                }
                reads.push((k, list));
            }
        }
        for (k, list) in reads {
            assert!(
                longest[&k].starts_with(&list),
                "key {k}: {list:?} is not a prefix of {:?}",
                longest[&k]
            );
        }
    }

    #[test]
    fn final_reads_read_every_live_key_last() {
        let c = TxnSynthConfig {
            final_reads: true,
            indeterminate: 0.0,
            fail: 0.0,
            ..cfg(TxnModel::ListAppend)
        };
        let h = generate_txn(&c).unwrap().history;
        let tail = &h.ops[800..];
        assert_eq!(tail.len(), 2 * c.keys as usize);
        let keys: HashSet<u64> = tail
            .iter()
            .map(|o| o.value[0][1].as_u64().unwrap())
            .collect();
        assert_eq!(keys.len(), c.keys as usize);
    }

    #[test]
    fn an_injection_adds_its_scenario_to_the_same_run() {
        for model in [TxnModel::ListAppend, TxnModel::RwRegister] {
            let base = generate_txn(&cfg(model)).unwrap().history;
            for anomaly in TxnAnomaly::ALL
                .into_iter()
                .filter(|a| *a != TxnAnomaly::None && a.applies_to(model))
            {
                let s = generate_txn(&TxnSynthConfig {
                    anomaly,
                    ..cfg(model)
                })
                .unwrap();
                let sentence = s.injected.expect("a sentence");
                assert!(sentence.starts_with(anomaly.as_str()), "{sentence}");
                let ops = &s.history.ops;
                let extra = ops.len() - base.ops.len();
                let same = |a: &Op, b: &Op| a.kind == b.kind && a.value == b.value;
                let start = base
                    .ops
                    .iter()
                    .zip(ops)
                    .position(|(a, b)| !same(a, b))
                    .unwrap_or(base.ops.len());
                assert!((4..=6).contains(&extra), "{anomaly}: {extra} entries");
                assert!(
                    base.ops[start..]
                        .iter()
                        .zip(&ops[start + extra..])
                        .all(|(a, b)| same(a, b)),
                    "{anomaly}: the run around the scenario changed"
                );
                assert!(
                    start >= 100,
                    "{anomaly} injected at entry {start}, not in the middle"
                );
            }
        }
    }

    #[test]
    fn rejects_bad_configuration() {
        let ok = cfg(TxnModel::ListAppend);
        for (bad, what) in [
            (
                TxnSynthConfig {
                    keys: 0,
                    ..ok.clone()
                },
                "--keys",
            ),
            (
                TxnSynthConfig {
                    concurrency: 0,
                    ..ok.clone()
                },
                "--concurrency",
            ),
            (
                TxnSynthConfig {
                    min_len: 3,
                    max_len: 2,
                    ..ok.clone()
                },
                "length",
            ),
            (
                TxnSynthConfig {
                    max_writes_per_key: 0,
                    ..ok.clone()
                },
                "max writes",
            ),
            (
                TxnSynthConfig {
                    indeterminate: 1.5,
                    ..ok.clone()
                },
                "--indeterminate",
            ),
            (
                TxnSynthConfig {
                    indeterminate: 0.6,
                    fail: 0.6,
                    ..ok.clone()
                },
                "exceed",
            ),
            (
                TxnSynthConfig {
                    model: TxnModel::RwRegister,
                    anomaly: TxnAnomaly::DuplicateElements,
                    ..ok.clone()
                },
                "duplicate-elements",
            ),
        ] {
            let err = generate_txn(&bad).unwrap_err();
            assert!(err.contains(what), "{err}");
        }
    }

    #[test]
    fn streaming_gives_the_same_ops() {
        let c = TxnSynthConfig {
            anomaly: TxnAnomaly::GSingle,
            ..cfg(TxnModel::RwRegister)
        };
        let mut streamed = Vec::new();
        let injected = generate_txn_each(&c, |op| streamed.push(op)).unwrap();
        let whole = generate_txn(&c).unwrap();
        assert_eq!(streamed, whole.history.ops);
        assert_eq!(injected, whole.injected);
    }
}
