//! # analysis — faultline's history model and checkers
//!
//! This crate is Jepsen's *checker* half of faultline. It knows what an operation history
//! is ([`history`]), how to read it from disk in faultline's own JSON Lines format and in the
//! foreign formats of Jepsen, Knossos and Porcupine ([`formats`]), and how to judge it
//! ([`checkers`]): linearizability per key, lost writes with set-full semantics, and the
//! verdict merge that produces `results.json` ([`verdict`]).
//!
//! It is deliberately pure: no async runtime, no Docker, no network. Everything here can be
//! run on a history file long after the cluster that produced it is gone.

pub mod analyze;
pub mod catalog;
pub mod checkers;
pub mod formats;
pub mod history;
pub mod objects_synth;
pub mod ops;
pub mod partitioned;
pub mod queue_synth;
pub mod synth;
pub mod txn_synth;
pub mod verdict;
pub mod zset_synth;
