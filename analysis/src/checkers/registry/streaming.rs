//! How a checker judges a history too large to hold in memory
//! ([`crate::partitioned`]): each checker declares one [`Streaming`] in its registry
//! entry.
//!
//! Invariant: a checker's streamed result is the result its `check` gives the whole
//! history (timings aside): a part check's parts merge to the whole, and a fold sees every
//! entry in history order.

use super::RunFacts;
use crate::history::{History, Op};
use crate::verdict::CheckerResult;

/// A check of a history cut into parts by key: each part holds every client op of some
/// key groups (keys a scan's range ties together stay in one group) and every non-client
/// entry (nemesis, watcher, lifecycle), in history order.
pub trait PartCheck {
    /// Judges one part, keeping only what the final result needs.
    fn absorb(&mut self, part: &History);
    /// The result over every part absorbed.
    fn finish(self: Box<Self>) -> CheckerResult;
}

/// A check that folds over the entries one at a time, in history order.
pub trait FoldCheck {
    fn observe(&mut self, op: &Op);
    fn finish(self: Box<Self>) -> CheckerResult;
}

/// What a checker needs of the history.
#[derive(Clone, Copy)]
pub enum Streaming {
    /// The whole history in memory at once (a cycle may cross any keys, a route's load
    /// spans its keys, ...).
    Whole,
    /// Parts by key ([`PartCheck`]), started from the run's facts.
    ByKey(fn(&RunFacts) -> Box<dyn PartCheck>),
    /// A fold ([`FoldCheck`]), started from the run's facts and its non-client entries
    /// (a history of only those: faults, catalog, node lifecycle).
    Fold(fn(&RunFacts, &History) -> Box<dyn FoldCheck>),
}
