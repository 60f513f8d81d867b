//! The Raft log, vote and committed index of one group, in their own redb file, written by
//! a single writer thread that group-commits.
//!
//! openraft's storage-v2 `append` may return before the entries are durable and report
//! durability later through a callback. Appends therefore go into an in-memory overlay (so
//! replication can read them at once) and onto the writer's queue. The writer drains the
//! queue, applies every queued operation in order in ONE transaction committed with
//! `Durability::Immediate` (fsync), and only then fires the callbacks: an entry is counted
//! towards a quorum only once it is on disk, and one fsync covers every append, truncate,
//! purge and vote that arrived meanwhile. Truncate, purge and vote wait for their commit.

// openraft's StorageError is large by its own design; boxing it here would not help.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::{Arc, Mutex};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader, StorageIOError, Vote};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use serde::Deserialize;
use tokio::sync::oneshot;

use crate::storage_io::{json, sio};
use crate::types::{Entry, LogId, NodeId, StorageError, TypeConfig};

const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

type Done = oneshot::Sender<Result<(), String>>;

enum LogOp {
    Append {
        rows: Vec<(u64, u64, Vec<u8>)>,
        callback: LogFlushed<TypeConfig>,
    },
    Truncate {
        from: u64,
        done: Done,
    },
    Purge {
        upto: u64,
        purged: Vec<u8>,
        done: Done,
    },
    Meta {
        key: &'static str,
        value: Vec<u8>,
        done: Option<Done>,
    },
}

/// Appended entries not yet known to be on disk: index -> (generation, encoded entry).
type Overlay = Arc<Mutex<BTreeMap<u64, (u64, Vec<u8>)>>>;

#[derive(Clone)]
pub struct LogStore {
    db: Arc<Database>,
    queue: std::sync::mpsc::Sender<LogOp>,
    overlay: Overlay,
    generation: Arc<std::sync::atomic::AtomicU64>,
}

impl LogStore {
    pub fn open(path: &Path) -> anyhow::Result<LogStore> {
        let db = Arc::new(
            Database::create(path)
                .map_err(|e| anyhow::anyhow!("opening {}: {e}", path.display()))?,
        );
        let txn = db.begin_write()?;
        txn.open_table(LOG)?;
        txn.open_table(META)?;
        txn.commit()?;
        let overlay: Overlay = Arc::default();
        let queue = spawn_writer(db.clone(), overlay.clone())?;
        Ok(LogStore {
            db,
            queue,
            overlay,
            generation: Arc::default(),
        })
    }

    fn lock_overlay(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, (u64, Vec<u8>)>> {
        self.overlay.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn meta_get<T: for<'de> Deserialize<'de>>(&self, key: &str) -> Result<Option<T>, StorageError> {
        let read = || -> Result<Option<T>, Box<dyn std::error::Error>> {
            let txn = self.db.begin_read()?;
            let table = txn.open_table(META)?;
            match table.get(key)? {
                Some(v) => Ok(Some(serde_json::from_slice(v.value())?)),
                None => Ok(None),
            }
        };
        read().map_err(|e| sio(StorageIOError::read, e))
    }

    async fn submit(&self, make: impl FnOnce(Done) -> LogOp) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        self.queue
            .send(make(tx))
            .map_err(|_| "log writer stopped".to_string())?;
        rx.await.map_err(|_| "log writer stopped".to_string())?
    }
}

fn spawn_writer(
    db: Arc<Database>,
    overlay: Overlay,
) -> anyhow::Result<std::sync::mpsc::Sender<LogOp>> {
    let (tx, rx) = std::sync::mpsc::channel::<LogOp>();
    std::thread::Builder::new()
        .name("refkv-log-writer".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut batch = vec![first];
                batch.extend(rx.try_iter());
                let result = write_batch(&db, &batch).map_err(|e| e.to_string());
                let mut flushed: Vec<(u64, u64)> = Vec::new();
                for op in &batch {
                    if let LogOp::Append { rows, .. } = op {
                        flushed.extend(rows.iter().map(|(i, g, _)| (*i, *g)));
                    }
                }
                if result.is_ok() {
                    let mut o = overlay.lock().unwrap_or_else(|p| p.into_inner());
                    for (index, gen) in flushed {
                        if o.get(&index).map(|(g, _)| *g) == Some(gen) {
                            o.remove(&index);
                        }
                    }
                }
                for op in batch {
                    match op {
                        LogOp::Append { callback, .. } => {
                            callback
                                .log_io_completed(result.clone().map_err(std::io::Error::other));
                        }
                        LogOp::Truncate { done, .. }
                        | LogOp::Purge { done, .. }
                        | LogOp::Meta {
                            done: Some(done), ..
                        } => {
                            let _ = done.send(result.clone());
                        }
                        LogOp::Meta { done: None, .. } => {}
                    }
                }
            }
        })?;
    Ok(tx)
}

