//! Transactional keys: what a key written by the `Txn` RPC holds, and the pure rules of
//! Percolator-style two-phase commit applied to it (prewrite, commit, rollback, status of a
//! primary, snapshot read). The coordinator that drives them is `txn.rs`.
//!
//! A transactional key's value in the group's key/value map is one encoded [`Cell`]: its
//! committed versions, at most one lock, and the start timestamps of transactions rolled
//! back at it. Because the lock lives in the key's own value, everything that moves a range
//! moves its locks with its data (a move's BACKFILL / DELTA_COPY copy key/value pairs, a
//! same-group split leaves both in place), and every change is a Raft command applied under
//! the ownership/epoch fence like any write.
//!
//! A key's value is a list of integers: `append` adds one element, a register write (`w`)
//! replaces the list by one element, so a register is a list of at most one element.
//!
//! Invariants:
//! - `versions` are sorted by `commit_ts`; each has a distinct `start_ts`.
//! - A cell holds at most one lock; a lock is removed only by the commit or the rollback of
//!   its own transaction (`start_ts`).
//! - Once a transaction is rolled back at a key, its prewrite there is refused, so a late
//!   prewrite of a primary cannot bring back a transaction a reader already rolled back.
//! - Everything here is deterministic: it runs inside Raft apply.

use serde::{Deserialize, Serialize};

use crate::keys::Key;

/// Prefix of an encoded cell: tells a transactional key's value from a plain `RawPut` one.
pub const CELL_MAGIC: &[u8] = b"\0refkv-txn-cell\0";

/// One write of a transaction to a key, applied in order at commit.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Write {
    /// Add an element at the end of the list.
    Append(i64),
    /// Replace the list by this one element (a register write).
    Put(i64),
}

/// A committed version: what the transaction that started at `start_ts` and committed at
/// `commit_ts` did to the key.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Version {
    pub commit_ts: u64,
    pub start_ts: u64,
    pub writes: Vec<Write>,
}

/// A transaction's lock on a key between its prewrite and its commit or rollback. A lock
/// with no writes is a *read lock*: the transaction read the key and keeps others from
/// committing a write to it until it commits.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Lock {
    pub start_ts: u64,
    /// The key whose commit decides the transaction.
    pub primary: Key,
    pub writes: Vec<Write>,
    /// Wall-clock millisecond after which a reader may roll the transaction back.
    pub expires_ms: i64,
}

/// What a reader needs to resolve a lock it met.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct LockInfo {
    pub start_ts: u64,
    pub primary: Key,
    pub expires_ms: i64,
}

impl Lock {
    pub fn info(&self) -> LockInfo {
        LockInfo {
            start_ts: self.start_ts,
            primary: self.primary.clone(),
            expires_ms: self.expires_ms,
        }
    }
}

/// Everything a transactional key holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Cell {
    pub versions: Vec<Version>,
    pub lock: Option<Lock>,
    pub rollbacks: Vec<u64>,
}

/// The outcome of a transactional command at one key.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum TxnOutcome {
    /// The lock is in place (or already was: a repeated prewrite).
    Prewritten,
    /// A write committed after the transaction started: it must abort.
    WriteConflict { commit_ts: u64 },
    /// Another transaction holds the key's lock.
    Locked(LockInfo),
    /// The transaction was rolled back at this key (it can never commit here).
    RolledBack,
    /// The transaction committed at this key.
    Committed { commit_ts: u64 },
    /// Neither a lock nor a commit of the transaction is here (it was rolled back, or its
    /// prewrite never landed).
    LockMissing,
    /// The primary is still locked and its lock has not expired.
    Alive { expires_ms: i64 },
    /// The key holds a plain (non-transactional) value.
    NotTxnKey,
}

/// A snapshot read's answer: the value as of the read timestamp, or a lock that must be
/// resolved first (its transaction may commit before the read timestamp).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum SnapshotRead {
    /// `None`: never written before the read timestamp.
    Value(Option<Vec<i64>>),
    Locked(LockInfo),
    NotTxnKey,
}

/// A key holds a plain value (written by `RawPut`), not a transactional cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotTxnKey;

/// A prewrite as the coordinator sends it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Prewrite {
    pub start_ts: u64,
    pub primary: Key,
    pub writes: Vec<Write>,
    pub expires_ms: i64,
}

/// `value` after `writes`, in order (`None` = never written).
pub fn apply_writes(mut value: Option<Vec<i64>>, writes: &[Write]) -> Option<Vec<i64>> {
    for w in writes {
        match w {
            Write::Append(x) => value.get_or_insert_with(Vec::new).push(*x),
            Write::Put(x) => value = Some(vec![*x]),
        }
    }
    value
}

