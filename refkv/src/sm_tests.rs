//! Unit tests of command application, including the commit-time fence.

use super::*;

fn put(key: &str, value: &str, epoch: u64) -> Command {
    Command::Put {
        key: key.into(),
        value: value.into(),
        epoch,
        cas: None,
    }
}

fn state() -> GroupState {
    GroupState::genesis(1, &Catalog::genesis(3, &[]).unwrap())
}

#[test]
fn put_cas_delete() {
    let mut s = state();
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    assert_eq!(
        s.apply(&put("a", "1", 1), &bugs, &mut d),
        CommandResult::Written {
            applied: true,
            epoch: 1
        }
    );
    let cas = |exp: Cas, v: &str| Command::Put {
        key: "a".into(),
        value: v.into(),
        epoch: 1,
        cas: Some(exp),
    };
    assert_eq!(
        s.apply(&cas(Cas::Expect("2".into()), "3"), &bugs, &mut d),
        CommandResult::Written {
            applied: false,
            epoch: 1
        }
    );
    assert_eq!(
        s.apply(&cas(Cas::Expect("1".into()), "3"), &bugs, &mut d),
        CommandResult::Written {
            applied: true,
            epoch: 1
        }
    );
    assert_eq!(
        s.apply(&cas(Cas::ExpectAbsent, "4"), &bugs, &mut d),
        CommandResult::Written {
            applied: false,
            epoch: 1
        }
    );
    assert_eq!(s.read(b"a", 1).unwrap(), Some(b"3".to_vec()));
    s.apply(
        &Command::Delete {
            key: "a".into(),
            epoch: 1,
        },
        &bugs,
        &mut d,
    );
    assert_eq!(s.read(b"a", 1).unwrap(), None);
    assert!(d.keys.contains(b"a".as_slice()));
}

#[test]
fn fence_and_disown_reject_writes_unless_no_fence_bug() {
    let mut s = state();
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    s.apply(
        &Command::Fence {
            start: "m".into(),
            end: vec![],
        },
        &bugs,
        &mut d,
    );
    assert!(matches!(
        s.apply(&put("x", "1", 1), &bugs, &mut d),
        CommandResult::Rejected {
            current_epoch: 1,
            ..
        }
    ));
    s.apply(
        &Command::Disown {
            start: "m".into(),
            end: vec![],
            new_epoch: 5,
            new_group: 2,
        },
        &bugs,
        &mut d,
    );
    assert!(matches!(
        s.apply(&put("x", "1", 1), &bugs, &mut d),
        CommandResult::Rejected {
            current_epoch: 5,
            ..
        }
    ));
    assert!(s.read(b"x", 1).is_err());
    let buggy = Bugs {
        no_fence: true,
        ..Bugs::default()
    };
    assert!(matches!(
        s.apply(&put("x", "1", 1), &buggy, &mut d),
        CommandResult::Written { applied: true, .. }
    ));
    assert!(matches!(
        s.apply(&put("a", "1", 1), &bugs, &mut d),
        CommandResult::Written { .. }
    ));
}

#[test]
fn ingest_and_delete_range_ignore_ownership() {
    let mut s = GroupState::genesis(2, &Catalog::genesis(3, &[]).unwrap());
    let mut d = Dirty::default();
    s.apply(
        &Command::Ingest {
            pairs: vec![("p".into(), "1".into()), ("q".into(), "2".into())],
            deletes: vec![],
        },
        &Bugs::default(),
        &mut d,
    );
    assert!(
        s.read(b"p", 1).is_err(),
        "group 2 does not serve the range yet"
    );
    s.apply(
        &Command::Own {
            start: "m".into(),
            end: vec![],
            epoch: 3,
        },
        &Bugs::default(),
        &mut d,
    );
    assert_eq!(s.read(b"p", 3).unwrap(), Some(b"1".to_vec()));
    s.apply(
        &Command::DeleteRange {
            start: "p".into(),
            end: "q".into(),
        },
        &Bugs::default(),
        &mut d,
    );
    assert_eq!(s.read(b"p", 3).unwrap(), None);
    assert_eq!(s.read(b"q", 3).unwrap(), Some(b"2".to_vec()));
}

