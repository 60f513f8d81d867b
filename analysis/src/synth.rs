//! Synthetic histories for benchmarks and property tests: a simulated linearizable
//! register store (read / write / cas over K keys) driven by C concurrent client
//! processes, with crashes, and optionally one injected anomaly that makes the history
//! non-linearizable.
//!
//! Pure and seeded: the same [`SynthConfig`] always gives the same history.
//!
//! The simulation advances one randomly chosen process by one step at a time: invoke an
//! op, apply it atomically to the store (its linearization point), complete it. Because
//! other processes step in between, ops overlap. With probability `indeterminate` an op
//! crashes: it takes effect or not (a coin flip), completes as `info`, and its process is
//! replaced by a fresh process id (Jepsen's convention, `id + concurrency`). Written values
//! are unique per key (1, 2, 3, …; keys start absent), so anomalies can be made provable.
//!
//! Anomalies (each one is placed only where it is provably a violation):
//! - `stale-read`: a read returns the key's previous value although the write that
//!   replaced it completed before the read was invoked, and that value's own writer had
//!   completed before the replacing write was invoked;
//! - `lost-write`: an acknowledged write never takes effect; it is invoked after the
//!   current value's writer completed, with no other write in flight on the key, and the
//!   key then only serves reads until a read invoked after the lost write's ack returns
//!   the old value.
//!
//! If no opportunity arises (tiny histories), the anomaly is played at the end as a short
//! sequential scenario on key `k0` by a fresh process.
//!
//! [`Mode`] picks the operations: `cas-register` (read / write / cas, the default),
//! `register` (read / write only: the shape of a cas-free hot key) or `append` (Porcupine's
//! kv shape: `get` returns the key's string, `append` adds a unique `"x N y"` to it; a key
//! never appended to reads `null`).

use crate::history::{History, Op, OpType, Process};
use crate::ops;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde_json::{json, Value};
use std::fmt;
use std::str::FromStr;

/// How keys are chosen for each op.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDist {
    Uniform,
    /// Zipf with this exponent; key `k0` is the hottest.
    Zipf(f64),
}

impl FromStr for KeyDist {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "uniform" {
            return Ok(KeyDist::Uniform);
        }
        let exponent = s.strip_prefix("zipf:").ok_or_else(|| {
            format!("key distribution {s:?}: expected uniform or zipf:S (e.g. zipf:1.1)")
        })?;
        match exponent.parse::<f64>() {
            Ok(e) if e.is_finite() && e >= 0.0 => Ok(KeyDist::Zipf(e)),
            _ => Err(format!(
                "zipf exponent {exponent:?} must be a finite number >= 0"
            )),
        }
    }
}

impl fmt::Display for KeyDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDist::Uniform => f.write_str("uniform"),
            KeyDist::Zipf(s) => write!(f, "zipf:{s}"),
        }
    }
}

/// Which operations the simulated clients issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    CasRegister,
    Register,
    Append,
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cas-register" => Ok(Mode::CasRegister),
            "register" => Ok(Mode::Register),
            "append" => Ok(Mode::Append),
            other => Err(format!(
                "mode {other:?}: expected cas-register, register or append"
            )),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::CasRegister => "cas-register",
            Mode::Register => "register",
            Mode::Append => "append",
        })
    }
}

/// The anomaly to inject, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anomaly {
    None,
    StaleRead,
    LostWrite,
}

impl FromStr for Anomaly {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Anomaly::None),
            "stale-read" => Ok(Anomaly::StaleRead),
            "lost-write" => Ok(Anomaly::LostWrite),
            other => Err(format!(
                "anomaly {other:?}: expected none, stale-read or lost-write"
            )),
        }
    }
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Anomaly::None => "none",
            Anomaly::StaleRead => "stale-read",
            Anomaly::LostWrite => "lost-write",
        })
    }
}

