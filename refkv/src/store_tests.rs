//! Storage tests: openraft's conformance suite against the redb storage, and reopen
//! behaviour (durable log/vote, state machine restored, genesis mismatch refused).

use std::sync::Mutex;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::testing::{StoreBuilder, Suite};
use openraft::{CommittedLeaderId, EntryPayload, RaftLogReader, Vote};

use super::*;
use crate::types::Command;

struct Builder {
    dirs: Mutex<Vec<tempfile::TempDir>>,
}

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, ()> for Builder {
    async fn build(&self) -> Result<((), LogStore, StateMachineStore), StorageError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let genesis = Catalog::genesis(3, &[]).expect("genesis");
        let (log, sm) = open(dir.path(), 2, &genesis, Bugs::default())
            .map_err(|e| sio(StorageIOError::write, e))?;
        self.dirs.lock().unwrap().push(dir);
        Ok(((), log, sm))
    }
}

#[test]
fn openraft_storage_conformance_suite() {
    Suite::test_all(Builder {
        dirs: Mutex::new(Vec::new()),
    })
    .expect("suite");
}

fn entry(term: u64, index: u64, cmd: Command) -> Entry {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
        payload: EntryPayload::Normal(cmd),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_keeps_log_vote_and_state_machine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let genesis = Catalog::genesis(3, &[]).unwrap();
    {
        let (mut log, mut sm) = open(&path, 1, &genesis, Bugs::default()).unwrap();
        log.save_vote(&Vote::new(3, 2)).await.unwrap();
        let entries: Vec<Entry> = (1..=3)
            .map(|i| {
                entry(
                    3,
                    i,
                    Command::Put {
                        key: format!("k{i}").into(),
                        value: b"v".to_vec(),
                        epoch: 1,
                        cas: None,
                    },
                )
            })
            .collect();
        log.blocking_append(entries.clone()).await.unwrap();
        log.truncate(LogId::new(CommittedLeaderId::new(3, 1), 3))
            .await
            .unwrap();
        log.blocking_append(entries[2..].to_vec()).await.unwrap();
        let results = sm.apply(entries[..2].to_vec()).await.unwrap();
        assert_eq!(results.len(), 2);
        let split = entry(
            3,
            4,
            Command::Split {
                expected_version: 1,
                route_id: 1,
                split_key: b"k2".to_vec(),
                target_group: 0,
                now_ms: 0,
            },
        );
        sm.apply(vec![split]).await.unwrap();
    }
    let (mut log, mut sm) = reopen(&path, &genesis);
    assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(3, 2)));
    assert_eq!(log.try_get_log_entries(1..4).await.unwrap().len(), 3);
    let (applied, _) = sm.applied_state().await.unwrap();
    assert_eq!(applied.map(|l| l.index), Some(4));
    let state = sm.shared.read();
    assert_eq!(state.kv.len(), 2);
    assert_eq!(
        state.catalog.as_ref().unwrap().version,
        2,
        "catalog change persisted"
    );
    drop(state);
    drop((log, sm));
    let other = Catalog::genesis(2, &[]).unwrap();
    let mut refused = String::new();
    for _ in 0..100 {
        match open(&path, 1, &other, Bugs::default()) {
            Err(e) if e.to_string().contains("different catalog genesis") => {
                refused = e.to_string();
                break;
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    assert!(
        !refused.is_empty(),
        "a data dir bootstrapped with another genesis must be refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_round_trip_restores_state_on_another_store() {
    let genesis = Catalog::genesis(3, &[]).unwrap();
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let (_, mut a) = open(d1.path(), 1, &genesis, Bugs::default()).unwrap();
    let (_, mut b) = open(d2.path(), 1, &genesis, Bugs::default()).unwrap();
    a.apply(vec![entry(
        1,
        1,
        Command::Put {
            key: b"x".to_vec(),
            value: b"1".to_vec(),
            epoch: 1,
            cas: None,
        },
    )])
    .await
    .unwrap();
    let snap = a
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    b.install_snapshot(&snap.meta, snap.snapshot).await.unwrap();
    assert_eq!(
        b.shared.read().kv.get(b"x".as_slice()),
        Some(&b"1".to_vec())
    );
    assert_eq!(
        b.get_current_snapshot()
            .await
            .unwrap()
            .unwrap()
            .meta
            .last_log_id
            .map(|l| l.index),
        Some(1)
    );
    let path = d2.path().to_path_buf();
    drop(b);
    let (_, b) = reopen(&path, &genesis);
    assert_eq!(b.shared.read().kv.len(), 1);
}

/// Reopens after the previous store's log-writer thread has released the file.
fn reopen(path: &std::path::Path, genesis: &Catalog) -> (LogStore, StateMachineStore) {
    for _ in 0..100 {
        if let Ok(pair) = open(path, 1, genesis, Bugs::default()) {
            return pair;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    open(path, 1, genesis, Bugs::default()).expect("reopen")
}