impl Cell {
    /// The cell a key's stored value holds: empty for an absent key, an error for a plain
    /// value (or a cell that does not decode).
    pub fn decode(stored: Option<&[u8]>) -> Result<Cell, NotTxnKey> {
        match stored {
            None => Ok(Cell::default()),
            Some(bytes) => match bytes.strip_prefix(CELL_MAGIC) {
                Some(body) => serde_json::from_slice(body).map_err(|_| NotTxnKey),
                None => Err(NotTxnKey),
            },
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = CELL_MAGIC.to_vec();
        out.extend(crate::storage_io::json(self));
        out
    }

    /// The value as of `ts`: every version committed before it, in commit order.
    pub fn value_before(&self, ts: u64) -> Option<Vec<i64>> {
        self.versions
            .iter()
            .take_while(|v| v.commit_ts < ts)
            .fold(None, |value, v| apply_writes(value, &v.writes))
    }

    /// A snapshot read at `ts`. A lock of a transaction that started before `ts` may commit
    /// before `ts`, so it must be resolved; one that started after cannot, and is ignored.
    pub fn read_at(&self, ts: u64) -> SnapshotRead {
        match &self.lock {
            Some(lock) if lock.start_ts < ts => SnapshotRead::Locked(lock.info()),
            _ => SnapshotRead::Value(self.value_before(ts)),
        }
    }

    fn committed_ts_of(&self, start_ts: u64) -> Option<u64> {
        self.versions
            .iter()
            .find(|v| v.start_ts == start_ts)
            .map(|v| v.commit_ts)
    }

    fn mark_rolled_back(&mut self, start_ts: u64) {
        if !self.rollbacks.contains(&start_ts) {
            self.rollbacks.push(start_ts);
        }
    }

    /// Places the lock of `p`. Refused when the transaction was rolled back here, another
    /// transaction holds the lock, or (with `check_conflicts`) a write committed after the
    /// transaction started — the check that makes the transaction's snapshot reads still
    /// current at its commit.
    pub fn prewrite(&mut self, p: &Prewrite, check_conflicts: bool) -> TxnOutcome {
        if self.rollbacks.contains(&p.start_ts) {
            return TxnOutcome::RolledBack;
        }
        if let Some(commit_ts) = self.committed_ts_of(p.start_ts) {
            return TxnOutcome::Committed { commit_ts };
        }
        match &self.lock {
            Some(lock) if lock.start_ts == p.start_ts => return TxnOutcome::Prewritten,
            Some(lock) => return TxnOutcome::Locked(lock.info()),
            None => {}
        }
        if check_conflicts {
            if let Some(v) = self
                .versions
                .iter()
                .rev()
                .find(|v| v.commit_ts > p.start_ts && !v.writes.is_empty())
            {
                return TxnOutcome::WriteConflict {
                    commit_ts: v.commit_ts,
                };
            }
        }
        self.lock = Some(Lock {
            start_ts: p.start_ts,
            primary: p.primary.clone(),
            writes: p.writes.clone(),
            expires_ms: p.expires_ms,
        });
        TxnOutcome::Prewritten
    }

    /// Commits the transaction's lock at `commit_ts` (idempotent). A read lock leaves no
    /// version unless the key is the transaction's primary, whose version is the record a
    /// reader resolving a secondary lock looks for.
    pub fn commit(&mut self, key: &[u8], start_ts: u64, commit_ts: u64) -> TxnOutcome {
        if let Some(commit_ts) = self.committed_ts_of(start_ts) {
            return TxnOutcome::Committed { commit_ts };
        }
        let Some(lock) = self.lock.take_if(|l| l.start_ts == start_ts) else {
            return TxnOutcome::LockMissing;
        };
        if !lock.writes.is_empty() || lock.primary == key {
            let at = self.versions.partition_point(|v| v.commit_ts < commit_ts);
            self.versions.insert(
                at,
                Version {
                    commit_ts,
                    start_ts,
                    writes: lock.writes,
                },
            );
        }
        TxnOutcome::Committed { commit_ts }
    }

    /// Rolls the transaction back at this key: its lock (if any) goes, and a later prewrite
    /// of it is refused. A committed transaction cannot be rolled back.
    pub fn rollback(&mut self, start_ts: u64) -> TxnOutcome {
        if let Some(commit_ts) = self.committed_ts_of(start_ts) {
            return TxnOutcome::Committed { commit_ts };
        }
        self.lock.take_if(|l| l.start_ts == start_ts);
        self.mark_rolled_back(start_ts);
        TxnOutcome::RolledBack
    }

    /// The fate of the transaction whose primary is this key, as a reader resolving one of
    /// its locks asks: committed, or rolled back (here and now if its lock expired by
    /// `now_ms` or its prewrite never landed), or still alive.
    pub fn check_primary(&mut self, start_ts: u64, now_ms: i64) -> TxnOutcome {
        if let Some(commit_ts) = self.committed_ts_of(start_ts) {
            return TxnOutcome::Committed { commit_ts };
        }
        match &self.lock {
            Some(lock) if lock.start_ts == start_ts && now_ms < lock.expires_ms => {
                TxnOutcome::Alive {
                    expires_ms: lock.expires_ms,
                }
            }
            _ => self.rollback(start_ts),
        }
    }

    /// The cell without its lock (seeded bug `lock-dropped-on-move`).
    pub fn without_lock(mut self) -> Cell {
        self.lock = None;
        self
    }
}

/// A stored value with any transaction lock removed, if it is a cell (seeded bug
/// `lock-dropped-on-move`: a move copies data but not locks). Plain values pass unchanged.
pub fn strip_lock(stored: Vec<u8>) -> Vec<u8> {
    match Cell::decode(Some(&stored)) {
        Ok(cell) if cell.lock.is_some() => cell.without_lock().encode(),
        _ => stored,
    }
}

#[cfg(test)]
#[path = "mvcc_tests.rs"]
mod tests;
