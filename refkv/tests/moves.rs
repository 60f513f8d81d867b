//! Cross-group moves (issue 4): a split job moves the right child to another group while
//! writers hammer it and the source group's leader is killed (or paused) mid-move; afterwards every
//! acknowledged write is readable and no write was committed by the old owner after the
//! cutover (from the commit metadata). With `--bug no-fence` the same scenario loses
//! acknowledged writes.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use refkv::proto::api::*;

struct Ack {
    invoked: Instant,
    meta: CommitMeta,
    value: Vec<u8>,
}

struct Outcome {
    lost: Vec<String>,
    /// Writes invoked after we had observed the cutover but committed by the old owner.
    stale_owner_acks: Vec<String>,
    final_phase: i32,
    moved_route: RouteDescriptor,
    target: u64,
    acked: usize,
}

const SPLIT_KEY: &str = "m";

/// How the move starts: an explicit cross-group SplitRange, or the auto-splitter noticing
/// the writers' hot range.
#[derive(PartialEq)]
enum Trigger {
    Manual,
    Auto,
}

/// What happens to the source group's leader while the job is in its first phases.
#[derive(PartialEq, Clone, Copy)]
enum Fault {
    None,
    /// kill -9, restarted 1.5 s later.
    Kill,
    /// SIGSTOP for 4 s (across the cutover of a fast move), then SIGCONT: a zombie old
    /// owner whose clients write as soon as it wakes.
    Pause,
}

async fn run_move_scenario(extra: &[&str], fault: Fault) -> Outcome {
    run_scenario(extra, fault, Trigger::Manual).await
}

