//! The `register` workload: read / write / compare-and-set on a few keys (`--keys`,
//! default 8), checked per key with the cas-register linearizability model.

use super::keys::RegisterOps;
use super::{OpSpec, Touched, Workload};
use crate::config::WorkloadConfig;
use rand::rngs::SmallRng;
use crate::config::KeyDist;
use analysis::checkers::linearizable;

/// A few uniformly chosen keys at 200 ops/s, judged for linearizability.
pub const SPEC: super::WorkloadSpec = super::WorkloadSpec::new(|cfg| Box::new(Register::new(cfg)), &[linearizable::NAME])
    .with_defaults(|base| WorkloadConfig { key_dist: KeyDist::Uniform, keys: 8, rate: 200.0, ..base });

pub struct Register {
    ops: RegisterOps,
}

impl Register {
    pub fn new(cfg: &WorkloadConfig) -> Register {
        Register { ops: RegisterOps::new(cfg) }
    }
}

impl Workload for Register {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec {
        self.ops.next_op(rng)
    }

    fn touched(&self) -> Touched {
        Touched { registers: self.ops.touched().clone(), ..Touched::default() }
    }
}
