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
//! differ from the common ones, how its generator is built (the generator also owns its
//! final operations, [`Workload::final_ops`]), which client capabilities its operations need
//! and which checkers judge them. `--workload`, `test.json`, the targets that support it,
//! the refusal of a client that cannot serve it and the checkers that judge it all follow
//! from that declaration, so a workload on existing operations and capabilities is its file
//! plus one line here.

pub mod combinators;
pub mod keys;
pub mod txns;

use crate::client::ClientCapability;
use crate::config::WorkloadConfig;
use rand::rngs::SmallRng;
use std::collections::{BTreeMap, BTreeSet};

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
        ScanRange {
            start: prefix.to_string(),
            end: prefix_end(prefix),
        }
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

/// What the operations generated so far touched, as `test.json` records it
/// (`phases.workload.touched`): the register keys, the set ranges, and under a name of its
/// own any other kind of key a workload keeps (the transaction workloads' `lists` and
/// `txn_registers`). The default final reads ([`Workload::final_ops`]) read the registers
/// and scan the ranges; a workload with other keys reads them back itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Touched {
    pub registers: BTreeSet<String>,
    pub set_ranges: BTreeSet<ScanRange>,
    /// Other keys by kind (recorded beside `registers` and `set_ranges`, one field per
    /// kind; a kind with no key is not recorded).
    #[serde(flatten)]
    pub other: BTreeMap<String, BTreeSet<String>>,
}

impl Touched {
    /// Only `keys`, recorded under `kind` (nothing when there is no key).
    pub fn of_kind(kind: &str, keys: BTreeSet<String>) -> Touched {
        let mut t = Touched::default();
        if !keys.is_empty() {
            t.other.insert(kind.to_string(), keys);
        }
        t
    }

    /// The keys recorded under `kind` (empty if none).
    pub fn kind(&self, kind: &str) -> BTreeSet<String> {
        self.other.get(kind).cloned().unwrap_or_default()
    }

    /// Adds everything `more` touched.
    pub fn extend(&mut self, more: Touched) {
        self.registers.extend(more.registers);
        self.set_ranges.extend(more.set_ranges);
        for (kind, keys) in more.other {
            self.other.entry(kind).or_default().extend(keys);
        }
    }
}

/// A generator of operations. One instance serves all processes (behind a lock), so
/// counters it keeps are global to the run.
pub trait Workload: Send {
    fn next_op(&mut self, rng: &mut SmallRng) -> OpSpec;
    /// Keys and ranges the operations generated so far touched.
    fn touched(&self) -> Touched;
    /// The final operations (Jepsen's final generator): read-only operations that read
    /// back, after the heal, everything the operations generated so far may have written;
    /// each is run through every node, retried until it succeeds. By default a read of every
    /// register key and a scan of every set range [`Workload::touched`] names.
    fn final_ops(&self) -> Vec<OpSpec> {
        crate::final_reads::reads_of(&self.touched())
    }
}

/// A workload, declared once: its defaults, its generator (with its final operations), the
/// client capabilities its operations need and the checkers that judge it. Built with
/// [`WorkloadSpec::new`] and the `const` adjustments below, so a new declaration names only
/// what differs from the plain case.
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
    /// The client capabilities its operations need beyond the key-value calls: a target
    /// supports the workload only through a protocol whose client has every one, and a run
    /// through another protocol is refused up front.
    pub needs: &'static [ClientCapability],
}

impl WorkloadSpec {
    /// A workload with the common defaults, judged by `checkers`, that needs nothing beyond
    /// the key-value calls and loads no hot range.
    pub const fn new(
        build: fn(&WorkloadConfig) -> Box<dyn Workload>,
        checkers: &'static [&'static str],
    ) -> WorkloadSpec {
        WorkloadSpec {
            defaults: std::convert::identity,
            build,
            checkers,
            hot_range: false,
            needs: &[],
        }
    }

    /// With the common defaults adjusted by `defaults`.
    pub const fn with_defaults(
        self,
        defaults: fn(WorkloadConfig) -> WorkloadConfig,
    ) -> WorkloadSpec {
        WorkloadSpec { defaults, ..self }
    }

    /// Loading a hot range for the splitter.
    pub const fn loading_hot_range(self) -> WorkloadSpec {
        WorkloadSpec {
            hot_range: true,
            ..self
        }
    }

    /// Needing the client capabilities `needs`.
    pub const fn needing(self, needs: &'static [ClientCapability]) -> WorkloadSpec {
        WorkloadSpec { needs, ..self }
    }

    /// Whether its operations are transactions (it needs [`ClientCapability::Txn`]): their
    /// answers carry no commit metadata, and the transaction options and the isolation
    /// model apply to it.
    pub fn transactional(&self) -> bool {
        self.needs.contains(&ClientCapability::Txn)
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
    Objects "objects" in objects,
    Set "set" in set,
    ReadHeavy "read-heavy" in read_heavy,
    Append "append" in append,
    RwRegister "rw-register" in rw_register,
    Zset "zset" in zset,
    Queue "queue" in queue,
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
