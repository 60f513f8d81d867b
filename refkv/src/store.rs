//! redb-backed storage for one Raft group: the log, vote and committed index
//! ([`LogStore`], see `logstore.rs`), and the state machine with its snapshots
//! ([`StateMachineStore`]).
//!
//! Each group has two redb files (log, state machine) so neither the groups nor a group's
//! log and state machine contend for redb's single writer. Log appends and votes are fsynced
//! (`Durability::Immediate`, group-committed) before openraft is told they are done — so a
//! vote or an entry counted towards a quorum survives `kill -9`; snapshots are fsynced too. State-machine applies commit with `Durability::None`: the state machine is a
//! cache of the durable log. Its applied index is stored in the same transaction as its
//! data, so after a crash it is a consistent prefix, and openraft re-applies the log after
//! it (entries are only purged up to a durably stored snapshot, which `open` restores when
//! it is ahead of the applied state). Every later Immediate commit on the same file makes
//! the earlier None commits durable too.

// openraft's StorageError is large by its own design; boxing it here would not help.
#![allow(clippy::result_large_err)]

use std::io::Cursor;
use std::path::Path;
use std::sync::{Arc, RwLock};

use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder, Snapshot, StorageIOError};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::bugs::Bugs;
use crate::catalog::Catalog;
pub use crate::logstore::LogStore;
use crate::sm::{Dirty, GroupState};
use crate::storage_io::{json, sio};
use crate::types::{CommandResult, Entry, LogId, SnapshotMeta, StorageError, TypeConfig};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const KV: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");
const SM_META: TableDefinition<&str, &[u8]> = TableDefinition::new("sm_meta");

/// The state shared between the state machine store and the node's request path.
pub struct Shared {
    pub state: RwLock<GroupState>,
    /// The catalog after each apply that changed it (default group only).
    pub catalog_tx: watch::Sender<Option<Arc<Catalog>>>,
}

impl Shared {
    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, GroupState> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, GroupState> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }
}

pub struct StateMachineStore {
    db: Arc<Database>,
    pub shared: Arc<Shared>,
    bugs: Bugs,
}

#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta,
    data: Vec<u8>,
}

/// Opens (or creates) the storage of `group` at `path`. `genesis` is the catalog this
/// cluster was bootstrapped with; a data dir created with a different one is refused.
pub fn open(
    dir: &Path,
    group: u64,
    genesis: &Catalog,
    bugs: Bugs,
) -> anyhow::Result<(LogStore, StateMachineStore)> {
    let log = LogStore::open(&dir.join(format!("group-{group}-log.redb")))?;
    let path = &dir.join(format!("group-{group}-sm.redb"));
    let db =
        Database::create(path).map_err(|e| anyhow::anyhow!("opening {}: {e}", path.display()))?;
    let db = Arc::new(db);
    let txn = db.begin_write()?;
    {
        txn.open_table(KV)?;
        txn.open_table(SM_META)?;
        let mut meta = txn.open_table(META)?;
        let want = json(genesis);
        let stored = meta.get("genesis")?.map(|v| v.value().to_vec());
        match stored {
            Some(stored) if stored != want => anyhow::bail!(
                "{} was bootstrapped with a different catalog genesis (--groups / initial splits); refusing to start",
                path.display()
            ),
            Some(_) => {}
            None => {
                meta.insert("genesis", want.as_slice())?;
            }
        }
    }
    txn.commit()?;
    let state = load_state(&db, group, genesis)?;
    let catalog = state.catalog.clone().map(Arc::new);
    let (catalog_tx, _) = watch::channel(catalog);
    let shared = Arc::new(Shared {
        state: RwLock::new(state),
        catalog_tx,
    });
    let mut sm = StateMachineStore {
        db: db.clone(),
        shared,
        bugs,
    };
    sm.restore_snapshot_if_ahead()?;
    Ok((log, sm))
}

