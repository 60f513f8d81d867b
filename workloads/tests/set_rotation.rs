//! Set rotation end to end against a fake store over real gRPC: the `set` workload with a
//! small `set_size` fills several sets, the final reads scan each set on its own, and
//! set-full judges every retired set like the one being filled; a loss in a retired set is
//! still found.

mod common;

use analysis::checkers::set_full::{self, SetFullOptions};
use analysis::history::{History, Op, OpType};
use analysis::verdict::Validity;
use common::{assert_well_formed, serve, FakeStore, VecSink};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use workloads::{
    final_reads, run_workload, Concurrency, FinalReadsOptions, Stats, WorkloadConfig, WorkloadKind,
};

const SET_SIZE: u64 = 10;

fn config() -> WorkloadConfig {
    WorkloadConfig {
        concurrency: Concurrency::Total(1),
        rate: 400.0,
        time_limit_s: 0.3,
        scan_every: 4,
        set_size: SET_SIZE,
        ..WorkloadConfig::defaults(WorkloadKind::Set)
    }
}

/// The set (`set/<generation>/`) a key belongs to.
fn set_of(key: &str) -> &str {
    &key[..key.rfind('/').expect("a set key") + 1]
}

struct Run {
    ops: Vec<Op>,
    /// Keys whose add was acknowledged, in order.
    acked: Vec<String>,
}

/// Runs the workload, lets `between` act on the store, then runs the final reads.
async fn run(between: impl FnOnce(&FakeStore, &[String])) -> Run {
    let store = FakeStore::new("n1");
    let nodes = vec![serve(store.clone()).await];
    let sink = VecSink::new();
    let cfg = config();
    let stats = Arc::new(Stats::new());
    let summary = run_workload(
        &cfg,
        &nodes,
        sink.clone(),
        stats.clone(),
        CancellationToken::new(),
    )
    .await
    .expect("the workload runs");
    let acked = acked_adds(&sink.ops());
    between(&store, &acked);
    let opts = FinalReadsOptions {
        timeout: Duration::from_secs(5),
        retry_interval: Duration::from_millis(10),
    };
    let report = final_reads(
        &cfg,
        &summary,
        &nodes,
        sink.clone(),
        stats,
        CancellationToken::new(),
        opts,
    )
    .await;
    assert!(report.unread.is_empty(), "{:?}", report.unread);
    let ops = sink.ops();
    assert_well_formed(&ops);
    Run { ops, acked }
}

fn acked_adds(ops: &[Op]) -> Vec<String> {
    ops.iter()
        .filter(|o| o.f == "add" && o.kind == OpType::Ok)
        .filter_map(|o| o.key.as_deref().map(str::to_string))
        .collect()
}

fn scans(ops: &[Op]) -> Vec<&Op> {
    ops.iter()
        .filter(|o| o.f == "scan" && o.kind == OpType::Ok)
        .collect()
}

fn check(ops: Vec<Op>) -> analysis::verdict::CheckerResult {
    set_full::check(&History::new(ops), &SetFullOptions::default())
}

#[tokio::test]
async fn every_retired_set_is_read_on_its_own_and_judged_stable() {
    let run = run(|_, _| {}).await;
    let sets: BTreeSet<&str> = run.acked.iter().map(|k| set_of(k)).collect();
    assert!(sets.len() >= 3, "the run filled only {sets:?}");
    for scan in scans(&run.ops) {
        let keys = scan.value.as_array().expect("a scan returns keys");
        assert!(
            keys.len() as u64 <= SET_SIZE,
            "a read of {} elements",
            keys.len()
        );
        let read: BTreeSet<&str> = keys.iter().map(|k| set_of(k.as_str().unwrap())).collect();
        assert!(read.len() <= 1, "one scan read several sets: {read:?}");
    }
    // The last scans are the final reads: one per set, every set included.
    let final_sets: BTreeSet<String> = scans(&run.ops)
        .iter()
        .rev()
        .take(sets.len())
        .filter_map(|s| {
            s.value
                .as_array()?
                .first()?
                .as_str()
                .map(|k| set_of(k).to_string())
        })
        .collect();
    let expected: BTreeSet<String> = sets.iter().map(|s| s.to_string()).collect();
    assert_eq!(final_sets, expected);
    let result = check(run.ops);
    assert_eq!(result.valid, Validity::Valid, "{:?}", result.reason);
    assert_eq!(result.counts["stable-count"], run.acked.len() as u64);
    assert_eq!(result.counts["lost-count"], 0);
}

#[tokio::test]
async fn a_loss_in_a_retired_set_is_found() {
    let mut dropped = String::new();
    let run = run(|store, acked| {
        dropped = acked.first().expect("an acknowledged add").clone();
        store.remove(&dropped);
    })
    .await;
    let last_set = set_of(run.acked.last().expect("adds"));
    assert_ne!(
        set_of(&dropped),
        last_set,
        "the loss must be in a retired set"
    );
    let result = check(run.ops);
    assert_eq!(result.valid, Validity::Invalid);
    assert_eq!(result.counts["lost-count"], 1);
    let lost = result
        .anomalies
        .iter()
        .find(|a| a["kind"] == "lost")
        .expect("a lost anomaly");
    assert_eq!(lost["element"], serde_json::json!(dropped));
}
