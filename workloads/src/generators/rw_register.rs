//! The `rw-register` workload: Elle's rw-register. Transactions of 1–4 micro-ops (write a
//! unique value to a key, or read it) over 12 active keys under `rw/`, each retired after
//! 128 writes; judged by the `isolation` checker (rw-register, the run's
//! `--consistency-model`). Only targets whose client can run a transaction support it.

use super::txns::TxnGen;
use super::WorkloadSpec;
use crate::client::ClientCapability;
use crate::config::{KeyDist, WorkloadConfig};
use crate::txn::ReadShape;
use analysis::checkers::isolation;

pub const SPEC: WorkloadSpec = WorkloadSpec::new(|cfg| Box::new(TxnGen::new(cfg, ReadShape::Register)), &[isolation::NAME])
    .with_defaults(|base| WorkloadConfig { key_dist: KeyDist::Uniform, keys: 12, register_prefix: "rw/".into(), rate: 200.0, ..base })
    .needing(&[ClientCapability::Txn]);