fn write_batch(db: &Database, batch: &[LogOp]) -> Result<(), redb::Error> {
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate)?;
    {
        let mut log = txn.open_table(LOG)?;
        let mut meta = txn.open_table(META)?;
        for op in batch {
            match op {
                LogOp::Append { rows, .. } => {
                    for (index, _, bytes) in rows {
                        log.insert(*index, bytes.as_slice())?;
                    }
                }
                LogOp::Truncate { from, .. } => log.retain_in(*from.., |_, _| false)?,
                LogOp::Purge { upto, purged, .. } => {
                    meta.insert("purged", purged.as_slice())?;
                    log.retain_in(..=*upto, |_, _| false)?;
                }
                LogOp::Meta { key, value, .. } => {
                    meta.insert(*key, value.as_slice())?;
                }
            }
        }
    }
    txn.commit()?;
    Ok(())
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + std::fmt::Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let start = match range.start_bound() {
            Bound::Included(s) => *s,
            Bound::Excluded(s) => s + 1,
            Bound::Unbounded => 0,
        };
        let mut rows: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        let read = |rows: &mut BTreeMap<u64, Vec<u8>>| -> Result<(), Box<dyn std::error::Error>> {
            let txn = self.db.begin_read()?;
            let table = txn.open_table(LOG)?;
            for item in table.range(start..)? {
                let (k, v) = item?;
                if !range.contains(&k.value()) {
                    break;
                }
                rows.insert(k.value(), v.value().to_vec());
            }
            Ok(())
        };
        // Overlay first, then disk for what the overlay lacks: an entry leaves the overlay
        // only after it is on disk, so nothing falls between the two reads.
        let overlay: Vec<(u64, Vec<u8>)> = self
            .lock_overlay()
            .range((range.start_bound().cloned(), range.end_bound().cloned()))
            .map(|(i, (_, b))| (*i, b.clone()))
            .collect();
        read(&mut rows).map_err(|e| sio(StorageIOError::read_logs, e))?;
        rows.extend(overlay);
        rows.values()
            .map(|b| serde_json::from_slice(b).map_err(|e| sio(StorageIOError::read_logs, e)))
            .collect()
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let last_purged: Option<LogId> = self.meta_get("purged")?;
        let pending_last = self
            .lock_overlay()
            .last_key_value()
            .map(|(_, (_, b))| b.clone());
        let disk_last = {
            let read = || -> Result<Option<Vec<u8>>, Box<dyn std::error::Error>> {
                let txn = self.db.begin_read()?;
                let table = txn.open_table(LOG)?;
                let last = table.last()?;
                Ok(last.map(|(_, v)| v.value().to_vec()))
            };
            read().map_err(|e| sio(StorageIOError::read_logs, e))?
        };
        let decode = |b: Option<Vec<u8>>| -> Result<Option<LogId>, StorageError> {
            match b {
                Some(b) => Ok(Some(
                    serde_json::from_slice::<Entry>(&b)
                        .map_err(|e| sio(StorageIOError::read_logs, e))?
                        .log_id,
                )),
                None => Ok(None),
            }
        };
        let last = decode(pending_last)?.max(decode(disk_last)?);
        Ok(LogState {
            last_purged_log_id: last_purged,
            last_log_id: last.or(last_purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError> {
        let value = json(vote);
        self.submit(|done| LogOp::Meta {
            key: "vote",
            value,
            done: Some(done),
        })
        .await
        .map_err(|e| sio(StorageIOError::write_vote, e))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError> {
        self.meta_get("vote")
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        // Rides along with the next group commit; a lost committed index only delays
        // re-applying after a restart.
        let op = LogOp::Meta {
            key: "committed",
            value: json(&committed),
            done: None,
        };
        self.queue
            .send(op)
            .map_err(|_| sio(StorageIOError::write, "log writer stopped"))
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.meta_get::<Option<LogId>>("committed")?.flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let gen = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let rows: Vec<(u64, u64, Vec<u8>)> = entries
            .into_iter()
            .map(|e| (e.log_id.index, gen, json(&e)))
            .collect();
        {
            let mut o = self.lock_overlay();
            for (index, gen, bytes) in &rows {
                o.insert(*index, (*gen, bytes.clone()));
            }
        }
        if let Err(std::sync::mpsc::SendError(LogOp::Append { callback, .. })) =
            self.queue.send(LogOp::Append { rows, callback })
        {
            callback.log_io_completed(Err(std::io::Error::other("log writer stopped")));
            return Err(sio(StorageIOError::write_logs, "log writer stopped"));
        }
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.lock_overlay().retain(|i, _| *i < log_id.index);
        let from = log_id.index;
        self.submit(|done| LogOp::Truncate { from, done })
            .await
            .map_err(|e| sio(StorageIOError::write_logs, e))
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.lock_overlay().retain(|i, _| *i > log_id.index);
        let purged = json(&Some(log_id));
        let upto = log_id.index;
        self.submit(|done| LogOp::Purge { upto, purged, done })
            .await
            .map_err(|e| sio(StorageIOError::write_logs, e))
    }
}
