//! Schedule and fault tests against a fake cluster that records what was done to it.

use crate::faults::{self, Ctx, FaultKind, Turn};
use crate::{
    Nemesis, NemesisStatus, NodeControl, NodeInfo, PartitionMode, SplitOutcome, StoreControl,
};
use analysis::history::{HistorySink, Op};
use futures::future::BoxFuture;
use futures::FutureExt;
use rand::SeedableRng;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
pub(crate) struct FakeCluster {
    nodes: Vec<NodeInfo>,
    log: Mutex<Vec<String>>,
}

impl FakeCluster {
    pub(crate) fn new(n: u64) -> Arc<FakeCluster> {
        let nodes = (1..=n)
            .map(|id| NodeInfo {
                name: format!("n{id}"),
                id,
                ip: [10, 0, 0, id as u8].into(),
                addr: format!("10.0.0.{id}:1"),
            })
            .collect();
        Arc::new(FakeCluster {
            nodes,
            log: Mutex::new(Vec::new()),
        })
    }
    fn note(&self, what: &str, node: &str) -> BoxFuture<'_, anyhow::Result<()>> {
        self.log.lock().unwrap().push(format!("{what} {node}"));
        async { Ok(()) }.boxed()
    }
    pub(crate) fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl NodeControl for FakeCluster {
    fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }
    fn kill<'a>(&'a self, node: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        self.note("kill", node)
    }
    fn restart<'a>(&'a self, node: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        self.note("restart", node)
    }
    fn pause<'a>(&'a self, node: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        self.note("pause", node)
    }
    fn resume<'a>(&'a self, node: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        self.note("resume", node)
    }
    fn netns<'a>(&'a self, node: &'a str) -> BoxFuture<'a, anyhow::Result<PathBuf>> {
        let node = node.to_string();
        async move { anyhow::bail!("fake cluster: no namespace for {node}") }.boxed()
    }
}

/// n2 leads every group; splits are accepted.
struct FakeStore;

impl StoreControl for FakeStore {
    fn leader_of(&self, _group: u64) -> BoxFuture<'_, Option<String>> {
        async { Some("n2".to_string()) }.boxed()
    }
    fn hot_group(&self) -> BoxFuture<'_, u64> {
        async { 1 }.boxed()
    }
    fn groups(&self) -> Vec<u64> {
        vec![1, 2, 3]
    }
    fn split_hot(&self, cross_group: bool) -> BoxFuture<'_, Option<SplitOutcome>> {
        async move {
            Some(SplitOutcome {
                key: "k".into(),
                route_id: Some(1),
                target_group: cross_group.then_some(2),
                accepted: true,
                detail: analysis::history::SplitDetail::Answer(Default::default()),
                job_id: cross_group.then_some(7),
            })
        }
        .boxed()
    }
    fn job_phase(&self, _job: u64) -> BoxFuture<'_, Option<String>> {
        async { Some("DONE".to_string()) }.boxed()
    }
}

/// One group whose leader (n3) is known only from the `known_from`-th question on: an
/// election in progress when a fault's turn comes.
struct LateLeader {
    asked: std::sync::atomic::AtomicUsize,
    known_from: usize,
}

impl StoreControl for LateLeader {
    fn leader_of(&self, _group: u64) -> BoxFuture<'_, Option<String>> {
        let n = self
            .asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        async move { (n >= self.known_from).then(|| "n3".to_string()) }.boxed()
    }
    fn hot_group(&self) -> BoxFuture<'_, u64> {
        async { 1 }.boxed()
    }
    fn groups(&self) -> Vec<u64> {
        vec![1]
    }
    fn split_hot(&self, _cross_group: bool) -> BoxFuture<'_, Option<SplitOutcome>> {
        async { None }.boxed()
    }
    fn job_phase(&self, _job: u64) -> BoxFuture<'_, Option<String>> {
        async { None }.boxed()
    }
}

