//! Synthetic queue histories (`faultline gen-history --mode queue`): C concurrent
//! processes send to groups `g0`… of a simulated SQS FIFO queue (a group's head message
//! in flight holds the group back; an undeleted message is visible again after the
//! visibility timeout; a delete takes effect only with a receipt still valid) and receive
//! and delete what they got; sends and deletes crash with probability `indeterminate`
//! (complete `info`, took effect or not). The history ends with a drain: receives after a
//! visibility timeout until one returns nothing. With `--anomaly KIND` a short scenario
//! showing exactly that finding of the `queue` checker is played before the drain on a
//! group of its own (`ganomaly`).
//!
//! Pure and seeded. Invariant: without an anomaly, the history is one a FIFO queue can
//! produce.

use crate::history::{History, OpType};
use crate::ops;
use crate::zset_synth::Recorder;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

/// Every anomaly `--anomaly` can inject (the `queue` checker's finding kinds).
pub const ANOMALIES: &[&str] = crate::checkers::queue::KINDS;

/// The visibility timeout every receive asks for.
pub const VISIBILITY_S: f64 = 0.020;
const VISIBILITY_NS: u64 = 20_000_000;

#[derive(Debug, Clone)]
pub struct QueueSynthConfig {
    pub ops: u64,
    pub groups: u32,
    pub concurrency: u32,
    pub indeterminate: f64,
    pub seed: u64,
    pub anomaly: Option<String>,
}

impl Default for QueueSynthConfig {
    fn default() -> Self {
        QueueSynthConfig {
            ops: 1000,
            groups: 8,
            concurrency: 5,
            indeterminate: 0.0,
            seed: 0,
            anomaly: None,
        }
    }
}

struct Msg {
    body: String,
    group: String,
    deleted: bool,
    invisible_until: u64,
    receipt: u64,
}

#[derive(Default)]
struct Fifo {
    msgs: Vec<Msg>,
}

impl Fifo {
    fn push(&mut self, body: &str, group: &str) {
        self.msgs.push(Msg {
            body: body.to_string(),
            group: group.to_string(),
            deleted: false,
            invisible_until: 0,
            receipt: 0,
        });
    }

    /// Up to 3 messages, at most one per group: each group's first undeleted message when
    /// it is visible. Returns (index, receipt) pairs.
    fn receive(&mut self, now: u64) -> Vec<(usize, u64)> {
        let mut got = Vec::new();
        let mut seen_groups: Vec<String> = Vec::new();
        for i in 0..self.msgs.len() {
            let m = &mut self.msgs[i];
            if m.deleted || seen_groups.contains(&m.group) {
                continue;
            }
            seen_groups.push(m.group.clone());
            if m.invisible_until > now || got.len() == 3 {
                continue;
            }
            m.invisible_until = now + VISIBILITY_NS;
            m.receipt += 1;
            got.push((i, m.receipt));
        }
        got
    }

    fn delete(&mut self, i: usize, receipt: u64, now: u64) {
        let m = &mut self.msgs[i];
        if m.receipt == receipt && now < m.invisible_until {
            m.deleted = true;
        }
    }
}

/// A call in flight. `applied`: its effect already happened (a call takes effect at some
/// point between its invoke and its completion, or — when it crashes — maybe never).
enum Step {
    Send {
        body: String,
        group: String,
        applied: bool,
    },
    Receive {
        got: Option<Vec<(usize, u64)>>,
    },
    Delete {
        msg: usize,
        receipt: u64,
        applied: bool,
    },
}

/// One process: its call in flight (with whether it will crash) and the messages it
/// received and still has to delete.
struct Slot {
    process: u64,
    call: Option<(Step, bool)>,
    to_delete: Vec<(usize, u64)>,
}

impl Slot {
    fn busy(&self) -> bool {
        self.call.is_some() || !self.to_delete.is_empty()
    }
}

/// The simulated queue, its clients' shared state and the history being recorded.
struct Sim<'c> {
    cfg: &'c QueueSynthConfig,
    rng: Xoshiro256PlusPlus,
    rec: Recorder,
    q: Fifo,
    seqs: Vec<u64>,
    started: u64,
}

