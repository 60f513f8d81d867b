//! The etcd transaction client ([`super::txn`]): one test per outcome rule (pure, on
//! scripted attempts and hand-made responses), the request mapping, and transactions
//! against a real single-member etcd (Debian's `etcd-server`, as `super::tests` starts it),
//! including the etcd rule the mapping exists for (a key put twice in one `Txn` is refused).

use super::proto::mvccpb as mvccpb_kv;
use super::tests::{client_of_a_dead_member, wait_leader, LocalEtcd};
use super::txn::*;
use super::*;
use crate::txn::{Mop, ReadShape};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use Certainty::{Definite, Indeterminate};

fn append(key: &str, value: i64) -> Mop {
    Mop::Append {
        key: key.into(),
        value,
    }
}

fn lread(key: &str) -> Mop {
    Mop::Read {
        key: key.into(),
        shape: ReadShape::List,
    }
}

fn write(key: &str, value: i64) -> Mop {
    Mop::Write {
        key: key.into(),
        value,
    }
}

fn rread(key: &str) -> Mop {
    Mop::Read {
        key: key.into(),
        shape: ReadShape::Register,
    }
}

/// Runs `retry_conflicts` over `script` (one outcome per attempt); returns its result and
/// how many attempts it made.
fn scripted(script: Vec<CallResult<Attempt>>) -> (CallResult<Vec<Json>>, usize) {
    let calls = AtomicUsize::new(0);
    let script = std::sync::Mutex::new(script.into_iter());
    let run = retry_conflicts(COMMIT_ATTEMPTS, || {
        calls.fetch_add(1, Ordering::SeqCst);
        let next = script
            .lock()
            .unwrap()
            .next()
            .expect("no attempt beyond the script");
        async move { next }
    });
    let result = futures::executor::block_on(run);
    (result, calls.load(Ordering::SeqCst))
}

fn range_response(kvs: Vec<mvccpb_kv::KeyValue>) -> pb::ResponseOp {
    let range = pb::RangeResponse {
        kvs,
        ..Default::default()
    };
    pb::ResponseOp {
        response: Some(pb::response_op::Response::ResponseRange(range)),
    }
}

fn kv(key: &str, value: &str, mod_revision: i64) -> mvccpb_kv::KeyValue {
    mvccpb_kv::KeyValue {
        key: key.into(),
        value: value.into(),
        mod_revision,
        ..Default::default()
    }
}

// --- outcome rules -------------------------------------------------------------------

#[test]
fn conflicts_on_every_attempt_are_a_definite_conflict() {
    let (result, calls) = scripted(
        (0..COMMIT_ATTEMPTS)
            .map(|_| Ok(Attempt::Conflict))
            .collect(),
    );
    let e = result.unwrap_err();
    assert_eq!(
        (e.tag, e.certainty, calls),
        ("conflict", Definite, COMMIT_ATTEMPTS)
    );
}

#[test]
fn a_conflict_is_tried_again_and_a_later_commit_is_ok() {
    let (result, calls) = scripted(vec![
        Ok(Attempt::Conflict),
        Ok(Attempt::Committed(vec![json!(null)])),
    ]);
    assert_eq!((result.unwrap(), calls), (vec![json!(null)], 2));
}

#[test]
fn an_indeterminate_failure_after_a_conflict_is_kept_and_never_retried() {
    let timed_out = CallError::timed_out(CallKind::Mutation);
    let (result, calls) = scripted(vec![Ok(Attempt::Conflict), Err(timed_out)]);
    let e = result.unwrap_err();
    assert_eq!((e.tag, e.certainty, calls), ("timed-out", Indeterminate, 2));
}

#[test]
fn a_definite_failure_ends_the_transaction_at_once() {
    let no_leader = classify::classify_etcd(
        CallKind::Mutation,
        &tonic::Status::unavailable("etcdserver: no leader"),
    );
    let (result, calls) = scripted(vec![Err(no_leader)]);
    let e = result.unwrap_err();
    assert_eq!((e.tag, e.certainty, calls), ("no-leader", Definite, 1));
}

#[test]
fn a_commit_answer_that_is_not_the_ranges_is_indeterminate_when_the_txn_writes() {
    let keys = vec!["la/1".to_string()];
    let put = pb::ResponseOp {
        response: Some(pb::response_op::Response::ResponsePut(
            pb::PutResponse::default(),
        )),
    };
    let e = read_values(
        ReadShape::List,
        &keys,
        std::slice::from_ref(&put),
        CallKind::Mutation,
    )
    .unwrap_err();
    assert_eq!((e.tag, e.certainty), ("bad-response", Indeterminate));
    let e = read_values(ReadShape::List, &keys, &[], CallKind::Mutation).unwrap_err();
    assert_eq!(
        (e.tag, e.certainty),
        ("bad-response", Indeterminate),
        "too few responses"
    );
    let other_key = range_response(vec![kv("la/2", "[1]", 3)]);
    let e = read_values(ReadShape::List, &keys, &[other_key], CallKind::Mutation).unwrap_err();
    assert_eq!(e.certainty, Indeterminate, "a record of another key");
}