#[test]
fn ingest_is_refused_once_the_range_is_served() {
    let mut s = GroupState::genesis(2, &Catalog::genesis(3, &[]).unwrap());
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    let ingest = |v: &str| Command::Ingest {
        pairs: vec![("p".into(), v.into())],
        deletes: vec![],
    };
    assert_eq!(s.apply(&ingest("old"), &bugs, &mut d), CommandResult::Done);
    s.apply(
        &Command::Own {
            start: "m".into(),
            end: vec![],
            epoch: 3,
        },
        &bugs,
        &mut d,
    );
    s.apply(&put("p", "new", 3), &bugs, &mut d);
    assert!(matches!(
        s.apply(&ingest("old"), &bugs, &mut d),
        CommandResult::Rejected { .. }
    ));
    assert_eq!(s.read(b"p", 3).unwrap(), Some(b"new".to_vec()));
}

fn prewrite(key: &str, start_ts: u64, epoch: u64) -> Command {
    let prewrite = crate::mvcc::Prewrite {
        start_ts,
        primary: key.into(),
        writes: vec![crate::mvcc::Write::Append(7)],
        expires_ms: 0,
    };
    Command::TxnPrewrite {
        key: key.into(),
        epoch,
        prewrite,
    }
}

fn outcome(r: CommandResult) -> TxnOutcome {
    match r {
        CommandResult::Txn(o) => o,
        other => panic!("not a transactional outcome: {other:?}"),
    }
}

#[test]
fn transactional_commands_pass_the_fence_like_writes_and_locks_stay_in_the_cell() {
    let mut s = state();
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    assert_eq!(
        outcome(s.apply(&prewrite("x", 5, 1), &bugs, &mut d)),
        TxnOutcome::Prewritten
    );
    assert!(
        d.keys.contains(b"x".as_slice()),
        "the lock is persisted with the key"
    );
    assert!(
        matches!(
            s.apply(&prewrite("y", 6, 2), &bugs, &mut d),
            CommandResult::Rejected {
                current_epoch: 1,
                ..
            }
        ),
        "stale epoch"
    );
    s.apply(
        &Command::Fence {
            start: "m".into(),
            end: vec![],
        },
        &bugs,
        &mut d,
    );
    assert!(
        matches!(
            s.apply(&prewrite("y", 6, 1), &bugs, &mut d),
            CommandResult::Rejected { .. }
        ),
        "FENCE refuses new prewrites"
    );
    assert!(
        matches!(s.txn_read(b"x", 1, 9), Ok(SnapshotRead::Locked(_))),
        "a fenced range still serves reads, locks included"
    );
    let commit = Command::TxnCommit {
        key: "x".into(),
        epoch: 1,
        start_ts: 5,
        commit_ts: 8,
    };
    assert!(
        matches!(
            s.apply(&commit, &bugs, &mut d),
            CommandResult::Rejected { .. }
        ),
        "a commit waits for the new owner"
    );
    s.apply(
        &Command::Unfence {
            start: "m".into(),
            end: vec![],
        },
        &bugs,
        &mut d,
    );
    assert_eq!(
        outcome(s.apply(&commit, &bugs, &mut d)),
        TxnOutcome::Committed { commit_ts: 8 }
    );
    assert_eq!(
        s.txn_read(b"x", 1, 9),
        Ok(SnapshotRead::Value(Some(vec![7])))
    );
}

#[test]
fn commit_to_old_owner_lets_a_disowned_group_commit_a_lock_it_still_holds() {
    let mut s = state();
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    s.apply(&prewrite("x", 5, 1), &bugs, &mut d);
    s.apply(
        &Command::Fence {
            start: "m".into(),
            end: vec![],
        },
        &bugs,
        &mut d,
    );
    s.apply(
        &Command::Disown {
            start: "m".into(),
            end: vec![],
            new_epoch: 4,
            new_group: 2,
        },
        &bugs,
        &mut d,
    );
    let commit = |start_ts| Command::TxnCommit {
        key: "x".into(),
        epoch: 1,
        start_ts,
        commit_ts: 8,
    };
    assert!(
        matches!(
            s.apply(&commit(5), &bugs, &mut d),
            CommandResult::Rejected {
                current_epoch: 4,
                ..
            }
        ),
        "the moved key's commit is refused"
    );
    let buggy = Bugs {
        commit_to_old_owner: true,
        ..Bugs::default()
    };
    assert!(
        matches!(
            s.apply(&commit(6), &buggy, &mut d),
            CommandResult::Rejected { .. }
        ),
        "no lock of that transaction here: fenced as usual"
    );
    assert_eq!(
        outcome(s.apply(&commit(5), &buggy, &mut d)),
        TxnOutcome::Committed { commit_ts: 8 },
        "the old owner commits its lock"
    );
    let rollback = Command::TxnRollback {
        key: "x".into(),
        epoch: 1,
        start_ts: 5,
    };
    assert!(
        matches!(
            s.apply(&rollback, &buggy, &mut d),
            CommandResult::Rejected { .. }
        ),
        "only commits skip the fence"
    );
}

