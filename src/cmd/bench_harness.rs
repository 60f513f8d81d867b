//! `faultline bench --harness`: throughput of the harness itself. Runs the real process
//! loop (generator, rate limiter, invoke → call → completion, process retirement) against
//! the in-process `null` store ([`workloads::null`]), recording into the run's real history
//! sink ([`crate::runner::sink::JsonlSink`], which streams every entry to a
//! `history.jsonl`), once per client-process count.
//!
//! Reported per count: completed ops/s (wall), process CPU µs per op (user + system of the
//! whole process, so it includes the sink and the JSONL writer), and resident memory added
//! per million ops. A count passes only when nothing was lost: the written file reads back
//! with the standard reader, holds exactly the entries the sink recorded with dense indices,
//! one completion for every invocation, as many invocations as the workload counted, and the
//! history checks `valid` (the null store is linearizable).
//!
//! With several counts, each runs in a child `faultline bench --harness` of its own, so
//! that memory one count freed (and the allocator kept) does not hide what the next adds.

use crate::runner::sink::JsonlSink;
use analysis::analyze::{analyze, AnalyzeOptions};
use analysis::formats::{load_file, Format};
use analysis::history::{History, OpType};
use analysis::verdict::Validity;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use workloads::null::NullConnector;
use workloads::{
    run_workload_with, Concurrency, Connector, NodeEndpoint, Stats, WorkloadConfig, WorkloadKind,
};

/// What `--harness` runs; the figures are printed as text unless `json`.
#[derive(Debug, Clone)]
pub struct HarnessBench {
    pub processes: Vec<u32>,
    pub seconds: f64,
    pub workload: WorkloadKind,
    pub rate: f64,
    pub seed: u64,
}

/// Figures of one process count.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Figures {
    processes: u32,
    ops: u64,
    entries: u64,
    wall_s: f64,
    ops_per_s: f64,
    cpu_s: f64,
    cpu_us_per_op: f64,
    rss_mb_per_million_ops: f64,
    history_mb: f64,
    check_s: f64,
    verdict: Validity,
    /// Empty when nothing was lost; otherwise what the written history lacks.
    losses: Vec<String>,
}

/// Runs every process count; returns the report and whether every count passed.
pub fn bench_harness(bench: &HarnessBench, say: &dyn Fn(String)) -> Result<(Value, bool), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let mut rows = Vec::new();
    let mut passed = true;
    say(format!(
        "harness      null store, {} workload, {} s per count, rate {}, {} runtime threads",
        bench.workload,
        bench.seconds,
        if bench.rate > 0.0 {
            format!("{} ops/s", bench.rate)
        } else {
            "unlimited".into()
        },
        rt.metrics().num_workers()
    ));
    for &processes in &bench.processes {
        let f = if bench.processes.len() == 1 {
            rt.block_on(one_count(bench, processes))?
        } else {
            in_child(bench, processes)?
        };
        say(format!(
            "  {:>5} processes: {:>9.0} ops/s  {:>5.2} CPU µs/op ({:.1} s CPU in {:.1} s)  {:>4.0} MB RSS per 1M ops  {} ops, {} entries ({:.0} MB JSONL), check {:.1} s: {}{}",
            f.processes,
            f.ops_per_s,
            f.cpu_us_per_op,
            f.cpu_s,
            f.wall_s,
            f.rss_mb_per_million_ops,
            f.ops,
            f.entries,
            f.history_mb,
            f.check_s,
            f.verdict.as_str(),
            if f.losses.is_empty() { ", no op lost".to_string() } else { format!(", LOST: {}", f.losses.join("; ")) }
        ));
        passed &= f.losses.is_empty() && f.verdict == Validity::Valid;
        rows.push(f);
    }
    Ok((
        json!({ "workload": bench.workload.to_string(), "seconds": bench.seconds, "rate": bench.rate, "counts": rows }),
        passed,
    ))
}

/// Runs one count in a child process and reads its figures from the child's `--json`.
fn in_child(bench: &HarnessBench, processes: u32) -> Result<Figures, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this executable to run a child bench: {e}"))?;
    let output = std::process::Command::new(&exe)
        .args([
            "bench",
            "--harness",
            "--json",
            "--harness-processes",
            &processes.to_string(),
        ])
        .args([
            "--harness-seconds",
            &bench.seconds.to_string(),
            "--harness-workload",
            &bench.workload.to_string(),
        ])
        .args([
            "--harness-rate",
            &bench.rate.to_string(),
            "--seed",
            &bench.seed.to_string(),
        ])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let report: Value = serde_json::from_slice(&output.stdout).map_err(|e| {
        format!(
            "the child bench of {processes} processes ({}) printed no figures: {e}",
            output.status
        )
    })?;
    let row = report
        .pointer("/harness/counts/0")
        .cloned()
        .ok_or_else(|| format!("the child bench of {processes} processes reported no count"))?;
    serde_json::from_value(row)
        .map_err(|e| format!("the child bench of {processes} processes: unreadable figures: {e}"))
}

fn config(bench: &HarnessBench, processes: u32) -> WorkloadConfig {
    WorkloadConfig {
        concurrency: Concurrency::Total(processes),
        rate: bench.rate,
        time_limit_s: bench.seconds,
        seed: bench.seed,
        ..WorkloadConfig::defaults(bench.workload)
    }
}

