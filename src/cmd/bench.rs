//! `faultline bench`: the checker-core benchmark. Measures, in this process:
//! - checking every labelled history of a folder (`etcd-jepsen`, `kv`): parse + check,
//!   all files in parallel, wall time over several runs, and agreement with the labels;
//! - a synthetic history (default: 1,000,000 ops, 30 processes, 100 keys zipf:1.1, 1%
//!   indeterminate): generate, check, peak memory; then the same history through a JSON
//!   Lines file (write, read, check) as `faultline analyze` would see it.
//!
//! - `--kv [FILE,...]`: time to verdict of kv histories only (see `bench_kv`).
//!
//! Peak memory is the kernel's high-water mark of this process (`VmHWM`), reset before
//! each phase through `/proc/self/clear_refs` where the kernel allows it. Whole-process
//! figures (start-up included) are measured from outside, see the README.

use crate::exit;
use analysis::checkers::linearizable::{check, LinearizableOptions, Model};
use analysis::synth::{generate, KeyDist, SynthConfig};
use analysis::verdict::Validity;
use clap::Args;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Folder holding `etcd-jepsen/` and `kv/` with their `labels.tsv`.
    #[arg(long, value_name = "DIR", default_value = "testdata/histories")]
    pub histories: PathBuf,
    /// Runs of each labelled folder (the minimum and median are reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Synthetic history size in ops (0 skips it).
    #[arg(long, default_value_t = 1_000_000)]
    pub ops: u64,
    #[arg(long, default_value_t = 100)]
    pub keys: u32,
    #[arg(long, default_value_t = 30)]
    pub concurrency: u32,
    #[arg(long, default_value_t = 0.01, value_name = "P")]
    pub indeterminate: f64,
    #[arg(long, default_value = "zipf:1.1", value_name = "DIST")]
    pub key_dist: KeyDist,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Skip the JSON Lines round trip of the synthetic history.
    #[arg(long)]
    pub no_file: bool,
    /// Print the figures as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also run the hot-key targets of the unique-value fast path (see `bench_hot`).
    #[arg(long)]
    pub hot: bool,
    /// Time to verdict of kv histories, each checked as `faultline analyze FILE` would
    /// (see `bench_kv`); with no FILE, every history of `<histories>/kv/`. Runs only this.
    #[arg(long, value_delimiter = ',', num_args = 0.., value_name = "FILE,...")]
    pub kv: Option<Vec<PathBuf>>,
    /// Benchmark the harness instead of the checkers: the process loop, rate limiter and
    /// history sink against the in-process null store (see `bench_harness`).
    #[arg(long)]
    pub harness: bool,
    /// `--harness`: client-process counts, one run each.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "16,256,1024",
        value_name = "N,..."
    )]
    pub harness_processes: Vec<u32>,
    /// `--harness`: seconds of workload per process count.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub harness_seconds: f64,
    /// `--harness`: the workload (any `faultline test --workload`).
    #[arg(long, default_value = "hotspot", value_name = "NAME")]
    pub harness_workload: workloads::WorkloadKind,
    /// `--harness`: total target rate in ops/s (0 = as fast as the processes go).
    #[arg(long, default_value_t = 0.0, value_name = "OPS")]
    pub harness_rate: f64,
    /// Benchmark the isolation checker instead: whole `faultline analyze` processes on
    /// list-append histories of 100k and 1M valid transactions and 100k with a G-single
    /// (see `bench_txn`).
    #[arg(long)]
    pub txn: bool,
    /// `--txn`: runs per history (the best wall time is reported).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub txn_runs: u64,
    /// `--txn`: divide every history size by this (1 = the sizes; larger for a
    /// quick look).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub txn_scale: u64,
    /// `--txn`: which files to measure: `all`, `jsonl` (faultline's format) or `edn` (Elle's
    /// format, with the in-process read / check split).
    #[arg(long, value_enum, default_value = "all")]
    pub txn_format: super::bench_txn::TxnFormats,
}

pub fn run(args: BenchArgs) -> ExitCode {
    match bench(&args) {
        Ok((report, all_good)) => {
            if args.json {
                println!("{report:#}");
            }
            exit::of(if all_good {
                Validity::Valid
            } else {
                Validity::Invalid
            })
        }
        Err(e) => {
            eprintln!("faultline bench: {e}");
            ExitCode::from(exit::BAD_ARGS)
        }
    }
}