async fn run_scenario(extra: &[&str], fault: Fault, trigger: Trigger) -> Outcome {
    let mut args = vec!["--copy-bytes-per-sec", "200000"];
    if trigger == Trigger::Auto {
        args.extend_from_slice(&[
            "--auto-split",
            "--split-window",
            "1s",
            "--split-hysteresis",
            "2",
            "--split-threshold",
            "20000",
        ]);
    }
    args.extend_from_slice(extra);
    let cluster = Arc::new(Cluster::start(3, &args).await);

    // Pre-load ~300 KB in the range that will move so the backfill takes a while.
    let mut clients = Clients::new(&cluster);
    let big = vec![b'p'; 1000];
    for i in 0..300 {
        let k = format!("{SPLIT_KEY}-pre-{i:04}").into_bytes();
        assert!(clients
            .put_until_acked(i % 3, &k, &big, Instant::now() + Duration::from_secs(30))
            .await
            .is_some());
    }

    // Writers: unique keys on both sides of the split point, through all nodes.
    let acks: Arc<Mutex<BTreeMap<Vec<u8>, Ack>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..24usize {
        let (c, acks, stop) = (cluster.clone(), acks.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut clients = Clients::new(&c);
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let side = if w % 4 == 0 { "a" } else { SPLIT_KEY };
                let key = format!("{side}-w{w:02}-{n:06}").into_bytes();
                n += 1;
                let node = w % 3;
                let invoked = Instant::now();
                let Some(kv) = clients.kv(node).await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let req = RawPutRequest {
                    key: key.clone(),
                    value: key.clone(),
                    ..Default::default()
                };
                match tokio::time::timeout(Duration::from_secs(10), kv.raw_put(req)).await {
                    Ok(Ok(r)) => {
                        let meta = r.into_inner().meta.unwrap_or_default();
                        acks.lock().unwrap().insert(
                            key.clone(),
                            Ack {
                                invoked,
                                meta,
                                value: key,
                            },
                        );
                    }
                    _ => clients.drop_conn(node),
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let routes = cluster.list_routes(0).await;
    let parent = routes.routes[0].clone();
    let (job_id, moved_id, split_key, target) = match trigger {
        Trigger::Manual => {
            // Move [m, ∞) from group 1 to group 2.
            let mut dist = cluster.dist(1).await.unwrap();
            let started = dist
                .start_split_migration(StartSplitMigrationRequest {
                    expected_catalog_version: routes.catalog_version,
                    route_id: parent.route_id,
                    split_key: SPLIT_KEY.as_bytes().to_vec(),
                    target_group_id: 2,
                    options: Default::default(),
                })
                .await
                .expect("StartSplitMigration")
                .into_inner();
            assert!(started.job_id > 0, "a cross-group split opens a job");
            let moving = cluster
                .list_routes(1)
                .await
                .routes
                .into_iter()
                .find(|r| r.start == SPLIT_KEY.as_bytes())
                .expect("moving child");
            (
                started.job_id,
                moving.route_id,
                SPLIT_KEY.as_bytes().to_vec(),
                2,
            )
        }
        Trigger::Auto => {
            // Wait for the auto-splitter to split the hot route and start moving a child.
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let r = cluster.list_routes(0).await;
                if let Some(job) = r.jobs.first() {
                    let moved = r
                        .routes
                        .iter()
                        .find(|x| x.start == job.split_key)
                        .expect("moving child");
                    break (
                        job.job_id,
                        moved.route_id,
                        job.split_key.clone(),
                        job.target_group_id,
                    );
                }
                assert!(
                    Instant::now() < deadline,
                    "no auto-split within 60s; logs:\n{}",
                    cluster.grep_logs("auto-split")
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_ne!(target, parent.raft_group_id);
    let split = SplitRangeResponse {
        job_id,
        ..Default::default()
    };

    // Kill the source group's leader (group 1: also the catalog group and job driver)
    // while the job is in its first phases, restart it a little later.
    match fault {
        Fault::None => {}
        Fault::Kill => {
            tokio::time::sleep(Duration::from_millis(400)).await;
            let leader = cluster.leader_of(1).await.expect("leader");
            cluster.kill(leader);
            tokio::time::sleep(Duration::from_millis(1500)).await;
            cluster.restart(leader);
        }
        Fault::Pause => {
            tokio::time::sleep(Duration::from_millis(400)).await;
            let leader = cluster.leader_of(1).await.expect("leader");
            cluster.pause(leader, true);
            tokio::time::sleep(Duration::from_millis(4000)).await;
            cluster.pause(leader, false);
        }
    }

    // Watch the job until it is terminal; note when we first saw the cutover.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut cutover_seen: Option<Instant> = None;
    let final_phase = loop {
        let mut d = match cluster.dist(2).await {
            Some(d) => d,
            None => continue,
        };
        if let Ok(r) = d.list_routes(ListRoutesRequest {}).await {
            let r = r.into_inner();
            let job = r
                .jobs
                .iter()
                .find(|j| j.job_id == split.job_id)
                .cloned()
                .expect("job listed");
            if cutover_seen.is_none()
                && job.phase >= SplitJobPhase::Cutover as i32
                && job.phase <= SplitJobPhase::Done as i32
            {
                cutover_seen = Some(Instant::now());
            }
            if job.phase == SplitJobPhase::Done as i32
                || job.phase == SplitJobPhase::Abandoned as i32
            {
                break job.phase;
            }
        }
        assert!(
            Instant::now() < deadline,
            "split job did not finish; job logs:\n{}",
            cluster.grep_logs("job")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    cluster.wait_ready(Duration::from_secs(30)).await;

    // The route now holding the split key (the moved child, or — with auto-split — one of
    // its own children if it was split again since).
    let final_routes = cluster.list_routes(0).await;
    eprintln!(
        "final catalog v{}: {:?}",
        final_routes.catalog_version,
        final_routes
            .routes
            .iter()
            .map(|r| (
                r.route_id,
                String::from_utf8_lossy(&r.start).to_string(),
                r.raft_group_id,
                r.epoch,
                r.parent_route_id
            ))
            .collect::<Vec<_>>()
    );
    let moved_route = final_routes
        .routes
        .iter()
        .find(|r| {
            r.route_id == moved_id
                || (r.start <= split_key && (r.end.is_empty() || split_key < r.end))
        })
        .cloned()
        .expect("a route holds the split key");
    let _ = moved_id;
    let acks = std::mem::take(&mut *acks.lock().unwrap());
    let lost = read_back(&cluster, &acks).await;
    let stale_owner_acks = acks
        .iter()
        .filter(|(k, a)| {
            k.as_slice() >= split_key.as_slice()
                && cutover_seen.is_some_and(|t| a.invoked > t)
                && a.meta.group_id == parent.raft_group_id
        })
        .map(|(k, _)| String::from_utf8_lossy(k).to_string())
        .collect();
    Outcome {
        lost,
        stale_owner_acks,
        final_phase,
        moved_route,
        target,
        acked: acks.len(),
    }
}

/// Keys whose acknowledged value cannot be read back (8 readers in parallel).
async fn read_back(cluster: &Arc<Cluster>, acks: &BTreeMap<Vec<u8>, Ack>) -> Vec<String> {
    let all: Vec<(Vec<u8>, Vec<u8>)> = acks
        .iter()
        .map(|(k, a)| (k.clone(), a.value.clone()))
        .collect();
    let chunks: Vec<Vec<(Vec<u8>, Vec<u8>)>> =
        all.chunks(all.len() / 8 + 1).map(|c| c.to_vec()).collect();
    let mut tasks = Vec::new();
    for (n, chunk) in chunks.into_iter().enumerate() {
        let c = cluster.clone();
        tasks.push(tokio::spawn(async move {
            let mut clients = Clients::new(&c);
            let mut lost = Vec::new();
            for (k, v) in chunk {
                match clients.get(n % 3, &k).await {
                    Ok(Some(got)) if got == v => {}
                    _ => lost.push(String::from_utf8_lossy(&k).to_string()),
                }
            }
            lost
        }));
    }
    let mut lost = Vec::new();
    for t in tasks {
        lost.extend(t.await.unwrap());
    }
    lost
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn move_with_source_leader_kill_loses_nothing_and_fences_the_old_owner() {
    let out = run_move_scenario(&[], Fault::Kill).await;
    eprintln!(
        "acked {} writes, lost {}, stale-owner acks {}",
        out.acked,
        out.lost.len(),
        out.stale_owner_acks.len()
    );
    assert_eq!(out.final_phase, SplitJobPhase::Done as i32);
    assert_eq!(
        out.moved_route.raft_group_id, 2,
        "the right child now lives in group 2"
    );
    assert_eq!(out.target, 2);
    assert!(out.moved_route.epoch > 1, "under a new epoch");
    assert!(out.acked > 200, "the writers made progress ({})", out.acked);
    assert!(
        out.lost.is_empty(),
        "lost acknowledged writes: {:?}",
        &out.lost[..out.lost.len().min(10)]
    );
    assert!(
        out.stale_owner_acks.is_empty(),
        "old owner committed after cutover: {:?}",
        out.stale_owner_acks
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_fence_bug_loses_acknowledged_writes() {
    let out = run_move_scenario(&["--bug", "no-fence"], Fault::None).await;
    eprintln!(
        "no-fence: acked {} writes, lost {}, stale-owner acks {}",
        out.acked,
        out.lost.len(),
        out.stale_owner_acks.len()
    );
    assert_eq!(out.final_phase, SplitJobPhase::Done as i32);
    assert!(
        !out.lost.is_empty() || !out.stale_owner_acks.is_empty(),
        "the seeded bug must be observable"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn early_cutover_bug_loses_writes_accepted_during_the_move() {
    let out = run_move_scenario(&["--bug", "early-cutover"], Fault::None).await;
    eprintln!(
        "early-cutover: acked {} writes, lost {}",
        out.acked,
        out.lost.len()
    );
    assert_eq!(out.final_phase, SplitJobPhase::Done as i32);
    assert!(
        !out.lost.is_empty(),
        "writes accepted by the source during the move must be lost"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hot_range_is_auto_split_and_moved_while_source_leader_is_killed() {
    let out = run_scenario(&[], Fault::Kill, Trigger::Auto).await;
    eprintln!(
        "auto: acked {} writes, lost {}, stale-owner acks {}, moved to group {}",
        out.acked,
        out.lost.len(),
        out.stale_owner_acks.len(),
        out.target
    );
    assert_eq!(out.final_phase, SplitJobPhase::Done as i32);
    assert_eq!(out.moved_route.raft_group_id, out.target);
    assert!(out.moved_route.epoch > 1);
    assert!(
        out.lost.is_empty(),
        "lost acknowledged writes: {:?}",
        &out.lost[..out.lost.len().min(10)]
    );
    assert!(
        out.stale_owner_acks.is_empty(),
        "old owner committed after cutover: {:?}",
        out.stale_owner_acks
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn move_with_source_leader_paused_across_it_loses_nothing() {
    let out = run_move_scenario(&[], Fault::Pause).await;
    eprintln!(
        "pause: acked {} writes, lost {}, stale-owner acks {}",
        out.acked,
        out.lost.len(),
        out.stale_owner_acks.len()
    );
    assert_eq!(out.final_phase, SplitJobPhase::Done as i32);
    assert_eq!(out.moved_route.raft_group_id, 2);
    assert!(out.acked > 200, "the writers made progress ({})", out.acked);
    assert!(
        out.lost.is_empty(),
        "lost acknowledged writes: {:?}",
        &out.lost[..out.lost.len().min(10)]
    );
    assert!(
        out.stale_owner_acks.is_empty(),
        "old owner committed after cutover: {:?}",
        out.stale_owner_acks
    );
}
