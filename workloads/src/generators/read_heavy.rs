//! The `read-heavy` workload: the register workload's operations (read / write /
//! compare-and-set with unique values) as a read-mostly service sees them — 90 % reads,
//! 5 % writes, 5 % compare-and-sets over 32 uniformly chosen keys at 500 ops/s — judged per
//! key for linearizability. Many reads between rare writes are where a store that serves
//! stale reads (a deposed leader, a lagging follower) shows it.
//!
//! Invariant: only the defaults differ from `register`; the generator is the register one,
//! so every history convention (unique write values, keys absent at the start) holds.

use super::register::Register;
use super::WorkloadSpec;
use crate::config::{KeyDist, WorkloadConfig};
use analysis::checkers::linearizable;

pub const SPEC: WorkloadSpec = WorkloadSpec::new(|cfg| Box::new(Register::new(cfg)), &[linearizable::NAME]).with_defaults(|base| {
    WorkloadConfig { key_dist: KeyDist::Uniform, keys: 32, read_fraction: 0.9, cas_fraction: 0.05, rate: 500.0, ..base }
});

#[cfg(test)]
mod tests {
    use crate::config::{WorkloadConfig, WorkloadKind};
    use crate::generators::{build, OpSpec};
    use crate::kv_ops::{Cas, Read, Write};
    use rand::SeedableRng;

    #[test]
    fn nine_in_ten_ops_are_reads_of_uniform_keys() {
        let cfg = WorkloadConfig::defaults(WorkloadKind::from_name("read-heavy").expect("declared in the table"));
        cfg.validate().unwrap();
        let mut generator = build(&cfg);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let ops: Vec<OpSpec> = (0..10_000).map(|_| generator.next_op(&mut rng)).collect();
        let reads = ops.iter().filter(|o| o.get::<Read>().is_some()).count();
        let cas = ops.iter().filter(|o| o.get::<Cas>().is_some()).count();
        assert!((8_800..=9_200).contains(&reads), "{reads} reads of 10,000");
        assert!((300..=700).contains(&cas), "{cas} cas of 10,000");
        assert!(ops.iter().all(|o| o.get::<Read>().is_some() || o.get::<Write>().is_some() || o.get::<Cas>().is_some()), "register ops only");
        assert_eq!(generator.touched().registers.len(), 32, "every key of the uniform keyspace is touched");
    }
}
