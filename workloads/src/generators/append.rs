//! The `append` workload: Elle's list-append. Transactions of 1–4 micro-ops (`append` a
//! unique value to a key's list, or read the whole list) over 12 active keys under `la/`,
//! each retired after 128 appends; judged by the `isolation` checker (list-append, the
//! run's `--consistency-model`). Only targets whose client can run a transaction support it.

use super::txns::TxnGen;
use super::WorkloadSpec;
use crate::client::ClientCapability;
use crate::config::{KeyDist, WorkloadConfig};
use crate::txn::ReadShape;
use analysis::checkers::isolation;

pub const SPEC: WorkloadSpec = WorkloadSpec::new(|cfg| Box::new(TxnGen::new(cfg, ReadShape::List)), &[isolation::NAME])
    .with_defaults(|base| WorkloadConfig { key_dist: KeyDist::Uniform, keys: 12, register_prefix: "la/".into(), rate: 200.0, ..base })
    .needing(&[ClientCapability::Txn]);
