//! Unit tests of the transactional cell: snapshot reads, prewrite conflicts, commit,
//! rollback and the status of a primary, each rule on its own.

use super::*;

fn prewrite(start_ts: u64, writes: Vec<Write>) -> Prewrite {
    Prewrite {
        start_ts,
        primary: b"p".to_vec(),
        writes,
        expires_ms: 1_000,
    }
}

/// A cell with appends committed at the given (start, commit) timestamps.
fn committed(txns: &[(u64, u64, i64)]) -> Cell {
    let mut c = Cell::default();
    for (s, t, x) in txns {
        assert_eq!(
            c.prewrite(&prewrite(*s, vec![Write::Append(*x)]), true),
            TxnOutcome::Prewritten
        );
        assert_eq!(
            c.commit(b"k", *s, *t),
            TxnOutcome::Committed { commit_ts: *t }
        );
    }
    c
}

#[test]
fn a_snapshot_read_sees_exactly_the_versions_committed_before_it() {
    let c = committed(&[(1, 2, 10), (3, 5, 11)]);
    assert_eq!(c.read_at(2), SnapshotRead::Value(None));
    assert_eq!(c.read_at(3), SnapshotRead::Value(Some(vec![10])));
    assert_eq!(c.read_at(6), SnapshotRead::Value(Some(vec![10, 11])));
}

#[test]
fn a_register_write_replaces_the_list() {
    assert_eq!(
        apply_writes(Some(vec![1, 2]), &[Write::Put(7), Write::Append(8)]),
        Some(vec![7, 8])
    );
    assert_eq!(apply_writes(None, &[]), None);
}

#[test]
fn a_lock_blocks_only_readers_that_started_after_its_transaction() {
    let mut c = committed(&[(1, 2, 10)]);
    assert_eq!(
        c.prewrite(&prewrite(5, vec![Write::Append(11)]), true),
        TxnOutcome::Prewritten
    );
    assert_eq!(
        c.read_at(4),
        SnapshotRead::Value(Some(vec![10])),
        "its commit will come after 5 > 4"
    );
    assert!(matches!(
        c.read_at(6),
        SnapshotRead::Locked(LockInfo { start_ts: 5, .. })
    ));
}

#[test]
fn a_write_committed_after_the_start_is_a_conflict_unless_the_check_is_off() {
    let mut c = committed(&[(3, 5, 10)]);
    assert_eq!(
        c.prewrite(&prewrite(4, vec![Write::Append(11)]), true),
        TxnOutcome::WriteConflict { commit_ts: 5 }
    );
    assert_eq!(c.lock, None);
    assert_eq!(
        c.prewrite(&prewrite(4, vec![Write::Append(11)]), false),
        TxnOutcome::Prewritten,
        "no-read-validation"
    );
    assert_eq!(
        c.prewrite(&prewrite(6, vec![]), true),
        TxnOutcome::Locked(LockInfo {
            start_ts: 4,
            primary: b"p".to_vec(),
            expires_ms: 1_000
        })
    );
}

#[test]
fn a_repeated_prewrite_or_commit_is_idempotent() {
    let mut c = Cell::default();
    assert_eq!(
        c.prewrite(&prewrite(4, vec![Write::Put(1)]), true),
        TxnOutcome::Prewritten
    );
    assert_eq!(
        c.prewrite(&prewrite(4, vec![Write::Put(1)]), true),
        TxnOutcome::Prewritten
    );
    assert_eq!(c.commit(b"k", 4, 9), TxnOutcome::Committed { commit_ts: 9 });
    assert_eq!(c.commit(b"k", 4, 9), TxnOutcome::Committed { commit_ts: 9 });
    assert_eq!(c.versions.len(), 1);
    assert_eq!(
        c.prewrite(&prewrite(4, vec![Write::Put(1)]), true),
        TxnOutcome::Committed { commit_ts: 9 }
    );
}