#[test]
fn a_stored_value_that_is_not_a_list_is_a_definite_failure_when_only_read() {
    let keys = vec!["la/1".to_string()];
    let garbage = range_response(vec![kv("la/1", "7", 3)]);
    let e = seen_lists(&keys, std::slice::from_ref(&garbage), CallKind::Read).unwrap_err();
    assert_eq!(
        (e.tag, e.certainty),
        ("bad-response", Definite),
        "the reading step wrote nothing"
    );
    let e = read_values(ReadShape::List, &keys, &[garbage], CallKind::Mutation).unwrap_err();
    assert_eq!(
        e.certainty, Indeterminate,
        "inside a committed Txn that wrote"
    );
}

#[test]
fn a_failure_of_the_reading_step_is_definite_and_says_so() {
    let e = before_commit(classify::classify_etcd(
        CallKind::Read,
        &tonic::Status::unavailable("etcdserver: leader changed"),
    ));
    assert_eq!((e.tag, e.certainty), ("leader-changed", Definite));
    assert_eq!(
        e.message,
        "before the commit, nothing written: etcdserver: leader changed"
    );
}

#[test]
fn the_commit_is_a_mutation_only_when_the_transaction_writes() {
    assert_eq!(commit_kind(&[lread("a"), lread("b")]), CallKind::Read);
    assert_eq!(commit_kind(&[rread("a")]), CallKind::Read);
    assert_eq!(
        commit_kind(&[lread("a"), append("a", 1)]),
        CallKind::Mutation
    );
    assert_eq!(commit_kind(&[write("a", 1)]), CallKind::Mutation);
}

// --- the mapping -----------------------------------------------------------------------

#[test]
fn double_writes_are_coalesced_to_the_last_and_reads_see_the_txns_own_writes() {
    let mops = [
        rread("x"),
        write("x", 1),
        rread("x"),
        write("x", 2),
        write("y", 3),
        rread("x"),
    ];
    assert_eq!(
        register_puts(&mops),
        vec![
            ("x".to_string(), b"2".to_vec()),
            ("y".to_string(), b"3".to_vec())
        ]
    );
    assert_eq!(read_keys(&mops), ["x"]);
    let before = BTreeMap::from([("x".to_string(), json!(null))]);
    assert_eq!(
        answers(&mops, before).unwrap(),
        vec![
            json!(null),
            json!(null),
            json!(1),
            json!(null),
            json!(null),
            json!(2)
        ]
    );
}

#[test]
fn a_list_put_is_the_seen_list_and_every_append_in_order() {
    let mops = [
        append("a", 5),
        lread("a"),
        append("b", 6),
        append("a", 7),
        lread("a"),
    ];
    let seen = BTreeMap::from([("a".to_string(), vec![1, 2])]);
    assert_eq!(
        list_puts(&mops, &seen),
        vec![
            ("a".to_string(), b"[1,2,5,7]".to_vec()),
            ("b".to_string(), b"[6]".to_vec())
        ]
    );
    let before = BTreeMap::from([("a".to_string(), json!([1, 2]))]);
    assert_eq!(
        answers(&mops, before).unwrap(),
        vec![
            json!(null),
            json!([1, 2, 5]),
            json!(null),
            json!(null),
            json!([1, 2, 5, 7])
        ]
    );
    assert_eq!(
        answers(&[lread("z")], BTreeMap::new()),
        None,
        "a read whose key was not ranged"
    );
}

