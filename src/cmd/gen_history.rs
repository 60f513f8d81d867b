//! `faultline gen-history`: write a synthetic history of a simulated linearizable
//! register store (see `analysis::synth`), for benchmarks, property tests and for trying
//! the checker by hand.

use crate::exit;
use analysis::synth::{generate, Anomaly, KeyDist, Mode, SynthConfig};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct GenHistoryArgs {
    /// Number of client operations (each an invoke and a completion line).
    #[arg(long)]
    pub ops: u64,
    /// Number of keys (`k0`, `k1`, …).
    #[arg(long, default_value_t = 1)]
    pub keys: u32,
    /// Concurrent client processes.
    #[arg(long, default_value_t = 5)]
    pub concurrency: u32,
    /// Probability that an op crashes: it may or may not take effect, completes `info`,
    /// and its process is replaced by a new one.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub indeterminate: f64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// `uniform` or `zipf:S` (key `k0` hottest).
    #[arg(long, default_value = "uniform", value_name = "DIST")]
    pub key_dist: KeyDist,
    /// `cas-register` (read/write/cas), `register` (read/write: a cas-free hot key) or
    /// `append` (Porcupine's kv shape: get/append of unique strings).
    #[arg(long, default_value = "cas-register")]
    pub mode: Mode,
    /// `none`, `stale-read` or `lost-write`: one injected violation of linearizability.
    #[arg(long, default_value = "none")]
    pub anomaly: Anomaly,
    /// Write here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: GenHistoryArgs) -> ExitCode {
    let cfg = SynthConfig {
        ops: args.ops,
        keys: args.keys,
        concurrency: args.concurrency,
        indeterminate: args.indeterminate,
        seed: args.seed,
        key_dist: args.key_dist,
        anomaly: args.anomaly,
        mode: args.mode,
        ..Default::default()
    };
    let synth = match generate(&cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("faultline gen-history: {e}");
            return ExitCode::from(exit::BAD_ARGS);
        }
    };
    let written = match &args.out {
        Some(path) => analysis::formats::jsonl::write_history(path, &synth.history)
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => write_stdout(&synth.history).map_err(|e| format!("cannot write to standard output: {e}")),
    };
    if let Err(e) = written {
        eprintln!("faultline gen-history: {e}");
        return ExitCode::from(exit::INTERNAL);
    }
    match (&synth.anomaly_key, synth.anomaly_index) {
        (Some(key), Some(index)) => {
            eprintln!("gen-history: {} entries; {} injected on key {key} at index {index}", synth.history.len(), cfg.anomaly)
        }
        _ => eprintln!("gen-history: {} entries; no anomaly", synth.history.len()),
    }
    exit::ok()
}

fn write_stdout(history: &analysis::history::History) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for op in &history.ops {
        serde_json::to_writer(&mut out, op).map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
