//! The default `hotspot` workload: the load pattern that makes a range-sharded store split.
//!
//! - A fraction `insert_fraction` (default 0.7) of operations insert unique keys into the
//!   hot range under `hot_prefix`, in sets of `set_size` elements
//!   ([`super::set::Inserts`]: a full set is retired for a fresh sub-range after it). With
//!   `--key-dist hot-range` the keys are sequential (`hot/000003/000000000123`: set 3, like
//!   timestamps), so every insert lands at the tail of one route; with `zipf:S`,
//!   `celebrity:P` or `uniform` they go to `hot/<bucket>/<set>/<seq>` with the bucket drawn
//!   from that distribution, so the heat sits in a few sub-ranges.
//! - The rest are register ops (read / write / cas with unique values) on `reg/` keys
//!   chosen by the same distribution (for `hot-range`: the celebrity keys).
//! - Every `scan_every` operations, a scan of one set (set-full checking of the inserts,
//!   across whatever splits happened meanwhile): a set just retired, else the set being
//!   filled (in a bucket drawn from the distribution). The final reads scan every set.
//!
//! At the default 500 ops/s, 350 inserts/s hit the hot route (well over 80% of all
//! writes): refkv scores that 4 × 350 × 60 ≈ 84,000 ops/min, 1.7× its default threshold.

use super::keys::{KeyChooser, RegisterOps};
use super::set::Inserts;
use super::{OpSpec, ScanClock, Touched, Workload};
use crate::config::{KeyDist, WorkloadConfig};
use rand::rngs::SmallRng;
use rand::RngExt;
use analysis::checkers::{linearizable, set_full};

/// Register ops judged per key for linearizability, inserts judged by set-full; the hot
/// range is what the splitter should split.
pub const SPEC: super::WorkloadSpec =
    super::WorkloadSpec::new(|cfg| Box::new(Hotspot::new(cfg)), &[linearizable::NAME, set_full::NAME]).loading_hot_range();

pub struct Hotspot {
    insert_fraction: f64,
    registers: RegisterOps,
    inserts: Inserts,
    /// `None` = sequential inserts (hot-range); otherwise the bucket chooser.
    buckets: Option<KeyChooser>,
    clock: ScanClock,
    inserted: u64,
}

impl Hotspot {
    pub fn new(cfg: &WorkloadConfig) -> Hotspot {
        let buckets = match cfg.key_dist {
            KeyDist::HotRange => None,
            dist => Some(KeyChooser::new(dist, cfg.keys, cfg.celebrities)),
        };
        Hotspot {
            insert_fraction: cfg.insert_fraction,
            registers: RegisterOps::new(cfg),
            inserts: Inserts::new(&cfg.hot_prefix, cfg.set_size),
            buckets,
            clock: ScanClock::new(cfg.scan_every),
            inserted: 0,
        }
    }

    fn insert(&mut self, rng: &mut SmallRng) -> OpSpec {
        self.inserted += 1;
        match &self.buckets {
            None => self.inserts.next(""),
            Some(chooser) => {
                let infix = bucket_infix(chooser.choose(rng));
                self.inserts.next(&infix)
            }
        }
    }
}

/// The part of a bucketed insert's key that names its bucket.
fn bucket_infix(bucket: u64) -> String {
    format!("{bucket:04}/")
}