#[test]
fn no_post_fence_drain_lets_a_fenced_source_commit_its_locks_until_the_cutover() {
    let mut s = state();
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    let buggy = Bugs {
        no_post_fence_drain: true,
        ..Bugs::default()
    };
    s.apply(&prewrite("x", 5, 1), &bugs, &mut d);
    s.apply(&prewrite("y", 6, 1), &bugs, &mut d);
    s.apply(
        &Command::Fence {
            start: "m".into(),
            end: vec![],
        },
        &bugs,
        &mut d,
    );
    let commit = |key: &str, start_ts| Command::TxnCommit {
        key: key.into(),
        epoch: 1,
        start_ts,
        commit_ts: 8,
    };
    assert!(
        matches!(
            s.apply(&commit("x", 5), &bugs, &mut d),
            CommandResult::Rejected { .. }
        ),
        "no lane without the bug"
    );
    assert!(
        matches!(
            s.apply(&commit("x", 7), &buggy, &mut d),
            CommandResult::Rejected { .. }
        ),
        "the lane is for locks held here"
    );
    assert_eq!(
        outcome(s.apply(&commit("x", 5), &buggy, &mut d)),
        TxnOutcome::Committed { commit_ts: 8 },
        "the fenced source commits its lock"
    );
    let stale = Command::TxnCommit {
        key: "y".into(),
        epoch: 0,
        start_ts: 6,
        commit_ts: 8,
    };
    assert!(
        matches!(
            s.apply(&stale, &buggy, &mut d),
            CommandResult::Rejected { .. }
        ),
        "only under the owner's epoch"
    );
    s.apply(
        &Command::Disown {
            start: "m".into(),
            end: vec![],
            new_epoch: 4,
            new_group: 2,
        },
        &bugs,
        &mut d,
    );
    assert!(
        matches!(
            s.apply(&commit("y", 6), &buggy, &mut d),
            CommandResult::Rejected {
                current_epoch: 4,
                ..
            }
        ),
        "closed at the cutover"
    );
}

#[test]
fn a_plain_value_is_not_a_transactional_key() {
    let mut s = state();
    let mut d = Dirty::default();
    s.apply(&put("x", "1", 1), &Bugs::default(), &mut d);
    assert_eq!(
        outcome(s.apply(&prewrite("x", 5, 1), &Bugs::default(), &mut d)),
        TxnOutcome::NotTxnKey
    );
    assert_eq!(s.txn_read(b"x", 1, 9), Ok(SnapshotRead::NotTxnKey));
}

#[test]
fn no_read_validation_skips_the_write_conflict_check() {
    let mut s = state();
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    s.apply(&prewrite("x", 5, 1), &bugs, &mut d);
    s.apply(
        &Command::TxnCommit {
            key: "x".into(),
            epoch: 1,
            start_ts: 5,
            commit_ts: 8,
        },
        &bugs,
        &mut d,
    );
    assert_eq!(
        outcome(s.apply(&prewrite("x", 6, 1), &bugs, &mut d)),
        TxnOutcome::WriteConflict { commit_ts: 8 }
    );
    let buggy = Bugs {
        no_read_validation: true,
        ..Bugs::default()
    };
    assert_eq!(
        outcome(s.apply(&prewrite("x", 6, 1), &buggy, &mut d)),
        TxnOutcome::Prewritten
    );
}

#[test]
fn the_oracle_ceiling_only_grows() {
    let mut s = state();
    let mut d = Dirty::default();
    assert_eq!(
        s.apply(&Command::AllocTs { count: 10 }, &Bugs::default(), &mut d),
        CommandResult::TsRange { first: 1, last: 10 }
    );
    assert_eq!(
        s.apply(&Command::AllocTs { count: 0 }, &Bugs::default(), &mut d),
        CommandResult::TsRange {
            first: 11,
            last: 11
        }
    );
    assert!(d.meta && s.clone_meta().ts_ceiling == 11);
}
