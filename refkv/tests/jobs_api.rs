//! elastickv's milestone-2 job API on a live refkv cluster: StartSplitMigration, one live
//! job, overlap refusal, GetSplitJob / ListSplitJobs, AbandonSplitJob before the cutover
//! (the source stays the only owner, the target refuses writes for the range) and after it
//! (refused), RetrySplitJob outside FAILED (refused), and stale pinned writes refused at
//! commit time. With `--bug abandon-keeps-target` the target still accepts writes after an
//! abandon in DELTA_COPY. The DELTA_COPY abandons are deterministic: the driver is held
//! before cutover (`--hold-before-cutover`) and the abandon is sent only once the target
//! accepts a write under the job's new epoch (it was granted the range).

mod common;

use std::time::{Duration, Instant};

use common::*;
use refkv::proto::api::*;
use tonic::Code;

/// 100 KB under `m`, copied at 20 KB/s: BACKFILL and DELTA_COPY take ~5 s each.
const SLOW: [&str; 2] = ["--copy-bytes-per-sec", "20000"];

async fn preload(cluster: &Cluster) {
    let mut clients = Clients::new(cluster);
    for i in 0..100 {
        let k = format!("m-pre-{i:03}").into_bytes();
        assert!(clients
            .put_until_acked(
                i % 3,
                &k,
                &[b'p'; 1000],
                Instant::now() + Duration::from_secs(30)
            )
            .await
            .is_some());
    }
}

async fn start_move(cluster: &Cluster) -> u64 {
    start_move_via(cluster, 0).await
}

/// Starts moving `[m, ∞)` from group 1 to group 2 through node `via`.
async fn start_move_via(cluster: &Cluster, via: usize) -> u64 {
    let routes = cluster.list_routes(via).await;
    let mut dist = cluster.dist(via).await.unwrap();
    let req = StartSplitMigrationRequest {
        expected_catalog_version: routes.catalog_version,
        route_id: routes.routes[0].route_id,
        split_key: b"m".to_vec(),
        target_group_id: 2,
        options: Default::default(),
    };
    dist.start_split_migration(req)
        .await
        .expect("StartSplitMigration")
        .into_inner()
        .job_id
}

async fn job(cluster: &Cluster, job_id: u64) -> SplitJob {
    let mut dist = cluster.dist(1).await.unwrap();
    dist.get_split_job(GetSplitJobRequest { job_id })
        .await
        .expect("GetSplitJob")
        .into_inner()
        .job
        .expect("a job")
}