fn bench(args: &BenchArgs) -> Result<(Value, bool), String> {
    if args.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    let say = |line: String| {
        if !args.json {
            println!("{line}");
        }
    };
    let mut report = json!({ "threads": rayon::current_num_threads() });
    if args.harness {
        let bench = super::bench_harness::HarnessBench {
            processes: args.harness_processes.clone(),
            seconds: args.harness_seconds,
            workload: args.harness_workload,
            rate: args.harness_rate,
            seed: args.seed,
        };
        let (harness, passed) = super::bench_harness::bench_harness(&bench, &say)?;
        report["harness"] = harness;
        return Ok((report, passed));
    }
    if let Some(files) = &args.kv {
        report["kv_files"] = super::bench_kv::bench_kv(files, &args.histories, args.runs, &say)?;
        return Ok((report, true));
    }
    if args.txn {
        let (txn, passed) = super::bench_txn::bench_txn(
            args.txn_runs as usize,
            args.seed,
            args.txn_scale,
            args.txn_format,
            &say,
        )?;
        report["txn"] = txn;
        return Ok((report, passed));
    }
    let mut all_good = true;
    for folder in ["etcd-jepsen", "kv"] {
        let figures = bench_folder(&args.histories.join(folder), args.runs)?;
        say(format!(
            "{folder:<12} {:>3} files  agree with labels {}/{}  parse+check wall: min {:.2} ms, median {:.2} ms ({} runs, in-process)",
            figures.files,
            figures.agree,
            figures.files,
            ms(figures.min),
            ms(figures.median),
            args.runs
        ));
        all_good &= figures.agree == figures.files;
        report[folder] = json!({
            "files": figures.files, "agree": figures.agree,
            "min_ms": ms(figures.min), "median_ms": ms(figures.median), "runs": args.runs,
        });
    }
    if args.ops > 0 {
        let (synthetic, valid) = bench_synthetic(args, &say)?;
        all_good &= valid;
        report["synthetic"] = synthetic;
    }
    if args.hot {
        let (hot, passed) = super::bench_hot::bench_hot(args.seed, &say)?;
        all_good &= passed;
        report["hot"] = hot;
    }
    Ok((report, all_good))
}

struct FolderFigures {
    files: usize,
    agree: usize,
    min: Duration,
    median: Duration,
}

/// One labelled history: path, model, initial value, linearizable?
type Label = (PathBuf, Model, Value, bool);

fn read_labels(dir: &Path) -> Result<Vec<Label>, String> {
    let path = dir.join("labels.tsv");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut labels = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .skip(1)
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |what: &str| format!("{}:{}: {what}", path.display(), n + 1);
        let f: Vec<&str> = line.split('\t').collect();
        let [file, model, initial, expected] = f[..] else {
            return Err(bad("expected 4 tab-separated fields"));
        };
        let model =
            Model::from_name(model).ok_or_else(|| bad(&format!("unknown model {model:?}")))?;
        let initial = match initial {
            "nil" => Value::Null,
            other => {
                serde_json::from_str(other).map_err(|e| bad(&format!("initial value: {e}")))?
            }
        };
        let linearizable = match expected {
            "linearizable" => true,
            "not-linearizable" => false,
            other => return Err(bad(&format!("unknown label {other:?}"))),
        };
        labels.push((dir.join(file), model, initial, linearizable));
    }
    Ok(labels)
}

fn bench_folder(dir: &Path, runs: usize) -> Result<FolderFigures, String> {
    let labels = read_labels(dir)?;
    let mut times = Vec::with_capacity(runs);
    let mut agree = 0;
    for _ in 0..runs {
        let started = Instant::now();
        let verdicts: Vec<Result<bool, String>> = labels
            .par_iter()
            .map(|(path, model, initial, linearizable)| {
                let loaded = analysis::formats::load_file(path, None).map_err(|e| e.to_string())?;
                let opts = LinearizableOptions {
                    model: *model,
                    initial: initial.clone(),
                    ..Default::default()
                };
                let expected = if *linearizable {
                    Validity::Valid
                } else {
                    Validity::Invalid
                };
                Ok(check(&loaded.history, &opts).valid == expected)
            })
            .collect();
        times.push(started.elapsed());
        agree = verdicts
            .into_iter()
            .collect::<Result<Vec<bool>, String>>()?
            .into_iter()
            .filter(|ok| *ok)
            .count();
    }
    times.sort();
    Ok(FolderFigures {
        files: labels.len(),
        agree,
        min: times[0],
        median: times[times.len() / 2],
    })
}