impl Workload for Hotspot {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        if self.clock.tick() {
            let infix = self.buckets.as_ref().map_or(String::new(), |b| bucket_infix(b.choose(rng)));
            return self.inserts.scan(&infix);
        }
        if rng.random_bool(self.insert_fraction) {
            self.insert(rng)
        } else {
            self.registers.next_op(rng)
        }
    }

    fn touched(&self) -> Touched {
        Touched {
            registers: self.registers.touched().clone(),
            set_ranges: self.inserts.ranges().clone(),
            ..Touched::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WorkloadKind;
    use crate::kv_ops::{Add, Cas, Read, Scan, Write};
    use rand::SeedableRng;
    use std::collections::{HashMap, HashSet};

    fn run(cfg: &WorkloadConfig, n: usize) -> Vec<OpSpec> {
        let mut w = Hotspot::new(cfg);
        let mut rng = SmallRng::seed_from_u64(cfg.seed);
        (0..n).map(|_| w.next_op(&mut rng)).collect()
    }

    fn is_write(op: &OpSpec) -> bool {
        op.call_kind() == crate::client::CallKind::Mutation
    }

    fn hot_add(op: &OpSpec) -> Option<&str> {
        op.get::<Add>().map(|a| a.key.as_str())
    }

    #[test]
    fn default_mix_puts_most_writes_into_the_hot_range() {
        let cfg = WorkloadConfig::defaults(WorkloadKind::Hotspot);
        let ops = run(&cfg, 20_000);
        let writes = ops.iter().filter(|o| is_write(o)).count();
        let hot = ops.iter().filter(|o| hot_add(o).is_some_and(|k| k.starts_with("hot/"))).count();
        let share = hot as f64 / writes as f64;
        assert!(share > 0.8, "hot share of writes {share}");
        let scans = ops.iter().filter(|o| o.get::<Scan>().is_some()).count();
        assert_eq!(scans, 20_000 / cfg.scan_every as usize);
    }

    #[test]
    fn hot_range_inserts_are_sequential_and_registers_hit_celebrities() {
        let cfg = WorkloadConfig::defaults(WorkloadKind::Hotspot);
        let ops = run(&cfg, 5_000);
        let mut last = String::new();
        let mut register_keys = HashSet::new();
        for op in &ops {
            if let Some(key) = hot_add(op) {
                assert!(key > last.as_str(), "{key} after {last}");
                last = key.to_string();
            } else if let Some(Scan { start, end }) = op.get::<Scan>() {
                assert!(start.starts_with("hot/") && start.ends_with('/'), "{start}");
                assert_eq!(end, &super::super::prefix_end(start));
            } else if op.get::<Read>().is_some() || op.get::<Write>().is_some() || op.get::<Cas>().is_some() {
                register_keys.insert(op.key().unwrap_or_default().to_string());
            } else {
                panic!("hotspot generated another kind of operation: {op:?}");
            }
        }
        let expected: HashSet<String> = (0..cfg.celebrities).map(|i| format!("reg/{i:05}")).collect();
        assert_eq!(register_keys, expected);
    }

    #[test]
    fn zipf_buckets_concentrate_inserts_and_keys_stay_unique() {
        let mut cfg = WorkloadConfig::defaults(WorkloadKind::Hotspot);
        cfg.key_dist = KeyDist::Zipf(1.2);
        cfg.seed = 11;
        let ops = run(&cfg, 20_000);
        let mut per_bucket: HashMap<String, usize> = HashMap::new();
        let mut keys = HashSet::new();
        for op in &ops {
            if let Some(key) = hot_add(op) {
                assert!(keys.insert(key.to_string()), "duplicate key {key}");
                let bucket = key.split('/').nth(1).expect("bucket").to_string();
                assert_eq!(key.split('/').count(), 4, "hot/<bucket>/<set>/<seq>: {key}");
                *per_bucket.entry(bucket).or_default() += 1;
            }
        }
        let top = per_bucket.get("0000").copied().unwrap_or(0) as f64 / keys.len() as f64;
        let tail = per_bucket.get("0063").copied().unwrap_or(0) as f64 / keys.len() as f64;
        assert!(top > 0.2 && tail < 0.01, "top {top} tail {tail}");
    }

    #[test]
    fn touched_lists_registers_and_the_hot_range() {
        let cfg = WorkloadConfig::defaults(WorkloadKind::Hotspot);
        let mut w = Hotspot::new(&cfg);
        let mut rng = SmallRng::seed_from_u64(5);
        assert!(w.touched().set_ranges.is_empty());
        for _ in 0..100 {
            w.next_op(&mut rng);
        }
        let t = w.touched();
        assert!(!t.registers.is_empty());
        assert_eq!(
            t.set_ranges.iter().next().map(|r| r.start.as_str()),
            Some("hot/000000/")
        );
    }
}
