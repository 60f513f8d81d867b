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

struct Slot {
    process: u64,
    call: Option<(Step, bool)>,
    to_delete: Vec<(usize, u64)>,
}

/// Generates the history of `cfg`.
pub fn generate_queue(cfg: &QueueSynthConfig) -> Result<History, String> {
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
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let mut rec = Recorder::default();
    let mut q = Fifo::default();
    let mut seqs = vec![0u64; cfg.groups as usize];
    let mut slots: Vec<Slot> = (0..cfg.concurrency)
        .map(|p| Slot {
            process: u64::from(p),
            call: None,
            to_delete: Vec::new(),
        })
        .collect();
    let mut started = 0;
    let receive_value = json!({"visibility_timeout_s": VISIBILITY_S});
    while started < cfg.ops
        || slots
            .iter()
            .any(|s| s.call.is_some() || !s.to_delete.is_empty())
    {
        let s = rng.random_range(0..slots.len());
        let slot = &mut slots[s];
        let Some((step, crash)) = slot.call.take() else {
            if let Some((msg, receipt)) = slot.to_delete.pop() {
                let m = &q.msgs[msg];
                rec.push(
                    slot.process,
                    OpType::Invoke,
                    ops::DELETE_MESSAGE,
                    Some(&m.group),
                    json!(m.body),
                );
                slot.call = Some((
                    Step::Delete {
                        msg,
                        receipt,
                        applied: false,
                    },
                    rng.random_bool(cfg.indeterminate),
                ));
            } else if started < cfg.ops {
                started += 1;
                if rng.random_bool(0.4) {
                    let g = rng.random_range(0..cfg.groups) as usize;
                    let body = format!("g{g}:{}", seqs[g]);
                    seqs[g] += 1;
                    let group = format!("g{g}");
                    rec.push(
                        slot.process,
                        OpType::Invoke,
                        ops::SEND,
                        Some(&group),
                        json!(body),
                    );
                    slot.call = Some((
                        Step::Send {
                            body,
                            group,
                            applied: false,
                        },
                        rng.random_bool(cfg.indeterminate),
                    ));
                } else {
                    rec.push(
                        slot.process,
                        OpType::Invoke,
                        ops::RECEIVE,
                        None,
                        receive_value.clone(),
                    );
                    slot.call = Some((Step::Receive { got: None }, false));
                }
            }
            continue;
        };
        let apply_now = rng.random_bool(0.5);
        let step = match step {
            Step::Send {
                body,
                group,
                applied: false,
            } if apply_now && (!crash || rng.random_bool(0.5)) => {
                q.msgs.push(Msg {
                    body: body.clone(),
                    group: group.clone(),
                    deleted: false,
                    invisible_until: 0,
                    receipt: 0,
                });
                slot.call = Some((
                    Step::Send {
                        body,
                        group,
                        applied: true,
                    },
                    crash,
                ));
                continue;
            }
            Step::Receive { got: None } if apply_now => {
                slot.call = Some((
                    Step::Receive {
                        got: Some(q.receive(rec.now)),
                    },
                    crash,
                ));
                continue;
            }
            Step::Delete {
                msg,
                receipt,
                applied: false,
            } if apply_now && (!crash || rng.random_bool(0.5)) => {
                q.delete(msg, receipt, rec.now);
                slot.call = Some((
                    Step::Delete {
                        msg,
                        receipt,
                        applied: true,
                    },
                    crash,
                ));
                continue;
            }
            other => other,
        };
        let kind = if crash { OpType::Info } else { OpType::Ok };
        match step {
            Step::Send {
                body,
                group,
                applied,
            } => {
                if !applied && !crash {
                    q.msgs.push(Msg {
                        body: body.clone(),
                        group: group.clone(),
                        deleted: false,
                        invisible_until: 0,
                        receipt: 0,
                    });
                }
                rec.push(slot.process, kind, ops::SEND, Some(&group), json!(body));
            }
            Step::Receive { got } => {
                let got = got.unwrap_or_else(|| q.receive(rec.now));
                rec.push(
                    slot.process,
                    OpType::Ok,
                    ops::RECEIVE,
                    None,
                    listed(&q, &got),
                );
                slot.to_delete = got;
            }
            Step::Delete {
                msg,
                receipt,
                applied,
            } => {
                if !applied && !crash {
                    q.delete(msg, receipt, rec.now);
                }
                let m = &q.msgs[msg];
                rec.push(
                    slot.process,
                    kind,
                    ops::DELETE_MESSAGE,
                    Some(&m.group),
                    json!(m.body),
                );
            }
        }
        if crash {
            slot.process += u64::from(cfg.concurrency);
        }
    }
    let p = slots.iter().map(|s| s.process).max().unwrap_or(0) + 1;
    if let Some(kind) = &cfg.anomaly {
        scenario(&mut rec, &mut q, kind, p);
    }
    drain(&mut rec, &mut q, p + 1);
    Ok(History::new(rec.ops))
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