async fn one_count(bench: &HarnessBench, processes: u32) -> Result<Figures, String> {
    let dir =
        tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let path = dir.path().join("history.jsonl");
    let sink = Arc::new(
        JsonlSink::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?,
    );
    let nodes: Vec<NodeEndpoint> = (1..=3)
        .map(|i| NodeEndpoint {
            name: format!("n{i}"),
            addr: "in-process".into(),
        })
        .collect();
    let connector: Arc<dyn Connector> = Arc::new(NullConnector::new());
    let cfg = config(bench, processes);
    let rss_before = resident_bytes();
    let cpu_before = process_cpu();
    let started = Instant::now();
    let summary = run_workload_with(
        &cfg,
        connector,
        &nodes,
        sink.clone(),
        Arc::new(Stats::new()),
        CancellationToken::new(),
    )
    .await
    .map_err(|e| format!("{processes} processes: {e:#}"))?;
    if let Some(e) = sink.finish() {
        return Err(format!(
            "{processes} processes: writing {} failed: {e}",
            path.display()
        ));
    }
    let wall = started.elapsed();
    let cpu = process_cpu().saturating_sub(cpu_before);
    let rss_added = resident_bytes().saturating_sub(rss_before);
    let recorded = sink.len() as u64;
    drop(sink);
    let history_bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    let ops = summary.stats.ok + summary.stats.fail + summary.stats.info;
    let check_started = Instant::now();
    let loaded = load_file(&path, Some(Format::Jsonl)).map_err(|e| {
        format!("{processes} processes: the written history does not read back: {e}")
    })?;
    let losses = losses(&loaded.history, recorded, summary.stats.invoked);
    let verdict = analyze(&loaded.history, Value::Null, &AnalyzeOptions::default())
        .map_err(|e| e.to_string())?
        .valid;
    let per_op = |x: f64| if ops == 0 { 0.0 } else { x / ops as f64 };
    Ok(Figures {
        processes,
        ops,
        entries: recorded,
        wall_s: wall.as_secs_f64(),
        ops_per_s: ops as f64 / wall.as_secs_f64().max(1e-9),
        cpu_s: cpu.as_secs_f64(),
        cpu_us_per_op: per_op(cpu.as_secs_f64() * 1e6),
        // bytes per op = MB per million ops
        rss_mb_per_million_ops: per_op(rss_added as f64),
        history_mb: history_bytes as f64 / 1e6,
        check_s: check_started.elapsed().as_secs_f64(),
        verdict,
        losses,
    })
}

/// What the written `history` lacks compared with what was recorded (`recorded` entries)
/// and invoked (`invoked` client operations); empty when nothing is missing.
fn losses(history: &History, recorded: u64, invoked: u64) -> Vec<String> {
    let mut out = Vec::new();
    let written = history.ops.len() as u64;
    if written != recorded {
        out.push(format!("{written} entries written of {recorded} recorded"));
    }
    if let Some((i, op)) = history
        .ops
        .iter()
        .enumerate()
        .find(|(i, op)| op.index != *i as u64)
    {
        out.push(format!(
            "entry {i} has index {} (indices must be 0, 1, 2, ...)",
            op.index
        ));
    }
    let client = || {
        history
            .ops
            .iter()
            .filter(|op| op.process.client().is_some())
    };
    let invokes = client().filter(|op| op.kind == OpType::Invoke).count() as u64;
    let completions = client().filter(|op| op.kind != OpType::Invoke).count() as u64;
    if invokes != invoked {
        out.push(format!(
            "{invokes} invocations written of {invoked} invoked"
        ));
    }
    if completions != invokes {
        out.push(format!(
            "{completions} completions for {invokes} invocations"
        ));
    }
    out
}

/// User + system CPU time of this whole process (every thread) so far.
fn process_cpu() -> Duration {
    // /proc/self/stat fields 14 and 15 (utime, stime) in clock ticks; Linux reports them
    // at USER_HZ = 100 on every architecture faultline runs on.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // After the name, field 3 (state) is at 0, so utime (14) is at 11 and stime (15) at 12.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// `VmRSS` of this process in bytes (0 if unavailable).
fn resident_bytes() -> u64 {
    super::bench::memory_status_bytes("VmRSS")
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::history::Op;

    /// A client read entry, as a history file would hold it.
    fn op(index: u64, kind: OpType, process: u64) -> Op {
        serde_json::from_value(json!({ "index": index, "type": kind, "process": process, "f": "read", "key": "k", "time": index }))
            .expect("a valid entry")
    }

    #[test]
    fn a_complete_history_loses_nothing() {
        let h = History::new(vec![op(0, OpType::Invoke, 0), op(1, OpType::Ok, 0)]);
        assert!(losses(&h, 2, 1).is_empty());
    }

    #[test]
    fn a_missing_completion_or_entry_is_reported() {
        let h = History::new(vec![
            op(0, OpType::Invoke, 0),
            op(1, OpType::Ok, 0),
            op(2, OpType::Invoke, 1),
        ]);
        let l = losses(&h, 4, 2);
        assert!(
            l.iter().any(|s| s == "3 entries written of 4 recorded"),
            "{l:?}"
        );
        assert!(
            l.iter().any(|s| s == "1 completions for 2 invocations"),
            "{l:?}"
        );
        let gap = History::new(vec![op(0, OpType::Invoke, 0), op(2, OpType::Ok, 0)]);
        assert!(losses(&gap, 2, 1)
            .iter()
            .any(|s| s.starts_with("entry 1 has index 2")));
    }

    #[test]
    fn process_cpu_advances_with_work() {
        let before = process_cpu();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        assert!(
            process_cpu() > before,
            "60 ms of spinning must show in utime"
        );
    }
}
