//! The vocabulary of transactions held at a commit point, shared by the three parties that
//! meet there: the clients that ask a store to hold and list them (refkv's test-only
//! `TxnHold`), the `txn-move` fault that holds one and records what it did, and the
//! isolation checker that reads that record back to name the held transaction in a witness.
//!
//! Invariant: a `start-txn-move` event's facts are a serialized [`TxnMoveFacts`], written by
//! the nemesis and read by [`TxnMoveFacts::of`] — one type, so a renamed field breaks the
//! build rather than silently dropping an annotation.

use super::{FaultValue, JobFacts, SplitDetail};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A transaction a node coordinates whose locks are all in place and which has not finished
/// committing, as the store lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnInFlight {
    pub start_ts: u64,
    /// `None` until it has one.
    pub commit_ts: Option<u64>,
    pub primary: String,
    /// The keys it writes besides its primary (secondary write locks).
    pub secondary_writes: Vec<String>,
    /// Held at its hold point by a test.
    pub held: bool,
}

impl TxnInFlight {
    /// Every key it writes: its primary and its secondary writes.
    pub fn written_keys(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.primary.as_str())
            .chain(self.secondary_writes.iter().map(String::as_str))
    }
}

/// Where a held transaction stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HoldPoint {
    /// After its prewrites and commit timestamp, before its primary's commit.
    CommitPoint,
    /// After its primary's commit, before its secondaries' commits: the transaction is
    /// committed and its secondary locks are still live.
    AfterPrimaryCommit,
}

/// One request to a node's hold: each answers with the transactions the node coordinates
/// whose locks are live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldCommand {
    /// Only list.
    List,
    /// Hold the next transaction the node coordinates that writes a key besides its
    /// primary, at `at`, for at most `for_ms` milliseconds.
    Arm { for_ms: u64, at: HoldPoint },
    /// Let every held transaction go on, and disarm.
    Release,
}

/// How long a `txn-move` turn waits for a transaction to take the hold it armed.
pub const HELD_TXN_PATIENCE: Duration = Duration::from_secs(5);

/// How long before its event a `txn-move` turn may have held a transaction:
/// [`HELD_TXN_PATIENCE`] plus the move's start and the wait for the aimed phase (10 s).
pub const HELD_LEAD: Duration = Duration::from_secs(HELD_TXN_PATIENCE.as_secs() + 10);

/// What a `start-txn-move` event records beside the shared fields of [`FaultValue`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TxnMoveFacts {
    /// The aim's name (`secondary`, `primary-cutover`, ..., `coordinator-kill`).
    pub aim: String,
    /// The node that took the hold.
    pub node: Option<String>,
    /// The transaction the hold caught.
    pub txn: Option<TxnInFlight>,
    /// The key moved (the primary or a secondary write key, as the aim says).
    pub moved_key: Option<String>,
    /// The move's route, target group and job; its `phase_seen` is the job's phase when
    /// the transaction was released.
    #[serde(flatten)]
    pub job: JobFacts,
    /// The phase the aim releases at; `None` for `coordinator-kill`.
    pub release_at: Option<String>,
    /// Whether the transaction was still held when the job reached the phase.
    pub still_held: Option<bool>,
    /// The store's answer to the split that moved the key.
    pub split: Option<SplitDetail>,
    /// `coordinator-kill`: whether the node was killed with the transaction held.
    pub killed: Option<bool>,
    /// Why the turn did nothing, when it did nothing.
    pub why_not: Option<String>,
}

impl TxnMoveFacts {
    /// The facts of a `txn-move` event's value; `None` when they do not read as such (an
    /// event written by another tool), which only costs the witness its annotation.
    pub fn of(value: &FaultValue) -> Option<TxnMoveFacts> {
        value.facts_as()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> TxnInFlight {
        TxnInFlight {
            start_ts: 7,
            commit_ts: Some(9),
            primary: "a".into(),
            secondary_writes: vec!["b".into(), "c".into()],
            held: true,
        }
    }

    #[test]
    fn facts_written_into_an_event_read_back_the_same() {
        let facts = TxnMoveFacts {
            aim: "secondary".into(),
            node: Some("n1".into()),
            txn: Some(held()),
            moved_key: Some("b".into()),
            job: JobFacts {
                route_id: Some(4),
                target_group: Some(2),
                job_id: Some(11),
                phase_seen: Some("DELTA_COPY".into()),
            },
            release_at: Some("DELTA_COPY".into()),
            still_held: Some(true),
            ..TxnMoveFacts::default()
        };
        let value = FaultValue::new(vec!["n1".into()]).with_facts(&facts);
        let line = serde_json::to_string(&value.to_json()).unwrap();
        let reread: FaultValue = serde_json::from_str(&line).unwrap();
        assert_eq!(TxnMoveFacts::of(&reread), Some(facts));
    }

    #[test]
    fn facts_of_another_shape_read_as_none() {
        let value = FaultValue::new(vec![]).with_facts(serde_json::json!({"txn": "T1"}));
        assert_eq!(TxnMoveFacts::of(&value), None);
    }

    #[test]
    fn written_keys_are_the_primary_then_the_secondaries() {
        assert_eq!(held().written_keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    }
}