/// Generates the history of `cfg`.
pub fn generate_queue(cfg: &QueueSynthConfig) -> Result<History, String> {
    check_config(cfg)?;
    let mut sim = Sim {
        cfg,
        rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed),
        rec: Recorder::default(),
        q: Fifo::default(),
        seqs: vec![0u64; cfg.groups as usize],
        started: 0,
    };
    let mut slots: Vec<Slot> = (0..cfg.concurrency)
        .map(|p| Slot {
            process: u64::from(p),
            call: None,
            to_delete: Vec::new(),
        })
        .collect();
    while sim.started < cfg.ops || slots.iter().any(Slot::busy) {
        let s = sim.rng.random_range(0..slots.len());
        sim.advance(&mut slots[s]);
    }
    let p = slots.iter().map(|s| s.process).max().unwrap_or(0) + 1;
    let Sim { mut rec, mut q, .. } = sim;
    if let Some(kind) = &cfg.anomaly {
        scenario(&mut rec, &mut q, kind, p);
    }
    drain(&mut rec, &mut q, p + 1);
    Ok(History::new(rec.ops))
}

fn check_config(cfg: &QueueSynthConfig) -> Result<(), String> {
    if let Some(a) = &cfg.anomaly {
        if !ANOMALIES.contains(&a.as_str()) {
            return Err(format!(
                "anomaly {a:?}: expected one of {}",
                ANOMALIES.join(", ")
            ));
        }
    }
    if cfg.concurrency == 0 || cfg.groups == 0 || !(0.0..=1.0).contains(&cfg.indeterminate) {
        return Err(
            "concurrency and groups must be at least 1, indeterminate a probability".into(),
        );
    }
    Ok(())
}

impl Sim<'_> {
    /// One step of `slot`: start a call, apply the one in flight, or complete it.
    fn advance(&mut self, slot: &mut Slot) {
        let Some((step, crash)) = slot.call.take() else {
            self.start_call(slot);
            return;
        };
        match self.maybe_apply(step, crash) {
            Ok(applied) => slot.call = Some((applied, crash)),
            Err(step) => self.complete(slot, step, crash),
        }
    }

    /// Invokes the slot's next call: a delete of what it received, else (while the run
    /// lasts) a send or a receive.
    fn start_call(&mut self, slot: &mut Slot) {
        if let Some((msg, receipt)) = slot.to_delete.pop() {
            let m = &self.q.msgs[msg];
            let (group, body) = (m.group.clone(), json!(m.body));
            self.rec.push(
                slot.process,
                OpType::Invoke,
                ops::DELETE_MESSAGE,
                Some(&group),
                body,
            );
            let step = Step::Delete {
                msg,
                receipt,
                applied: false,
            };
            slot.call = Some((step, self.rng.random_bool(self.cfg.indeterminate)));
        } else if self.started < self.cfg.ops {
            self.started += 1;
            slot.call = Some(if self.rng.random_bool(0.4) {
                self.start_send(slot.process)
            } else {
                self.start_receive(slot.process)
            });
        }
    }

    fn start_send(&mut self, process: u64) -> (Step, bool) {
        let g = self.rng.random_range(0..self.cfg.groups) as usize;
        let body = format!("g{g}:{}", self.seqs[g]);
        self.seqs[g] += 1;
        let group = format!("g{g}");
        self.rec.push(
            process,
            OpType::Invoke,
            ops::SEND,
            Some(&group),
            json!(body),
        );
        let step = Step::Send {
            body,
            group,
            applied: false,
        };
        (step, self.rng.random_bool(self.cfg.indeterminate))
    }

    fn start_receive(&mut self, process: u64) -> (Step, bool) {
        let value = json!({"visibility_timeout_s": VISIBILITY_S});
        self.rec
            .push(process, OpType::Invoke, ops::RECEIVE, None, value);
        (Step::Receive { got: None }, false)
    }

    /// Half the time, applies a call in flight that has not taken effect yet (a crashing
    /// one only half of those times): `Ok` with the call still in flight, applied; `Err`
    /// with the call unchanged, to complete now.
    fn maybe_apply(&mut self, step: Step, crash: bool) -> Result<Step, Step> {
        let apply_now = self.rng.random_bool(0.5);
        match step {
            Step::Send {
                body,
                group,
                applied: false,
            } if apply_now && (!crash || self.rng.random_bool(0.5)) => {
                self.q.push(&body, &group);
                Ok(Step::Send {
                    body,
                    group,
                    applied: true,
                })
            }
            Step::Receive { got: None } if apply_now => Ok(Step::Receive {
                got: Some(self.q.receive(self.rec.now)),
            }),
            Step::Delete {
                msg,
                receipt,
                applied: false,
            } if apply_now && (!crash || self.rng.random_bool(0.5)) => {
                self.q.delete(msg, receipt, self.rec.now);
                Ok(Step::Delete {
                    msg,
                    receipt,
                    applied: true,
                })
            }
            other => Err(other),
        }
    }

    /// Completes the slot's call: `info` when it crashes (then the process is replaced,
    /// as a crashed client's is), else `ok` — applying it first if it has not taken effect.
    fn complete(&mut self, slot: &mut Slot, step: Step, crash: bool) {
        let kind = if crash { OpType::Info } else { OpType::Ok };
        match step {
            Step::Send {
                body,
                group,
                applied,
            } => {
                if !applied && !crash {
                    self.q.push(&body, &group);
                }
                self.rec
                    .push(slot.process, kind, ops::SEND, Some(&group), json!(body));
            }
            Step::Receive { got } => {
                let got = got.unwrap_or_else(|| self.q.receive(self.rec.now));
                let listed = listed(&self.q, &got);
                self.rec
                    .push(slot.process, OpType::Ok, ops::RECEIVE, None, listed);
                slot.to_delete = got;
            }
            Step::Delete {
                msg,
                receipt,
                applied,
            } => {
                if !applied && !crash {
                    self.q.delete(msg, receipt, self.rec.now);
                }
                let m = &self.q.msgs[msg];
                let (group, body) = (m.group.clone(), json!(m.body));
                self.rec
                    .push(slot.process, kind, ops::DELETE_MESSAGE, Some(&group), body);
            }
        }
        if crash {
            slot.process += u64::from(self.cfg.concurrency);
        }
    }
}

