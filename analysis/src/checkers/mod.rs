//! The checkers: pure functions from a [`crate::history::History`] (plus options) to a
//! [`crate::verdict::CheckerResult`].
//!
//! - [`linearizable`]: per-key linearizability (register, cas-register, kv models);
//! - [`set_full`]: lost writes with Jepsen's set-full semantics;
//! - [`epoch_authority`]: single write authority per route epoch, catalog invariants;
//! - [`split`]: were auto-splits observed, timely, justified and relieving;
//! - [`vacuity`]: did the requested faults take effect and the workload reach its floor;
//! - [`stale_read`]: not a checker — the proven cause of a linearizability anomaly
//!   (stale read, read of a failed or unwritten value), added to its witness.
//! - [`crashes`]: did a server process exit while no kill fault was aimed at it.
//! - [`isolation`]: transactional isolation (Elle's list-append and rw-register).
//! - [`zset`]: Redis sorted sets (rules of elastickv's suite + whole-key linearizability).
//! - [`queue`]: an SQS FIFO-like queue (lost, duplicated, unexpected, per-group order).
//!
//! [`calls`] pairs invokes with completions and [`fault_turns`] names the faults in flight,
//! for the model checkers (`zset`, `queue`).
//!
//! [`registry`] lists them all and decides, before any runs, which judge a history.

pub mod calls;
pub mod crashes;
pub mod epoch_authority;
pub mod fault_turns;
pub mod isolation;
pub mod linearizable;
pub mod queue;
pub mod registry;
pub mod set_full;
pub mod split;
pub mod stale_read;
pub mod vacuity;
pub mod zset;
