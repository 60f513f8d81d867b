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
//! - [`objects`]: S3 object bodies (a read that is not one whole write's body: torn).
//!
//! [`calls`] pairs invokes with completions and [`fault_turns`] names the faults in flight,
//! for the model checkers (`zset`, `queue`).
//!
//! [`registry`] lists them all and decides, before any runs, which judge a history.

pub mod calls;
pub mod fault_turns;
pub mod registry;
pub mod stale_read;

/// Declares each checker's module (`<module>.rs` or `<module>/` beside this file, whose
/// `CHECKER` is its registry entry) and lists it, in report order, as [`registry::REGISTRY`].
macro_rules! checkers {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every checker's entry, in report order.
        const ALL: &[registry::Checker] = &[$($module::CHECKER),*];
    };
}

// Adding a checker: its module in this directory and one line here (docs/architecture.md).
checkers! {
    linearizable,
    set_full,
    isolation,
    zset,
    queue,
    objects,
    epoch_authority,
    split,
    vacuity,
    crashes,
}
