//! Synthetic sorted-set histories (`faultline gen-history --mode zset`): C concurrent
//! processes run ZADD / ZINCRBY / ZREM / ZRANGE / ZRANGEBYSCORE on a few keys of a real
//! in-memory sorted set; each call takes effect at one moment inside its window (a crashed
//! one maybe never) and replies from the set as it is then. With `--anomaly KIND` a short
//! scenario showing exactly that finding of the `zset` checker is played afterwards, by a
//! fresh process, on a key of its own (`zset-anomaly`).
//!
//! Pure and seeded: the same config gives the same history. Invariant: without an anomaly
//! the history is linearizable by construction.

use crate::history::{History, Op, OpType, Process};
use crate::ops;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

/// Every anomaly `--anomaly` can inject (the `zset` checker's finding kinds).
pub const ANOMALIES: &[&str] = crate::checkers::zset::KINDS;

#[derive(Debug, Clone)]
pub struct ZsetSynthConfig {
    pub ops: u64,
    pub keys: u32,
    pub members: u32,
    pub concurrency: u32,
    /// Probability that a mutation crashes (completes `info`, maybe took effect).
    pub indeterminate: f64,
    pub seed: u64,
    /// One of [`ANOMALIES`], or `None`.
    pub anomaly: Option<String>,
}

impl Default for ZsetSynthConfig {
    fn default() -> Self {
        ZsetSynthConfig {
            ops: 1000,
            keys: 3,
            members: 16,
            concurrency: 5,
            indeterminate: 0.0,
            seed: 0,
            anomaly: None,
        }
    }
}

/// Appends ops with consecutive indices, each 1 ms after the one before (more after a
/// [`Recorder::wait`]).
#[derive(Default)]
pub struct Recorder {
    pub ops: Vec<Op>,
    /// The time of the next op, in nanoseconds.
    pub now: u64,
}

impl Recorder {
    /// Lets `ns` nanoseconds pass before the next op.
    pub fn wait(&mut self, ns: u64) {
        self.now += ns;
    }

    pub fn push(&mut self, p: u64, kind: OpType, f: &str, key: Option<&str>, value: Value) {
        let index = self.ops.len() as u64;
        let time = self.now;
        self.now += 1_000_000;
        self.ops.push(Op {
            index,
            kind,
            process: Process::Client(p),
            f: f.into(),
            key: key.map(Into::into),
            value,
            time,
            node: None,
            error: None,
            meta: None,
        });
    }
}

type Contents = Vec<Option<f64>>;

