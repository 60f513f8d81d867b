//! Seeded bugs `stale-read` and `ack-before-commit` (issue 4): each test runs the same
//! scenario with and without the bug and asserts the symptom appears only with it.

mod common;

use std::time::{Duration, Instant};

use common::*;
use refkv::proto::api::*;

/// Node 3 misses an update while it is down; right after its restart it is asked for the
/// key. Returns whether any read through node 3 returned the old value after the new one was
/// acknowledged.
///
/// With `freeze_others` the two other nodes are paused (SIGSTOP) from before node 3's
/// restart until the reads end, so node 3 cannot catch up before it answers: a node that
/// serves reads from its local replica then answers from what it re-applies from its own
/// log. A clean read needs a quorum, so the clean scenario keeps the others running.
async fn stale_read_after_restart(extra: &[&str], freeze_others: bool) -> bool {
    let cluster = Cluster::start(3, extra).await;
    let mut clients = Clients::new(&cluster);
    let far = Instant::now() + Duration::from_secs(30);
    assert!(clients
        .put_until_acked(0, b"x", b"old", far)
        .await
        .is_some());
    // The state machine is not durable: after its kill node 3 re-applies its log up to the
    // committed index it stored, which is written with a later append. These writes carry
    // that index past "old" to node 3's disk.
    for i in 0..5 {
        let k = format!("after-old-{i}").into_bytes();
        assert!(clients.put_until_acked(0, &k, b"a", far).await.is_some());
    }
    // Let node 3 apply "old" and store the commit index.
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.kill(2);
    assert!(clients
        .put_until_acked(0, b"x", b"new", far)
        .await
        .is_some());
    // Enough missed entries that catching up takes a while after the restart.
    for i in 0..600 {
        let k = format!("filler-{i}").into_bytes();
        assert!(clients
            .put_until_acked(i % 2, &k, b"f", far)
            .await
            .is_some());
    }
    if freeze_others {
        cluster.pause(0, true);
        cluster.pause(1, true);
    }
    cluster.restart(2);
    let mut stale = false;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut answered = 0;
    while Instant::now() < deadline && answered < 50 {
        clients.drop_conn(2);
        if let Some(kv) = clients.kv(2).await {
            if let Ok(r) = kv
                .raw_get(RawGetRequest {
                    key: b"x".to_vec(),
                    ..Default::default()
                })
                .await
            {
                answered += 1;
                if r.into_inner().value == b"old" {
                    stale = true;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if freeze_others {
        cluster.pause(0, false);
        cluster.pause(1, false);
    }
    assert!(answered > 0, "node 3 never answered");
    stale
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stale_read_bug_serves_old_values_and_clean_refkv_does_not() {
    assert!(
        !stale_read_after_restart(&[], false).await,
        "clean refkv served a stale read"
    );
    assert!(
        stale_read_after_restart(&["--bug", "stale-read"], true).await,
        "stale-read bug must be observable"
    );
}

/// Both followers of group 1 are paused; writes are sent to the leader, which is then
/// killed; the followers resume and elect a new leader. Returns (acknowledged, lost).
async fn acked_writes_lost_with_leader(extra: &[&str]) -> (usize, usize) {
    let cluster = Cluster::start(3, extra).await;
    let leader = cluster.leader_of(1).await.expect("leader");
    let followers: Vec<usize> = (0..3).filter(|i| *i != leader).collect();
    let mut kv = cluster.kv(leader).await.expect("connect");
    for f in &followers {
        cluster.pause(*f, true);
    }
    let mut acked = Vec::new();
    for i in 0..3 {
        let key = format!("abc-{i}").into_bytes();
        let req = RawPutRequest {
            key: key.clone(),
            value: b"v".to_vec(),
            ..Default::default()
        };
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(5), kv.raw_put(req)).await {
            acked.push(key);
        }
    }
    cluster.kill(leader);
    for f in &followers {
        cluster.pause(*f, false);
    }
    // The followers elect a new leader (and commit its first entry) before the old leader,
    // whose log holds the unacknowledged-by-quorum entries, comes back.
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster.leader_of(1).await.is_none() {
        assert!(Instant::now() < deadline, "no new leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.restart(leader);
    cluster.wait_ready(Duration::from_secs(60)).await;
    let mut clients = Clients::new(&cluster);
    let mut lost = 0;
    for key in &acked {
        if clients
            .get(followers[0], key)
            .await
            .ok()
            .flatten()
            .is_none()
        {
            lost += 1;
        }
    }
    (acked.len(), lost)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ack_before_commit_bug_loses_acknowledged_writes_and_clean_refkv_does_not() {
    let (acked, lost) = acked_writes_lost_with_leader(&[]).await;
    assert_eq!(
        (acked, lost),
        (0, 0),
        "clean refkv cannot acknowledge without a quorum"
    );
    let (acked, lost) = acked_writes_lost_with_leader(&["--bug", "ack-before-commit"]).await;
    assert!(
        acked > 0 && lost > 0,
        "ack-before-commit: acked {acked}, lost {lost}"
    );
}
