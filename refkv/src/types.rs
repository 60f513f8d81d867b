//! Raft type configuration and the commands replicated through every group's log.
//!
//! One log format serves all groups: data groups apply key/value commands and the
//! ownership commands the move-job driver sends them; the default group (1) also applies
//! catalog commands (splits, job phase steps).

use std::io::Cursor;

use serde::{Deserialize, Serialize};

use crate::catalog::{CatalogError, JobPhase, SplitOutcome};
use crate::mvcc::{Prewrite, TxnOutcome};

pub use crate::keys::Key;

openraft::declare_raft_types!(
    /// refkv's openraft type configuration.
    pub TypeConfig:
        D = Command,
        R = CommandResult,
);

pub type NodeId = u64;
pub type Raft = openraft::Raft<TypeConfig>;
pub type LogId = openraft::LogId<NodeId>;
pub type Entry = openraft::Entry<TypeConfig>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type StoredMembership = openraft::StoredMembership<NodeId, openraft::BasicNode>;
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, openraft::BasicNode>;

/// Compare-and-set condition of a put.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Cas {
    Expect(Vec<u8>),
    ExpectAbsent,
}

/// A replicated command.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Command {
    /// Client put, routed under route `epoch`.
    Put {
        key: Key,
        value: Vec<u8>,
        epoch: u64,
        cas: Option<Cas>,
    },
    /// Client delete, routed under route `epoch`.
    Delete { key: Key, epoch: u64 },
    /// Catalog (default group only): split a route (`SplitRange`; a cross-group target is
    /// the deprecated alias of `StartMigration`).
    Split {
        expected_version: u64,
        route_id: u64,
        split_key: Key,
        target_group: u64,
        now_ms: i64,
    },
    /// Catalog (default group only): `StartSplitMigration`.
    StartMigration {
        expected_version: u64,
        route_id: u64,
        split_key: Key,
        target_group: u64,
        now_ms: i64,
    },
    /// Catalog (default group only): `AbandonSplitJob`.
    AbandonJob { job_id: u64, now_ms: i64 },
    /// Catalog (default group only): `RetrySplitJob`.
    RetryJob { job_id: u64, now_ms: i64 },
    /// Catalog (default group only): advance a split job from one phase to the next.
    JobStep {
        job_id: u64,
        from: JobPhase,
        to: JobPhase,
        error: Option<String>,
        now_ms: i64,
    },
    /// Data group: reject writes to `[start, end)` (the range is about to move).
    Fence { start: Key, end: Key },
    /// Data group: accept writes to `[start, end)` again (an abandoned move).
    Unfence { start: Key, end: Key },
    /// Data group: this group owns `[start, end)` from `epoch` on (the target at cutover).
    Own { start: Key, end: Key, epoch: u64 },
    /// Data group: `[start, end)` now belongs to `new_group` under `new_epoch` (the source at
    /// cutover).
    Disown {
        start: Key,
        end: Key,
        new_epoch: u64,
        new_group: u64,
    },
    /// Data group: copy of moved data (no ownership check: the range is not yet served here).
    Ingest {
        pairs: Vec<(Key, Vec<u8>)>,
        deletes: Vec<Key>,
    },
    /// Data group: drop every key in `[start, end)` (cleanup of a moved or abandoned copy).
    DeleteRange { start: Key, end: Key },
    /// Transaction (`txn.rs`): lock `key` for a transaction, routed under route `epoch`.
    TxnPrewrite {
        key: Key,
        epoch: u64,
        prewrite: Prewrite,
    },
    /// Transaction: turn the lock of the transaction `start_ts` at `key` into a version.
    TxnCommit {
        key: Key,
        epoch: u64,
        start_ts: u64,
        commit_ts: u64,
    },
    /// Transaction: roll the transaction `start_ts` back at `key`.
    TxnRollback { key: Key, epoch: u64, start_ts: u64 },
    /// Transaction: the fate of the transaction `start_ts` whose primary is `key`, rolling it
    /// back if its lock expired by `now_ms` (the caller's clock, so apply stays deterministic).
    TxnCheckPrimary {
        key: Key,
        epoch: u64,
        start_ts: u64,
        now_ms: i64,
    },
    /// Default group: reserve the next `count` timestamps of the timestamp oracle.
    AllocTs { count: u64 },
}

/// The outcome of applying a [`Command`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum CommandResult {
    /// Blank and membership entries.
    None,
    /// A put/delete passed the ownership check; `applied` is false for a failed CAS.
    Written {
        applied: bool,
        epoch: u64,
    },
    /// The epoch fence rejected the write: the key is not served here under that epoch.
    Rejected {
        current_epoch: u64,
        reason: String,
    },
    Split(Result<SplitOutcome, CatalogError>),
    Job(Result<(), CatalogError>),
    Done,
    /// A transactional command passed the fence; what it found or did at the key.
    Txn(TxnOutcome),
    /// Timestamps `first..=last` are reserved for the oracle's leader.
    TsRange {
        first: u64,
        last: u64,
    },
}