#[derive(Debug, Clone)]
pub struct SynthConfig {
    /// Number of client operations (each an invoke plus a completion).
    pub ops: u64,
    pub keys: u32,
    pub concurrency: u32,
    /// Probability that an op crashes (ends `info`).
    pub indeterminate: f64,
    pub seed: u64,
    pub key_dist: KeyDist,
    pub anomaly: Anomaly,
    /// Share of reads; of the rest, `cas_share` are cas and the others writes.
    pub read_share: f64,
    /// Share of cas among mutations in [`Mode::CasRegister`].
    pub cas_share: f64,
    pub mode: Mode,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            ops: 1000,
            keys: 1,
            concurrency: 5,
            indeterminate: 0.0,
            seed: 0,
            key_dist: KeyDist::Uniform,
            anomaly: Anomaly::None,
            read_share: 0.5,
            cas_share: 0.4,
            mode: Mode::CasRegister,
        }
    }
}

impl SynthConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.keys == 0 {
            return Err("--keys must be at least 1".into());
        }
        if self.concurrency == 0 {
            return Err("--concurrency must be at least 1".into());
        }
        for (name, p) in [
            ("--indeterminate", self.indeterminate),
            ("read share", self.read_share),
            ("cas share", self.cas_share),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} must be a probability in [0, 1], got {p}"));
            }
        }
        if let KeyDist::Zipf(s) = self.key_dist {
            Zipf::new(self.keys as f64, s).map_err(|e| format!("zipf:{s}: {e}"))?;
        }
        Ok(())
    }
}

/// A generated history and where its anomaly is.
#[derive(Debug, Clone)]
pub struct SynthHistory {
    pub history: History,
    /// The key the anomaly was injected on (`None` without anomaly).
    pub anomaly_key: Option<String>,
    /// History index of the op that carries the anomaly (the stale read, the lost write).
    pub anomaly_index: Option<u64>,
}

pub fn key_name(k: u32) -> String {
    format!("k{k}")
}

/// Generates a history; errors only on an invalid configuration.
pub fn generate(cfg: &SynthConfig) -> Result<SynthHistory, String> {
    cfg.validate()?;
    let mut sim = Sim::new(cfg);
    sim.run();
    sim.finish_anomaly();
    Ok(SynthHistory {
        history: History::new(sim.out),
        anomaly_key: sim.injected.map(|(k, _)| key_name(k)),
        anomaly_index: sim.injected.map(|(_, i)| i),
    })
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Read,
    Write(i64),
    Cas(Option<i64>, i64),
    Append(i64),
}

/// The unique string an append adds.
fn append_text(n: i64) -> String {
    format!("x {n} y")
}

/// The result of applying an op.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Ok(Option<i64>),
    /// A read in [`Mode::Append`]: the key's string (`null` if never appended to), as an
    /// index into `Sim::texts`.
    Text(usize),
    Fail,
    Info,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// Index of this op in `Sim::ops`.
    op: usize,
    key: u32,
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Idle,
    Invoked(InFlight),
    Applied(InFlight, Outcome),
}

/// When an op was invoked and (if it was acknowledged) completed, as history indices.
#[derive(Debug, Clone, Copy)]
struct Timing {
    invoke: u64,
    ack: u64,
}

const NOT_ACKED: u64 = u64::MAX;

#[derive(Debug, Clone, Default)]
struct KeyState {
    value: Option<i64>,
    /// Op that wrote `value` (`None`: the initial absent value).
    writer: Option<usize>,
    prev_value: Option<i64>,
    prev_writer: Option<usize>,
    next_value: i64,
    /// Writes and cas invoked but not applied yet.
    mutations_in_flight: u32,
    /// Lost-write injected here: new ops are reads until the loss has been observed.
    reads_only: bool,
    /// [`Mode::Append`]: the string `value`'s appends built, and the one before it.
    text: String,
    prev_text: String,
}

enum Injection {
    /// Waiting for an opportunity once `after_ops` ops have been invoked.
    Waiting {
        after_ops: u64,
    },
    /// A lost write on `key` (op `op`) waits for a read that observes it.
    LostAwaitingRead {
        key: u32,
        op: usize,
        index: u64,
    },
    Done,
}