/// Applies one call to a key's contents and returns the store's reply.
pub fn apply(f: &str, value: &Value, contents: &mut Contents) -> Value {
    let member = |v: &Value| -> usize {
        v.as_str()
            .and_then(|m| m.strip_prefix('m'))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    match f {
        ops::ZADD => {
            contents[member(&value[0])] = value[1].as_f64();
            value.clone()
        }
        ops::ZINCRBY => {
            let m = member(&value[0]);
            let s = contents[m].unwrap_or(0.0) + value[1].as_f64().unwrap_or(0.0);
            contents[m] = Some(s);
            json!([value[0], s])
        }
        ops::ZREM => {
            let was = contents[member(value)].take().is_some();
            json!([value, was])
        }
        _ => {
            let (lo, hi) = match value {
                Value::Array(b) => (b[0].as_f64().unwrap_or(0.0), b[1].as_f64().unwrap_or(0.0)),
                _ => (f64::NEG_INFINITY, f64::INFINITY),
            };
            let mut entries: Vec<(f64, String)> = contents
                .iter()
                .enumerate()
                .filter_map(|(m, s)| {
                    s.filter(|s| lo <= *s && *s <= hi)
                        .map(|s| (s, format!("m{m}")))
                })
                .collect();
            entries.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
            json!(entries
                .iter()
                .map(|(s, m)| json!([m, s]))
                .collect::<Vec<_>>())
        }
    }
}

/// A random call: its `f`, key and invoke value.
fn random_call(
    rng: &mut Xoshiro256PlusPlus,
    cfg: &ZsetSynthConfig,
) -> (&'static str, String, Value) {
    let key = format!("zset-{}", rng.random_range(0..cfg.keys.max(1)));
    let member = json!(format!("m{}", rng.random_range(0..cfg.members.max(1))));
    let (f, v) = match rng.random_range(0..20u32) {
        0..=6 => (
            ops::ZADD,
            json!([member, rng.random_range(-100..100i32) as f64]),
        ),
        7..=10 => (
            ops::ZINCRBY,
            json!([member, rng.random_range(-10..10i32) as f64]),
        ),
        11..=12 => (ops::ZREM, member),
        13..=17 => (ops::ZRANGE, Value::Null),
        _ => {
            let a = rng.random_range(-100..100i32) as f64;
            let b = rng.random_range(-100..100i32) as f64;
            (ops::ZRANGEBYSCORE, json!([a.min(b), a.max(b)]))
        }
    };
    (f, key, v)
}

struct InFlight {
    process: u64,
    f: &'static str,
    key: String,
    value: Value,
    crash: bool,
    reply: Option<Value>,
}

/// Generates the history of `cfg`.
pub fn generate_zset(cfg: &ZsetSynthConfig) -> Result<History, String> {
    if let Some(a) = &cfg.anomaly {
        if !ANOMALIES.contains(&a.as_str()) {
            return Err(format!(
                "anomaly {a:?}: expected one of {}",
                ANOMALIES.join(", ")
            ));
        }
    }
    if cfg.concurrency == 0 || !(0.0..=1.0).contains(&cfg.indeterminate) {
        return Err("concurrency must be at least 1 and indeterminate a probability".into());
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let mut rec = Recorder::default();
    let mut sets: std::collections::BTreeMap<String, Contents> = Default::default();
    let mut slots: Vec<Option<InFlight>> = (0..cfg.concurrency).map(|_| None).collect();
    let mut ids: Vec<u64> = (0..u64::from(cfg.concurrency)).collect();
    let mut started = 0;
    while started < cfg.ops || slots.iter().any(Option::is_some) {
        let s = rng.random_range(0..slots.len());
        match slots[s].take() {
            None if started < cfg.ops => {
                let (f, key, value) = random_call(&mut rng, cfg);
                rec.push(ids[s], OpType::Invoke, f, Some(&key), value.clone());
                let mutation = !matches!(f, ops::ZRANGE | ops::ZRANGEBYSCORE);
                let crash = mutation && rng.random_bool(cfg.indeterminate);
                slots[s] = Some(InFlight {
                    process: ids[s],
                    f,
                    key,
                    value,
                    crash,
                    reply: None,
                });
                started += 1;
            }
            None => {}
            Some(mut c)
                if c.reply.is_none()
                    && (!c.crash || rng.random_bool(0.5))
                    && rng.random_bool(0.5) =>
            {
                let set = sets
                    .entry(c.key.clone())
                    .or_insert_with(|| vec![None; cfg.members.max(1) as usize]);
                c.reply = Some(apply(c.f, &c.value, set));
                slots[s] = Some(c);
            }
            Some(c) if c.crash => {
                rec.push(c.process, OpType::Info, c.f, Some(&c.key), Value::Null);
                ids[s] += u64::from(cfg.concurrency);
            }
            Some(c) => {
                let reply = match c.reply {
                    Some(r) => r,
                    None => {
                        let set = sets
                            .entry(c.key.clone())
                            .or_insert_with(|| vec![None; cfg.members.max(1) as usize]);
                        apply(c.f, &c.value, set)
                    }
                };
                rec.push(c.process, OpType::Ok, c.f, Some(&c.key), reply);
            }
        }
    }
    if let Some(kind) = &cfg.anomaly {
        let p = ids.iter().max().copied().unwrap_or(0) + 1;
        scenario(&mut rec, kind, p);
    }
    Ok(History::new(rec.ops))
}

/// Plays the short scenario that shows finding `kind` on key `zset-anomaly`.
fn scenario(rec: &mut Recorder, kind: &str, p: u64) {
    let k = Some("zset-anomaly");
    let call = |rec: &mut Recorder, p: u64, f: &str, v: Value, reply: Value| {
        rec.push(p, OpType::Invoke, f, k, v);
        rec.push(p, OpType::Ok, f, k, reply);
    };
    call(rec, p, ops::ZADD, json!(["m0", 1.0]), json!(["m0", 1.0]));
    call(rec, p, ops::ZADD, json!(["m1", 5.0]), json!(["m1", 5.0]));
    let both = json!([["m0", 1.0], ["m1", 5.0]]);
    match kind {
        "unsorted" => call(
            rec,
            p,
            ops::ZRANGE,
            Value::Null,
            json!([["m1", 5.0], ["m0", 1.0]]),
        ),
        "duplicate-members" => call(
            rec,
            p,
            ops::ZRANGE,
            Value::Null,
            json!([["m0", 1.0], ["m0", 1.0], ["m1", 5.0]]),
        ),
        "out-of-range" => call(rec, p, ops::ZRANGEBYSCORE, json!([0.0, 3.0]), both),
        "unexpected-presence" => call(
            rec,
            p,
            ops::ZRANGE,
            Value::Null,
            json!([["m0", 1.0], ["m1", 5.0], ["m7", 6.0]]),
        ),
        "score-mismatch" => call(
            rec,
            p,
            ops::ZRANGE,
            Value::Null,
            json!([["m0", 2.0], ["m1", 5.0]]),
        ),
        "missing-member" => call(rec, p, ops::ZRANGE, Value::Null, json!([["m1", 5.0]])),
        "missing-member-range" => call(rec, p, ops::ZRANGEBYSCORE, json!([0.0, 2.0]), json!([])),
        "impossible-mutation-chain" => {
            call(rec, p, ops::ZINCRBY, json!(["m0", 2.0]), json!(["m0", 4.0]))
        }
        "unstable-read-without-mutation" => {
            call(
                rec,
                p,
                ops::ZRANGEBYSCORE,
                json!([0.0, 2.0]),
                json!([["m0", 1.0]]),
            );
            call(rec, p, ops::ZRANGEBYSCORE, json!([0.0, 2.0]), json!([]));
        }
        "fractured-read-prefix" => {
            rec.push(p + 1, OpType::Invoke, ops::ZRANGE, k, Value::Null);
            call(rec, p, ops::ZADD, json!(["m2", 3.0]), json!(["m2", 3.0]));
            call(rec, p, ops::ZADD, json!(["m3", 4.0]), json!(["m3", 4.0]));
            rec.push(
                p + 1,
                OpType::Ok,
                ops::ZRANGE,
                k,
                json!([["m0", 1.0], ["m3", 4.0], ["m1", 5.0]]),
            );
        }
        _ => {
            // nonlinearizable: each read saw one of two concurrent adds.
            rec.push(p + 1, OpType::Invoke, ops::ZRANGE, k, Value::Null);
            rec.push(p + 2, OpType::Invoke, ops::ZRANGE, k, Value::Null);
            rec.push(p + 3, OpType::Invoke, ops::ZADD, k, json!(["m2", 3.0]));
            rec.push(p + 4, OpType::Invoke, ops::ZADD, k, json!(["m3", 4.0]));
            rec.push(p + 3, OpType::Ok, ops::ZADD, k, json!(["m2", 3.0]));
            rec.push(p + 4, OpType::Ok, ops::ZADD, k, json!(["m3", 4.0]));
            rec.push(
                p + 1,
                OpType::Ok,
                ops::ZRANGE,
                k,
                json!([["m0", 1.0], ["m2", 3.0], ["m1", 5.0]]),
            );
            rec.push(
                p + 2,
                OpType::Ok,
                ops::ZRANGE,
                k,
                json!([["m0", 1.0], ["m3", 4.0], ["m1", 5.0]]),
            );
        }
    }
}
