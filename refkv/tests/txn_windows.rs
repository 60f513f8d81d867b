//! A transaction held at its commit point (`RefkvTxn.TxnHold`) while one of its keys moves
//! to another group, released in each window faultline's `txn-move` aims at
//! (docs/refkv.md § Holding a transaction at its commit point): its secondary's range
//! released past the fence, its primary's released in CUTOVER and in BACKFILL.
//!
//! What must hold every time, whatever phase the release lands in: an acknowledged
//! transaction's appends are each in its keys' final lists exactly once; a definitely
//! refused one left none; one with an unknown outcome left all or none. With the seeded
//! `commit-to-old-owner`, a primary released in CUTOVER is committed by the old owner and
//! the acknowledged transaction is left partly visible, every time (the commit is sent to
//! the prewrite's group and that group still holds the lock).
//!
//! And a coordinator killed while it holds a transaction: at the commit point, readers
//! roll every lock back; after the primary's commit, they roll every lock forward (with the
//! seeded `expired-lock-rolled-back`, back: the primary's append alone stays visible).

mod common;

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

async fn txn_client(cluster: &Cluster, i: usize) -> RefkvTxnClient<Channel> {
    RefkvTxnClient::new(cluster.channel(i).await.expect("connect"))
}

async fn txn(
    c: &mut RefkvTxnClient<Channel>,
    mops: Vec<TxnMop>,
) -> Result<TxnResponse, tonic::Status> {
    let mut req = tonic::Request::new(TxnRequest { mops });
    req.set_timeout(Duration::from_secs(30));
    c.txn(req).await.map(|r| r.into_inner())
}

/// Which key moves and the phase the held transaction is released in.
#[derive(Clone, Copy, Debug)]
enum Window {
    SecondaryPastFence,
    PrimaryInCutover,
    PrimaryInDeltaCopy,
    PrimaryInBackfill,
}

impl Window {
    fn moves_primary(self) -> bool {
        !matches!(self, Window::SecondaryPastFence)
    }

    fn release_at(self) -> SplitJobPhase {
        match self {
            Window::SecondaryPastFence => SplitJobPhase::DeltaCopy,
            Window::PrimaryInCutover => SplitJobPhase::Cutover,
            Window::PrimaryInDeltaCopy => SplitJobPhase::DeltaCopy,
            Window::PrimaryInBackfill => SplitJobPhase::Backfill,
        }
    }
}

/// The route holding `key` in the current catalog, and the catalog version.
async fn route_of(cluster: &Cluster, key: &str) -> (RouteDescriptor, u64) {
    let routes = cluster.list_routes(0).await;
    let k = key.as_bytes();
    let route = routes
        .routes
        .iter()
        .find(|r| r.start.as_slice() <= k && (r.end.is_empty() || k < r.end.as_slice()))
        .expect("a route holds the key");
    (route.clone(), routes.catalog_version)
}

/// Moves the range from `key` on to another group; the job's id.
async fn move_key(cluster: &Cluster, key: &str) -> u64 {
    let (route, version) = route_of(cluster, key).await;
    let target = route.raft_group_id % 3 + 1;
    let req = StartSplitMigrationRequest {
        expected_catalog_version: version,
        route_id: route.route_id,
        split_key: key.as_bytes().to_vec(),
        target_group_id: target,
        options: Default::default(),
    };
    cluster
        .dist(0)
        .await
        .expect("connect")
        .start_split_migration(req)
        .await
        .expect("StartSplitMigration")
        .into_inner()
        .job_id
}

async fn job_phase(cluster: &Cluster, job_id: u64) -> Option<i32> {
    let mut dist = cluster.dist(0).await?;
    dist.get_split_job(GetSplitJobRequest { job_id })
        .await
        .ok()?
        .into_inner()
        .job
        .map(|j| j.phase)
}

