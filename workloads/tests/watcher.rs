//! The catalog watcher against the fake store: polling fallback when WatchCatalog is not
//! implemented or fails, streaming with deltas, and moving to another node when one is
//! unreachable.

mod common;

use analysis::history::{CatalogSnapshot, Op, OpType, Process};
use common::{dead_endpoint, list_response, route, serve, FakeStore, VecSink, WatchMode};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use workloads::proto::kv;
use workloads::{
    run_catalog_watcher_with, Connector, GrpcConnector, NodeEndpoint, WatcherOptions,
    WatcherSummary,
};

fn fast() -> WatcherOptions {
    WatcherOptions {
        poll_interval: Duration::from_millis(20),
        retry_stream_after: Duration::from_millis(200),
        backoff: Duration::from_millis(20),
    }
}

async fn watch_for(nodes: Vec<NodeEndpoint>, run: Duration) -> (Vec<Op>, WatcherSummary) {
    let sink = VecSink::new();
    let cancel = CancellationToken::new();
    let connector: Arc<dyn Connector> = Arc::new(GrpcConnector::default());
    let task = tokio::spawn(run_catalog_watcher_with(
        connector,
        &[],
        sink.clone(),
        cancel.clone(),
        fast(),
    ));
    // An empty node list is an error, not a hang.
    assert!(task.await.unwrap().is_err());
    let connector: Arc<dyn Connector> = Arc::new(GrpcConnector::default());
    let sink2 = sink.clone();
    let cancel2 = cancel.clone();
    let task = tokio::spawn(async move {
        run_catalog_watcher_with(connector, &nodes, sink2, cancel2, fast()).await
    });
    tokio::time::sleep(run).await;
    cancel.cancel();
    let summary = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("watcher stops on cancel")
        .unwrap()
        .unwrap();
    (sink.ops(), summary)
}

fn snapshots(ops: &[Op]) -> Vec<CatalogSnapshot> {
    for op in ops {
        assert_eq!(
            (op.kind, op.process, op.f.as_str()),
            (OpType::Info, Process::Watcher, "catalog")
        );
    }
    ops.iter()
        .map(|o| serde_json::from_value(o.value.clone()).unwrap())
        .collect()
}

fn versions(ops: &[Op]) -> Vec<u64> {
    snapshots(ops).iter().map(|s| s.version).collect()
}

fn split_catalog(version: u64) -> kv::ListRoutesResponse {
    list_response(
        version,
        vec![route(2, "", "m", 1, 1), route(3, "m", "", 1, 1)],
        vec![],
    )
}

#[tokio::test]
async fn polls_list_routes_when_watch_is_unimplemented() {
    let store = FakeStore::new("n1");
    let initial = list_response(1, vec![route(1, "", "", 1, 0)], vec![]);
    store.set_catalog_sequence(vec![
        initial.clone(),
        initial,
        split_catalog(2),
        split_catalog(2),
        split_catalog(3),
    ]);
    let node = serve(store.clone()).await;
    let (ops, summary) = watch_for(vec![node], Duration::from_millis(500)).await;
    assert_eq!(
        versions(&ops),
        vec![1, 2, 3],
        "each version recorded once, in order"
    );
    assert!(ops.iter().all(|o| o.node.as_deref() == Some("n1")));
    let snaps = snapshots(&ops);
    assert_eq!(
        snaps[1]
            .routes
            .iter()
            .map(|r| (r.id, r.start.as_str()))
            .collect::<Vec<_>>(),
        vec![(2, ""), (3, "m")]
    );
    assert_eq!(snaps[1].routes[0].parent, Some(1));
    assert_eq!(summary.stream_events, 0);
    assert_eq!(
        summary.stream_attempts, 1,
        "an unimplemented watch is not retried"
    );
    assert!(summary.polls >= 5);
}

#[tokio::test]
async fn polls_for_a_while_when_the_stream_fails_then_retries_it() {
    let store = FakeStore::new("n1");
    store.set_watch(WatchMode::Error(tonic::Code::Unavailable));
    store.set_catalog_sequence(vec![
        list_response(4, vec![route(1, "", "", 1, 0)], vec![]),
        split_catalog(5),
    ]);
    let node = serve(store.clone()).await;
    let (ops, summary) = watch_for(vec![node], Duration::from_millis(600)).await;
    assert_eq!(versions(&ops), vec![4, 5]);
    assert!(summary.polls >= 3);
    assert!(
        summary.stream_attempts >= 2,
        "the stream is retried after polling: {summary:?}"
    );
}

