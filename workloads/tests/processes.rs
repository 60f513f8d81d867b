//! Jepsen-process behaviour against an in-process fake store over real gRPC: retirement
//! after indeterminate outcomes, definite failures, deadlines, cancellation, connection
//! refusal, and well-formed histories across several nodes.

mod common;

use analysis::history::{Op, OpType, Process};
use common::{assert_well_formed, dead_endpoint, serve, FakeStore, Reply, VecSink};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic::Code;
use workloads::{run_workload, Concurrency, KeyDist, Stats, WorkloadConfig, WorkloadKind};

/// A register workload of writes only (no reads, no cas) so every op is a RawPut.
fn writes_only(concurrency: Concurrency, rate: f64, seconds: f64) -> WorkloadConfig {
    WorkloadConfig {
        concurrency,
        rate,
        time_limit_s: seconds,
        read_fraction: 0.0,
        cas_fraction: 0.0,
        key_dist: KeyDist::Uniform,
        call_timeout_ms: 300,
        connect_timeout_ms: 200,
        ..WorkloadConfig::defaults(WorkloadKind::Register)
    }
}

fn completions(ops: &[Op]) -> Vec<&Op> {
    ops.iter().filter(|o| o.kind != OpType::Invoke).collect()
}

fn processes_used(ops: &[Op]) -> Vec<u64> {
    let mut ps: Vec<u64> = ops.iter().filter_map(|o| o.process.client()).collect();
    ps.sort_unstable();
    ps.dedup();
    ps
}

