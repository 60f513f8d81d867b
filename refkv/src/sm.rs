//! The deterministic state of one Raft group and how commands change it.
//!
//! Every group holds key/value data and its [`Ownership`] map; the default group also holds
//! the route [`Catalog`]. `apply` is pure apart from recording which keys changed, so the
//! storage layer can persist exactly those.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use serde::{Deserialize, Serialize};

use crate::bugs::Bugs;
use crate::catalog::{below_end, Catalog, CatalogError};
use crate::mvcc::{Cell, SnapshotRead, TxnOutcome};
use crate::ownership::{Ownership, Refusal};
use crate::types::{Cas, Command, CommandResult, Key, LogId, StoredMembership};

/// The default group: it stores the route catalog.
pub const CATALOG_GROUP: u64 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct GroupState {
    pub group: u64,
    pub last_applied: Option<LogId>,
    pub membership: StoredMembership,
    #[serde(with = "crate::keys::pairs")]
    pub kv: BTreeMap<Key, Vec<u8>>,
    pub ownership: Ownership,
    pub catalog: Option<Catalog>,
    /// Default group: the highest timestamp the oracle has reserved (`AllocTs`).
    #[serde(default)]
    pub ts_ceiling: u64,
}

/// Keys (and metadata) an apply batch changed, for write-through persistence.
#[derive(Debug, Default)]
pub struct Dirty {
    pub keys: BTreeSet<Key>,
    pub meta: bool,
}

impl GroupState {
    /// The state before the first log entry, derived from the genesis catalog.
    pub fn genesis(group: u64, catalog: &Catalog) -> GroupState {
        GroupState {
            group,
            last_applied: None,
            membership: StoredMembership::default(),
            kv: BTreeMap::new(),
            ownership: Ownership::from_catalog(catalog, group),
            catalog: (group == CATALOG_GROUP).then(|| catalog.clone()),
            ts_ceiling: 0,
        }
    }

    /// Everything but the key/value data (for persisting metadata after an apply).
    pub fn clone_meta(&self) -> GroupState {
        GroupState {
            group: self.group,
            last_applied: self.last_applied,
            membership: self.membership.clone(),
            kv: BTreeMap::new(),
            ownership: self.ownership.clone(),
            catalog: self.catalog.clone(),
            ts_ceiling: self.ts_ceiling,
        }
    }