#[test]
fn a_rolled_back_transaction_can_neither_commit_nor_prewrite_again() {
    let mut c = Cell::default();
    assert_eq!(
        c.prewrite(&prewrite(4, vec![Write::Put(1)]), true),
        TxnOutcome::Prewritten
    );
    assert_eq!(c.rollback(4), TxnOutcome::RolledBack);
    assert_eq!(c.commit(b"k", 4, 9), TxnOutcome::LockMissing);
    assert_eq!(
        c.prewrite(&prewrite(4, vec![Write::Put(1)]), true),
        TxnOutcome::RolledBack
    );
    assert_eq!(c.value_before(100), None);
}

#[test]
fn a_committed_transaction_cannot_be_rolled_back() {
    let mut c = committed(&[(1, 2, 10)]);
    assert_eq!(c.rollback(1), TxnOutcome::Committed { commit_ts: 2 });
    assert_eq!(
        c.check_primary(1, i64::MAX),
        TxnOutcome::Committed { commit_ts: 2 }
    );
}

#[test]
fn a_primary_is_alive_until_its_lock_expires_then_rolled_back() {
    let mut c = Cell::default();
    c.prewrite(&prewrite(4, vec![Write::Put(1)]), true);
    assert_eq!(
        c.check_primary(4, 999),
        TxnOutcome::Alive { expires_ms: 1_000 }
    );
    assert_eq!(c.check_primary(4, 1_000), TxnOutcome::RolledBack);
    assert_eq!(c.lock, None);
    assert_eq!(
        c.commit(b"p", 4, 9),
        TxnOutcome::LockMissing,
        "the coordinator's late commit finds it gone"
    );
}

#[test]
fn a_primary_whose_prewrite_never_landed_is_rolled_back_for_good() {
    let mut c = Cell::default();
    assert_eq!(c.check_primary(4, 0), TxnOutcome::RolledBack);
    assert_eq!(
        c.prewrite(&prewrite(4, vec![Write::Put(1)]), true),
        TxnOutcome::RolledBack,
        "a late prewrite is refused"
    );
}

#[test]
fn a_read_lock_leaves_a_version_only_at_the_primary() {
    let mut c = Cell::default();
    c.prewrite(&prewrite(4, vec![]), true);
    assert_eq!(c.commit(b"k", 4, 9), TxnOutcome::Committed { commit_ts: 9 });
    assert!(
        c.versions.is_empty(),
        "a secondary read lock records nothing"
    );
    c.prewrite(&prewrite(10, vec![]), true);
    assert_eq!(
        c.commit(b"p", 10, 11),
        TxnOutcome::Committed { commit_ts: 11 }
    );
    assert_eq!(
        c.check_primary(10, 0),
        TxnOutcome::Committed { commit_ts: 11 }
    );
    assert_eq!(c.value_before(100), None, "and it writes nothing");
}

#[test]
fn versions_stay_in_commit_order_and_reads_follow_it() {
    let mut c = Cell::default();
    c.prewrite(&prewrite(4, vec![Write::Append(1)]), false);
    c.commit(b"k", 4, 20);
    c.prewrite(&prewrite(5, vec![Write::Append(2)]), false);
    c.commit(b"k", 5, 10);
    assert_eq!(
        c.versions.iter().map(|v| v.commit_ts).collect::<Vec<_>>(),
        [10, 20]
    );
    assert_eq!(c.value_before(21), Some(vec![2, 1]));
}

#[test]
fn cells_round_trip_and_plain_values_are_not_cells() {
    let mut c = committed(&[(1, 2, 10)]);
    c.prewrite(&prewrite(5, vec![Write::Put(3)]), true);
    assert_eq!(Cell::decode(Some(&c.encode())), Ok(c.clone()));
    assert_eq!(Cell::decode(None), Ok(Cell::default()));
    assert_eq!(Cell::decode(Some(b"42")), Err(NotTxnKey));
    let stripped = Cell::decode(Some(&strip_lock(c.encode()))).unwrap();
    assert_eq!((stripped.lock, stripped.versions), (None, c.versions));
    assert_eq!(strip_lock(b"42".to_vec()), b"42".to_vec());
}
