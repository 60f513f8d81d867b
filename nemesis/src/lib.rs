//! # nemesis — faultline's fault injectors
//!
//! Jepsen's *nemesis*: network partitions (iptables inside each node's network namespace,
//! never the host's), process kills and pauses, packet loss, and forced range splits, each
//! recorded in the history as a `start-<name>` and a `stop-<name>` event
//! ([`analysis::history::FaultEvent`]) whose value names the targets and whether the fault
//! was `effective` (e.g. it cut off or killed a leader).
//!
//! The nemesis acts on a cluster through [`NodeControl`] and asks the system under test
//! questions through [`StoreControl`]; both are implemented by the harness. The [`schedule`]
//! decides when each requested fault runs.
//!
//! ## How to add a fault
//!
//! 1. Write `src/faults/<name>.rs`: a unit struct implementing [`Fault`] — its `name`
//!    (the `--nemesis` word and the `<name>` of its events), what `effective` means, its
//!    report [`faults::Style`], and `start` returning the [`faults::Started`] value (set
//!    the shared fields of [`analysis::history::FaultValue`], put the rest in a small
//!    `Serialize` struct passed to `with_facts`) with its [`faults::Undo`]. Override `stop`
//!    when healing is more than running the undo (a split waits for its job to settle;
//!    `Ctx::wait_for_job` polls the catalog for a terminal [`analysis::history::JobPhase`]).
//!    A fault that acts through the store rather than on the nodes says so with
//!    `acts_on_nodes` (it then runs on external clusters too); one that must not overlap
//!    the node faults' quiet/fault rhythm, or that lasts as long as the store takes (waits
//!    on catalog state, heals when a job settles), returns [`faults::Clock::Own`]: its
//!    `stop` runs right after `start`, and both may wait up to [`faults::Turn::budget`].
//!    Questions the fault needs to ask the store go on [`StoreControl`].
//! 2. Add one line to [`faults::REGISTRY`] (and, for the `FaultKind::NAME` shorthand, one
//!    constant beside the others).
//!
//! Nothing else changes: `--nemesis` parsing and `all`, the schedule, the vacuity guard
//! (which judges the kinds the harness ran), the report's colours and the history format
//! all read the registry or the typed event.

pub mod control;
pub mod faults;
pub mod grudge;
pub mod net;
pub mod schedule;
pub mod store_control;

#[cfg(test)]
mod event_tests;
#[cfg(test)]
mod tests;

pub use control::{NodeControl, NodeInfo};
pub use faults::{Fault, FaultKind};
pub use grudge::PartitionMode;
pub use schedule::{Nemesis, NemesisStatus};
pub use store_control::{SplitOutcome, StoreControl};