fn listed(q: &Fifo, got: &[(usize, u64)]) -> Value {
    json!(got
        .iter()
        .map(|&(i, _)| json!({"group": q.msgs[i].group, "body": q.msgs[i].body}))
        .collect::<Vec<_>>())
}

fn receive_ok(rec: &mut Recorder, p: u64, got: Value) {
    rec.push(
        p,
        OpType::Invoke,
        ops::RECEIVE,
        None,
        json!({"visibility_timeout_s": VISIBILITY_S}),
    );
    rec.push(p, OpType::Ok, ops::RECEIVE, None, got);
}

fn call_ok(rec: &mut Recorder, p: u64, f: &str, body: &str) {
    rec.push(p, OpType::Invoke, f, Some("ganomaly"), json!(body));
    rec.push(p, OpType::Ok, f, Some("ganomaly"), json!(body));
}

/// Receives (deleting what it gets) a visibility timeout apart until one returns nothing.
fn drain(rec: &mut Recorder, q: &mut Fifo, p: u64) {
    loop {
        rec.wait(VISIBILITY_NS + 1_000_000);
        let got = q.receive(rec.now);
        receive_ok(rec, p, listed(q, &got));
        if got.is_empty() {
            return;
        }
        for (i, receipt) in got {
            q.delete(i, receipt, rec.now);
            let (g, b) = (q.msgs[i].group.clone(), q.msgs[i].body.clone());
            rec.push(p, OpType::Invoke, ops::DELETE_MESSAGE, Some(&g), json!(b));
            rec.push(p, OpType::Ok, ops::DELETE_MESSAGE, Some(&g), json!(b));
        }
    }
}

/// Plays the short scenario that shows finding `kind` on group `ganomaly`.
fn scenario(rec: &mut Recorder, q: &mut Fifo, kind: &str, p: u64) {
    let m = |b: &str| json!({"group": "ganomaly", "body": b});
    match kind {
        "lost" => call_ok(rec, p, ops::SEND, "ganomaly:0"),
        "duplicated" => {
            call_ok(rec, p, ops::SEND, "ganomaly:0");
            receive_ok(rec, p, json!([m("ganomaly:0")]));
            call_ok(rec, p, ops::DELETE_MESSAGE, "ganomaly:0");
            receive_ok(rec, p, json!([m("ganomaly:0")]));
            call_ok(rec, p, ops::DELETE_MESSAGE, "ganomaly:0");
        }
        "unexpected" => receive_ok(rec, p, json!([m("ganomaly:9")])),
        _ => {
            call_ok(rec, p, ops::SEND, "ganomaly:0");
            call_ok(rec, p, ops::SEND, "ganomaly:1");
            receive_ok(rec, p, json!([m("ganomaly:1"), m("ganomaly:0")]));
            call_ok(rec, p, ops::DELETE_MESSAGE, "ganomaly:1");
            call_ok(rec, p, ops::DELETE_MESSAGE, "ganomaly:0");
        }
    }
    let _ = q;
}
