//! Key choice (`--key-dist`) and the register-op mix shared by the `register` and
//! `hotspot` workloads.

use super::OpSpec;
use crate::config::{KeyDist, WorkloadConfig};
use crate::kv_ops::{Cas, Read, Write};
use rand::rngs::SmallRng;
use rand::RngExt;
use rand_distr::{Distribution, Zipf};
use std::collections::{BTreeSet, HashMap};

/// Picks an index in `0..n` according to a key distribution. Index 0 is the hottest.
#[derive(Debug, Clone)]
pub struct KeyChooser {
    n: u64,
    celebrities: u64,
    mode: Mode,
}

#[derive(Debug, Clone)]
enum Mode {
    Uniform,
    Zipf(Zipf<f64>),
    Celebrity(f64),
}

impl KeyChooser {
    /// `hot-range` maps to "always a celebrity" here: in that mode the register ops go to
    /// the celebrity keys while the inserts carry the range's heat.
    pub fn new(dist: KeyDist, n: u64, celebrities: u64) -> KeyChooser {
        let n = n.max(1);
        let celebrities = celebrities.clamp(1, n);
        let mode = match dist {
            KeyDist::Uniform => Mode::Uniform,
            KeyDist::Zipf(s) => match Zipf::new(n as f64, s) {
                Ok(z) => Mode::Zipf(z),
                // Unreachable for validated configs (n ≥ 1, s > 0); degrade to uniform.
                Err(_) => Mode::Uniform,
            },
            KeyDist::Celebrity(p) => Mode::Celebrity(p),
            KeyDist::HotRange => Mode::Celebrity(1.0),
        };
        KeyChooser {
            n,
            celebrities,
            mode,
        }
    }

    pub fn choose(&self, rng: &mut SmallRng) -> u64 {
        match &self.mode {
            Mode::Uniform => rng.random_range(0..self.n),
            Mode::Zipf(z) => (z.sample(rng) as u64).clamp(1, self.n) - 1,
            Mode::Celebrity(p) => {
                if self.celebrities >= self.n || rng.random_bool(*p) {
                    rng.random_range(0..self.celebrities)
                } else {
                    rng.random_range(self.celebrities..self.n)
                }
            }
        }
    }
}

/// Generates read / write / cas on a fixed set of register keys with globally unique
/// written values. A cas expects the last value *generated* for its key, so it succeeds
/// when no other write to that key landed in between, and fails otherwise: both outcomes
/// occur.
#[derive(Debug, Clone)]
pub struct RegisterOps {
    prefix: String,
    chooser: KeyChooser,
    read_fraction: f64,
    cas_fraction: f64,
    next_value: i64,
    last_value: HashMap<u64, i64>,
    touched: BTreeSet<String>,
}

impl RegisterOps {
    pub fn new(cfg: &WorkloadConfig) -> RegisterOps {
        RegisterOps {
            prefix: cfg.register_prefix.clone(),
            chooser: KeyChooser::new(cfg.key_dist, cfg.keys, cfg.celebrities),
            read_fraction: cfg.read_fraction,
            cas_fraction: cfg.cas_fraction,
            next_value: 1,
            last_value: HashMap::new(),
            touched: BTreeSet::new(),
        }
    }

    pub fn key_name(&self, index: u64) -> String {
        format!("{}{index:05}", self.prefix)
    }

    pub fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        let index = self.chooser.choose(rng);
        let key = self.key_name(index);
        self.touched.insert(key.clone());
        let roll: f64 = rng.random();
        if roll < self.read_fraction {
            return OpSpec::new(Read { key });
        }
        let value = self.next_value;
        self.next_value += 1;
        let previous = self.last_value.insert(index, value);
        match previous {
            Some(expected) if roll < self.read_fraction + self.cas_fraction => OpSpec::new(Cas {
                key,
                expected,
                new: value,
            }),
            _ => OpSpec::new(Write { key, value }),
        }
    }

    pub fn touched(&self) -> &BTreeSet<String> {
        &self.touched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WorkloadKind;
    use rand::SeedableRng;

    fn histogram(dist: KeyDist, n: u64, celebs: u64, samples: usize) -> Vec<usize> {
        let chooser = KeyChooser::new(dist, n, celebs);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut counts = vec![0; n as usize];
        for _ in 0..samples {
            counts[chooser.choose(&mut rng) as usize] += 1;
        }
        counts
    }

    #[test]
    fn uniform_spreads_evenly() {
        let h = histogram(KeyDist::Uniform, 10, 1, 100_000);
        assert!(h.iter().all(|&c| (9_000..11_000).contains(&c)), "{h:?}");
    }

    #[test]
    fn zipf_is_decreasing_with_the_expected_head_share() {
        let h = histogram(KeyDist::Zipf(1.0), 100, 1, 200_000);
        // Rank 1's share for s = 1, n = 100 is 1 / H(100) ≈ 0.193.
        let head = h[0] as f64 / 200_000.0;
        assert!((0.18..0.21).contains(&head), "head share {head}");
        assert!(
            h[0] > h[1] && h[1] > h[4] && h[4] > h[20] && h[20] > h[90],
            "{h:?}"
        );
    }

    #[test]
    fn celebrity_sends_the_fraction_to_the_celebrities() {
        let h = histogram(KeyDist::Celebrity(0.8), 20, 2, 100_000);
        let celeb: usize = h[..2].iter().sum();
        let share = celeb as f64 / 100_000.0;
        assert!((0.79..0.81).contains(&share), "celebrity share {share}");
        assert!(h[2..].iter().all(|&c| c > 0));
    }

    #[test]
    fn hot_range_register_ops_only_touch_celebrities() {
        let h = histogram(KeyDist::HotRange, 20, 3, 10_000);
        assert!(h[3..].iter().all(|&c| c == 0));
        assert!(h[..3].iter().all(|&c| c > 2_000));
    }

    #[test]
    fn register_values_are_unique_and_cas_expects_the_last_generated_value() {
        let cfg = WorkloadConfig::defaults(WorkloadKind::Register);
        let mut ops = RegisterOps::new(&cfg);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut seen = std::collections::HashSet::new();
        let mut last: HashMap<String, i64> = HashMap::new();
        let (mut reads, mut writes, mut cases) = (0, 0, 0);
        for _ in 0..10_000 {
            let op = ops.next_op(&mut rng);
            if op.get::<Read>().is_some() {
                reads += 1;
            } else if let Some(Write { key, value }) = op.get::<Write>() {
                writes += 1;
                assert!(seen.insert(*value), "duplicate value {value}");
                last.insert(key.clone(), *value);
            } else if let Some(Cas { key, expected, new }) = op.get::<Cas>() {
                cases += 1;
                assert!(seen.insert(*new), "duplicate value {new}");
                assert_eq!(last.get(key), Some(expected));
                last.insert(key.clone(), *new);
            } else {
                panic!("unexpected {op:?}");
            }
        }
        // 50% reads, 25% cas (minus a handful of first-touch writes), 25% writes.
        assert!((4_800..5_200).contains(&reads), "reads {reads}");
        assert!((2_300..2_700).contains(&cases), "cas {cases}");
        assert!((2_300..2_800).contains(&writes), "writes {writes}");
        assert_eq!(ops.touched().len(), 8);
    }
}