/// Polls the job until it is in `phase` or later on its forward path; the phase seen.
async fn wait_for(cluster: &Cluster, job_id: u64, phase: SplitJobPhase) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(seen) = job_phase(cluster, job_id).await {
            if (phase as i32..=SplitJobPhase::Done as i32).contains(&seen) {
                return seen;
            }
        }
        assert!(
            Instant::now() < deadline,
            "job {job_id} never reached {phase:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until node 0 lists a held transaction.
async fn wait_held(hold: &mut RefkvTxnClient<Channel>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listed = hold
            .txn_hold(TxnHoldRequest {
                arm_hold_ms: 0,
                release: false,
                after_primary_commit: false,
            })
            .await
            .expect("TxnHold")
            .into_inner();
        if listed.txns.iter().any(|t| t.held) {
            return;
        }
        assert!(Instant::now() < deadline, "no transaction took the hold");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The final lists of `keys`, read in one transaction (retried until it succeeds: a lock
/// left behind blocks readers until it expires).
async fn final_lists(cluster: &Cluster, keys: &[&str]) -> Vec<Vec<i64>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut c = txn_client(cluster, 1).await;
        if let Ok(resp) = txn(&mut c, keys.iter().map(|k| read(k)).collect()).await {
            return resp.results.into_iter().map(|r| r.values).collect();
        }
        assert!(Instant::now() < deadline, "no final read within 60 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What a held transaction's client got, and how many times its value is in each key.
struct Held {
    outcome: Result<TxnResponse, tonic::Status>,
    seen: Vec<usize>,
    phase_at_release: i32,
}

/// One round: padding under the primary (so BACKFILL lasts at the throttled copy rate),
/// then a two-key transaction held at its commit point while `window`'s key moves,
/// released at the window's phase; the job is waited for and both keys read.
async fn held_round(cluster: &Cluster, window: Window, round: usize) -> Held {
    let (primary, secondary) = (format!("a/{round}"), format!("b/{round}"));
    let value = round as i64 + 100;
    let mut c = txn_client(cluster, 0).await;
    let padding: Vec<TxnMop> = (0..30)
        .map(|i| append(&format!("a/{round}/pad{i:02}"), i))
        .collect();
    txn(&mut c, padding).await.expect("padding commits");
    let mut hold = txn_client(cluster, 0).await;
    hold.txn_hold(TxnHoldRequest {
        arm_hold_ms: 5000,
        release: false,
        after_primary_commit: false,
    })
    .await
    .expect("arm");
    let mops = vec![append(&primary, value), append(&secondary, value)];
    let held = tokio::spawn(async move { txn(&mut c, mops).await });
    wait_held(&mut hold).await;
    let job = move_key(
        cluster,
        if window.moves_primary() {
            &primary
        } else {
            &secondary
        },
    )
    .await;
    let phase_at_release = wait_for(cluster, job, window.release_at()).await;
    hold.txn_hold(TxnHoldRequest {
        arm_hold_ms: 0,
        release: true,
        after_primary_commit: false,
    })
    .await
    .expect("release");
    let outcome = held.await.expect("the transaction's task");
    wait_for(cluster, job, SplitJobPhase::Done).await;
    let lists = final_lists(cluster, &[&primary, &secondary]).await;
    let seen = lists
        .iter()
        .map(|l| l.iter().filter(|v| **v == value).count())
        .collect();
    Held {
        outcome,
        seen,
        phase_at_release,
    }
}

fn assert_atomic(window: Window, h: &Held) {
    match &h.outcome {
        Ok(_) => assert_eq!(
            h.seen,
            [1, 1],
            "{window:?}: an acknowledged transaction's appends, each once (phase {})",
            h.phase_at_release
        ),
        Err(s) if matches!(s.code(), Code::Aborted | Code::Unavailable) => {
            assert_eq!(h.seen, [0, 0], "{window:?}: refused, so nothing ({s:?})")
        }
        Err(s) => assert!(
            h.seen == [0, 0] || h.seen == [1, 1],
            "{window:?}: unknown outcome, all or nothing: {:?} ({s:?})",
            h.seen
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_transaction_held_while_its_keys_move_commits_atomically_in_every_window() {
    let cluster = Cluster::start(
        3,
        &["--initial-splits", "b,c", "--copy-bytes-per-sec", "20000"],
    )
    .await;
    let windows = [
        Window::SecondaryPastFence,
        Window::PrimaryInCutover,
        Window::PrimaryInDeltaCopy,
        Window::PrimaryInBackfill,
    ];
    let mut committed = 0;
    for round in 0..2 * windows.len() {
        let window = windows[round % windows.len()];
        let h = held_round(&cluster, window, round).await;
        eprintln!(
            "round {round} {window:?}: released in phase {}, {:?}, seen {:?}",
            h.phase_at_release,
            h.outcome.as_ref().map(|_| "ok"),
            h.seen
        );
        assert_atomic(window, &h);
        committed += usize::from(h.outcome.is_ok());
    }
    assert!(committed >= 1, "no held transaction committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commit_to_old_owner_leaves_a_transaction_released_in_cutover_partly_visible() {
    let cluster = Cluster::start(
        3,
        &["--initial-splits", "b,c", "--bug", "commit-to-old-owner"],
    )
    .await;
    let h = held_round(&cluster, Window::PrimaryInCutover, 0).await;
    assert!(
        h.outcome.is_ok(),
        "the old owner commits the primary and the client is told so: {:?}",
        h.outcome
    );
    assert_eq!(
        h.seen,
        [0, 1],
        "the primary's append is lost at the new owner, the secondary's visible"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_coordinator_killed_at_the_commit_point_leaves_nothing_once_readers_resolve_its_locks() {
    let cluster = Cluster::start(3, &["--initial-splits", "b,c"]).await;
    let mut c = txn_client(&cluster, 0).await;
    let mut hold = txn_client(&cluster, 0).await;
    hold.txn_hold(TxnHoldRequest {
        arm_hold_ms: 3000,
        release: false,
        after_primary_commit: false,
    })
    .await
    .expect("arm");
    let held = tokio::spawn(async move {
        txn(
            &mut c,
            vec![append("a/k", 7), append("b/k", 7), append("c/k", 7)],
        )
        .await
    });
    wait_held(&mut hold).await;
    cluster.kill(0);
    let outcome = held.await.expect("the transaction's task");
    assert!(
        outcome.is_err(),
        "the coordinator died before its primary's commit: {outcome:?}"
    );
    // Its locks in three groups expire; a reader rolls each back from the primary's status.
    assert_eq!(
        final_lists(&cluster, &["a/k", "b/k", "c/k"]).await,
        [Vec::<i64>::new(), vec![], vec![]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_coordinator_killed_after_its_primary_commit_leaves_the_whole_transaction_once_readers_resolve_its_locks(
) {
    let cluster = Cluster::start(3, &["--initial-splits", "b,c"]).await;
    // The primary is committed in group 1; the locks in groups 2 and 3 expire and a reader
    // rolls each forward from the primary's status.
    assert_eq!(
        kill_the_coordinator_after_its_primary_commit(&cluster).await,
        [vec![7], vec![7], vec![7]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expired_lock_rolled_back_leaves_a_transaction_whose_coordinator_died_after_its_primary_commit_partly_visible(
) {
    let cluster = Cluster::start(
        3,
        &[
            "--initial-splits",
            "b,c",
            "--bug",
            "expired-lock-rolled-back",
        ],
    )
    .await;
    // The readers roll the expired secondary locks back without asking the committed primary.
    assert_eq!(
        kill_the_coordinator_after_its_primary_commit(&cluster).await,
        [vec![7], vec![], vec![]]
    );
}

/// Holds a transaction appending 7 to `a/k` (its primary), `b/k` and `c/k` (one group each)
/// after its primary's commit, kills its coordinator (node 0) and reads the three keys once
/// readers resolved its locks.
async fn kill_the_coordinator_after_its_primary_commit(cluster: &Cluster) -> Vec<Vec<i64>> {
    let mut c = txn_client(cluster, 0).await;
    let mut hold = txn_client(cluster, 0).await;
    hold.txn_hold(TxnHoldRequest {
        arm_hold_ms: 3000,
        release: false,
        after_primary_commit: true,
    })
    .await
    .expect("arm");
    let held = tokio::spawn(async move {
        txn(
            &mut c,
            vec![append("a/k", 7), append("b/k", 7), append("c/k", 7)],
        )
        .await
    });
    wait_held(&mut hold).await;
    let listed = hold
        .txn_hold(TxnHoldRequest {
            arm_hold_ms: 0,
            release: false,
            after_primary_commit: false,
        })
        .await
        .expect("TxnHold")
        .into_inner();
    let t = listed
        .txns
        .iter()
        .find(|t| t.held)
        .expect("the held transaction is listed");
    assert_eq!(
        (t.primary.as_slice(), t.secondary_writes.len()),
        (b"a/k".as_slice(), 2),
        "held with both secondary locks live: {t:?}"
    );
    assert!(t.commit_ts > 0, "held after its commit point: {t:?}");
    cluster.kill(0);
    let outcome = held.await.expect("the transaction's task");
    assert!(
        outcome.is_err(),
        "the coordinator died before answering: {outcome:?}"
    );
    final_lists(cluster, &["a/k", "b/k", "c/k"]).await
}
