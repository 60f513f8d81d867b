//! The elastickv client against the behaviour double (`tests/ekv_double`), one test per
//! item of issue 17 §1 and one per read path: each asserts what elastickv's cited code
//! makes the client do, and fails with the client faultline had before.

#[path = "../../../tests/ekv_double/mod.rs"]
mod double;

use super::Elastickv;
use crate::db::Db;
use double::Options;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use workloads::client::{Connector, KvTarget, NodeEndpoint, ReadPath, SplitRequest};
use workloads::{Certainty, ClientOptions};

fn endpoints(d: &double::Double) -> Vec<NodeEndpoint> {
    d.addrs.iter().enumerate().map(|(k, g)| NodeEndpoint { name: format!("n{}", k + 1), addr: g[0].to_string() }).collect()
}

async fn cluster(opts: Options, read_path: ReadPath) -> (Arc<double::Double>, Vec<NodeEndpoint>, Arc<dyn Connector>) {
    let d = double::start(Options { nodes: 3, groups: opts.groups.max(1), ..opts }).await;
    let nodes = endpoints(&d);
    let db = Elastickv { groups: d.opts.groups as u32 };
    let connector = db.connector(ClientOptions { read_path, ..Default::default() }, &nodes);
    (d, nodes, connector)
}

fn three_groups() -> Options {
    Options { groups: 3, ..Default::default() }
}

/// A client bound to the first node, which the double never makes the catalog leader.
fn first(connector: &Arc<dyn Connector>, nodes: &[NodeEndpoint]) -> Arc<dyn KvTarget> {
    connector.connect(&nodes[0]).expect("client")
}

#[tokio::test]
async fn item1_scans_page_with_limits_elastickv_accepts() {
    let (d, nodes, connector) = cluster(three_groups(), ReadPath::Node).await;
    let c = first(&connector, &nodes);
    for i in 0..1500 {
        c.write(format!("a/{i:05}").as_bytes(), b"1").await.expect("write");
    }
    let all = c.scan(b"a/", b"a0", 0).await.expect("scan");
    assert_eq!(all.pairs.len(), 1500, "every key, across pages");
    let limits = d.calls.scan_limits.lock().unwrap().clone();
    assert!(limits.iter().all(|l| (1..=1024).contains(l)), "limits sent: {limits:?}");
}

