//! The nemesis store control against fake nodes that can be taken down or made to hang: it asks
//! the node that answered last first, gives up on a node that does not answer within its
//! read limit, keeps asking for the catalog for a few seconds while none answers, and never
//! asks a store whose target says it has no catalog.

use super::sink::JsonlSink;
use super::store_control::ClientStoreControl;
use crate::fake_target::{down, unserved_data_ops};
use analysis::history::{CatalogSnapshot, HistorySink, RouteRecord};
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::StoreControl;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use workloads::client::{
    CallResult, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply, SplitReply, SplitRequest,
};
use workloads::execute::invoke_entry;
use workloads::generators::OpSpec;

struct FakeNode {
    name: String,
    up: AtomicBool,
    /// Answers only after a long wait (a node cut off from the catalog leader).
    hangs: AtomicBool,
    catalog_calls: AtomicU64,
}

impl KvTarget for FakeNode {
    fn node(&self) -> &str {
        &self.name
    }
    fn read(&self, _: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        async { Err(down()) }.boxed()
    }
    unserved_data_ops!();
    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
        self.catalog_calls.fetch_add(1, Ordering::SeqCst);
        let up = self.up.load(Ordering::SeqCst);
        let hangs = self.hangs.load(Ordering::SeqCst);
        let route = RouteRecord {
            id: 1,
            start: String::new(),
            end: String::new(),
            group: 1,
            state: "ACTIVE".into(),
            epoch: 1,
            parent: None,
        };
        async move {
            if hangs {
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
            if up {
                Ok(CatalogSnapshot {
                    version: 1,
                    routes: vec![route],
                    jobs: vec![],
                })
            } else {
                Err(down())
            }
        }
        .boxed()
    }
    fn split(&self, _: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        async { Err(down()) }.boxed()
    }
    fn status(&self, _: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        async { Err(down()) }.boxed()
    }
}

struct Fakes(Vec<Arc<FakeNode>>);

impl Connector for Fakes {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        let n = self
            .0
            .iter()
            .find(|n| n.name == node.name)
            .ok_or_else(|| anyhow::anyhow!("no node {}", node.name))?;
        Ok(n.clone() as Arc<dyn KvTarget>)
    }
}

fn cluster(up: [bool; 3]) -> (Vec<Arc<FakeNode>>, ClientStoreControl, tempfile::TempDir) {
    cluster_of(up, true)
}

fn cluster_of(
    up: [bool; 3],
    has_catalog: bool,
) -> (Vec<Arc<FakeNode>>, ClientStoreControl, tempfile::TempDir) {
    let nodes: Vec<Arc<FakeNode>> = (0..3)
        .map(|i| {
            Arc::new(FakeNode {
                name: format!("n{}", i + 1),
                up: AtomicBool::new(up[i]),
                hangs: AtomicBool::new(false),
                catalog_calls: AtomicU64::new(0),
            })
        })
        .collect();
    let endpoints = nodes
        .iter()
        .map(|n| NodeEndpoint {
            name: n.name.clone(),
            addr: String::new(),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(JsonlSink::create(&dir.path().join("history.jsonl")).unwrap());
    sink.record(invoke_entry(
        1,
        "n1",
        &OpSpec::new(workloads::kv_ops::Write {
            key: "k".into(),
            value: 1,
        }),
    ));
    let store = ClientStoreControl::new(
        endpoints,
        Arc::new(Fakes(nodes.clone())),
        vec![1],
        sink,
        has_catalog,
    );
    (nodes, store, dir)
}

fn calls(nodes: &[Arc<FakeNode>]) -> Vec<u64> {
    nodes
        .iter()
        .map(|n| n.catalog_calls.load(Ordering::SeqCst))
        .collect()
}

#[tokio::test]
async fn the_node_that_answered_last_is_asked_first() {
    let (nodes, store, _dir) = cluster([false, true, true]);
    assert_eq!(store.route_at("k").await, Some((1, 1)));
    assert_eq!(calls(&nodes), [1, 1, 0], "n1 is down, n2 answers");
    assert_eq!(store.route_at("k").await, Some((1, 1)));
    assert_eq!(
        calls(&nodes),
        [1, 2, 0],
        "n2 first: the dead n1 is not waited out again"
    );
}

#[tokio::test]
async fn a_node_that_does_not_answer_is_given_up_on_within_the_read_limit() {
    let (nodes, store, _dir) = cluster([true, true, true]);
    nodes[0].hangs.store(true, Ordering::SeqCst);
    let started = std::time::Instant::now();
    assert_eq!(store.route_at("k").await, Some((1, 1)), "n2 answers");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "waited {:?} on the hanging n1",
        started.elapsed()
    );
    assert_eq!(calls(&nodes), [1, 1, 0]);
}

#[tokio::test]
async fn the_catalog_is_asked_again_while_no_node_answers() {
    let (nodes, store, _dir) = cluster([false, false, false]);
    let revive = nodes[2].clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(600)).await;
        revive.up.store(true, Ordering::SeqCst);
    });
    assert_eq!(
        store.route_at("k").await,
        Some((1, 1)),
        "n3 answers after an election's worth of time"
    );
    let (nodes, store, _dir) = cluster([false, false, false]);
    let started = tokio::time::Instant::now();
    assert_eq!(store.route_at("k").await, None, "nobody ever answers");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "gave up after {:?}",
        started.elapsed()
    );
    assert!(
        calls(&nodes).iter().all(|c| *c > 1),
        "every node asked again: {:?}",
        calls(&nodes)
    );
}

#[tokio::test]
async fn a_store_without_a_catalog_is_never_asked_for_one() {
    let (nodes, store, _dir) = cluster_of([true, true, true], false);
    let started = std::time::Instant::now();
    assert_eq!(store.route_at("k").await, None);
    assert_eq!(store.hot_group().await, 1, "the default group");
    let split = store.split_hot(false).await.expect("a hot key to split at");
    assert!(!split.accepted);
    assert_eq!(
        split.detail,
        analysis::history::SplitDetail::why("the store has no route catalog to split"),
        "not 'no node answered'"
    );
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "waited {:?} for a catalog that does not exist",
        started.elapsed()
    );
    assert_eq!(calls(&nodes), [0, 0, 0], "its target says it has none");
}
