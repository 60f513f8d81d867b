//! Synthetic object histories (`faultline gen-history --mode objects`): C processes write
//! and read `--keys` objects `k0`… of a simulated linearizable object store, one call at a
//! time; each write is a number unique across the history, each `ok` read the number of
//! the write whose body it returned (`null` while absent), recorded as the `objects`
//! workload records them (`docs/history-format.md` § Objects). Writes crash with
//! probability `indeterminate` (complete `info`, took effect or not). The history ends
//! with a read of every key. With `--anomaly torn-object`, before those final reads two
//! acknowledged writes of `k0` are followed by a read whose body is the first write's
//! header and cells of both (a `mixed` torn record), which the `objects` checker names.
//!
//! Pure and seeded. Invariant: without an anomaly every read returns one whole write's
//! value, the latest applied, so the history is linearizable and holds no torn read.

use crate::checkers::objects::TORN_OBJECT;
use crate::history::{History, OpType};
use crate::ops;
use crate::zset_synth::Recorder;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

/// Every anomaly `--anomaly` can inject.
pub const ANOMALIES: &[&str] = &[TORN_OBJECT];

#[derive(Debug, Clone)]
pub struct ObjectsSynthConfig {
    pub ops: u64,
    pub keys: u32,
    pub concurrency: u32,
    pub indeterminate: f64,
    pub seed: u64,
    pub anomaly: Option<String>,
}

impl Default for ObjectsSynthConfig {
    fn default() -> Self {
        ObjectsSynthConfig {
            ops: 1000,
            keys: 4,
            concurrency: 5,
            indeterminate: 0.0,
            seed: 0,
            anomaly: None,
        }
    }
}

/// The simulated store and the history being written.
struct Sim {
    rec: Recorder,
    values: Vec<Value>,
    next_write: i64,
}

impl Sim {
    fn write(&mut self, p: u64, key: usize, crashed: Option<bool>) -> i64 {
        let w = self.next_write;
        self.next_write += 1;
        let name = format!("k{key}");
        self.rec
            .push(p, OpType::Invoke, ops::WRITE, Some(&name), json!(w));
        let (kind, applied) = match crashed {
            None => (OpType::Ok, true),
            Some(applied) => (OpType::Info, applied),
        };
        if applied {
            self.values[key] = json!(w);
        }
        self.rec.push(p, kind, ops::WRITE, Some(&name), json!(w));
        w
    }

    fn read(&mut self, p: u64, key: usize, value: Value) {
        let name = format!("k{key}");
        self.rec
            .push(p, OpType::Invoke, ops::READ, Some(&name), Value::Null);
        self.rec.push(p, OpType::Ok, ops::READ, Some(&name), value);
    }
}

/// A body of write `first` whose second MiB is write `second`'s.
fn mixed_record(first: i64, second: i64) -> Value {
    json!({
        "torn": "mixed",
        "write": first,
        "length": 2_097_216,
        "expected-length": 2_097_216,
        "writes": [first, second],
        "offset": 1_048_576,
    })
}

/// Generates the history `cfg` describes; an error for an unknown anomaly or no keys.
pub fn generate_objects(cfg: &ObjectsSynthConfig) -> Result<History, String> {
    if let Some(a) = cfg.anomaly.as_deref().filter(|a| !ANOMALIES.contains(a)) {
        return Err(format!(
            "unknown objects anomaly {a:?}: none or {}",
            ANOMALIES.join(", ")
        ));
    }
    if cfg.keys == 0 || cfg.concurrency == 0 {
        return Err("objects histories need at least one key and one process".into());
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let mut sim = Sim {
        rec: Recorder::default(),
        values: vec![Value::Null; cfg.keys as usize],
        next_write: 1,
    };
    let mut next_process = u64::from(cfg.concurrency);
    let mut procs: Vec<u64> = (0..next_process).collect();
    for _ in 0..cfg.ops {
        let slot = rng.random_range(0..procs.len());
        let key = rng.random_range(0..cfg.keys as usize);
        if rng.random_bool(0.5) {
            let value = sim.values[key].clone();
            sim.read(procs[slot], key, value);
            continue;
        }
        let crashed = rng
            .random_bool(cfg.indeterminate.clamp(0.0, 1.0))
            .then(|| rng.random_bool(0.5));
        sim.write(procs[slot], key, crashed);
        if crashed.is_some() {
            procs[slot] = next_process;
            next_process += 1;
        }
    }
    if cfg.anomaly.is_some() {
        let a = sim.write(procs[0], 0, None);
        let b = sim.write(procs[0], 0, None);
        sim.read(procs[0], 0, mixed_record(a, b));
    }
    for key in 0..cfg.keys as usize {
        let value = sim.values[key].clone();
        sim.read(procs[0], key, value);
    }
    Ok(History::new(sim.rec.ops))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::objects::check;
    use crate::verdict::Validity;

    fn cfg(anomaly: Option<&str>) -> ObjectsSynthConfig {
        ObjectsSynthConfig {
            ops: 300,
            indeterminate: 0.1,
            seed: 9,
            anomaly: anomaly.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn a_plain_history_is_valid_and_the_torn_one_is_caught_by_name() {
        let plain = check(&generate_objects(&cfg(None)).unwrap());
        assert_eq!(plain.valid, Validity::Valid, "{:?}", plain.reason);
        let torn = check(&generate_objects(&cfg(Some(TORN_OBJECT))).unwrap());
        assert_eq!(torn.valid, Validity::Invalid);
        assert_eq!(torn.anomalies.len(), 1);
        assert_eq!(torn.anomalies[0]["kind"], TORN_OBJECT);
    }

    #[test]
    fn an_unknown_anomaly_or_no_key_is_refused() {
        assert!(generate_objects(&cfg(Some("lost"))).is_err());
        let none = ObjectsSynthConfig {
            keys: 0,
            ..cfg(None)
        };
        assert!(generate_objects(&none).is_err());
    }
}
