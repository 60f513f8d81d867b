//! Workload generators (Jepsen's *generator*): each decides the next operation a process
//! invokes. They only produce [`OpSpec`]s (each an [`Operation`]: `crate::kv_ops` for the
//! key-value ones, `crate::txn::Txn` for transactions); the processes execute and record
//! them.
//!
//! Conventions the checkers rely on:
//! - register write and cas-new values are integers unique across the whole run (a global
//!   counter), so an unobserved indeterminate write can be pruned;
//! - inserted (`add`) keys are unique, and the element is the insert's sequence number;
//! - a `scan` covers `[start, end)` with `end` empty meaning unbounded.
//!
//! The workloads are declared in one table ([`workloads!`] below): each line names a
//! module whose `SPEC` ([`WorkloadSpec`]) says, together, how the workload's defaults
//! differ from the common ones, how its generator is built and which checkers judge its
//! operations. `--workload`, `test.json`, the targets that support it and the checkers
//! that judge it all follow from that declaration, so a workload on existing ops is its
//! file plus one line here.

pub mod combinators;
pub mod keys;
pub mod txns;

use crate::client::ClientCapability;
use crate::config::WorkloadConfig;
use rand::rngs::SmallRng;
use std::collections::BTreeSet;

pub use crate::operation::{OpSpec, Operation};

/// The key ranges a set-style workload scans: `[start, end)`, empty end = unbounded.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ScanRange {
    pub start: String,
    pub end: String,
}

impl ScanRange {
    /// Every key that starts with `prefix`.
    pub fn prefix(prefix: &str) -> ScanRange {
        ScanRange { start: prefix.to_string(), end: prefix_end(prefix) }
    }
}

/// The smallest string greater than every string starting with `prefix` (empty if none,
/// i.e. unbounded).
pub fn prefix_end(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    while let Some(last) = bytes.pop() {
        if last < 0x7f {
            bytes.push(last + 1);
            return String::from_utf8_lossy(&bytes).into_owned();
        }
    }
    String::new()
}

/// What the final reads must read: every register key touched, every set range, and every
/// key a transaction touched (read back by a one-read transaction of the workload's shape).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Touched {
    pub registers: BTreeSet<String>,
    pub set_ranges: BTreeSet<ScanRange>,
    /// Keys of list-append transactions.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub lists: BTreeSet<String>,
    /// Keys of rw-register transactions.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub txn_registers: BTreeSet<String>,
}

/// A generator of operations. One instance serves all processes (behind a lock), so
/// counters it keeps are global to the run.
pub trait Workload: Send {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec;
    /// Keys and ranges the operations generated so far touched.
    fn touched(&self) -> Touched;
}

/// A workload, declared once: its defaults, its generator and the checkers that judge it.
pub struct WorkloadSpec {
    /// The common defaults ([`WorkloadConfig::defaults`]) adjusted for this workload.
    pub defaults: fn(WorkloadConfig) -> WorkloadConfig,
    /// The run's generator, from its resolved configuration.
    pub build: fn(&WorkloadConfig) -> Box<dyn Workload>,
    /// The checkers (`analysis::checkers::*::NAME`) that judge its client operations; the
    /// run-level ones (vacuity, epoch-authority, split, crashes) apply by what the store
    /// reports, whatever the workload.
    pub checkers: &'static [&'static str],
    /// It loads one hot range under `hot_prefix` so that a store's auto-splitter should
    /// split it: only targets that split ranges support it, and with auto-split on the split
    /// checker expects splits and judges them against the hot prefix.
    pub hot_range: bool,
    /// Its operations are transactions (`crate::txn::Txn`): only a client that can run one
    /// ([`crate::client::KvTarget::transactional`]) serves it.
    pub transactional: bool,
}

impl WorkloadSpec {
    /// The client capabilities its operations need (a target supports the workload only
    /// through a protocol whose client has every one).
    pub fn needs(&self) -> &'static [ClientCapability] {
        if self.transactional {
            &[ClientCapability::Txn]
        } else {
            &[]
        }
    }
}

/// Declares the workloads: each line is `Variant "name" in module`, the module
/// (`generators/<module>.rs`) holding `pub const SPEC: WorkloadSpec`.
macro_rules! workloads {
    ($($variant:ident $name:literal in $module:ident,)*) => {
        $(pub mod $module;)*

        crate::named_enum! {
            /// Which workload to run (`--workload`).
            pub enum WorkloadKind "workload" {
                $($variant = $name,)*
            }
        }

        impl WorkloadKind {
            /// The workload's declaration.
            pub fn spec(self) -> &'static WorkloadSpec {
                match self {
                    $(WorkloadKind::$variant => &$module::SPEC,)*
                }
            }
        }
    };
}

workloads! {
    Hotspot "hotspot" in hotspot,
    Register "register" in register,
    Set "set" in set,
    ReadHeavy "read-heavy" in read_heavy,
    Append "append" in append,
    RwRegister "rw-register" in rw_register,
}

/// The generator `cfg` asks for.
pub fn build(cfg: &WorkloadConfig) -> Box<dyn Workload> {
    (cfg.workload.spec().build)(cfg)
}

/// Counts operations and says when the next periodic scan is due.
#[derive(Debug, Clone)]
pub(crate) struct ScanClock {
    every: u64,
    count: u64,
}

impl ScanClock {
    pub(crate) fn new(every: u64) -> ScanClock {
        ScanClock { every, count: 0 }
    }

    /// Advances by one operation; true when this operation should be a scan.
    #[allow(clippy::manual_is_multiple_of)] // is_multiple_of is newer than the workspace's MSRV
    pub(crate) fn tick(&mut self) -> bool {
        self.count += 1;
        self.every != 0 && self.count % self.every == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_is_the_next_string_after_the_prefix() {
        assert_eq!(prefix_end("hot/"), "hot0");
        assert_eq!(prefix_end("a"), "b");
        assert_eq!(prefix_end(""), "");
        assert_eq!(prefix_end("a\x7f"), "b");
    }

    #[test]
    fn scan_clock_fires_every_n_and_never_at_zero() {
        let mut c = ScanClock::new(3);
        let fired: Vec<bool> = (0..7).map(|_| c.tick()).collect();
        assert_eq!(fired, vec![false, false, true, false, false, true, false]);
        let mut never = ScanClock::new(0);
        assert!((0..100).all(|_| !never.tick()));
    }
}