struct Sim<'a> {
    cfg: &'a SynthConfig,
    rng: Xoshiro256PlusPlus,
    zipf: Option<Zipf<f64>>,
    procs: Vec<(u64, Phase)>,
    keys: Vec<KeyState>,
    key_names: Vec<String>,
    ops: Vec<Timing>,
    out: Vec<Op>,
    time: u64,
    invoked: u64,
    next_process: u64,
    injection: Injection,
    injected: Option<(u32, u64)>,
    /// Strings returned by reads in [`Mode::Append`], between their apply and completion.
    texts: Vec<Value>,
}

impl<'a> Sim<'a> {
    fn new(cfg: &'a SynthConfig) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
        let injection = match cfg.anomaly {
            Anomaly::None => Injection::Done,
            _ => Injection::Waiting {
                after_ops: rng.random_range(cfg.ops / 4..=cfg.ops / 2 + cfg.ops / 4),
            },
        };
        Sim {
            cfg,
            zipf: match cfg.key_dist {
                KeyDist::Zipf(s) => Zipf::new(cfg.keys as f64, s).ok(),
                KeyDist::Uniform => None,
            },
            rng,
            procs: (0..cfg.concurrency as u64)
                .map(|p| (p, Phase::Idle))
                .collect(),
            keys: vec![
                KeyState {
                    next_value: 1,
                    ..Default::default()
                };
                cfg.keys as usize
            ],
            key_names: (0..cfg.keys).map(key_name).collect(),
            ops: Vec::with_capacity(cfg.ops as usize),
            out: Vec::with_capacity(2 * cfg.ops as usize + 8),
            time: 0,
            invoked: 0,
            next_process: cfg.concurrency as u64,
            injection,
            injected: None,
            texts: Vec::new(),
        }
    }

    fn run(&mut self) {
        let mut busy = 0usize;
        loop {
            if self.invoked == self.cfg.ops && busy == 0 {
                return;
            }
            let p = self.rng.random_range(0..self.procs.len());
            let (id, phase) = self.procs[p];
            self.procs[p].1 = match phase {
                Phase::Idle if self.invoked < self.cfg.ops => {
                    busy += 1;
                    Phase::Invoked(self.invoke(id))
                }
                Phase::Idle => Phase::Idle,
                Phase::Invoked(f) => Phase::Applied(f, self.apply(f)),
                Phase::Applied(f, outcome) => {
                    busy -= 1;
                    self.complete(id, f, outcome);
                    if let Outcome::Info = outcome {
                        self.procs[p].0 = self.next_process;
                        self.next_process += 1;
                    }
                    Phase::Idle
                }
            };
        }
    }

    fn pick_key(&mut self) -> u32 {
        match &self.zipf {
            Some(z) => (z.sample(&mut self.rng) as u32).clamp(1, self.cfg.keys) - 1,
            None => self.rng.random_range(0..self.cfg.keys),
        }
    }

    fn invoke(&mut self, process: u64) -> InFlight {
        let key = self.pick_key();
        let r: f64 = self.rng.random();
        let state = &mut self.keys[key as usize];
        let kind = if r < self.cfg.read_share || state.reads_only {
            Kind::Read
        } else {
            let new = state.next_value;
            state.next_value += 1;
            state.mutations_in_flight += 1;
            if self.cfg.mode == Mode::Append {
                Kind::Append(new)
            } else if self.cfg.mode == Mode::CasRegister && self.rng.random_bool(self.cfg.cas_share)
            {
                // Mostly the current value (so cas succeeds), sometimes a recent one.
                let expected = match state.value {
                    Some(v) if self.rng.random_bool(0.3) => {
                        Some((v - self.rng.random_range(1..=2)).max(1))
                    }
                    v => v,
                };
                Kind::Cas(expected, new)
            } else {
                Kind::Write(new)
            }
        };
        let op = self.ops.len();
        self.ops.push(Timing {
            invoke: self.out.len() as u64,
            ack: NOT_ACKED,
        });
        self.invoked += 1;
        let value = match kind {
            Kind::Read => Value::Null,
            Kind::Write(v) => json!(v),
            Kind::Cas(e, n) => json!([e, n]),
            Kind::Append(n) => json!(append_text(n)),
        };
        self.emit(OpType::Invoke, process, key, kind, value);
        InFlight { op, key, kind }
    }