fn load_state(db: &Database, group: u64, genesis: &Catalog) -> anyhow::Result<GroupState> {
    let txn = db.begin_read()?;
    let meta = txn.open_table(SM_META)?;
    let Some(ownership) = meta.get("ownership")? else {
        return Ok(GroupState::genesis(group, genesis));
    };
    let mut state = GroupState::genesis(group, genesis);
    state.ownership = serde_json::from_slice(ownership.value())?;
    if let Some(c) = meta.get("catalog")? {
        state.catalog = serde_json::from_slice(c.value())?;
    }
    if let Some(a) = meta.get("applied")? {
        state.last_applied = serde_json::from_slice(a.value())?;
    }
    if let Some(m) = meta.get("membership")? {
        state.membership = serde_json::from_slice(m.value())?;
    }
    if let Some(t) = meta.get("ts_ceiling")? {
        state.ts_ceiling = serde_json::from_slice(t.value())?;
    }
    let kv = txn.open_table(KV)?;
    for item in kv.iter()? {
        let (k, v) = item?;
        state.kv.insert(k.value().to_vec(), v.value().to_vec());
    }
    Ok(state)
}

/// Writes the state's metadata (and, when `all_keys`, its whole key space) to `txn`.
fn persist_meta(txn: &redb::WriteTransaction, state: &GroupState) -> Result<(), redb::Error> {
    let mut meta = txn.open_table(SM_META)?;
    meta.insert("ownership", json(&state.ownership).as_slice())?;
    meta.insert("catalog", json(&state.catalog).as_slice())?;
    meta.insert("applied", json(&state.last_applied).as_slice())?;
    meta.insert("membership", json(&state.membership).as_slice())?;
    meta.insert("ts_ceiling", json(&state.ts_ceiling).as_slice())?;
    Ok(())
}

impl StateMachineStore {
    fn stored_snapshot(&self) -> Result<Option<StoredSnapshot>, StorageError> {
        let read = || -> Result<Option<StoredSnapshot>, Box<dyn std::error::Error>> {
            let txn = self.db.begin_read()?;
            let table = txn.open_table(META)?;
            match table.get("snapshot")? {
                Some(v) => Ok(Some(serde_json::from_slice(v.value())?)),
                None => Ok(None),
            }
        };
        read().map_err(|e| sio(StorageIOError::read, e))
    }

    /// After a crash the (non-fsynced) state machine may be behind the durable snapshot;
    /// the log before the snapshot may be purged, so start from the snapshot.
    fn restore_snapshot_if_ahead(&mut self) -> anyhow::Result<()> {
        let Some(snap) = self.stored_snapshot().map_err(|e| anyhow::anyhow!("{e}"))? else {
            return Ok(());
        };
        let applied = self.shared.read().last_applied;
        if snap.meta.last_log_id > applied {
            let state: GroupState = serde_json::from_slice(&snap.data)?;
            replace_all(&self.db, &state, Durability::Immediate)?;
            self.publish(state);
        }
        Ok(())
    }

    fn publish(&self, state: GroupState) {
        let catalog = state.catalog.clone().map(Arc::new);
        *self.shared.write() = state;
        if catalog.is_some() {
            self.shared.catalog_tx.send_replace(catalog);
        }
    }
}