    pub fn apply(&mut self, cmd: &Command, bugs: &Bugs, dirty: &mut Dirty) -> CommandResult {
        match cmd {
            Command::Put {
                key,
                value,
                epoch,
                cas,
            } => {
                let epoch = match self.write_allowed(key, *epoch, bugs) {
                    Ok(epoch) => epoch,
                    Err(r) => return rejected(r),
                };
                let ok = match cas {
                    None => true,
                    Some(Cas::Expect(v)) => self.kv.get(key) == Some(v),
                    Some(Cas::ExpectAbsent) => !self.kv.contains_key(key),
                };
                if ok {
                    self.kv.insert(key.clone(), value.clone());
                    dirty.keys.insert(key.clone());
                }
                CommandResult::Written { applied: ok, epoch }
            }
            Command::Delete { key, epoch } => match self.write_allowed(key, *epoch, bugs) {
                Ok(epoch) => {
                    let existed = self.kv.remove(key).is_some();
                    dirty.keys.insert(key.clone());
                    CommandResult::Written {
                        applied: existed,
                        epoch,
                    }
                }
                Err(r) => rejected(r),
            },
            Command::Split {
                expected_version,
                route_id,
                split_key,
                target_group,
                now_ms,
            } => CommandResult::Split(self.catalog_change(dirty, |c| {
                c.split(
                    *expected_version,
                    *route_id,
                    split_key,
                    *target_group,
                    *now_ms,
                )
            })),
            Command::StartMigration {
                expected_version,
                route_id,
                split_key,
                target_group,
                now_ms,
            } => CommandResult::Split(self.catalog_change(dirty, |c| {
                c.start_migration(
                    *expected_version,
                    *route_id,
                    split_key,
                    *target_group,
                    *now_ms,
                )
            })),
            Command::JobStep {
                job_id,
                from,
                to,
                error,
                now_ms,
            } => CommandResult::Job(self.catalog_change(dirty, |c| {
                c.step_job(*job_id, *from, *to, error.clone(), *now_ms)
            })),
            Command::AbandonJob { job_id, now_ms } => CommandResult::Job(
                self.catalog_change(dirty, |c| c.abandon_job(*job_id, *now_ms).map(|_| ())),
            ),
            Command::RetryJob { job_id, now_ms } => {
                CommandResult::Job(self.catalog_change(dirty, |c| c.retry_job(*job_id, *now_ms)))
            }
            Command::Fence { start, end } => {
                self.ownership_change(dirty, |o| o.fence(start, end, true))
            }
            Command::Unfence { start, end } => {
                self.ownership_change(dirty, |o| o.fence(start, end, false))
            }
            Command::Own { start, end, epoch } => {
                self.ownership_change(dirty, |o| o.own(start, end, *epoch))
            }
            Command::Disown {
                start,
                end,
                new_epoch,
                new_group,
            } => self.ownership_change(dirty, |o| o.disown(start, end, *new_epoch, *new_group)),
            Command::Ingest { pairs, deletes } => {
                // A copy is only for a range this group does not serve yet: a late copy
                // from a driver that lost leadership must not overwrite live data.
                if let Some(k) = pairs
                    .iter()
                    .map(|(k, _)| k)
                    .chain(deletes.iter())
                    .find(|k| self.ownership.serves(k))
                {
                    return CommandResult::Rejected {
                        current_epoch: self
                            .ownership
                            .check_read(k, 0)
                            .err()
                            .map(|r| r.current_epoch)
                            .unwrap_or(0),
                        reason: "copy into a range this group already serves".into(),
                    };
                }
                for (k, v) in pairs {
                    self.kv.insert(k.clone(), v.clone());
                    dirty.keys.insert(k.clone());
                }
                for k in deletes {
                    self.kv.remove(k);
                    dirty.keys.insert(k.clone());
                }
                CommandResult::Done
            }
            Command::DeleteRange { start, end } => {
                let doomed: Vec<Key> = self.range(start, end).map(|(k, _)| k.clone()).collect();
                for k in doomed {
                    self.kv.remove(&k);
                    dirty.keys.insert(k);
                }
                CommandResult::Done
            }
            Command::TxnPrewrite {
                key,
                epoch,
                prewrite,
            } => {
                // Seeded bug `no-read-validation`: no write-conflict check.
                let check_conflicts = !bugs.no_read_validation;
                self.txn_change(key, *epoch, bugs, dirty, |cell| {
                    cell.prewrite(prewrite, check_conflicts)
                })
            }
            Command::TxnCommit {
                key,
                epoch,
                start_ts,
                commit_ts,
            } => {
                // Seeded bug `commit-to-old-owner`: a lock held here is taken as the
                // authority to commit it, whoever owns the key now.
                if bugs.commit_to_old_owner && self.holds_lock_of(key, *start_ts) {
                    return self.txn_change_unfenced(key, dirty, |cell| {
                        cell.commit(key, *start_ts, *commit_ts)
                    });
                }
                // Seeded bug `no-post-fence-drain`: the fenced source's lane for the locks it
                // holds, with no drain before the delta copy.
                if bugs.no_post_fence_drain
                    && self.fenced_owner_at(key, *epoch)
                    && self.holds_lock_of(key, *start_ts)
                {
                    return self.txn_change_unfenced(key, dirty, |cell| {
                        cell.commit(key, *start_ts, *commit_ts)
                    });
                }
                self.txn_change(key, *epoch, bugs, dirty, |cell| {
                    cell.commit(key, *start_ts, *commit_ts)
                })
            }
            Command::TxnRollback {
                key,
                epoch,
                start_ts,
            } => self.txn_change(key, *epoch, bugs, dirty, |cell| cell.rollback(*start_ts)),
            Command::TxnCheckPrimary {
                key,
                epoch,
                start_ts,
                now_ms,
            } => self.txn_change(key, *epoch, bugs, dirty, |cell| {
                cell.check_primary(*start_ts, *now_ms)
            }),
            Command::AllocTs { count } => {
                let first = self.ts_ceiling + 1;
                self.ts_ceiling += (*count).max(1);
                dirty.meta = true;
                CommandResult::TsRange {
                    first,
                    last: self.ts_ceiling,
                }
            }
        }
    }