    fn apply(&mut self, f: InFlight) -> Outcome {
        let crashed = self.rng.random_bool(self.cfg.indeterminate);
        let takes_effect = !crashed || self.rng.random_bool(0.5);
        if !matches!(f.kind, Kind::Read) {
            self.keys[f.key as usize].mutations_in_flight -= 1;
        }
        if !crashed {
            if let Some(outcome) = self.maybe_inject(f) {
                return outcome;
            }
        }
        let state = &mut self.keys[f.key as usize];
        let result = match f.kind {
            Kind::Read if self.cfg.mode == Mode::Append => {
                self.texts.push(text_json(&state.text));
                Outcome::Text(self.texts.len() - 1)
            }
            Kind::Read => Outcome::Ok(state.value),
            Kind::Append(v) => {
                if takes_effect {
                    state.prev_text = std::mem::take(&mut state.text);
                    state.text = format!("{}{}", state.prev_text, append_text(v));
                    state.set(v, f.op);
                }
                Outcome::Ok(None)
            }
            Kind::Write(v) => {
                if takes_effect {
                    state.set(v, f.op);
                }
                Outcome::Ok(None)
            }
            Kind::Cas(expected, new) if expected == state.value => {
                if takes_effect {
                    state.set(new, f.op);
                }
                Outcome::Ok(None)
            }
            Kind::Cas(..) => Outcome::Fail,
        };
        if crashed {
            Outcome::Info
        } else {
            result
        }
    }

    /// Places the anomaly at this (non-crashing) op if it is due and provable here.
    fn maybe_inject(&mut self, f: InFlight) -> Option<Outcome> {
        let invoke = self.ops[f.op].invoke;
        let acked_before =
            |ops: &[Timing], writer: Option<usize>, at: u64| writer.is_none_or(|w| ops[w].ack < at);
        match (&self.injection, self.cfg.anomaly, f.kind) {
            (Injection::Waiting { after_ops }, Anomaly::StaleRead, Kind::Read)
                if self.invoked >= *after_ops =>
            {
                let s = &self.keys[f.key as usize];
                let w2 = s.writer?;
                let provable = self.ops[w2].ack < invoke
                    && acked_before(&self.ops, s.prev_writer, self.ops[w2].invoke);
                if !provable {
                    return None;
                }
                self.injection = Injection::Done;
                self.injected = Some((f.key, invoke));
                Some(match self.cfg.mode {
                    Mode::Append => {
                        self.texts.push(text_json(&s.prev_text));
                        Outcome::Text(self.texts.len() - 1)
                    }
                    _ => Outcome::Ok(s.prev_value),
                })
            }
            (
                Injection::Waiting { after_ops },
                Anomaly::LostWrite,
                Kind::Write(_) | Kind::Append(_),
            ) if self.invoked >= *after_ops => {
                let s = &mut self.keys[f.key as usize];
                if s.mutations_in_flight > 0 || !acked_before(&self.ops, s.writer, invoke) {
                    return None;
                }
                s.reads_only = true;
                self.injection = Injection::LostAwaitingRead {
                    key: f.key,
                    op: f.op,
                    index: invoke,
                };
                Some(Outcome::Ok(None))
            }
            (Injection::LostAwaitingRead { key, op, index }, _, Kind::Read) if *key == f.key => {
                if self.ops[*op].ack >= invoke {
                    return None;
                }
                self.keys[f.key as usize].reads_only = false;
                self.injected = Some((f.key, *index));
                self.injection = Injection::Done;
                None
            }
            _ => None,
        }
    }