#[test]
fn lists_round_trip_and_garbage_is_not_a_list() {
    assert_eq!(decode_list(&encode_list(&[3, -1, 7])), Some(vec![3, -1, 7]));
    assert_eq!(decode_list(b"[]"), Some(vec![]));
    for bad in [&b"7"[..], b"[1,\"x\"]", b"", b"[1"] {
        assert_eq!(decode_list(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn the_commit_ranges_first_then_puts_and_compares_mod_revisions() {
    use pb::compare::{CompareTarget, TargetUnion};
    let req = commit_request(
        vec![mod_compare("a", 0)],
        &["b".to_string()],
        vec![("a".to_string(), b"[1]".to_vec())],
    );
    assert_eq!(req.compare[0].target, CompareTarget::Mod as i32);
    assert_eq!(
        req.compare[0].target_union,
        Some(TargetUnion::ModRevision(0))
    );
    assert!(req.failure.is_empty(), "a failed compare writes nothing");
    let kinds: Vec<&str> = req
        .success
        .iter()
        .map(|op| match op.request {
            Some(pb::request_op::Request::RequestRange(_)) => "range",
            Some(pb::request_op::Request::RequestPut(_)) => "put",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["range", "put"]);
}

#[test]
fn mixed_or_empty_transactions_have_their_shape() {
    assert_eq!(
        shape_of(&[append("a", 1), lread("a")]),
        Some(ReadShape::List)
    );
    assert_eq!(
        shape_of(&[write("a", 1), rread("a")]),
        Some(ReadShape::Register)
    );
    assert_eq!(shape_of(&[append("a", 1), write("b", 2)]), None);
    assert_eq!(shape_of(&[]), Some(ReadShape::Register));
}

// --- against a real etcd ---------------------------------------------------------------

#[tokio::test]
async fn etcd_refuses_a_key_put_twice_in_one_txn_which_is_why_writes_are_coalesced() {
    let etcd = LocalEtcd::start();
    let c = etcd.client();
    wait_leader(&c).await;
    let twice = commit_request(
        vec![],
        &[],
        vec![("k".into(), b"1".to_vec()), ("k".into(), b"2".to_vec())],
    );
    let mut stub = c.kv.clone();
    let status = stub.txn(twice).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("duplicate key"), "{status:?}");
}

#[tokio::test]
async fn register_transactions_against_a_real_etcd() {
    let etcd = LocalEtcd::start();
    let c = etcd.client();
    wait_leader(&c).await;
    let t = c.as_txn().expect("the etcd client runs transactions");
    let got = t
        .transact(&[
            rread("x"),
            write("x", 1),
            rread("x"),
            write("x", 2),
            write("y", 3),
        ])
        .await
        .unwrap();
    assert_eq!(
        got,
        vec![json!(null), json!(null), json!(1), json!(null), json!(null)]
    );
    assert_eq!(
        t.transact(&[rread("x"), rread("y"), rread("z")])
            .await
            .unwrap(),
        vec![json!(2), json!(3), json!(null)]
    );
    assert_eq!(
        c.read(b"x").await.unwrap().value.as_deref(),
        Some(&b"2"[..]),
        "stored as decimal text"
    );
}

#[tokio::test]
async fn append_transactions_against_a_real_etcd() {
    let etcd = LocalEtcd::start();
    let c = etcd.client();
    wait_leader(&c).await;
    let t = c.as_txn().unwrap();
    let got = t
        .transact(&[
            append("a", 1),
            lread("a"),
            append("a", 2),
            lread("a"),
            lread("b"),
        ])
        .await
        .unwrap();
    assert_eq!(
        got,
        vec![
            json!(null),
            json!([1]),
            json!(null),
            json!([1, 2]),
            json!([])
        ]
    );
    assert_eq!(
        t.transact(&[lread("a"), append("b", 3)]).await.unwrap(),
        vec![json!([1, 2]), json!(null)]
    );
    assert_eq!(
        t.transact(&[lread("a"), lread("b")]).await.unwrap(),
        vec![json!([1, 2]), json!([3])]
    );
    assert_eq!(
        c.read(b"a").await.unwrap().value.as_deref(),
        Some(&b"[1,2]"[..]),
        "stored as JSON text"
    );
}

#[tokio::test]
async fn a_key_holding_something_else_fails_definitely_before_anything_is_written() {
    let etcd = LocalEtcd::start();
    let c = etcd.client();
    wait_leader(&c).await;
    c.write(b"a", b"oops").await.unwrap();
    let t = c.as_txn().unwrap();
    let e = t.transact(&[append("a", 1)]).await.unwrap_err();
    assert_eq!((e.tag, e.certainty), ("bad-response", Definite), "{e}");
    assert_eq!(
        c.read(b"a").await.unwrap().value.as_deref(),
        Some(&b"oops"[..])
    );
}

#[tokio::test]
async fn concurrent_appends_to_one_key_keep_exactly_the_acknowledged_ones() {
    let etcd = LocalEtcd::start();
    let first = etcd.client();
    wait_leader(&first).await;
    let clients: Vec<EtcdClient> = (0..6).map(|_| etcd.client()).collect();
    let runs = clients.iter().enumerate().map(|(i, c)| async move {
        let mut outcomes = Vec::new();
        for n in 0..8 {
            let value = (i * 100 + n) as i64;
            outcomes.push((
                value,
                c.as_txn()
                    .unwrap()
                    .transact(&[append("hot", value), lread("hot")])
                    .await,
            ));
        }
        outcomes
    });
    let outcomes: Vec<(i64, CallResult<Vec<Json>>)> = futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect();
    let mut acked = Vec::new();
    for (value, outcome) in &outcomes {
        match outcome {
            Ok(got) => {
                let read = got[1].as_array().expect("a list");
                assert_eq!(
                    read.last(),
                    Some(&json!(value)),
                    "a txn reads its own append last"
                );
                acked.push(*value);
            }
            Err(e) => assert_eq!((e.tag, e.certainty), ("conflict", Definite), "{e}"),
        }
    }
    let stored = decode_list(&first.read(b"hot").await.unwrap().value.unwrap()).unwrap();
    let mut sorted = stored.clone();
    sorted.sort_unstable();
    acked.sort_unstable();
    assert_eq!(
        sorted, acked,
        "every acknowledged append once, no failed one"
    );
    assert!(!acked.is_empty());
}

#[tokio::test]
async fn a_dead_member_fails_a_transaction_definitely() {
    let (_etcd, fresh) = client_of_a_dead_member().await;
    let t = fresh.as_txn().unwrap();
    for mops in [vec![write("x", 1)], vec![append("a", 1)]] {
        let e = t.transact(&mops).await.unwrap_err();
        assert_eq!(
            e.certainty, Definite,
            "connection refused: nothing was sent ({e})"
        );
    }
}
