//! Transactions (`RefkvTxn.Txn`, docs/refkv.md § Transactions) on a real 3-node cluster whose
//! routes start in three groups (`--initial-splits b,c`: keys `a…` in group 1, `b…` in 2,
//! `c…` in 3), so transactions span groups.
//!
//! What must hold in every run, checked from the clients' own records:
//! - an acknowledged transaction's appends are each in its key's final list exactly once;
//! - a transaction refused definitely (`ABORTED`, `UNAVAILABLE`) left none of its appends;
//! - a transaction with an unknown outcome left all of its appends or none (atomicity
//!   across groups);
//! - every list an acknowledged transaction read is a prefix of the key's final list (each
//!   key's history is one order of appends, and reads see a consistent prefix of it).

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use refkv::proto::api::refkv_txn_client::RefkvTxnClient;
use refkv::proto::api::*;
use tonic::transport::Channel;
use tonic::Code;

fn append(key: &str, value: i64) -> TxnMop {
    TxnMop {
        kind: TxnMopKind::Append as i32,
        key: key.as_bytes().to_vec(),
        value,
    }
}

fn read(key: &str) -> TxnMop {
    TxnMop {
        kind: TxnMopKind::Read as i32,
        key: key.as_bytes().to_vec(),
        value: 0,
    }
}

async fn client(cluster: &Cluster, i: usize) -> Option<RefkvTxnClient<Channel>> {
    cluster.channel(i).await.map(RefkvTxnClient::new)
}

async fn txn(
    c: &mut RefkvTxnClient<Channel>,
    mops: Vec<TxnMop>,
) -> Result<TxnResponse, tonic::Status> {
    let mut req = tonic::Request::new(TxnRequest { mops });
    req.set_timeout(Duration::from_secs(10));
    c.txn(req).await.map(|r| r.into_inner())
}