#[tokio::test]
async fn item2_splits_go_to_the_catalog_leader() {
    let (d, nodes, connector) = cluster(three_groups(), ReadPath::Node).await;
    let c = first(&connector, &nodes);
    let catalog = c.list_routes().await.expect("routes");
    let route = catalog.routes.iter().find(|r| r.start.is_empty()).expect("first route").clone();
    let request = SplitRequest { expected_catalog_version: catalog.version, route_id: route.id, split_key: b"c".to_vec(), target_group: None };
    let reply = c.split(request).await.expect("the catalog leader accepts the split");
    assert_eq!(reply.right.map(|r| r.start), Some("c".to_string()));
    assert!(c.watch_catalog(0).await.is_ok(), "the watch opens on the catalog leader");
    assert!(d.calls.split_range.load(Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn item3_each_groups_leader_is_asked_at_its_own_address() {
    let (d, nodes, connector) = cluster(three_groups(), ReadPath::Node).await;
    for g in 1..=3 {
        let leader = workloads::cluster::leader_of_group_with(connector.as_ref(), &nodes, g).await;
        assert_eq!(leader, Some(format!("n{}", d.leader(g) + 1)), "group {g}");
    }
    workloads::cluster::wait_ready_with(connector.as_ref(), &nodes, &[1, 2, 3], Duration::from_secs(5))
        .await
        .expect("ready on Status alone, though followers' health is NOT_SERVING");
}

#[tokio::test]
async fn item4_an_internal_after_the_commit_is_resolved_from_the_catalog() {
    let (_d, nodes, connector) = cluster(Options { split_internal_after_commit: true, ..three_groups() }, ReadPath::Node).await;
    let c = first(&connector, &nodes);
    let catalog = c.list_routes().await.expect("routes");
    let route = catalog.routes.iter().find(|r| r.start.is_empty()).expect("first route").clone();
    let request = SplitRequest { expected_catalog_version: catalog.version, route_id: route.id, split_key: b"c".to_vec(), target_group: None };
    let reply = c.split(request).await.expect("the catalog shows the split");
    assert!(reply.resolved_from.is_some_and(|e| e.contains("committed")));
}

#[tokio::test]
async fn item5_error_texts_decide_certainty() {
    let opts = Options { not_leader_after_apply_every: 2, hlc_refused_every: 3, circuit_open_after_apply_every: 5, ..three_groups() };
    let (_d, nodes, connector) = cluster(opts, ReadPath::Node).await;
    let c = first(&connector, &nodes);
    c.write(b"k", b"1").await.expect("put 1 is fine");
    let applied = c.write(b"k", b"2").await.expect_err("put 2 is applied, then answered not leader");
    assert_eq!((applied.tag, applied.certainty), ("not-leader", Certainty::Indeterminate));
    let refused = c.write(b"k", b"3").await.expect_err("put 3 is refused while allocating its timestamp");
    assert_eq!((refused.tag, refused.certainty), ("hlc-ceiling-exhausted", Certainty::Definite));
    c.write(b"k", b"4").await.expect_err("put 4: not leader again");
    let circuit = c.write(b"k", b"5").await.expect_err("put 5 is applied, then answered circuit open");
    assert_eq!((circuit.tag, circuit.certainty), ("leader-proxy-circuit-open", Certainty::Indeterminate));
}

#[tokio::test]
async fn item8_cross_group_splits_go_through_start_split_migration() {
    let (d, nodes, connector) = cluster(three_groups(), ReadPath::Node).await;
    let c = first(&connector, &nodes);
    let request = SplitRequest { expected_catalog_version: 1, route_id: 1, split_key: b"c".to_vec(), target_group: Some(2) };
    let err = c.split(request).await.expect_err("d9a031d has no StartSplitMigration");
    assert_eq!((err.tag, err.certainty), ("unimplemented", Certainty::Definite));
    assert_eq!(d.calls.split_migration.load(Ordering::SeqCst), 1, "the RPC was sent to elastickv");
    assert_eq!(d.calls.split_range.load(Ordering::SeqCst), 0, "never SplitRange with a target");
}

async fn read_after_write(read_path: ReadPath) -> Option<Vec<u8>> {
    let (_d, nodes, connector) = cluster(Options { follower_lag: Duration::from_secs(30), ..three_groups() }, read_path).await;
    // Key "a" is in group 1, led by n2: the first node is a follower of it.
    let c = first(&connector, &nodes);
    c.write(b"a", b"1").await.expect("write");
    c.read(b"a").await.expect("read").value
}

#[tokio::test]
async fn read_path_node_reads_through_the_own_node() {
    assert_eq!(read_after_write(ReadPath::Node).await, None, "the follower answers as of its lagging timestamp");
}

#[tokio::test]
async fn read_path_leader_reads_from_the_keys_group_leader() {
    assert_eq!(read_after_write(ReadPath::Leader).await.as_deref(), Some(&b"1"[..]));
}

/// `--client redis`: data operations go to each node's Redis side (here a RESP double), while
/// readiness, leader discovery and splits still reach the gRPC double.
#[tokio::test]
async fn with_the_redis_client_data_goes_over_redis_and_control_over_grpc() {
    use super::redis_client::EkvRedisConnector;
    use workloads::client::redis::RedisConnector;
    use workloads::client::resp_double::{self, Handler, Log};
    let d = double::start(Options { nodes: 3, ..three_groups() }).await;
    let nodes = endpoints(&d);
    let grpc = Elastickv { groups: 3 }.connector(ClientOptions::default(), &nodes);
    let log: Log = Arc::default();
    let ok: Handler = Arc::new(|_cmd: &[Vec<u8>]| b"$2\r\nOK\r\n".to_vec());
    let mut doubles = Vec::new();
    let mut redis_nodes = Vec::new();
    for n in &nodes {
        let r = resp_double::start(&n.name, log.clone(), ok.clone()).await;
        redis_nodes.push(NodeEndpoint { name: n.name.clone(), addr: r.addr.clone() });
        doubles.push(r);
    }
    let connector = EkvRedisConnector { grpc, redis: RedisConnector::new(redis_nodes, ClientOptions::default().redis()) };
    let c = connector.connect(&nodes[0]).expect("client");
    assert!(c.write(b"k", b"1").await.expect("the proxied SET's bulk OK").applied);
    assert_eq!(log.lock().unwrap().clone(), [("n1".to_string(), vec!["SET".to_string(), "k".into(), "1".into()])]);
    assert_eq!(d.calls.puts.load(Ordering::SeqCst), 0, "no RawPut");
    let leader = workloads::cluster::leader_of_group_with(&connector, &nodes, 3).await;
    assert_eq!(leader, Some(format!("n{}", d.leader(3) + 1)), "RaftAdmin Status over gRPC");
}