/// The first `kind` turn of a run with `budget`, against a cluster whose leader is known
/// from the `known_from`-th question on: what was done to the nodes, and the start event.
async fn first_turn_during_an_election(
    kind: FaultKind,
    budget: Duration,
    known_from: usize,
) -> (Vec<String>, serde_json::Value) {
    let cluster = FakeCluster::new(3);
    let sink = Arc::new(VecSink::default());
    let c = ctx_with(
        cluster.clone(),
        sink.clone(),
        Arc::new(LateLeader {
            asked: Default::default(),
            known_from,
        }),
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let _active = faults::start(&c, kind, Turn { nth: 0, budget }, &mut rng).await;
    let start = sink.0.lock().unwrap()[0].value.clone();
    (cluster.log(), start)
}

#[tokio::test]
async fn the_first_kill_and_pause_wait_out_an_election_and_hit_the_new_leader() {
    for (kind, verb) in [(FaultKind::KILL, "kill"), (FaultKind::PAUSE, "pause")] {
        let (log, start) = first_turn_during_an_election(kind, Duration::from_secs(10), 3).await;
        assert_eq!(
            log,
            vec![format!("{verb} n3")],
            "{verb}: the leader once known"
        );
        assert_eq!(start["mode"], serde_json::json!("leader"), "{start}");
        assert_eq!(start["effective"], serde_json::json!(true), "{start}");
        assert_eq!(
            start["leaders"],
            serde_json::json!({"1": "n3"}),
            "the view the victim came from: {start}"
        );
    }
}

#[tokio::test]
async fn a_leader_never_known_within_the_turn_budget_gives_a_random_victim_recorded_as_such() {
    let began = std::time::Instant::now();
    let (log, start) =
        first_turn_during_an_election(FaultKind::KILL, Duration::from_millis(600), usize::MAX)
            .await;
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "waited {:?}, past the budget",
        began.elapsed()
    );
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(start["mode"], serde_json::json!("one"), "{start}");
    assert_eq!(
        start["effective"],
        serde_json::json!(false),
        "no leader was known to be hit: {start}"
    );
}

#[tokio::test]
async fn the_first_partition_waits_out_an_election_and_isolates_the_new_leader() {
    let (_, start) =
        first_turn_during_an_election(FaultKind::PARTITION, Duration::from_secs(10), 2).await;
    assert_eq!(start["mode"], serde_json::json!("leader"), "{start}");
    assert_eq!(start["leaders"], serde_json::json!({"1": "n3"}), "{start}");
    let grudge = &start["grudge"];
    assert_eq!(
        grudge["n3"],
        serde_json::json!(["n1", "n2"]),
        "n3 is cut off from the rest: {start}"
    );
}

#[derive(Default)]
pub(crate) struct VecSink(pub(crate) Mutex<Vec<Op>>);

impl HistorySink for VecSink {
    fn record(&self, mut op: Op) -> u64 {
        let mut v = self.0.lock().unwrap();
        op.index = v.len() as u64;
        v.push(op);
        op_index(&v)
    }
}

fn op_index(v: &[Op]) -> u64 {
    v.len() as u64 - 1
}

pub(crate) fn ctx(cluster: Arc<FakeCluster>, sink: Arc<VecSink>) -> Ctx {
    ctx_with(cluster, sink, Arc::new(FakeStore))
}

fn ctx_with(cluster: Arc<FakeCluster>, sink: Arc<VecSink>, store: Arc<dyn StoreControl>) -> Ctx {
    Ctx {
        control: cluster,
        store,
        sink,
        loss_probability: 0.2,
        partition_modes: PartitionMode::ALL.to_vec(),
        use_netem: false,
        move_phase: None,
        move_action: None,
        abort_phase: None,
        txn_move_aim: None,
    }
}

#[tokio::test]
async fn the_first_kill_hits_the_leader_and_its_stop_restarts_it() {
    let cluster = FakeCluster::new(3);
    let sink = Arc::new(VecSink::default());
    let c = ctx(cluster.clone(), sink.clone());
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let active = faults::start(&c, FaultKind::KILL, Turn::first(), &mut rng).await;
    faults::stop(&c, &active).await;
    assert_eq!(cluster.log(), vec!["kill n2", "restart n2"]);
    let ops = sink.0.lock().unwrap().clone();
    assert_eq!(ops[0].f, "start-kill");
    assert_eq!(ops[0].value["effective"], serde_json::json!(true));
    assert_eq!(ops[0].value["leader"], serde_json::json!(true));
    assert_eq!(ops[1].f, "stop-kill");
    assert_eq!(ops[1].value["healed"], serde_json::json!(true));
}

