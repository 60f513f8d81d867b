//! Why a read of one key cannot be linearized, when the history alone proves it.
//!
//! A read R that returned v is a **proven stale read** when every write that could have
//! put v there (each write of v that did not fail and was invoked before R completed, and
//! the initial value if it is v) is followed by an acknowledged write O of another value,
//! invoked after that write was acknowledged and acknowledged before R was invoked. Then O
//! lies between the write and R in every linearization, so R would have to read O's value
//! or a later one: no order allows R. An unacknowledged (unknown-outcome) write of v may
//! take effect at any time, so it is never proven overwritten and prevents the claim.
//!
//! The two other causes named here are just as certain: a read of a value whose only
//! writes failed (`read-of-failed-write`, a misclassified error or a store bug), and a read
//! of a value no op wrote and the key did not start with (`read-of-unwritten-value`).
//! Anything else gets no cause: the search's witness stands alone.

use super::key_ops::{KeyOps, Outcome, Read, Write};
use serde_json::Value;

/// What put the value a stale read returned there.
#[derive(Debug, Clone, Copy)]
pub enum Source<'k, 'h> {
    Initial,
    Write(&'k Write<'h>),
}

/// A proven stale read, with the write that overwrote its value before it was invoked.
#[derive(Debug, Clone)]
pub struct Stale<'k, 'h> {
    pub read: &'k Read<'h>,
    /// The write of the value read that was overwritten last (the most charitable one).
    pub source: Source<'k, 'h>,
    /// The acknowledged write the read missed: the earliest-acknowledged write of another
    /// value that is ordered after `source` and was acknowledged before the read's invoke.
    pub missed: &'k Write<'h>,
}

/// What the history says a read's value came from.
#[derive(Debug, Clone)]
pub enum Cause<'k, 'h> {
    StaleRead(Stale<'k, 'h>),
    ReadOfFailedWrite {
        read: &'k Read<'h>,
        failed: &'k Write<'h>,
    },
    ReadOfUnwrittenValue {
        read: &'k Read<'h>,
    },
}

impl Cause<'_, '_> {
    pub fn name(&self) -> &'static str {
        match self {
            Cause::StaleRead(_) => super::STALE_READ_CAUSE,
            Cause::ReadOfFailedWrite { .. } => "read-of-failed-write",
            Cause::ReadOfUnwrittenValue { .. } => "read-of-unwritten-value",
        }
    }
}

/// The earliest-acknowledged write of a value other than `value`, invoked after `after`
/// (`None` = from the start), acknowledged before `before`.
fn earliest_overwrite<'k, 'h>(
    ops: &'k KeyOps<'h>,
    value: &Value,
    after: Option<u64>,
    before: u64,
) -> Option<&'k Write<'h>> {
    ops.writes
        .iter()
        .filter(|o| &o.value != value && after.is_none_or(|a| o.invoke.time > a))
        .filter_map(|o| o.ack_time().filter(|&t| t < before).map(|t| (t, o)))
        .min_by_key(|(t, o)| (*t, o.invoke.index))
        .map(|(_, o)| o)
}

/// The cause of `read`'s value, if the history proves one.
pub fn cause_of<'k, 'h>(
    ops: &'k KeyOps<'h>,
    initial: &Value,
    read: &'k Read<'h>,
) -> Option<Cause<'k, 'h>> {
    let value = read.value();
    let same_value = || ops.writes.iter().filter(move |w| &w.value == value);
    let sources: Vec<Source> = same_value()
        .filter(|w| w.outcome != Outcome::Failed && w.invoke.time < read.done.time)
        .map(Source::Write)
        .chain((value == initial).then_some(Source::Initial))
        .collect();
    if sources.is_empty() {
        return Some(match same_value().find(|w| w.outcome == Outcome::Failed) {
            Some(failed) => Cause::ReadOfFailedWrite { read, failed },
            None => Cause::ReadOfUnwrittenValue { read },
        });
    }
    let mut charitable: Option<(Source, &Write)> = None;
    for source in sources {
        let after = match source {
            Source::Initial => None,
            Source::Write(w) => Some(w.ack_time()?),
        };
        let missed = earliest_overwrite(ops, value, after, read.invoke.time)?;
        if charitable.is_none_or(|(_, m)| missed.ack_time() > m.ack_time()) {
            charitable = Some((source, missed));
        }
    }
    let (source, missed) = charitable?;
    Some(Cause::StaleRead(Stale {
        read,
        source,
        missed,
    }))
}

/// Acknowledged writes of `ops` acknowledged in `[from, to)`.
pub fn acked_between(ops: &KeyOps<'_>, from: u64, to: u64) -> usize {
    ops.writes
        .iter()
        .filter_map(Write::ack_time)
        .filter(|t| (from..to).contains(t))
        .count()
}

/// The last write acknowledged before `time`.
pub fn last_acked_before<'k, 'h>(ops: &'k KeyOps<'h>, time: u64) -> Option<&'k Write<'h>> {
    ops.writes
        .iter()
        .filter_map(|w| w.ack_time().filter(|&t| t < time).map(|t| (t, w)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, w)| w)
}
