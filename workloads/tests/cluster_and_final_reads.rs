//! Readiness, leader discovery and final reads against fake stores over real gRPC.

mod common;

use analysis::history::{OpType, Process};
use common::{assert_well_formed, dead_endpoint, serve, FakeStore, Reply, VecSink};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic::Code;
use workloads::generators::{ScanRange, Touched};
use workloads::{
    final_reads, leader_of_group, wait_ready, FinalReadsOptions, Stats, StatsSnapshot,
    WorkloadConfig, WorkloadSummary,
};

#[tokio::test]
async fn ready_when_every_group_has_a_leader() {
    let a = FakeStore::new("n1");
    let b = FakeStore::new("n2");
    a.set_leader_of(&[1]);
    b.set_leader_of(&[2]);
    let nodes = vec![serve(a.clone()).await, serve(b.clone()).await];
    wait_ready(&nodes, &[1, 2], Duration::from_secs(2))
        .await
        .unwrap();
    let err = wait_ready(&nodes, &[1, 2, 3], Duration::from_millis(500))
        .await
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("group 3 has no leader"),
        "{err:#}"
    );
    assert_eq!(leader_of_group(&nodes, 1).await.as_deref(), Some("n1"));
    assert_eq!(leader_of_group(&nodes, 2).await.as_deref(), Some("n2"));
    assert_eq!(leader_of_group(&nodes, 3).await, None);
}

#[tokio::test]
async fn an_unreachable_node_is_not_ready_but_leaders_are_still_found() {
    let a = FakeStore::new("n1");
    a.set_leader_of(&[1]);
    let nodes = vec![serve(a.clone()).await, dead_endpoint("n2").await];
    let err = wait_ready(&nodes, &[1], Duration::from_millis(400))
        .await
        .unwrap_err();
    assert!(format!("{err:#}").contains("n2: unavailable"), "{err:#}");
    assert_eq!(leader_of_group(&nodes, 1).await.as_deref(), Some("n1"));
}

#[tokio::test]
async fn a_stale_leader_loses_to_the_higher_term() {
    let old = FakeStore::new("n1");
    let new = FakeStore::new("n2");
    old.set_leader_of(&[1]);
    new.set_leader_of(&[1]);
    new.term.store(9, std::sync::atomic::Ordering::SeqCst);
    let nodes = vec![serve(old).await, serve(new).await];
    assert_eq!(leader_of_group(&nodes, 1).await.as_deref(), Some("n2"));
}

fn summary_touching(registers: &[&str], ranges: &[&str], next_process: u64) -> WorkloadSummary {
    let touched = Touched {
        registers: registers.iter().map(|s| s.to_string()).collect(),
        set_ranges: ranges.iter().map(|p| ScanRange::prefix(p)).collect(),
        ..Touched::default()
    };
    WorkloadSummary {
        stats: StatsSnapshot::default(),
        processes: 2,
        next_process,
        final_ops: workloads::final_reads::reads_of(&touched),
        touched,
        elapsed_s: 1.0,
        cancelled: false,
    }
}

#[tokio::test]
async fn final_reads_read_everything_through_every_node_with_retries() {
    let a = FakeStore::new("n1");
    let b = FakeStore::new("n2");
    for s in [&a, &b] {
        s.insert("reg/00000", "17");
        s.insert("set/000000000001", "1");
        s.insert("set/000000000002", "2");
        s.insert("zzz", "outside");
    }
    // n2 fails its first two reads; they are retried.
    b.script_gets([
        Reply::Error(Code::Unavailable),
        Reply::Error(Code::DeadlineExceeded),
    ]);
    let nodes = vec![serve(a.clone()).await, serve(b.clone()).await];
    let sink = VecSink::new();
    let summary = summary_touching(&["reg/00000", "reg/00001"], &["set/"], 12);
    let opts = FinalReadsOptions {
        timeout: Duration::from_secs(5),
        retry_interval: Duration::from_millis(10),
    };
    let report = final_reads(
        &WorkloadConfig::default(),
        &summary,
        &nodes,
        sink.clone(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
        opts,
    )
    .await;
    let ops = sink.ops();
    assert_well_formed(&ops);
    assert!(report.unread.is_empty(), "{:?}", report.unread);
    assert_eq!(
        report.succeeded, 6,
        "2 registers + 1 range on each of 2 nodes"
    );
    assert_eq!(report.attempts, 8);
    assert_eq!(report.next_process, 14);
    for op in &ops {
        let p = op.process.client().unwrap();
        assert_eq!(op.node.as_deref(), Some(if p == 12 { "n1" } else { "n2" }));
    }
    let ok_reads: Vec<_> = ops
        .iter()
        .filter(|o| o.kind == OpType::Ok && o.f == "read")
        .collect();
    assert!(ok_reads
        .iter()
        .any(|o| o.key.as_deref() == Some("reg/00000") && o.value == serde_json::json!(17)));
    assert!(ok_reads
        .iter()
        .any(|o| o.key.as_deref() == Some("reg/00001") && o.value.is_null()));
    let scan = ops
        .iter()
        .find(|o| o.kind == OpType::Ok && o.f == "scan")
        .unwrap();
    assert_eq!(
        scan.value,
        serde_json::json!(["set/000000000001", "set/000000000002"])
    );
    let failed: Vec<_> = ops.iter().filter(|o| o.kind == OpType::Fail).collect();
    assert_eq!(failed.len(), 2);
    assert!(failed.iter().all(|o| o.process == Process::Client(13)));
}

#[tokio::test]
async fn final_reads_give_up_at_the_deadline_and_say_what_was_not_read() {
    let a = FakeStore::new("n1");
    let nodes = vec![serve(a.clone()).await, dead_endpoint("n2").await];
    let sink = VecSink::new();
    let summary = summary_touching(&["reg/00000"], &[], 3);
    let opts = FinalReadsOptions {
        timeout: Duration::from_millis(400),
        retry_interval: Duration::from_millis(50),
    };
    let report = final_reads(
        &WorkloadConfig::default(),
        &summary,
        &nodes,
        sink.clone(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
        opts,
    )
    .await;
    assert_well_formed(&sink.ops());
    assert_eq!(report.succeeded, 1);
    assert_eq!(report.unread, vec!["n2: read reg/00000".to_string()]);
    assert!(report.attempts >= 3);
}