#[tokio::test]
async fn streams_deltas_and_records_each_version_with_jobs() {
    use kv::catalog_watch_event::Payload;
    let store = FakeStore::new("n2");
    let job = kv::SplitJob {
        job_id: 7,
        source_route_id: 3,
        split_key: b"t".to_vec(),
        target_group_id: 2,
        phase: kv::SplitJobPhase::Backfill as i32,
        source_group_id: 1,
        ..Default::default()
    };
    let events = vec![
        kv::CatalogWatchEvent {
            payload: Some(Payload::Snapshot(kv::CatalogSnapshotReset {
                version: 1,
                routes: vec![route(1, "", "", 1, 0)],
                jobs: vec![],
            })),
        },
        kv::CatalogWatchEvent {
            payload: Some(Payload::Delta(kv::CatalogDeltaRecord {
                previous_version: 1,
                version: 2,
                mutations: vec![
                    kv::CatalogDeltaMutation {
                        op: kv::CatalogDeltaMutationOp::Delete as i32,
                        route_id: 1,
                        route: None,
                    },
                    kv::CatalogDeltaMutation {
                        op: kv::CatalogDeltaMutationOp::Upsert as i32,
                        route_id: 2,
                        route: Some(route(2, "", "m", 1, 1)),
                    },
                    kv::CatalogDeltaMutation {
                        op: kv::CatalogDeltaMutationOp::Upsert as i32,
                        route_id: 3,
                        route: Some(route(3, "m", "", 1, 1)),
                    },
                ],
                jobs: vec![],
            })),
        },
        kv::CatalogWatchEvent {
            payload: Some(Payload::Delta(kv::CatalogDeltaRecord {
                previous_version: 2,
                version: 3,
                mutations: vec![],
                jobs: vec![job],
            })),
        },
    ];
    store.set_watch(WatchMode::Events(events));
    // The initial listing agrees with the stream's first snapshot.
    store.set_catalog_sequence(vec![list_response(1, vec![route(1, "", "", 1, 0)], vec![])]);
    let node = serve(store.clone()).await;
    let (ops, summary) = watch_for(vec![node], Duration::from_millis(400)).await;
    assert_eq!(versions(&ops), vec![1, 2, 3]);
    let snaps = snapshots(&ops);
    assert_eq!(
        snaps[1].routes.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert!(snaps[1].jobs.is_empty());
    assert_eq!(snaps[2].jobs.len(), 1);
    assert_eq!(
        (
            snaps[2].jobs[0].id,
            snaps[2].jobs[0].phase.as_str(),
            snaps[2].jobs[0].target_group
        ),
        (7, "BACKFILL", 2)
    );
    assert_eq!(summary.stream_events, 3);
    assert_eq!(summary.polls, 0);
}

#[tokio::test]
async fn moves_to_the_next_node_when_one_is_unreachable() {
    let dead = dead_endpoint("n1").await;
    let store = FakeStore::new("n2");
    store.set_catalog_sequence(vec![split_catalog(9)]);
    let live = serve(store.clone()).await;
    let (ops, summary) = watch_for(vec![dead, live], Duration::from_millis(500)).await;
    assert_eq!(versions(&ops), vec![9]);
    assert_eq!(ops[0].node.as_deref(), Some("n2"));
    assert!(summary.node_switches >= 1);
}

#[tokio::test]
async fn a_lagging_node_never_makes_the_recorded_version_go_back() {
    // n1 is at version 6 and fails after its first listing; n2 lags at 5, then reaches 7.
    let fresh = FakeStore::new("n1");
    fresh.set_catalog_sequence(vec![split_catalog(6)]);
    fresh.fail_lists_after(1);
    let lagging = FakeStore::new("n2");
    lagging.set_catalog_sequence(vec![split_catalog(5), split_catalog(5), split_catalog(7)]);
    let n1 = serve(fresh.clone()).await;
    let n2 = serve(lagging.clone()).await;
    let (ops, summary) = watch_for(vec![n1, n2], Duration::from_millis(500)).await;
    assert_eq!(versions(&ops), vec![6, 7]);
    let nodes: Vec<_> = ops.iter().map(|o| o.node.clone().unwrap()).collect();
    assert_eq!(nodes, vec!["n1", "n2"]);
    assert!(summary.node_switches >= 1);
}
