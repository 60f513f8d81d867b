//! The `zset` workload: Redis sorted sets, the shape of elastickv's own zset safety
//! workload. Over `--keys` sorted sets (default 1) under `zset/` and a fixed universe of
//! 16 members, so contention stays high: 35 % `ZADD` (score −100..99), 20 % `ZINCRBY`
//! (delta −10..9), 10 % `ZREM`, 25 % `ZRANGE 0 -1 WITHSCORES`, 10 % `ZRANGEBYSCORE`
//! over a random inclusive score window. Judged by the `zset` checker; the final reads are
//! one `ZRANGE` of every set. Only targets whose client has sorted sets support it.
//!
//! Invariant: every key an operation named is in [`Workload::touched`] (kind `zsets`), so
//! the final reads cover every set written.

use super::{OpSpec, Touched, Workload, WorkloadSpec};
use crate::client::ClientCapability;
use crate::config::{KeyDist, WorkloadConfig};
use crate::zset::{ZsetCall, ZsetOp};
use analysis::checkers::zset;
use rand::rngs::SmallRng;
use rand::RngExt;
use std::collections::BTreeSet;

pub const SPEC: WorkloadSpec = WorkloadSpec::new(|cfg| Box::new(Zsets::new(cfg)), &[zset::NAME])
    .with_defaults(|base| WorkloadConfig {
        key_dist: KeyDist::Uniform,
        keys: 1,
        celebrities: 1,
        register_prefix: "zset/".into(),
        rate: 200.0,
        ..base
    })
    .needing(&[ClientCapability::Zset]);

/// Members per set: few, so that calls on one member often overlap.
const MEMBERS: u32 = 16;
/// The name `test.json` records the sets under.
const TOUCHED_KIND: &str = "zsets";

pub struct Zsets {
    keys: Vec<String>,
    touched: BTreeSet<String>,
}

impl Zsets {
    pub fn new(cfg: &WorkloadConfig) -> Zsets {
        Zsets {
            keys: (0..cfg.keys.max(1))
                .map(|n| format!("{}{n}", cfg.register_prefix))
                .collect(),
            touched: BTreeSet::new(),
        }
    }

    fn next_call(rng: &mut SmallRng) -> ZsetCall {
        let member = format!("m{}", rng.random_range(0..MEMBERS));
        let roll: f64 = rng.random();
        match roll {
            r if r < 0.35 => ZsetCall::Add {
                member,
                score: rng.random_range(-100..100),
            },
            r if r < 0.55 => ZsetCall::IncrBy {
                member,
                delta: rng.random_range(-10..10),
            },
            r if r < 0.65 => ZsetCall::Rem { member },
            r if r < 0.90 => ZsetCall::Range,
            _ => {
                let (a, b) = (rng.random_range(-100..100), rng.random_range(-100..100));
                ZsetCall::RangeByScore {
                    lo: a.min(b),
                    hi: a.max(b),
                }
            }
        }
    }
}

impl Workload for Zsets {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        let key = self.keys[rng.random_range(0..self.keys.len())].clone();
        self.touched.insert(key.clone());
        OpSpec::new(ZsetOp {
            key,
            call: Zsets::next_call(rng),
        })
    }

    fn touched(&self) -> Touched {
        Touched::of_kind(TOUCHED_KIND, self.touched.clone())
    }

    /// One whole read of every set an operation named.
    fn final_ops(&self) -> Vec<OpSpec> {
        self.touched
            .iter()
            .map(|key| {
                OpSpec::new(ZsetOp {
                    key: key.clone(),
                    call: ZsetCall::Range,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_mix_has_every_call_and_the_final_reads_cover_every_set() {
        let cfg = WorkloadConfig {
            keys: 3,
            ..(SPEC.defaults)(WorkloadConfig::default())
        };
        let mut gen = Zsets::new(&cfg);
        let mut rng = SmallRng::seed_from_u64(5);
        let mut fs = BTreeSet::new();
        for _ in 0..2000 {
            fs.insert(gen.next_op(&mut rng).f());
        }
        assert_eq!(
            fs.into_iter().collect::<Vec<_>>(),
            ["zadd", "zincrby", "zrange", "zrangebyscore", "zrem"]
        );
        let finals = gen.final_ops();
        assert_eq!(finals.len(), 3);
        assert!(finals.iter().all(|op| op.f() == "zrange"));
        assert_eq!(gen.touched().kind(TOUCHED_KIND).len(), 3);
    }
}
