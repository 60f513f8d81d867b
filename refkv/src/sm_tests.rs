//! Unit tests of command application, including the commit-time fence.

use super::*;

fn put(key: &str, value: &str, epoch: u64) -> Command {
    Command::Put { key: key.into(), value: value.into(), epoch, cas: None }
}

fn state() -> GroupState {
    GroupState::genesis(1, &Catalog::genesis(3, &[]).unwrap())
}

#[test]
fn put_cas_delete() {
    let mut s = state();
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    assert_eq!(s.apply(&put("a", "1", 1), &bugs, &mut d), CommandResult::Written { applied: true, epoch: 1 });
    let cas = |exp: Cas, v: &str| Command::Put { key: "a".into(), value: v.into(), epoch: 1, cas: Some(exp) };
    assert_eq!(s.apply(&cas(Cas::Expect("2".into()), "3"), &bugs, &mut d), CommandResult::Written { applied: false, epoch: 1 });
    assert_eq!(s.apply(&cas(Cas::Expect("1".into()), "3"), &bugs, &mut d), CommandResult::Written { applied: true, epoch: 1 });
    assert_eq!(s.apply(&cas(Cas::ExpectAbsent, "4"), &bugs, &mut d), CommandResult::Written { applied: false, epoch: 1 });
    assert_eq!(s.read(b"a", 1).unwrap(), Some(b"3".to_vec()));
    s.apply(&Command::Delete { key: "a".into(), epoch: 1 }, &bugs, &mut d);
    assert_eq!(s.read(b"a", 1).unwrap(), None);
    assert!(d.keys.contains(b"a".as_slice()));
}

#[test]
fn fence_and_disown_reject_writes_unless_no_fence_bug() {
    let mut s = state();
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    s.apply(&Command::Fence { start: "m".into(), end: vec![] }, &bugs, &mut d);
    assert!(matches!(s.apply(&put("x", "1", 1), &bugs, &mut d), CommandResult::Rejected { current_epoch: 1, .. }));
    s.apply(&Command::Disown { start: "m".into(), end: vec![], new_epoch: 5, new_group: 2 }, &bugs, &mut d);
    assert!(matches!(s.apply(&put("x", "1", 1), &bugs, &mut d), CommandResult::Rejected { current_epoch: 5, .. }));
    assert!(s.read(b"x", 1).is_err());
    let buggy = Bugs { no_fence: true, ..Bugs::default() };
    assert!(matches!(s.apply(&put("x", "1", 1), &buggy, &mut d), CommandResult::Written { applied: true, .. }));
    assert!(matches!(s.apply(&put("a", "1", 1), &bugs, &mut d), CommandResult::Written { .. }));
}

#[test]
fn ingest_and_delete_range_ignore_ownership() {
    let mut s = GroupState::genesis(2, &Catalog::genesis(3, &[]).unwrap());
    let mut d = Dirty::default();
    s.apply(&Command::Ingest { pairs: vec![("p".into(), "1".into()), ("q".into(), "2".into())], deletes: vec![] }, &Bugs::default(), &mut d);
    assert!(s.read(b"p", 1).is_err(), "group 2 does not serve the range yet");
    s.apply(&Command::Own { start: "m".into(), end: vec![], epoch: 3 }, &Bugs::default(), &mut d);
    assert_eq!(s.read(b"p", 3).unwrap(), Some(b"1".to_vec()));
    s.apply(&Command::DeleteRange { start: "p".into(), end: "q".into() }, &Bugs::default(), &mut d);
    assert_eq!(s.read(b"p", 3).unwrap(), None);
    assert_eq!(s.read(b"q", 3).unwrap(), Some(b"2".to_vec()));
}

#[test]
fn ingest_is_refused_once_the_range_is_served() {
    let mut s = GroupState::genesis(2, &Catalog::genesis(3, &[]).unwrap());
    let mut d = Dirty::default();
    let bugs = Bugs::default();
    let ingest = |v: &str| Command::Ingest { pairs: vec![("p".into(), v.into())], deletes: vec![] };
    assert_eq!(s.apply(&ingest("old"), &bugs, &mut d), CommandResult::Done);
    s.apply(&Command::Own { start: "m".into(), end: vec![], epoch: 3 }, &bugs, &mut d);
    s.apply(&put("p", "new", 3), &bugs, &mut d);
    assert!(matches!(s.apply(&ingest("old"), &bugs, &mut d), CommandResult::Rejected { .. }));
    assert_eq!(s.read(b"p", 3).unwrap(), Some(b"new".to_vec()));
}
