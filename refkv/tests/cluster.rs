//! Integration tests against a 3-node refkv cluster of real processes on loopback:
//! durability under leader kills, splits under load with catalog invariants, error codes and
//! the catalog watch stream.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use refkv::proto::api::*;

fn key(i: usize) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

const PACE: Duration = Duration::from_millis(200);

type Acked = Arc<Mutex<BTreeMap<Vec<u8>, Vec<u8>>>>;

/// 30 concurrent writers, 10 through each node; each key written once (retried until
/// acknowledged).
fn spawn_writers(
    c: &Arc<Cluster>,
    keys: std::ops::Range<usize>,
    acked: &Acked,
) -> Vec<tokio::task::JoinHandle<()>> {
    const WRITERS: usize = 30;
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (c, acked) = (c.clone(), acked.clone());
        let mine: Vec<usize> = keys.clone().filter(|i| i % WRITERS == w).collect();
        tasks.push(tokio::spawn(async move {
            let mut clients = Clients::new(&c);
            for i in mine {
                let k = key(i);
                let v = format!("v{i}").into_bytes();
                let deadline = Instant::now() + Duration::from_secs(60);
                if clients
                    .put_until_acked(w % 3, &k, &v, deadline)
                    .await
                    .is_some()
                {
                    acked.lock().unwrap().insert(k, v);
                }
                // Paced so that the writes span the whole fault phase.
                tokio::time::sleep(PACE).await;
            }
        }));
    }
    tasks
}