async fn wait_phase(cluster: &Cluster, job_id: u64, phase: SplitJobPhase) -> SplitJob {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let j = job(cluster, job_id).await;
        if j.phase == phase as i32 {
            return j;
        }
        assert!(
            Instant::now() < deadline,
            "job never reached {phase:?} (now {:?}); logs:\n{}",
            j.phase,
            cluster.grep_logs("job")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

type PutOutcome = Result<RawPutResponse, tonic::Status>;

/// A put sent straight to `group` as if routed under `epoch`.
async fn pinned_put(
    cluster: &Cluster,
    key: &[u8],
    group: u64,
    epoch: u64,
) -> Result<RawPutResponse, tonic::Status> {
    let mut kv = cluster.kv(0).await.unwrap();
    let req = RawPutRequest {
        key: key.to_vec(),
        value: b"stale".to_vec(),
        group_id: group,
        route_epoch: epoch,
        ..Default::default()
    };
    kv.raw_put(req).await.map(|r| r.into_inner())
}

/// Waits until `group` accepts a write pinned under `epoch`: the proof that it was granted
/// the range (`Own`). Refusals by the epoch fence are definite (nothing was written).
async fn wait_owned(cluster: &Cluster, group: u64, epoch: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match pinned_put(cluster, b"m-owned", group, epoch).await {
            Ok(r) => {
                assert_eq!(r.meta.expect("commit metadata").group_id, group);
                return;
            }
            Err(e) => assert!(
                Instant::now() < deadline,
                "group {group} never owned the range under epoch {epoch}: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Moves the range with the driver held before cutover (`--hold-before-cutover`), waits until
/// the target owns the range (a write pinned to it under the job's new epoch is accepted),
/// abandons the job (still in DELTA_COPY), waits for ABANDONED, and probes the target with a
/// write under the new epoch. Returns the job and that probe's outcome.
async fn abandon_after_target_owns(
    bugs: &[&str],
) -> (SplitJob, Result<RawPutResponse, tonic::Status>, Cluster) {
    let args: Vec<&str> = SLOW
        .iter()
        .chain(&["--hold-before-cutover"])
        .chain(bugs)
        .copied()
        .collect();
    let cluster = Cluster::start(3, &args).await;
    preload(&cluster).await;
    let job_id = start_move(&cluster).await;
    let delta = wait_phase(&cluster, job_id, SplitJobPhase::DeltaCopy).await;
    wait_owned(&cluster, 2, delta.new_epoch).await;
    assert_eq!(
        job(&cluster, job_id).await.phase,
        SplitJobPhase::DeltaCopy as i32,
        "held before cutover"
    );
    let mut dist = cluster.dist(2).await.unwrap();
    dist.abandon_split_job(AbandonSplitJobRequest { job_id })
        .await
        .expect("abandon before cutover");
    let done = wait_phase(&cluster, job_id, SplitJobPhase::Abandoned).await;
    let probe = pinned_put(&cluster, b"m-probe", 2, done.new_epoch).await;
    (done, probe, cluster)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_live_job_overlap_refusal_and_abandon_in_backfill() {
    let cluster = Cluster::start(3, &SLOW).await;
    preload(&cluster).await;
    let job_id = start_move(&cluster).await;
    let mut dist = cluster.dist(1).await.unwrap();
    let routes = cluster.list_routes(1).await;
    let left = routes
        .routes
        .iter()
        .find(|r| r.end == b"m")
        .expect("left child")
        .clone();

    let second = StartSplitMigrationRequest {
        expected_catalog_version: routes.catalog_version,
        route_id: left.route_id,
        split_key: b"c".to_vec(),
        target_group_id: 3,
        options: Default::default(),
    };
    let err = dist
        .start_split_migration(second)
        .await
        .expect_err("a second live job");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(
        err.message().contains("ErrTooManyInFlightJobs"),
        "{}",
        err.message()
    );

    // The job's phase steps bump the catalog version: retry a version mismatch.
    let mut overlap_refusal = None;
    for _ in 0..20 {
        let version = cluster.list_routes(1).await.catalog_version;
        let overlap = SplitRangeRequest {
            expected_catalog_version: version,
            route_id: left.route_id,
            split_key: b"c".to_vec(),
            ..Default::default()
        };
        match dist.split_range(overlap).await {
            Err(e) if e.code() == Code::Aborted => continue,
            other => {
                overlap_refusal =
                    Some(other.expect_err("a same-group split inside the job's route"));
                break;
            }
        }
    }
    let err = overlap_refusal.expect("an answer other than a version mismatch");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(
        err.message().contains("ErrSplitJobOverlap"),
        "{}",
        err.message()
    );

    let err = dist
        .retry_split_job(RetrySplitJobRequest { job_id })
        .await
        .expect_err("retry of a job that is not FAILED");
    assert_eq!(err.code(), Code::FailedPrecondition);

    wait_phase(&cluster, job_id, SplitJobPhase::Backfill).await;
    dist.abandon_split_job(AbandonSplitJobRequest { job_id })
        .await
        .expect("abandon in BACKFILL");
    dist.abandon_split_job(AbandonSplitJobRequest { job_id })
        .await
        .expect("a repeated abandon is a no-op");
    let done = wait_phase(&cluster, job_id, SplitJobPhase::Abandoned).await;
    assert_eq!(done.abandon_from_phase, SplitJobPhase::Backfill as i32);

    let listed = dist
        .list_split_jobs(ListSplitJobsRequest {
            phase: "ABANDONED".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        listed.jobs.iter().map(|j| j.job_id).collect::<Vec<_>>(),
        vec![job_id]
    );
    let bad = dist
        .list_split_jobs(ListSplitJobsRequest {
            phase: "SIDEWAYS".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(
        bad.expect_err("unknown phase").code(),
        Code::InvalidArgument
    );

    // The source is again the only owner: routed writes commit there, at the old epoch;
    // the target refuses a write under the job's new epoch.
    let route = cluster
        .list_routes(0)
        .await
        .routes
        .into_iter()
        .find(|r| r.start == b"m")
        .expect("right child");
    assert_eq!(
        (route.raft_group_id, route.epoch, route.state),
        (1, 1, RouteState::Active as i32)
    );
    let meta = Clients::new(&cluster)
        .put_until_acked(
            0,
            b"m-after",
            b"v",
            Instant::now() + Duration::from_secs(20),
        )
        .await
        .expect("write after abandon");
    assert_eq!((meta.group_id, meta.route_epoch), (1, 1));
    let probe = pinned_put(&cluster, b"m-probe", 2, done.new_epoch)
        .await
        .expect_err("the target does not own the range");
    assert_eq!(probe.code(), Code::Aborted);
    let mut clients = Clients::new(&cluster);
    for i in 0..100 {
        let k = format!("m-pre-{i:03}").into_bytes();
        assert_eq!(
            clients.get(i % 3, &k).await.unwrap(),
            Some(vec![b'p'; 1000]),
            "preloaded key {i} survives the abandon"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_cutover_abandon_is_refused_and_the_old_owner_rejects_stale_writes() {
    let cluster = Cluster::start(3, &[]).await;
    preload(&cluster).await;
    let job_id = start_move(&cluster).await;
    let done = wait_phase(&cluster, job_id, SplitJobPhase::Done).await;
    let mut dist = cluster.dist(0).await.unwrap();
    let err = dist
        .abandon_split_job(AbandonSplitJobRequest { job_id })
        .await
        .expect_err("abandon after cutover");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(
        err.message().contains("only before CUTOVER"),
        "{}",
        err.message()
    );
    assert_eq!(
        dist.abandon_split_job(AbandonSplitJobRequest { job_id: 999 })
            .await
            .expect_err("unknown job")
            .code(),
        Code::NotFound
    );
    assert_eq!(
        dist.get_split_job(GetSplitJobRequest { job_id: 999 })
            .await
            .expect_err("unknown job")
            .code(),
        Code::NotFound
    );

    // A stale client: straight to the former owner, under the pre-move epoch.
    assert_eq!(done.old_epoch, 1);
    let stale = pinned_put(&cluster, b"m-stale", 1, done.old_epoch)
        .await
        .expect_err("the old owner must refuse");
    assert_eq!(stale.code(), Code::Aborted);
    let fresh = pinned_put(&cluster, b"m-fresh", 2, done.new_epoch)
        .await
        .expect("the new owner under the new epoch");
    assert_eq!(fresh.meta.unwrap().group_id, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abandon_in_delta_copy_revokes_the_target() {
    let (done, probe, _cluster) = abandon_after_target_owns(&[]).await;
    assert_eq!(done.abandon_from_phase, SplitJobPhase::DeltaCopy as i32);
    assert_eq!(
        probe
            .expect_err("the target must refuse after the abandon")
            .code(),
        Code::Aborted
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abandon_keeps_target_bug_lets_the_target_accept_writes() {
    let (done, probe, _cluster) =
        abandon_after_target_owns(&["--bug", "abandon-keeps-target"]).await;
    assert_eq!(done.abandon_from_phase, SplitJobPhase::DeltaCopy as i32);
    let meta = probe
        .expect("with the bug the target still owns the range")
        .meta
        .unwrap();
    assert_eq!(meta.group_id, 2);
}

/// Pauses a follower node (not the migrator) across a whole move, then — with the node still
/// paused — sends it a write pinned to the old owner under the pre-move epoch and a routed
/// write, and resumes it: it wakes with its pre-move routing view. Returns both outcomes.
async fn writes_through_a_node_paused_across_the_cutover(
    bugs: &[&str],
) -> (PutOutcome, PutOutcome) {
    let cluster = Cluster::start(3, bugs).await;
    preload(&cluster).await;
    let migrator = cluster.leader_of(1).await.expect("catalog leader");
    let zombie = (migrator + 1) % 3;
    let alive = (migrator + 2) % 3;
    // Connections opened before the pause: the requests wait in the paused node's socket.
    let (mut stale_kv, mut routed_kv) = (
        cluster.kv(zombie).await.unwrap(),
        cluster.kv(zombie).await.unwrap(),
    );
    cluster.pause(zombie, true);
    let job_id = start_move_via(&cluster, alive).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut dist = cluster.dist(alive).await.unwrap();
        let j = dist
            .get_split_job(GetSplitJobRequest { job_id })
            .await
            .expect("GetSplitJob")
            .into_inner()
            .job
            .expect("a job");
        if j.phase == SplitJobPhase::Done as i32 {
            assert_eq!(j.old_epoch, 1);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the move did not finish with one follower paused"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stale = RawPutRequest {
        key: b"m-stale".to_vec(),
        value: b"stale".to_vec(),
        group_id: 1,
        route_epoch: 1,
        ..Default::default()
    };
    let routed = RawPutRequest {
        key: b"m-routed".to_vec(),
        value: b"v".to_vec(),
        ..Default::default()
    };
    let stale = tokio::spawn(async move { stale_kv.raw_put(stale).await.map(|r| r.into_inner()) });
    let routed =
        tokio::spawn(async move { routed_kv.raw_put(routed).await.map(|r| r.into_inner()) });
    tokio::time::sleep(Duration::from_millis(200)).await;
    cluster.pause(zombie, false);
    (stale.await.unwrap(), routed.await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_paused_across_the_cutover_cannot_write_into_the_old_owner() {
    let (stale, routed) = writes_through_a_node_paused_across_the_cutover(&[]).await;
    assert_eq!(
        stale
            .expect_err("the old owner refuses at commit time")
            .code(),
        Code::Aborted
    );
    let meta = routed
        .expect("the routed write is re-routed to the new owner")
        .meta
        .unwrap();
    assert_eq!(meta.group_id, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn proxy_fence_bug_lets_a_node_paused_across_the_cutover_write_into_the_old_owner() {
    let (stale, routed) =
        writes_through_a_node_paused_across_the_cutover(&["--bug", "proxy-fence"]).await;
    let stale = stale
        .expect("admitted by the stale view, applied unchecked")
        .meta
        .unwrap();
    assert_eq!((stale.group_id, stale.route_epoch), (1, 1));
    let routed = routed.expect("routed by the stale view").meta.unwrap();
    assert_eq!(
        (routed.group_id, routed.route_epoch),
        (1, 1),
        "a write committed by the old owner after the cutover"
    );
}

/// Writes keys the backfill has already passed, lets the job reach DELTA_COPY, kills the
/// migrator (the catalog group's leader) and waits for the new one to finish the job.
/// Returns how many of those acknowledged keys the moved range lacks (with
/// `--bug resume-skips-delta`, all of them: the new migrator skips the delta copy).
async fn kill_migrator_in_delta_copy(bugs: &[&str]) -> usize {
    let args: Vec<&str> = SLOW.iter().chain(bugs).copied().collect();
    let cluster = Cluster::start(3, &args).await;
    preload(&cluster).await;
    let job_id = start_move(&cluster).await;
    wait_phase(&cluster, job_id, SplitJobPhase::Backfill).await;
    // The copy goes in key order, 32 KB (32 preloaded keys) per batch, then sleeps 1.6 s at
    // 20 KB/s: batch 2 (keys 32-63) is copied ~1.6 s into BACKFILL and batch 3 ~3.2 s in,
    // and the delta copy reaches batch 2 only ~1.6 s into DELTA_COPY. Keys just after key
    // 040, written ~2.5 s into BACKFILL, are behind the backfill cursor and still ahead of
    // the delta copy when the migrator is killed right as DELTA_COPY begins.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut clients = Clients::new(&cluster);
    let late: Vec<Vec<u8>> = (0..20)
        .map(|i| format!("m-pre-040-late-{i:02}").into_bytes())
        .collect();
    for (i, k) in late.iter().enumerate() {
        assert!(clients
            .put_until_acked(i % 3, k, b"late", Instant::now() + Duration::from_secs(20))
            .await
            .is_some());
    }
    wait_phase(&cluster, job_id, SplitJobPhase::DeltaCopy).await;
    let migrator = cluster.leader_of(1).await.expect("catalog leader");
    cluster.kill(migrator);
    let alive = (migrator + 1) % 3;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(mut d) = cluster.dist(alive).await {
            if let Ok(j) = d.get_split_job(GetSplitJobRequest { job_id }).await {
                if j.into_inner()
                    .job
                    .is_some_and(|j| j.phase == SplitJobPhase::Done as i32)
                {
                    break;
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "job not DONE after the migrator was killed; logs:\n{}",
            cluster.grep_logs("job")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut missing = 0;
    for k in &late {
        if clients.get(alive, k).await.ok().flatten().as_deref() != Some(&b"late"[..]) {
            missing += 1;
        }
    }
    missing
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_migrator_killed_in_delta_copy_is_resumed_without_losing_writes() {
    assert_eq!(kill_migrator_in_delta_copy(&[]).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resume_skips_delta_bug_loses_the_writes_the_backfill_missed() {
    let missing = kill_migrator_in_delta_copy(&["--bug", "resume-skips-delta"]).await;
    assert!(
        missing > 0,
        "with the bug the resumed move must lose the late writes"
    );
}