    fn complete(&mut self, process: u64, f: InFlight, outcome: Outcome) {
        let (kind, value) = match (outcome, f.kind) {
            (Outcome::Text(i), _) => (OpType::Ok, std::mem::take(&mut self.texts[i])),
            (Outcome::Ok(read), Kind::Read) => (OpType::Ok, json!(read)),
            (Outcome::Ok(_) | Outcome::Info, Kind::Append(n)) => (
                if matches!(outcome, Outcome::Info) {
                    OpType::Info
                } else {
                    OpType::Ok
                },
                json!(append_text(n)),
            ),
            (Outcome::Ok(_), Kind::Write(v)) => (OpType::Ok, json!(v)),
            (Outcome::Ok(_), Kind::Cas(e, n)) | (Outcome::Fail, Kind::Cas(e, n)) => (
                if matches!(outcome, Outcome::Fail) {
                    OpType::Fail
                } else {
                    OpType::Ok
                },
                json!([e, n]),
            ),
            (Outcome::Info, Kind::Read) => (OpType::Info, Value::Null),
            (Outcome::Info, Kind::Write(v)) => (OpType::Info, json!(v)),
            (Outcome::Info, Kind::Cas(e, n)) => (OpType::Info, json!([e, n])),
            (Outcome::Fail, _) => (OpType::Fail, Value::Null),
        };
        if kind == OpType::Ok {
            self.ops[f.op].ack = self.out.len() as u64;
        }
        self.emit(kind, process, f.key, f.kind, value);
        if kind == OpType::Info {
            if let Some(last) = self.out.last_mut() {
                last.error = Some("timeout".into());
            }
        }
    }

    fn emit(&mut self, kind: OpType, process: u64, key: u32, what: Kind, value: Value) {
        self.time += self.rng.random_range(1_000..50_000);
        let f = match what {
            Kind::Read if self.cfg.mode == Mode::Append => ops::GET,
            Kind::Read => ops::READ,
            Kind::Write(_) => ops::WRITE,
            Kind::Cas(..) => ops::CAS,
            Kind::Append(_) => ops::APPEND,
        };
        self.out.push(Op {
            index: self.out.len() as u64,
            kind,
            process: Process::Client(process),
            f: f.into(),
            key: Some(self.key_names[key as usize].as_str().into()),
            value,
            time: self.time,
            node: None,
            error: None,
            meta: None,
        });
    }

    /// Plays the anomaly at the end if the run gave it no opportunity (or left a lost
    /// write unobserved): everything else has completed, so a fresh process's sequential
    /// ops are ordered after all of it.
    fn finish_anomaly(&mut self) {
        let process = self.next_process;
        match std::mem::replace(&mut self.injection, Injection::Done) {
            Injection::Done => {}
            Injection::LostAwaitingRead { key, index, .. } => {
                let state = &self.keys[key as usize];
                let value = if self.cfg.mode == Mode::Append {
                    text_json(&state.text)
                } else {
                    json!(state.value)
                };
                self.sequential(process, key, Kind::Read, value);
                self.injected = Some((key, index));
            }
            Injection::Waiting { .. } => {
                let key = 0;
                let old = self.keys[0].next_value;
                self.keys[0].next_value += 2;
                let (first, second, stale) = match self.cfg.mode {
                    Mode::Append => {
                        let stale = format!("{}{}", self.keys[0].text, append_text(old));
                        (Kind::Append(old), Kind::Append(old + 1), text_json(&stale))
                    }
                    _ => (Kind::Write(old), Kind::Write(old + 1), json!(old)),
                };
                self.sequential(process, key, first, Value::Null);
                let index = self.out.len() as u64;
                self.sequential(process, key, second, Value::Null);
                let read_index = self.out.len() as u64;
                self.sequential(process, key, Kind::Read, stale);
                let at = if self.cfg.anomaly == Anomaly::StaleRead {
                    read_index
                } else {
                    index
                };
                self.injected = Some((key, at));
            }
        }
    }

    /// Emits one op that runs alone: invoke then ok. `read` is the value a read returns.
    fn sequential(&mut self, process: u64, key: u32, kind: Kind, read: Value) {
        let (invoke_value, done_value) = match kind {
            Kind::Read => (Value::Null, read),
            Kind::Write(v) => (json!(v), json!(v)),
            Kind::Cas(e, n) => (json!([e, n]), json!([e, n])),
            Kind::Append(n) => (json!(append_text(n)), json!(append_text(n))),
        };
        self.emit(OpType::Invoke, process, key, kind, invoke_value);
        self.emit(OpType::Ok, process, key, kind, done_value);
    }
}