async fn assert_all_readable_everywhere(c: &Cluster, acked: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut clients = Clients::new(c);
    for node in 0..c.addrs.len() {
        let mut lost = Vec::new();
        for (k, v) in acked {
            match clients.get(node, k).await {
                Ok(Some(got)) if &got == v => {}
                other => lost.push((String::from_utf8_lossy(k).to_string(), format!("{other:?}"))),
            }
        }
        assert!(
            lost.is_empty(),
            "node {} lost {} acknowledged keys, e.g. {:?}",
            node + 1,
            lost.len(),
            &lost[..lost.len().min(5)]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_acknowledged_write_lost_when_each_group_leader_is_killed() {
    // Three routes, one per group, so every group holds data.
    let cluster = Cluster::start(3, &["--initial-splits", "k0333,k0666"]).await;
    let cluster = Arc::new(cluster);
    let acked = Arc::new(Mutex::new(BTreeMap::new()));
    let writers = spawn_writers(&cluster, 0..1000, &acked);

    // Kill -9 the leader of each group in turn while the writers run, then restart it.
    let mut killed = Vec::new();
    for group in 1..=3u64 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let leader = cluster.leader_of(group).await.expect("a leader");
        cluster.kill(leader);
        killed.push((group, leader + 1));
        tokio::time::sleep(Duration::from_millis(1200)).await;
        cluster.restart(leader);
        cluster.wait_ready(Duration::from_secs(30)).await;
    }
    eprintln!("killed (group, node): {killed:?}");
    for (_, node) in &killed {
        let log = cluster.log(node - 1);
        let last_start = log
            .lines()
            .rfind(|l| l.contains("refkv node starting"))
            .unwrap_or_default()
            .to_string();
        assert!(
            last_start.contains("pristine=[]"),
            "a restarted node must not re-bootstrap: {last_start}"
        );
    }
    for t in writers {
        t.await.unwrap();
    }
    cluster.wait_ready(Duration::from_secs(30)).await;
    let acked = acked.lock().unwrap().clone();
    assert_eq!(acked.len(), 1000, "every key was eventually acknowledged");
    assert_all_readable_everywhere(&cluster, &acked).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn split_under_load_keeps_writes_and_catalog_invariants() {
    let cluster = Arc::new(Cluster::start(3, &[]).await);
    let acked: Acked = Arc::new(Mutex::new(BTreeMap::new()));
    let writers = spawn_writers(&cluster, 0..600, &acked);
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let mut dist = cluster.dist(1).await.expect("connect");
    let before = cluster.list_routes(2).await;
    assert_tiling(&before.routes);
    let parent = before
        .routes
        .iter()
        .find(|r| r.start.is_empty())
        .expect("first route")
        .clone();
    let split = dist
        .split_range(SplitRangeRequest {
            expected_catalog_version: before.catalog_version,
            route_id: parent.route_id,
            split_key: b"k0300".to_vec(),
            ..Default::default()
        })
        .await
        .expect("split")
        .into_inner();
    assert_eq!(split.catalog_version, before.catalog_version + 1);
    let (left, right) = (split.left.unwrap(), split.right.unwrap());
    assert_eq!(
        (left.parent_route_id, right.parent_route_id),
        (parent.route_id, parent.route_id)
    );
    assert_eq!(
        (
            left.start.clone(),
            left.end.clone(),
            right.start.clone(),
            right.end.clone()
        ),
        (
            parent.start.clone(),
            b"k0300".to_vec(),
            b"k0300".to_vec(),
            parent.end.clone()
        )
    );
    assert_eq!(
        (left.raft_group_id, right.raft_group_id),
        (parent.raft_group_id, parent.raft_group_id)
    );

    // A second split of the right child while writes continue.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let split2 = dist
        .split_range(SplitRangeRequest {
            expected_catalog_version: split.catalog_version,
            route_id: right.route_id,
            split_key: b"k0450".to_vec(),
            ..Default::default()
        })
        .await
        .expect("second split")
        .into_inner();
    assert_eq!(split2.catalog_version, split.catalog_version + 1);
    assert_eq!(split2.left.unwrap().parent_route_id, right.route_id);

    for t in writers {
        t.await.unwrap();
    }
    for node in 0..3 {
        let after = cluster.list_routes(node).await;
        assert_eq!(
            after.catalog_version,
            before.catalog_version + 2,
            "node {} sees both splits",
            node + 1
        );
        assert_tiling(&after.routes);
        assert_eq!(after.routes.len(), before.routes.len() + 2);
        assert!(
            after
                .routes
                .iter()
                .all(|r| r.route_id != parent.route_id && r.route_id != right.route_id),
            "parents replaced"
        );
    }
    let acked = acked.lock().unwrap().clone();
    assert_eq!(acked.len(), 600);
    assert_all_readable_everywhere(&cluster, &acked).await;

    // The scan across the three routes returns every key, in order, with one meta per route.
    let mut kv = cluster.kv(0).await.unwrap();
    let scan = kv
        .raw_scan_at(RawScanAtRequest {
            start_key: b"k".to_vec(),
            end_key: b"l".to_vec(),
            limit: 0,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let keys: Vec<Vec<u8>> = scan.kv.iter().map(|p| p.key.clone()).collect();
    assert_eq!(keys, acked.keys().cloned().collect::<Vec<_>>());
    assert_eq!(scan.meta.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn split_errors_metadata_and_catalog_watch() {
    let cluster = Cluster::start(3, &["--initial-splits", "m"]).await;
    let mut dist = cluster.dist(2).await.unwrap();
    let routes = cluster.list_routes(0).await;
    assert_eq!(routes.routes.len(), 2);
    let first = routes
        .routes
        .iter()
        .find(|r| r.start.is_empty())
        .unwrap()
        .clone();
    let v = routes.catalog_version;
    let call = |version: u64, route: u64, key: &str| SplitRangeRequest {
        expected_catalog_version: version,
        route_id: route,
        split_key: key.as_bytes().to_vec(),
        ..Default::default()
    };
    let code = |r: Result<tonic::Response<SplitRangeResponse>, tonic::Status>| {
        r.map(|_| ()).unwrap_err().code()
    };
    assert_eq!(
        code(dist.split_range(call(v + 5, first.route_id, "c")).await),
        tonic::Code::Aborted
    );
    assert_eq!(
        code(dist.split_range(call(v, 999, "c")).await),
        tonic::Code::NotFound
    );
    assert_eq!(
        code(dist.split_range(call(v, first.route_id, "q")).await),
        tonic::Code::InvalidArgument
    );
    assert_eq!(
        code(dist.split_range(call(v, first.route_id, "")).await),
        tonic::Code::InvalidArgument
    );

    // Watch: a snapshot first, then a delta for a split.
    let mut watch = dist
        .watch_catalog(CatalogWatchRequest {
            protocol_version: 1,
            after_version: 0,
            max_batch_size: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let first_event = watch.message().await.unwrap().unwrap();
    match first_event.payload {
        Some(catalog_watch_event::Payload::Snapshot(s)) => assert_eq!(s.version, v),
        other => panic!("expected a snapshot first, got {other:?}"),
    }
    let mut d0 = cluster.dist(0).await.unwrap();
    d0.split_range(call(v, first.route_id, "c")).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), watch.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match event.payload {
        Some(catalog_watch_event::Payload::Delta(d)) => {
            assert_eq!((d.previous_version, d.version), (v, v + 1));
            let deleted: Vec<u64> = d
                .mutations
                .iter()
                .filter(|m| m.op == CatalogDeltaMutationOp::Delete as i32)
                .map(|m| m.route_id)
                .collect();
            assert_eq!(deleted, vec![first.route_id]);
            assert_eq!(
                d.mutations
                    .iter()
                    .filter(|m| m.op == CatalogDeltaMutationOp::Upsert as i32)
                    .count(),
                2
            );
        }
        other => panic!("expected a delta, got {other:?}"),
    }

    // Commit metadata on a write and a read: group, term, index, route, epoch, node.
    let mut kv = cluster.kv(1).await.unwrap();
    let put = kv
        .raw_put(RawPutRequest {
            key: b"x".to_vec(),
            value: b"1".to_vec(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let meta = put.meta.unwrap();
    let route_x = cluster
        .list_routes(0)
        .await
        .routes
        .into_iter()
        .find(|r| r.start == b"m".to_vec())
        .unwrap();
    assert_eq!(
        (meta.group_id, meta.route_id, meta.route_epoch),
        (route_x.raft_group_id, route_x.route_id, route_x.epoch)
    );
    assert!(meta.term >= 1 && meta.log_index >= 1 && !meta.node_id.is_empty());
    let got = kv
        .raw_get(RawGetRequest {
            key: b"x".to_vec(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(got.exists && got.value == b"1" && got.meta.unwrap().log_index >= meta.log_index);
    // CAS extension.
    let cas = |exp: &str, new: &str| RawPutRequest {
        key: b"x".to_vec(),
        value: new.as_bytes().to_vec(),
        cas: true,
        expected: exp.as_bytes().to_vec(),
        ..Default::default()
    };
    assert!(
        !kv.raw_put(cas("0", "2"))
            .await
            .unwrap()
            .into_inner()
            .success
    );
    assert!(
        kv.raw_put(cas("1", "2"))
            .await
            .unwrap()
            .into_inner()
            .success
    );
    // Empty keys are refused.
    let e = kv.raw_put(RawPutRequest::default()).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);

    // SIGTERM shuts a node down cleanly.
    assert!(cluster.terminate(2), "clean exit on SIGTERM");
    assert!(cluster.log(2).contains("refkv node stopped"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restarted_follower_catches_up_from_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("refkv.json");
    std::fs::write(
        &config,
        r#"{"snapshot_every_logs": 100, "snapshot_keep_logs": 10}"#,
    )
    .unwrap();
    let cluster = Cluster::start(3, &["--config", config.to_str().unwrap()]).await;
    let lagger = (cluster.leader_of(1).await.unwrap() + 1) % 3;
    cluster.kill(lagger);
    let mut clients = Clients::new(&cluster);
    let mut acked = BTreeMap::new();
    let live: Vec<usize> = (0..3).filter(|i| *i != lagger).collect();
    for i in 0..400 {
        let (k, v) = (key(i), format!("s{i}").into_bytes());
        assert!(clients
            .put_until_acked(
                live[i % 2],
                &k,
                &v,
                Instant::now() + Duration::from_secs(30)
            )
            .await
            .is_some());
        acked.insert(k, v);
    }
    cluster.restart(lagger);
    cluster.wait_ready(Duration::from_secs(60)).await;
    // The lagging node must have installed a snapshot (its log was purged on the leader).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = cluster.status(lagger, 1).await;
        if s.as_ref()
            .is_some_and(|s| s.last_snapshot_index > 0 && s.applied_index >= 400)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no snapshot installed on node {}: {s:?}",
            lagger + 1
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Make it the leader so that reads are served from its own state machine.
    let mut admin = refkv::proto::api::raft_admin_client::RaftAdminClient::new(
        cluster.channel(0).await.unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster.leader_of(1).await != Some(lagger) {
        let req = RaftAdminTransferLeadershipRequest {
            target_id: (lagger + 1).to_string(),
            target_address: String::new(),
            group_id: 1,
        };
        let _ = admin.transfer_leadership(req).await;
        assert!(
            Instant::now() < deadline,
            "leadership did not move to node {}",
            lagger + 1
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    assert_all_readable_everywhere(&cluster, &acked).await;
    let routes = cluster.list_routes(lagger).await;
    assert_eq!(routes.catalog_version, 1);
}
