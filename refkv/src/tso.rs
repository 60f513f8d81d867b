//! The timestamp oracle of transactions: one counter in the default group's state machine
//! (`GroupState::ts_ceiling`), handed out by that group's leader.
//!
//! The leader reserves a batch of timestamps through Raft (`Command::AllocTs`, which raises
//! the ceiling), then hands them out one by one from memory. Before handing one out it
//! confirms with a quorum that it still leads, in the term in which it reserved the batch
//! (`ensure_linearizable`, ReadIndex).
//!
//! Invariant (what strict serializability needs): a timestamp handed out is larger than
//! every timestamp whose hand-out finished before this request arrived, on any node.
//! Why: leadership confirmed after the request arrived, in the batch's term `T`, means no
//! leader of a later term existed when the request arrived, so every earlier hand-out came
//! from this leader (whose hand-outs only grow: a batch replaces the current one only when
//! it starts above it) or from a leader of an earlier term, whose batches were reserved
//! earlier in the log and so lie below every batch reserved in `T`. A batch never survives a
//! change of term. A restart or a leader change only loses the rest of a batch; the counter
//! never goes backwards.

use std::sync::Mutex;

use crate::exec::{linearize, write, ExecReply};
use crate::node::{GroupHandle, NodeCore};
use crate::sm::CATALOG_GROUP;
use crate::types::{Command, CommandResult};

/// Timestamps reserved per Raft round trip.
pub const BATCH: u64 = 1024;

/// How many times a request reserves a batch before giving up (each reservation is a Raft
/// write; a second one is needed only when another request exhausted the batch meanwhile).
const RESERVATIONS_PER_REQUEST: usize = 3;

/// Timestamps `next..=last`, reserved by this node as leader in `term`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Batch {
    term: u64,
    next: u64,
    last: u64,
}

/// A node's batch of reserved timestamps (used only while it leads the default group).
#[derive(Debug, Default)]
pub struct TimestampOracle {
    batch: Mutex<Option<Batch>>,
}

impl TimestampOracle {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Batch>> {
        self.batch.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The term of the batch held now, if any.
    fn held_term(&self) -> Option<u64> {
        self.lock().map(|b| b.term)
    }

    /// The next timestamp of the batch, if it was reserved in `term` and is not used up.
    fn take_in_term(&self, term: u64) -> Option<u64> {
        let mut guard = self.lock();
        let b = guard
            .as_mut()
            .filter(|b| b.term == term && b.next <= b.last)?;
        let ts = b.next;
        b.next += 1;
        Some(ts)
    }

    /// Installs the reserved batch `first..=last` unless the batch held already goes
    /// beyond it (a reservation that finished later but was made earlier).
    fn install(&self, term: u64, first: u64, last: u64) {
        let mut guard = self.lock();
        if guard.is_none_or(|b| first > b.last) {
            *guard = Some(Batch {
                term,
                next: first,
                last,
            });
        }
    }

    /// Seeded bug `ts-from-receiver`: the next timestamp of whatever batch this node holds,
    /// without asking whether it still leads (or ever led) — so nodes hand out timestamps
    /// from different batches, and a later transaction can get a smaller one.
    fn take_any(&self) -> Option<u64> {
        let mut guard = self.lock();
        let b = guard.as_mut().filter(|b| b.next <= b.last)?;
        let ts = b.next;
        b.next += 1;
        Some(ts)
    }
}

/// A timestamp from the oracle (the default group's leader), from any node.
pub async fn from_oracle(node: &NodeCore) -> Result<u64, String> {
    match node
        .execute(CATALOG_GROUP, crate::exec::ExecOp::AllocTs, false)
        .await
    {
        ExecReply::Ts { ts } => Ok(ts),
        other => Err(format!("{other:?}")),
    }
}

/// Serves `ExecOp::AllocTs` on the default group's leader.
pub async fn next_ts(node: &NodeCore, g: &GroupHandle) -> ExecReply {
    if g.id != CATALOG_GROUP {
        return ExecReply::Unavailable(format!("group {} holds no timestamp oracle", g.id));
    }
    for _ in 0..RESERVATIONS_PER_REQUEST {
        let held = node.tso.held_term();
        if let Err(reply) = linearize(node, g).await {
            return reply;
        }
        let term = g.term();
        if !g.is_leader(node.id) {
            return ExecReply::NotLeader { leader: g.leader() };
        }
        if held == Some(term) {
            if let Some(ts) = node.tso.take_in_term(term) {
                return ExecReply::Ts { ts };
            }
        }
        if let Err(reply) = reserve(node, g).await {
            return reply;
        }
    }
    ExecReply::Unavailable("timestamp batches used up by other requests; try again".into())
}

/// Reserves a batch through Raft and installs it under the term it was committed in.
async fn reserve(node: &NodeCore, g: &GroupHandle) -> Result<(), ExecReply> {
    match write(node, g, Command::AllocTs { count: BATCH }).await {
        ExecReply::Committed {
            result: CommandResult::TsRange { first, last },
            term,
            ..
        } => {
            node.tso.install(term, first, last);
            Ok(())
        }
        // A reservation whose outcome is unknown only wastes timestamps: nothing was handed out.
        ExecReply::Indeterminate(m) => Err(ExecReply::Unavailable(format!(
            "timestamp reservation: {m}"
        ))),
        other @ (ExecReply::NotLeader { .. } | ExecReply::Unavailable(_)) => Err(other),
        other => Err(ExecReply::Unavailable(format!(
            "timestamp reservation answered {other:?}"
        ))),
    }
}

/// Seeded bug `ts-from-receiver`: the node that received the transaction takes a timestamp
/// from its own batch (reserving one through the default group when it has none) instead
/// of asking the oracle's leader.
pub async fn next_ts_from_receiver(node: &NodeCore) -> ExecReply {
    if let Some(ts) = node.tso.take_any() {
        return ExecReply::Ts { ts };
    }
    match node
        .execute(
            CATALOG_GROUP,
            crate::exec::ExecOp::Write(Command::AllocTs { count: BATCH }),
            true,
        )
        .await
    {
        ExecReply::Committed {
            result: CommandResult::TsRange { first, last },
            ..
        } => {
            node.tso.install(0, first + 1, last);
            ExecReply::Ts { ts: first }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_hands_out_increasing_timestamps_in_its_own_term_only() {
        let o = TimestampOracle::default();
        assert_eq!(o.take_in_term(3), None);
        o.install(3, 10, 11);
        assert_eq!(o.held_term(), Some(3));
        assert_eq!(
            o.take_in_term(4),
            None,
            "a batch of another term is never used"
        );
        assert_eq!(
            (o.take_in_term(3), o.take_in_term(3), o.take_in_term(3)),
            (Some(10), Some(11), None)
        );
    }

    #[test]
    fn a_batch_below_the_one_held_is_never_installed() {
        let o = TimestampOracle::default();
        o.install(3, 100, 199);
        o.install(3, 50, 99);
        assert_eq!(
            o.take_in_term(3),
            Some(100),
            "the earlier reservation finished later: ignored"
        );
        o.install(4, 200, 299);
        assert_eq!((o.held_term(), o.take_in_term(4)), (Some(4), Some(200)));
    }
}