#[tokio::test]
async fn indeterminate_outcome_retires_the_process() {
    let store = FakeStore::new("n1");
    store.script_puts([Reply::Normal, Reply::Error(Code::Unknown), Reply::Normal]);
    let node = serve(store.clone()).await;
    let sink = VecSink::new();
    let cfg = writes_only(Concurrency::Total(1), 50.0, 0.3);
    let summary = run_workload(
        &cfg,
        &[node],
        sink.clone(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let ops = sink.ops();
    assert_well_formed(&ops);
    let done = completions(&ops);
    assert_eq!(
        (done[0].kind, done[0].process),
        (OpType::Ok, Process::Client(0))
    );
    assert_eq!(
        (done[1].kind, done[1].process),
        (OpType::Info, Process::Client(0))
    );
    assert!(done[1].error.as_deref().unwrap().starts_with("unknown"));
    // Everything after the info belongs to the fresh process 1, never to process 0.
    let after: Vec<_> = ops
        .iter()
        .skip_while(|o| o.kind != OpType::Info)
        .skip(1)
        .collect();
    assert!(!after.is_empty());
    assert!(
        after.iter().all(|o| o.process == Process::Client(1)),
        "{after:?}"
    );
    assert_eq!(processes_used(&ops), vec![0, 1]);
    assert_eq!(summary.next_process, 2);
    assert_eq!(summary.stats.retired, 1);
    assert_eq!(summary.stats.info, 1);
    // Ok writes carry the store's commit metadata.
    assert_eq!(
        done[0].meta.as_ref().and_then(|m| m.node.as_deref()),
        Some("n1")
    );
}

#[tokio::test]
async fn definite_failures_keep_the_process() {
    let store = FakeStore::new("n1");
    store.script_puts([
        Reply::Error(Code::Aborted),
        Reply::Error(Code::FailedPrecondition),
        Reply::Error(Code::Unavailable),
    ]);
    let node = serve(store.clone()).await;
    let sink = VecSink::new();
    let cfg = writes_only(Concurrency::Total(1), 50.0, 0.3);
    let summary = run_workload(
        &cfg,
        &[node],
        sink.clone(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let ops = sink.ops();
    assert_well_formed(&ops);
    let done = completions(&ops);
    let kinds: Vec<OpType> = done.iter().take(4).map(|o| o.kind).collect();
    assert_eq!(
        kinds,
        vec![OpType::Fail, OpType::Fail, OpType::Fail, OpType::Ok]
    );
    assert_eq!(done[0].error.as_deref(), Some("aborted: scripted failure"));
    assert_eq!(processes_used(&ops), vec![0]);
    assert_eq!(summary.next_process, 1);
    assert_eq!(summary.stats.retired, 0);
}

#[tokio::test]
async fn a_write_past_its_deadline_is_info_and_a_read_past_its_deadline_is_fail() {
    let store = FakeStore::new("n1");
    store.script_puts([Reply::Delay(Duration::from_secs(2))]);
    store.script_gets([Reply::Delay(Duration::from_secs(2))]);
    let node = serve(store.clone()).await;
    let sink = VecSink::new();
    // Reads and writes mixed; the first put and the first get hang past the 300 ms deadline.
    let cfg = WorkloadConfig {
        read_fraction: 0.5,
        ..writes_only(Concurrency::Total(2), 20.0, 0.6)
    };
    run_workload(
        &cfg,
        &[node],
        sink.clone(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let ops = sink.ops();
    assert_well_formed(&ops);
    let timed_out: Vec<&Op> = ops
        .iter()
        .filter(|o| {
            o.error
                .as_deref()
                .is_some_and(|e| e.starts_with("timed-out"))
        })
        .collect();
    let write = timed_out
        .iter()
        .find(|o| o.f == "write")
        .expect("a timed-out write");
    assert_eq!(write.kind, OpType::Info);
    let read = timed_out
        .iter()
        .find(|o| o.f == "read")
        .expect("a timed-out read");
    assert_eq!(read.kind, OpType::Fail);
}

#[tokio::test]
async fn cancellation_mid_call_completes_the_op_as_info() {
    let store = FakeStore::new("n1");
    store.script_puts([Reply::Delay(Duration::from_secs(30))]);
    let node = serve(store.clone()).await;
    let sink = VecSink::new();
    let cfg = WorkloadConfig {
        call_timeout_ms: 20_000,
        ..writes_only(Concurrency::Total(1), 10.0, 60.0)
    };
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = std::time::Instant::now();
    let summary = run_workload(&cfg, &[node], sink.clone(), Arc::new(Stats::new()), cancel)
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "cancellation did not stop the run"
    );
    assert!(summary.cancelled);
    let ops = sink.ops();
    assert_well_formed(&ops);
    let last = ops.last().unwrap();
    assert_eq!(
        (last.kind, last.error.as_deref()),
        (
            OpType::Info,
            Some("cancelled: test cancelled while the call was in flight")
        )
    );
}

#[tokio::test]
async fn refused_connections_are_definite_failures() {
    let node = dead_endpoint("n1").await;
    let sink = VecSink::new();
    let cfg = writes_only(Concurrency::Total(1), 20.0, 0.3);
    let summary = run_workload(
        &cfg,
        &[node],
        sink.clone(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let ops = sink.ops();
    assert_well_formed(&ops);
    let done = completions(&ops);
    assert!(!done.is_empty());
    for op in &done {
        assert_eq!(op.kind, OpType::Fail, "{op:?}");
        assert!(
            op.error.as_deref().unwrap().starts_with("unavailable"),
            "{op:?}"
        );
    }
    assert_eq!(summary.stats.retired, 0);
}

#[tokio::test]
async fn processes_are_bound_to_nodes_round_robin() {
    let mut nodes = Vec::new();
    let mut stores = Vec::new();
    for name in ["n1", "n2", "n3"] {
        let s = FakeStore::new(name);
        nodes.push(serve(s.clone()).await);
        stores.push(s);
    }
    let sink = VecSink::new();
    let cfg = WorkloadConfig {
        time_limit_s: 0.5,
        rate: 200.0,
        ..WorkloadConfig::defaults(WorkloadKind::Hotspot)
    };
    let cfg = WorkloadConfig {
        concurrency: Concurrency::PerNode(2),
        scan_every: 20,
        ..cfg
    };
    let stats = Arc::new(Stats::new());
    let summary = run_workload(
        &cfg,
        &nodes,
        sink.clone(),
        stats.clone(),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let ops = sink.ops();
    assert_well_formed(&ops);
    assert_eq!(summary.processes, 6);
    for op in &ops {
        let p = op.process.client().unwrap();
        let expected = ["n1", "n2", "n3"][p as usize % 3];
        assert_eq!(op.node.as_deref(), Some(expected));
    }
    for s in &stores {
        assert!(
            s.puts.load(std::sync::atomic::Ordering::SeqCst) > 0,
            "{} got no writes",
            s.name
        );
    }
    // Scans complete with the keys present, and every key scanned was inserted by an add.
    let scan = ops
        .iter()
        .find(|o| o.f == "scan" && o.kind == OpType::Ok)
        .expect("an ok scan");
    assert!(scan.value.is_array());
    let snap = stats.snapshot();
    assert_eq!(snap.invoked, summary.stats.invoked);
    assert_eq!(snap.ok + snap.fail + snap.info, snap.invoked);
    assert_eq!(summary.touched.set_ranges.len(), 1);
}

#[tokio::test]
async fn a_malformed_node_address_is_a_clear_error() {
    let node = workloads::NodeEndpoint {
        name: "n7".into(),
        addr: "not an address".into(),
    };
    let cfg = writes_only(Concurrency::Total(1), 10.0, 0.1);
    let err = run_workload(
        &cfg,
        &[node],
        VecSink::new(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    let text = format!("{err:#}");
    assert!(
        text.contains("n7") && text.contains("not an address"),
        "{text}"
    );
}

#[tokio::test]
async fn an_invalid_config_is_rejected_before_anything_runs() {
    let store = FakeStore::new("n1");
    let node = serve(store.clone()).await;
    let cfg = WorkloadConfig {
        insert_fraction: 2.0,
        ..writes_only(Concurrency::Total(1), 10.0, 0.1)
    };
    let err = run_workload(
        &cfg,
        &[node],
        VecSink::new(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(format!("{err:#}").contains("insert_fraction"));
    assert_eq!(store.puts.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn without_cas_support_a_cas_is_never_sent() {
    use workloads::{ClientOptions, Connector, GrpcConnector};
    let store = FakeStore::new("n1");
    store.insert("k", "1");
    let node = serve(store.clone()).await;
    let connector = GrpcConnector {
        options: ClientOptions {
            cas_supported: false,
            ..Default::default()
        },
    };
    let client = connector.connect(&node).unwrap();
    assert!(client.as_cas().is_none(), "no compare-and-set capability");
    let cas = workloads::generators::OpSpec::new(workloads::kv_ops::Cas {
        key: "k".into(),
        expected: 1,
        new: 2,
    });
    let err = cas.run(client.as_ref()).await.unwrap_err();
    assert_eq!((err.is_definite(), err.tag), (true, "unimplemented"));
    assert_eq!(store.puts.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(store.get("k").as_deref(), Some("1"));
    // With support (the default) the same cas applies.
    let client = GrpcConnector::default().connect(&node).unwrap();
    let cas = client.as_cas().expect("refkv's compare-and-set");
    assert!(cas.cas(b"k", Some(b"1"), b"2").await.unwrap().applied);
    assert!(!cas.cas(b"k", Some(b"1"), b"3").await.unwrap().applied);
    assert_eq!(store.get("k").as_deref(), Some("2"));
}

#[tokio::test]
async fn a_connection_broken_after_sending_is_info_and_later_refusals_are_fail() {
    let store = FakeStore::new("n1");
    store.script_puts([Reply::Delay(Duration::from_secs(3))]);
    let backend = serve(store.clone()).await;
    let mut proxy = common::KillableProxy::start("n1", &backend).await;
    let sink = VecSink::new();
    let cfg = WorkloadConfig {
        call_timeout_ms: 5_000,
        ..writes_only(Concurrency::Total(1), 20.0, 1.0)
    };
    let node = proxy.endpoint.clone();
    let run = tokio::spawn({
        let sink = sink.clone();
        async move {
            run_workload(
                &cfg,
                &[node],
                sink,
                Arc::new(Stats::new()),
                CancellationToken::new(),
            )
            .await
        }
    });
    // The first write is in flight (the store sleeps 3 s); the "server" crashes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.kill().await;
    let summary = run.await.unwrap().unwrap();
    let ops = sink.ops();
    assert_well_formed(&ops);
    let done = completions(&ops);
    assert_eq!(
        (done[0].kind, done[0].process),
        (OpType::Info, Process::Client(0)),
        "{:?}",
        done[0]
    );
    assert!(
        !done[0].error.as_deref().unwrap().starts_with("timed-out"),
        "{:?}",
        done[0]
    );
    // The fresh process finds the port closed: definite failures, no further retirement.
    assert!(done.len() > 1);
    for op in &done[1..] {
        assert_eq!(
            (op.kind, op.process),
            (OpType::Fail, Process::Client(1)),
            "{op:?}"
        );
        assert!(
            op.error.as_deref().unwrap().starts_with("unavailable"),
            "{op:?}"
        );
    }
    assert_eq!(summary.stats.retired, 1);
}