#[tokio::test]
async fn a_partition_that_cannot_be_applied_is_recorded_as_not_effective() {
    let cluster = FakeCluster::new(3);
    let sink = Arc::new(VecSink::default());
    let c = ctx(cluster, sink.clone());
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let active = faults::start(&c, FaultKind::PARTITION, Turn::first(), &mut rng).await;
    faults::stop(&c, &active).await;
    let ops = sink.0.lock().unwrap().clone();
    assert_eq!(
        ops[0].value["mode"],
        serde_json::json!("leader"),
        "the first partition isolates the leader"
    );
    assert_eq!(
        ops[0].value["effective"],
        serde_json::json!(false),
        "rules could not be installed"
    );
    assert!(!ops[0].value["errors"].as_array().unwrap().is_empty());
    assert_eq!(ops[1].value["healed"], serde_json::json!(false));
}

#[tokio::test]
async fn the_schedule_brackets_every_fault_never_overlaps_kill_and_pause_and_heals_at_the_end() {
    let cluster = FakeCluster::new(3);
    let sink = Arc::new(VecSink::default());
    let nemesis = Nemesis {
        ctx: ctx(cluster.clone(), sink.clone()),
        kinds: vec![FaultKind::KILL, FaultKind::PAUSE, FaultKind::SPLIT],
        interval: Duration::from_millis(100),
        seed: 3,
        status: Arc::new(NemesisStatus::default()),
    };
    let cancel = CancellationToken::new();
    let stopper = {
        let cancel = cancel.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(950)).await;
            cancel.cancel();
        }
    };
    tokio::join!(nemesis.run(cancel), stopper);
    let ops = sink.0.lock().unwrap().clone();
    for kind in ["kill", "pause", "split"] {
        let starts = ops
            .iter()
            .filter(|o| o.f == format!("start-{kind}"))
            .count();
        let stops = ops.iter().filter(|o| o.f == format!("stop-{kind}")).count();
        assert!(starts >= 1, "{kind} never started: {ops:?}");
        assert_eq!(starts, stops, "{kind}: every start has a stop");
    }
    // Faults on nodes are sequential: between a kill and its restart nothing is paused,
    // and between a pause and its resume nothing is killed.
    let log = cluster.log();
    let heal_from = log.len() - 6; // heal_all: resume+restart of 3 nodes
    let (mut killed, mut paused) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    for entry in &log[..heal_from] {
        let (verb, node) = entry.split_once(' ').unwrap();
        match verb {
            "kill" => assert!(
                paused.is_empty() && killed.insert(node),
                "kill while paused: {log:?}"
            ),
            "pause" => assert!(
                killed.is_empty() && paused.insert(node),
                "pause while killed: {log:?}"
            ),
            "restart" => assert!(killed.remove(node), "restart of a live node: {log:?}"),
            "resume" => assert!(paused.remove(node), "resume of a running node: {log:?}"),
            other => panic!("unexpected {other}"),
        }
    }
    assert!(
        killed.is_empty() && paused.is_empty(),
        "the last fault was healed: {log:?}"
    );
    let tail: Vec<&str> = log[heal_from..].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        vec![
            "resume n1",
            "restart n1",
            "resume n2",
            "restart n2",
            "resume n3",
            "restart n3"
        ]
    );
    let splits: Vec<&Op> = ops.iter().filter(|o| o.f == "start-split").collect();
    assert_eq!(splits[0].value["cross_group"], serde_json::json!(false));
    if splits.len() > 1 {
        assert_eq!(
            splits[1].value["cross_group"],
            serde_json::json!(true),
            "splits alternate"
        );
    }
}

#[test]
fn a_schedule_that_cannot_start_every_fault_is_reported() {
    use crate::schedule::schedule_shortfall;
    use std::time::Duration;
    let s = |n| Duration::from_secs(n);
    // The Docker run: partition then kill, 10 s interval, 30 s: the kill would start at 30 s.
    let w = schedule_shortfall(&[FaultKind::PARTITION, FaultKind::KILL], s(10), s(30))
        .expect("kill never starts");
    assert!(w.contains("--time-limit 30"), "{w}");
    assert!(schedule_shortfall(
        &[
            FaultKind::PARTITION,
            FaultKind::KILL,
            FaultKind::PAUSE,
            FaultKind::SPLIT
        ],
        s(10),
        s(60)
    )
    .is_none());
    assert!(
        schedule_shortfall(&[FaultKind::SPLIT], s(10), s(10)).is_some(),
        "the first split comes at the limit"
    );
    assert!(schedule_shortfall(&[], s(10), s(1)).is_none());
}