/// Replaces the whole persisted state machine by `state`.
fn replace_all(
    db: &Database,
    state: &GroupState,
    durability: Durability,
) -> Result<(), redb::Error> {
    let mut txn = db.begin_write()?;
    txn.set_durability(durability)?;
    txn.delete_table(KV)?;
    {
        let mut kv = txn.open_table(KV)?;
        for (k, v) in &state.kv {
            kv.insert(k.as_slice(), v.as_slice())?;
        }
    }
    persist_meta(&txn, state)?;
    txn.commit()?;
    Ok(())
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachineStore {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let (data, last_log_id, membership) = {
            let state = self.shared.read();
            (json(&*state), state.last_applied, state.membership.clone())
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let snapshot_id = format!("{}-{nanos}", last_log_id.map(|l| l.index).unwrap_or(0));
        let meta = SnapshotMeta {
            last_log_id,
            last_membership: membership,
            snapshot_id,
        };
        let stored = json(&StoredSnapshot {
            meta: meta.clone(),
            data: data.clone(),
        });
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || -> Result<(), redb::Error> {
            let mut txn = db.begin_write()?;
            txn.set_durability(Durability::Immediate)?;
            txn.open_table(META)?
                .insert("snapshot", stored.as_slice())?;
            txn.commit()?;
            Ok(())
        })
        .await
        .map_err(|e| sio(StorageIOError::write, e))?
        .map_err(|e| sio(StorageIOError::write, e))?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = StateMachineStore;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, crate::types::StoredMembership), StorageError> {
        let state = self.shared.read();
        Ok((state.last_applied, state.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<CommandResult>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut dirty = Dirty::default();
        let mut results = Vec::new();
        let (rows, meta_state) = {
            let mut state = self.shared.write();
            for entry in entries {
                state.last_applied = Some(entry.log_id);
                let result = match entry.payload {
                    EntryPayload::Blank => CommandResult::None,
                    EntryPayload::Normal(cmd) => state.apply(&cmd, &self.bugs, &mut dirty),
                    EntryPayload::Membership(m) => {
                        state.membership =
                            crate::types::StoredMembership::new(Some(entry.log_id), m);
                        CommandResult::None
                    }
                };
                results.push(result);
            }
            let rows: Vec<(Vec<u8>, Option<Vec<u8>>)> = dirty
                .keys
                .iter()
                .map(|k| (k.clone(), state.kv.get(k).cloned()))
                .collect();
            (rows, state.clone_meta())
        };
        if dirty.meta {
            if let Some(c) = &meta_state.catalog {
                self.shared
                    .catalog_tx
                    .send_replace(Some(Arc::new(c.clone())));
            }
        }
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || -> Result<(), redb::Error> {
            let mut txn = db.begin_write()?;
            txn.set_durability(Durability::None)?;
            {
                let mut kv = txn.open_table(KV)?;
                for (k, v) in &rows {
                    match v {
                        Some(v) => kv.insert(k.as_slice(), v.as_slice())?,
                        None => kv.remove(k.as_slice())?,
                    };
                }
            }
            persist_meta(&txn, &meta_state)?;
            txn.commit()?;
            Ok(())
        })
        .await
        .map_err(|e| sio(StorageIOError::write_state_machine, e))?
        .map_err(|e| sio(StorageIOError::write_state_machine, e))?;
        Ok(results)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        StateMachineStore {
            db: self.db.clone(),
            shared: self.shared.clone(),
            bugs: self.bugs,
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let data = snapshot.into_inner();
        let state: GroupState = serde_json::from_slice(&data)
            .map_err(|e| sio(|e| StorageIOError::read_snapshot(None, e), e))?;
        let stored = json(&StoredSnapshot {
            meta: meta.clone(),
            data,
        });
        let db = self.db.clone();
        let to_persist = state.clone();
        tokio::task::spawn_blocking(move || -> Result<(), redb::Error> {
            replace_all(&db, &to_persist, Durability::None)?;
            let mut txn = db.begin_write()?;
            txn.set_durability(Durability::Immediate)?;
            txn.open_table(META)?
                .insert("snapshot", stored.as_slice())?;
            txn.commit()?;
            Ok(())
        })
        .await
        .map_err(|e| sio(StorageIOError::write_state_machine, e))?
        .map_err(|e| sio(StorageIOError::write_state_machine, e))?;
        self.publish(state);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(self.stored_snapshot()?.map(|s| Snapshot {
            meta: s.meta,
            snapshot: Box::new(Cursor::new(s.data)),
        }))
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