fn bench_synthetic(args: &BenchArgs, say: &dyn Fn(String)) -> Result<(Value, bool), String> {
    let cfg = SynthConfig {
        ops: args.ops,
        keys: args.keys,
        concurrency: args.concurrency,
        indeterminate: args.indeterminate,
        seed: args.seed,
        key_dist: args.key_dist,
        ..Default::default()
    };
    let opts = LinearizableOptions::default();
    let peak_reset = reset_peak_memory();
    let started = Instant::now();
    let synth = generate(&cfg)?;
    let generated = started.elapsed();
    let started = Instant::now();
    let result = check(&synth.history, &opts);
    let checked = started.elapsed();
    let peak_in_memory = peak_memory_bytes();
    let valid = result.valid == Validity::Valid;
    say(format!(
        "synthetic    {} ops ({} entries), {} keys {}, {} processes, {}% indeterminate",
        cfg.ops,
        synth.history.len(),
        cfg.keys,
        cfg.key_dist,
        cfg.concurrency,
        cfg.indeterminate * 100.0
    ));
    say(format!(
        "  in memory: generate {:.2} s, check {:.2} s ({}), peak RSS {} MB{}",
        generated.as_secs_f64(),
        checked.as_secs_f64(),
        result.valid.as_str(),
        mb(peak_in_memory),
        if peak_reset {
            ""
        } else {
            " (since process start)"
        }
    ));
    let mut figures = json!({
        "ops": cfg.ops, "entries": synth.history.len(), "keys": cfg.keys,
        "key_dist": cfg.key_dist.to_string(), "concurrency": cfg.concurrency,
        "indeterminate": cfg.indeterminate, "seed": cfg.seed,
        "generate_s": generated.as_secs_f64(), "check_s": checked.as_secs_f64(),
        "valid": result.valid, "counts": result.counts, "peak_rss_mb": mb(peak_in_memory),
    });
    if !args.no_file {
        let file = bench_file_round_trip(synth.history, &opts)?;
        say(format!(
            "  via JSONL ({} MB): write {:.2} s, read {:.2} s, check {:.2} s ({}), read+check {:.2} s, peak RSS {} MB",
            mb(file.bytes),
            file.write.as_secs_f64(),
            file.read.as_secs_f64(),
            file.check.as_secs_f64(),
            file.valid.as_str(),
            (file.read + file.check).as_secs_f64(),
            mb(file.peak)
        ));
        figures["file"] = json!({
            "bytes": file.bytes, "write_s": file.write.as_secs_f64(), "read_s": file.read.as_secs_f64(),
            "check_s": file.check.as_secs_f64(), "valid": file.valid, "peak_rss_mb": mb(file.peak),
        });
        return Ok((figures, valid && file.valid == Validity::Valid));
    }
    Ok((figures, valid))
}

struct FileFigures {
    bytes: u64,
    write: Duration,
    read: Duration,
    check: Duration,
    valid: Validity,
    peak: u64,
}

/// Writes the history as JSON Lines to a temporary file, frees it, then reads it back
/// and checks it, measuring peak memory of the read+check phase alone.
fn bench_file_round_trip(
    history: analysis::history::History,
    opts: &LinearizableOptions,
) -> Result<FileFigures, String> {
    let path = std::env::temp_dir().join(format!("faultline-bench-{}.jsonl", std::process::id()));
    let started = Instant::now();
    analysis::formats::jsonl::write_history(&path, &history)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let write = started.elapsed();
    drop(history);
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    reset_peak_memory();
    let started = Instant::now();
    let loaded = analysis::formats::load_file(&path, Some(analysis::formats::Format::Jsonl));
    let _ = std::fs::remove_file(&path);
    let loaded = loaded.map_err(|e| e.to_string())?;
    let read = started.elapsed();
    let started = Instant::now();
    let result = check(&loaded.history, opts);
    let check_time = started.elapsed();
    Ok(FileFigures {
        bytes,
        write,
        read,
        check: check_time,
        valid: result.valid,
        peak: peak_memory_bytes(),
    })
}

/// Resets the kernel's peak-RSS mark of this process; false if the kernel refused.
pub fn reset_peak_memory() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `VmHWM` of this process in bytes (0 if unavailable).
pub fn peak_memory_bytes() -> u64 {
    memory_status_bytes("VmHWM")
}

/// A `/proc/self/status` memory field (`VmHWM`, `VmRSS`, ...) in bytes (0 if unavailable).
pub fn memory_status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)
                .and_then(|rest| rest.strip_prefix(':'))
        })
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mb(bytes: u64) -> u64 {
    bytes / 1_000_000
}
