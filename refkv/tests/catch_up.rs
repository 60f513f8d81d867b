//! A follower that was paused (SIGSTOP) while its group committed large entries catches up
//! after it resumes. The cause of the move-under-pause liveness bug: openraft 0.9 gives every
//! AppendEntries RPC one heartbeat interval (100 ms) to complete, and a lagging follower was
//! sent up to `max_payload_entries` large entries in one RPC (megabytes of JSON) that could
//! never arrive in time; the same batch was re-sent forever and the follower stayed at its
//! old log index. Invariant checked: after the resume the follower reaches the leader's last
//! log index and knows the leader.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// Large values, the size of a move's copy batch (`Ingest` entries hold up to 32 KB).
const VALUE_BYTES: usize = 32 << 10;
const WRITES: usize = 80;

/// How long the resumed follower may take to catch up. A liveness bound, not a speed: the
/// bug this guards stalls forever, so a generous bound loses nothing, and a tight one (20 s)
/// could fail on a loaded machine.
const CATCH_UP: Duration = Duration::from_secs(60);

/// The whole test's bound: writes that cannot commit would otherwise retry for 30 s each.
const WHOLE_TEST: Duration = Duration::from_secs(150);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn paused_follower_catches_up_on_large_entries() {
    let bounded = tokio::time::timeout(WHOLE_TEST, pause_write_resume_and_catch_up()).await;
    assert!(bounded.is_ok(), "the test did not finish within {WHOLE_TEST:?}: writes with one follower paused or the catch-up stalled");
}

async fn pause_write_resume_and_catch_up() {
    let cluster = Cluster::start(3, &[]).await;
    let leader = cluster.leader_of(1).await.expect("group 1 has a leader");
    let follower = (0..3).find(|i| *i != leader).expect("a follower");
    cluster.pause(follower, true);

    let mut clients = Clients::new(&cluster);
    let value = vec![b'v'; VALUE_BYTES];
    for i in 0..WRITES {
        let key = format!("big-{i:04}").into_bytes();
        let acked = clients
            .put_until_acked(
                leader,
                &key,
                &value,
                Instant::now() + Duration::from_secs(30),
            )
            .await;
        assert!(
            acked.is_some(),
            "write {i} not acknowledged with one follower paused"
        );
    }
    let target = cluster
        .status(leader, 1)
        .await
        .expect("leader status")
        .last_log_index;
    cluster.pause(follower, false);

    let deadline = Instant::now() + CATCH_UP;
    loop {
        let s = cluster.status(follower, 1).await;
        if let Some(s) = &s {
            if s.applied_index >= target && !s.leader_id.is_empty() {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the resumed follower did not catch up within {CATCH_UP:?}: target index {target}, follower (state, leader, term, applied, last log) {:?}",
            s.map(|s| (s.state, s.leader_id, s.term, s.applied_index, s.last_log_index))
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