    /// Runs a transactional command on `key`'s cell under the same fence as every write,
    /// and stores the cell if it changed.
    fn txn_change(
        &mut self,
        key: &[u8],
        epoch: u64,
        bugs: &Bugs,
        dirty: &mut Dirty,
        f: impl FnOnce(&mut Cell) -> TxnOutcome,
    ) -> CommandResult {
        if let Err(r) = self.write_allowed(key, epoch, bugs) {
            return rejected(r);
        }
        self.txn_change_unfenced(key, dirty, f)
    }

    /// [`Self::txn_change`] once the fence has been passed (or, under a seeded bug, skipped).
    fn txn_change_unfenced(
        &mut self,
        key: &[u8],
        dirty: &mut Dirty,
        f: impl FnOnce(&mut Cell) -> TxnOutcome,
    ) -> CommandResult {
        let Ok(mut cell) = Cell::decode(self.kv.get(key).map(Vec::as_slice)) else {
            return CommandResult::Txn(TxnOutcome::NotTxnKey);
        };
        let before = cell.clone();
        let outcome = f(&mut cell);
        if cell != before {
            self.kv.insert(key.to_vec(), cell.encode());
            dirty.keys.insert(key.to_vec());
        }
        CommandResult::Txn(outcome)
    }

    /// Whether this group owns `key` at `epoch` with writes fenced (a move past FENCE, before
    /// its cutover).
    fn fenced_owner_at(&self, key: &[u8], epoch: u64) -> bool {
        self.ownership
            .check_read(key, epoch)
            .is_ok_and(|o| o.fenced)
    }

    /// Whether `key`'s cell holds the lock of the transaction that started at `start_ts`.
    fn holds_lock_of(&self, key: &[u8], start_ts: u64) -> bool {
        Cell::decode(self.kv.get(key).map(Vec::as_slice))
            .is_ok_and(|c| c.lock.is_some_and(|l| l.start_ts == start_ts))
    }

    /// A snapshot read of the transactional key `key` at timestamp `ts`, routed under `epoch`.
    pub fn txn_read(&self, key: &[u8], epoch: u64, ts: u64) -> Result<SnapshotRead, Refusal> {
        let stored = self.read(key, epoch)?;
        Ok(match Cell::decode(stored.as_deref()) {
            Ok(cell) => cell.read_at(ts),
            Err(_) => SnapshotRead::NotTxnKey,
        })
    }

    /// Runs a catalog operation (default group only); marks the metadata dirty.
    fn catalog_change<T>(
        &mut self,
        dirty: &mut Dirty,
        f: impl FnOnce(&mut Catalog) -> Result<T, CatalogError>,
    ) -> Result<T, CatalogError> {
        let catalog = self.catalog.as_mut().ok_or(CatalogError::NotCatalogGroup)?;
        dirty.meta = true;
        f(catalog)
    }

    fn ownership_change(
        &mut self,
        dirty: &mut Dirty,
        f: impl FnOnce(&mut Ownership),
    ) -> CommandResult {
        f(&mut self.ownership);
        dirty.meta = true;
        CommandResult::Done
    }

    /// The fencing rule (skipped entirely under the `no-fence` bug; under `proxy-fence` it
    /// moved to admission, see `router.rs`).
    fn write_allowed(&self, key: &[u8], epoch: u64, bugs: &Bugs) -> Result<u64, Refusal> {
        if bugs.no_fence || bugs.proxy_fence {
            return Ok(epoch);
        }
        self.ownership.check_write(key, epoch).map(|_| epoch)
    }

    /// A read of `key` under route `epoch`.
    pub fn read(&self, key: &[u8], epoch: u64) -> Result<Option<Vec<u8>>, Refusal> {
        self.ownership.check_read(key, epoch)?;
        Ok(self.kv.get(key).cloned())
    }

    /// Key/value pairs in `[start, end)`.
    pub fn range<'a>(
        &'a self,
        start: &[u8],
        end: &'a [u8],
    ) -> impl Iterator<Item = (&'a Key, &'a Vec<u8>)> + 'a {
        self.kv
            .range::<[u8], _>((Bound::Included(start), Bound::Unbounded))
            .take_while(move |(k, _)| below_end(k, end))
    }
}

fn rejected(r: Refusal) -> CommandResult {
    CommandResult::Rejected {
        current_epoch: r.current_epoch,
        reason: r.reason,
    }
}

#[cfg(test)]
#[path = "sm_tests.rs"]
mod tests;