/// Reads `keys` in one read-only transaction, retrying until it succeeds.
async fn read_all(cluster: &Cluster, keys: &[String]) -> BTreeMap<String, Vec<i64>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for i in 0..cluster.addrs.len() {
            let Some(mut c) = client(cluster, i).await else {
                continue;
            };
            if let Ok(resp) = txn(&mut c, keys.iter().map(|k| read(k)).collect()).await {
                return keys
                    .iter()
                    .cloned()
                    .zip(resp.results.into_iter().map(|r| r.values))
                    .collect();
            }
        }
        assert!(Instant::now() < deadline, "no final read within 30 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_transaction_across_three_groups_commits_atomically_and_reads_its_own_writes() {
    let cluster = Cluster::start(3, &["--initial-splits", "b,c"]).await;
    let mut c = client(&cluster, 0).await.expect("connect");
    let first = txn(
        &mut c,
        vec![
            append("a1", 1),
            append("b1", 2),
            append("c1", 3),
            read("b1"),
        ],
    )
    .await
    .expect("commits");
    assert!(first.commit_ts > first.start_ts, "{first:?}");
    assert_eq!(
        first.results[3],
        TxnMopResult {
            exists: true,
            values: vec![2]
        },
        "reads its own append"
    );
    let mut other = client(&cluster, 2).await.expect("connect");
    let after = txn(
        &mut other,
        vec![read("a1"), read("b1"), read("c1"), read("never")],
    )
    .await
    .expect("reads");
    assert!(
        after.start_ts > first.commit_ts,
        "a later transaction gets a later timestamp: {after:?}"
    );
    assert_eq!(after.commit_ts, 0, "read-only");
    let lists: Vec<(bool, Vec<i64>)> = after
        .results
        .into_iter()
        .map(|r| (r.exists, r.values))
        .collect();
    assert_eq!(
        lists,
        [
            (true, vec![1]),
            (true, vec![2]),
            (true, vec![3]),
            (false, vec![])
        ]
    );
    let register = TxnMop {
        kind: TxnMopKind::Write as i32,
        key: b"b1".to_vec(),
        value: 9,
    };
    let replaced = txn(&mut other, vec![register, read("b1")])
        .await
        .expect("commits");
    assert_eq!(
        replaced.results[1].values,
        [9],
        "a register write replaces the list"
    );
    let err = txn(
        &mut c,
        vec![TxnMop {
            kind: 0,
            key: b"a".to_vec(),
            value: 0,
        }],
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let err = txn(&mut c, vec![]).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
}

/// What one client saw of one transaction.
struct Record {
    appends: Vec<(String, i64)>,
    reads: Vec<(String, Vec<i64>)>,
    outcome: Outcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    Definite,
    Unknown,
}

fn outcome_of(status: &tonic::Status) -> Outcome {
    match status.code() {
        Code::Aborted | Code::Unavailable => Outcome::Definite,
        _ => Outcome::Unknown,
    }
}

const KEYS: [&str; 9] = ["a0", "a1", "a2", "b0", "b1", "b2", "c0", "c1", "c2"];

/// A worker's transactions: 2–3 micro-ops over keys of different groups, for `run_for`.
async fn worker(cluster: Arc<Cluster>, w: usize, run_for: Duration, log: Arc<Mutex<Vec<Record>>>) {
    let end = Instant::now() + run_for;
    let mut n: i64 = 0;
    while Instant::now() < end {
        n += 1;
        let value = (w as i64) * 1_000_000 + n;
        let k = |i: i64| KEYS[((value * 7 + i * 3) % KEYS.len() as i64) as usize];
        let mut mops = vec![append(k(0), value), read(k(1))];
        if n % 2 == 0 {
            mops.push(append(k(2), value));
        }
        let node = (w + n as usize) % cluster.addrs.len();
        let Some(mut c) = client(&cluster, node).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let appends: Vec<(String, i64)> = mops
            .iter()
            .filter(|m| m.kind == TxnMopKind::Append as i32)
            .map(|m| (String::from_utf8_lossy(&m.key).into_owned(), m.value))
            .collect();
        let record = match txn(&mut c, mops.clone()).await {
            Ok(resp) => {
                let reads = mops
                    .iter()
                    .zip(resp.results)
                    .filter(|(m, _)| m.kind == TxnMopKind::Read as i32)
                    .map(|(m, r)| (String::from_utf8_lossy(&m.key).into_owned(), r.values))
                    .collect();
                Record {
                    appends,
                    reads,
                    outcome: Outcome::Ok,
                }
            }
            Err(status) => Record {
                appends,
                reads: vec![],
                outcome: outcome_of(&status),
            },
        };
        log.lock().unwrap().push(record);
    }
}

/// Checks the records against the final lists; returns (committed, with an unknown outcome).
fn check(records: &[Record], finals: &BTreeMap<String, Vec<i64>>) -> (usize, usize) {
    let count = |key: &str, v: i64| finals[key].iter().filter(|x| **x == v).count();
    let (mut committed, mut unknown) = (0, 0);
    for r in records {
        let present: Vec<usize> = r.appends.iter().map(|(k, v)| count(k, *v)).collect();
        match r.outcome {
            Outcome::Ok => {
                committed += 1;
                assert!(
                    present.iter().all(|c| *c == 1),
                    "an acknowledged append is lost or doubled: {:?} {present:?}",
                    r.appends
                );
                for (key, seen) in &r.reads {
                    assert!(
                        finals[key].starts_with(seen),
                        "read of {key} {seen:?} is not a prefix of the final {:?}",
                        finals[key]
                    );
                }
            }
            Outcome::Definite => assert!(
                present.iter().all(|c| *c == 0),
                "a refused transaction left appends: {:?} {present:?}",
                r.appends
            ),
            Outcome::Unknown => {
                unknown += 1;
                assert!(
                    present.iter().all(|c| *c == present[0]) && present[0] <= 1,
                    "partly visible: {:?} {present:?}",
                    r.appends
                );
            }
        }
    }
    (committed, unknown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_transactions_stay_atomic_and_ordered_while_a_range_moves_and_a_leader_dies() {
    let cluster = Arc::new(
        Cluster::start(
            3,
            &["--initial-splits", "b,c", "--copy-bytes-per-sec", "20000"],
        )
        .await,
    );
    let log = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..6)
        .map(|w| {
            tokio::spawn(worker(
                cluster.clone(),
                w,
                Duration::from_secs(10),
                log.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Move the upper half of group 2's route to group 3 while the workers run.
    let routes = cluster.list_routes(0).await;
    let b_route = routes
        .routes
        .iter()
        .find(|r| r.start == b"b")
        .expect("route [b, c)")
        .clone();
    let mut dist = cluster.dist(0).await.expect("connect");
    let req = StartSplitMigrationRequest {
        expected_catalog_version: routes.catalog_version,
        route_id: b_route.route_id,
        split_key: b"b1".to_vec(),
        target_group_id: 3,
        options: Default::default(),
    };
    dist.start_split_migration(req)
        .await
        .expect("StartSplitMigration");
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Kill the leader of group 1 (the timestamp oracle and the catalog), restart it later.
    let leader = cluster.leader_of(1).await.expect("group 1 has a leader");
    cluster.kill(leader);
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.restart(leader);
    for w in workers {
        w.await.expect("worker");
    }
    cluster.wait_ready(Duration::from_secs(30)).await;
    let keys: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
    let finals = read_all(&cluster, &keys).await;
    let records = std::mem::take(&mut *log.lock().unwrap());
    let (committed, unknown) = check(&records, &finals);
    eprintln!(
        "{} transactions: {committed} committed, {unknown} unknown",
        records.len()
    );
    assert!(
        committed > 50,
        "too few transactions committed: {committed} of {}",
        records.len()
    );
    let after = cluster.list_routes(0).await;
    assert!(
        after
            .routes
            .iter()
            .any(|r| r.start == b"b1" && r.raft_group_id == 3),
        "the range moved: {:?}",
        after.routes
    );
}