/// A key's string as a read returns it: `null` while nothing was appended.
fn text_json(text: &str) -> Value {
    if text.is_empty() {
        Value::Null
    } else {
        Value::String(text.to_string())
    }
}

impl KeyState {
    fn set(&mut self, value: i64, writer: usize) {
        self.prev_value = self.value;
        self.prev_writer = self.writer;
        self.value = Some(value);
        self.writer = Some(writer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_key_distributions_and_anomalies() {
        assert_eq!("uniform".parse::<KeyDist>(), Ok(KeyDist::Uniform));
        assert_eq!("zipf:1.1".parse::<KeyDist>(), Ok(KeyDist::Zipf(1.1)));
        assert!("zipf:x".parse::<KeyDist>().is_err());
        assert!("pareto".parse::<KeyDist>().is_err());
        assert_eq!("lost-write".parse::<Anomaly>(), Ok(Anomaly::LostWrite));
        assert!("stale".parse::<Anomaly>().is_err());
    }

    #[test]
    fn same_seed_same_history_and_every_op_completes_once() {
        let cfg = SynthConfig {
            ops: 500,
            keys: 3,
            concurrency: 4,
            indeterminate: 0.1,
            seed: 7,
            ..Default::default()
        };
        let a = generate(&cfg).unwrap();
        assert_eq!(a.history, generate(&cfg).unwrap().history);
        assert_eq!(a.history.len(), 1000);
        let invokes = a
            .history
            .ops
            .iter()
            .filter(|o| o.kind == OpType::Invoke)
            .count();
        assert_eq!(invokes, 500);
        assert!(
            a.history.ops.iter().any(|o| o.kind == OpType::Info),
            "crashes happen at 10%"
        );
        assert!(
            a.history.ops.iter().any(|o| o.kind == OpType::Fail),
            "some cas fail"
        );
        assert!(a.anomaly_key.is_none());
    }

    #[test]
    fn crashed_processes_are_replaced_by_fresh_ids() {
        let cfg = SynthConfig {
            ops: 300,
            concurrency: 3,
            indeterminate: 0.2,
            seed: 1,
            ..Default::default()
        };
        let h = generate(&cfg).unwrap().history;
        let crashed: Vec<u64> = h
            .ops
            .iter()
            .filter(|o| o.kind == OpType::Info)
            .filter_map(|o| o.process.client())
            .collect();
        assert!(!crashed.is_empty());
        for p in crashed {
            let last = h
                .ops
                .iter()
                .rposition(|o| o.process == Process::Client(p))
                .unwrap();
            assert_eq!(
                h.ops[last].kind,
                OpType::Info,
                "process {p} never runs again after crashing"
            );
        }
    }

    #[test]
    fn modes_choose_the_operations() {
        let fs = |mode| {
            let cfg = SynthConfig {
                ops: 400,
                keys: 2,
                concurrency: 4,
                seed: 2,
                mode,
                ..Default::default()
            };
            let h = generate(&cfg).unwrap().history;
            let mut fs: Vec<String> = h.ops.iter().map(|o| o.f.to_string()).collect();
            fs.sort();
            fs.dedup();
            (fs, h)
        };
        assert_eq!(fs(Mode::CasRegister).0, ["cas", "read", "write"]);
        assert_eq!(fs(Mode::Register).0, ["read", "write"]);
        let (append_fs, h) = fs(Mode::Append);
        assert_eq!(append_fs, ["append", "get"]);
        let longest = h
            .ops
            .iter()
            .filter(|o| o.f == "get")
            .filter_map(|o| o.value.as_str())
            .max_by_key(|s| s.len());
        assert!(
            longest.is_some_and(|s| s.starts_with("x 1 y")),
            "reads return the appended strings: {longest:?}"
        );
    }

    #[test]
    fn rejects_bad_configuration() {
        assert!(generate(&SynthConfig {
            keys: 0,
            ..Default::default()
        })
        .is_err());
        assert!(generate(&SynthConfig {
            indeterminate: 1.5,
            ..Default::default()
        })
        .is_err());
    }
}
