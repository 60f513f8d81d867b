//! # nemesis — faultline's fault injectors
//!
//! Jepsen's *nemesis*: network partitions (iptables inside each node's network namespace,
//! never the host's), process kills and pauses, packet loss, and forced range splits, each
//! recorded in the history as a `start-<kind>` and a `stop-<kind>` event whose value names
//! the targets and whether the fault was `effective` (e.g. it cut off or killed a leader).
//!
//! The nemesis acts on a cluster through [`NodeControl`] and asks the system under test
//! questions through [`Oracle`]; both are implemented by the harness.

pub mod control;
pub mod faults;
pub mod grudge;
pub mod net;
pub mod oracle;
pub mod schedule;

#[cfg(test)]
mod tests;

pub use control::{NodeControl, NodeInfo};
pub use faults::FaultKind;
pub use grudge::PartitionMode;
pub use oracle::{Oracle, SplitOutcome};
pub use schedule::{Nemesis, NemesisStatus};
