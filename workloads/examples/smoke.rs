//! Smoke run of a workload against a running cluster (e.g. three refkv processes on
//! loopback), without Docker or a nemesis: readiness, catalog watcher, workload, final
//! reads. Writes the history as JSON Lines and prints what happened.
//!
//! ```text
//! cargo run -p workloads --example smoke -- \
//!     --nodes n1=127.0.0.1:17001,n2=127.0.0.1:17002,n3=127.0.0.1:17003 \
//!     --groups 3 --workload hotspot --time-limit 20 --out smoke.jsonl [--rate 500]
//! ```

use analysis::history::{HistorySink, Op, OpType};
use anyhow::{bail, Context};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use workloads::{NodeEndpoint, Stats, WorkloadConfig, WorkloadKind};

/// Writes entries as JSON Lines, assigning index and time.
struct FileSink {
    start: Instant,
    state: Mutex<(u64, std::io::BufWriter<std::fs::File>)>,
    counts: Mutex<std::collections::BTreeMap<String, u64>>,
}

impl HistorySink for FileSink {
    fn record(&self, mut op: Op) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        op.index = state.0;
        op.time = self.start.elapsed().as_nanos() as u64;
        state.0 += 1;
        if let Ok(line) = serde_json::to_string(&op) {
            let _ = writeln!(state.1, "{line}");
        }
        if op.kind != OpType::Invoke {
            let key = format!("{} {:?}", op.f, op.kind).to_lowercase();
            *self
                .counts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(key)
                .or_default() += 1;
        }
        op.index
    }
}

struct Args {
    nodes: Vec<NodeEndpoint>,
    groups: u64,
    cfg: WorkloadConfig,
    out: String,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut nodes = Vec::new();
    let mut groups = 3;
    let mut kind = WorkloadKind::Hotspot;
    let mut overrides: Vec<(String, String)> = Vec::new();
    let mut out = "smoke.jsonl".to_string();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--nodes" => {
                for part in value.split(',') {
                    let (name, addr) = part
                        .split_once('=')
                        .with_context(|| format!("--nodes: {part:?} is not name=ip:port"))?;
                    nodes.push(NodeEndpoint {
                        name: name.into(),
                        addr: addr.into(),
                    });
                }
            }
            "--groups" => groups = value.parse().context("--groups")?,
            "--workload" => kind = value.parse().map_err(anyhow::Error::msg)?,
            "--out" => out = value,
            "--time-limit" | "--rate" | "--concurrency" | "--key-dist" => {
                overrides.push((flag, value))
            }
            other => bail!("unknown flag {other}"),
        }
    }
    let mut cfg = WorkloadConfig::defaults(kind);
    for (flag, value) in overrides {
        match flag.as_str() {
            "--time-limit" => cfg.time_limit_s = value.parse().context("--time-limit")?,
            "--rate" => cfg.rate = value.parse().context("--rate")?,
            "--concurrency" => cfg.concurrency = value.parse()?,
            _ => cfg.key_dist = value.parse()?,
        }
    }
    if nodes.is_empty() {
        bail!("--nodes is required");
    }
    Ok(Args {
        nodes,
        groups,
        cfg,
        out,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let file =
        std::fs::File::create(&args.out).with_context(|| format!("cannot create {}", args.out))?;
    let sink = Arc::new(FileSink {
        start: Instant::now(),
        state: Mutex::new((0, std::io::BufWriter::new(file))),
        counts: Default::default(),
    });
    let groups: Vec<u64> = (1..=args.groups).collect();
    workloads::wait_ready(&args.nodes, &groups, Duration::from_secs(30)).await?;
    let stop_watcher = CancellationToken::new();
    let watcher = tokio::spawn({
        let (nodes, sink, cancel) = (args.nodes.clone(), sink.clone(), stop_watcher.clone());
        async move { workloads::run_catalog_watcher(&nodes, sink, cancel).await }
    });
    let stats = Arc::new(Stats::new());
    let started = Instant::now();
    let summary = workloads::run_workload(
        &args.cfg,
        &args.nodes,
        sink.clone(),
        stats.clone(),
        CancellationToken::new(),
    )
    .await?;
    let elapsed = started.elapsed().as_secs_f64();
    let reads = workloads::final_reads(
        &args.cfg,
        &summary,
        &args.nodes,
        sink.clone(),
        stats,
        CancellationToken::new(),
        Default::default(),
    )
    .await;
    stop_watcher.cancel();
    let watched = watcher.await??;
    sink.state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .1
        .flush()?;
    let s = summary.stats;
    println!("workload {} for {elapsed:.1} s: {} invoked, {:.0} ops/s, {:.0} ok/s; ok {} fail {} info {}; processes {} (retired {})",
        args.cfg.workload, s.invoked, s.invoked as f64 / elapsed, s.ok as f64 / elapsed, s.ok, s.fail, s.info, summary.next_process, s.retired);
    println!(
        "completions by f/type: {:?}",
        sink.counts.lock().unwrap_or_else(|p| p.into_inner())
    );
    println!(
        "final reads: {} ok of {} attempts, unread {:?}",
        reads.succeeded, reads.attempts, reads.unread
    );
    println!("catalog watcher: {watched:?}");
    println!("history: {}", args.out);
    Ok(())
}
