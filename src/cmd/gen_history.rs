//! `faultline gen-history`: write a synthetic history of a simulated linearizable
//! register store (see `analysis::synth`) or of transactions (`--mode list-append` or
//! `rw-register`, see `analysis::txn_synth`), of Redis sorted sets (`--mode zset`,
//! `analysis::zset_synth`), of an SQS FIFO-like queue (`--mode queue`,
//! `analysis::queue_synth`) or of S3 objects (`--mode objects`, `analysis::objects_synth`),
//! for benchmarks, property tests and for trying
//! the checkers by hand. `--anomaly` injects one provable violation of the mode's kind.

use crate::exit;
use analysis::history::txn::TxnModel;
use analysis::objects_synth::{generate_objects, ObjectsSynthConfig};
use analysis::queue_synth::{generate_queue, QueueSynthConfig};
use analysis::synth::{generate, Anomaly, KeyDist, Mode, SynthConfig};
use analysis::txn_synth::{generate_txn, TxnAnomaly, TxnSynthConfig};
use analysis::zset_synth::{generate_zset, ZsetSynthConfig};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct GenHistoryArgs {
    /// Number of client operations (each an invoke and a completion line); transactions
    /// for list-append and rw-register.
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
    /// `cas-register` (read/write/cas), `register` (read/write: a cas-free hot key),
    /// `append` (Porcupine's kv shape: get/append of unique strings), transactions:
    /// `list-append` (Elle's append/r micro-ops) or `rw-register` (w/r micro-ops), `zset`
    /// (Redis sorted sets on `--keys` keys, members m0-m15), `queue` (an SQS FIFO-like
    /// queue, 8 groups, ending with a drain) or `objects` (S3 objects as the `objects`
    /// workload records them, ending with a read of every key).
    #[arg(long, default_value = "cas-register")]
    pub mode: GenMode,
    /// One injected violation. Registers: `none`, `stale-read` or `lost-write`.
    /// Transactions: `none`, `G0`, `G1a`, `G1b`, `G1c`, `G-single`, `G2-item`,
    /// `lost-update`, `internal`, `duplicate-elements` or `realtime`. zset: `none` or any
    /// finding of the zset checker (`unsorted`, `duplicate-members`, `out-of-range`,
    /// `unexpected-presence`, `score-mismatch`, `missing-member`, `missing-member-range`,
    /// `fractured-read-prefix`, `impossible-mutation-chain`,
    /// `unstable-read-without-mutation`, `nonlinearizable`). queue: `none`, `lost`,
    /// `duplicated`, `unexpected` or `order`. objects: `none` or `torn-object`.
    #[arg(long, default_value = "none")]
    pub anomaly: String,
    /// Transactions: micro-ops per transaction, `MIN..MAX`.
    #[arg(long, default_value = "1..4", value_name = "MIN..MAX", value_parser = parse_range)]
    pub txn_length: (usize, usize),
    /// Transactions: appends (or writes) per key before the key is retired for a fresh one.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_writes_per_key: u32,
    /// Transactions: probability that a transaction fails (completes `fail`, no effect).
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub fail: f64,
    /// Transactions: end with a read of every live key (the final reads lost-append needs).
    #[arg(long)]
    pub final_reads: bool,
    /// Write here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// `jsonl` (faultline's format) or, for list-append and rw-register, `edn`: a vector of
    /// Jepsen op maps, one per line, as Elle's histories are stored.
    #[arg(long, default_value = "jsonl", value_parser = ["jsonl", "edn"])]
    pub format: String,
}

/// What to generate: register ops or transactions.
#[derive(Debug, Clone, Copy)]
pub enum GenMode {
    Register(Mode),
    Txn(TxnModel),
    Zset,
    Queue,
    Objects,
}

impl std::str::FromStr for GenMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "zset" => return Ok(GenMode::Zset),
            "queue" => return Ok(GenMode::Queue),
            "objects" => return Ok(GenMode::Objects),
            _ => {}
        }
        match s.parse::<TxnModel>() {
            Ok(m) => Ok(GenMode::Txn(m)),
            Err(_) => s
                .parse::<Mode>()
                .map(GenMode::Register)
                .map_err(|e| format!("{e}; or list-append, rw-register, zset, queue, objects")),
        }
    }
}

/// `MIN..MAX` with 1 <= MIN <= MAX.
fn parse_range(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("{s:?} is not MIN..MAX with 1 <= MIN <= MAX (e.g. 1..4)");
    let (lo, hi) = s.split_once("..").ok_or_else(bad)?;
    let (lo, hi) = (
        lo.trim().parse::<usize>().map_err(|_| bad())?,
        hi.trim().parse::<usize>().map_err(|_| bad())?,
    );
    match 1 <= lo && lo <= hi {
        true => Ok((lo, hi)),
        false => Err(bad()),
    }
}

pub fn run(args: GenHistoryArgs) -> ExitCode {
    if args.format == "edn" && !matches!(args.mode, GenMode::Txn(_)) {
        return refused(
            "--format edn is for transactions (--mode list-append or rw-register): other histories read from EDN start from Knossos' initial value 0, not from an absent one",
        );
    }
    match args.mode {
        GenMode::Register(mode) => run_register(&args, mode),
        GenMode::Txn(model) => run_txn(&args, model),
        GenMode::Zset => run_model(&args, |anomaly| {
            generate_zset(&ZsetSynthConfig {
                ops: args.ops,
                keys: args.keys,
                concurrency: args.concurrency,
                indeterminate: args.indeterminate,
                seed: args.seed,
                anomaly,
                ..Default::default()
            })
        }),
        GenMode::Queue => run_model(&args, |anomaly| {
            generate_queue(&QueueSynthConfig {
                ops: args.ops,
                concurrency: args.concurrency,
                indeterminate: args.indeterminate,
                seed: args.seed,
                anomaly,
                ..Default::default()
            })
        }),
        GenMode::Objects => run_model(&args, |anomaly| {
            generate_objects(&ObjectsSynthConfig {
                ops: args.ops,
                keys: args.keys,
                concurrency: args.concurrency,
                indeterminate: args.indeterminate,
                seed: args.seed,
                anomaly,
            })
        }),
    }
}

/// zset, queue and objects: `--anomaly none` or one finding kind of the mode's checker.
fn run_model(
    args: &GenHistoryArgs,
    generate: impl FnOnce(Option<String>) -> Result<analysis::history::History, String>,
) -> ExitCode {
    let anomaly = (args.anomaly != "none").then(|| args.anomaly.clone());
    let history = match generate(anomaly.clone()) {
        Ok(h) => h,
        Err(e) => return refused(&e),
    };
    if let Err(code) = write_or_exit(args, &history) {
        return code;
    }
    match anomaly {
        Some(kind) => eprintln!("gen-history: {} entries; injected: {kind}", history.len()),
        None => eprintln!("gen-history: {} entries; no anomaly", history.len()),
    }
    exit::ok()
}

fn run_txn(args: &GenHistoryArgs, model: TxnModel) -> ExitCode {
    let anomaly = match args.anomaly.parse::<TxnAnomaly>() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("faultline gen-history: --anomaly: {e}");
            return ExitCode::from(exit::BAD_ARGS);
        }
    };
    let cfg = TxnSynthConfig {
        model,
        txns: args.ops,
        keys: args.keys,
        concurrency: args.concurrency,
        indeterminate: args.indeterminate,
        min_len: args.txn_length.0,
        max_len: args.txn_length.1,
        max_writes_per_key: args.max_writes_per_key,
        anomaly,
        seed: args.seed,
        fail: args.fail,
        final_reads: args.final_reads,
    };
    let synth = match generate_txn(&cfg) {
        Ok(s) => s,
        Err(e) => return refused(&e),
    };
    if let Err(code) = write_or_exit(args, &synth.history) {
        return code;
    }
    match &synth.injected {
        Some(what) => eprintln!(
            "gen-history: {} entries; injected: {what}",
            synth.history.len()
        ),
        None => eprintln!("gen-history: {} entries; no anomaly", synth.history.len()),
    }
    exit::ok()
}

/// A generator's refusal of its configuration: exit 254 with the reason.
fn refused(why: &str) -> ExitCode {
    eprintln!("faultline gen-history: {why}");
    ExitCode::from(exit::BAD_ARGS)
}

/// Writes the history where asked; a failure is said and becomes exit 255.
fn write_or_exit(
    args: &GenHistoryArgs,
    history: &analysis::history::History,
) -> Result<(), ExitCode> {
    write(args, history).map_err(|e| {
        eprintln!("faultline gen-history: {e}");
        ExitCode::from(exit::INTERNAL)
    })
}

fn write(args: &GenHistoryArgs, history: &analysis::history::History) -> Result<(), String> {
    if args.format == "edn" {
        return write_edn(args, history);
    }
    match &args.out {
        Some(path) => analysis::formats::jsonl::write_history(path, history)
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => write_stdout(history).map_err(|e| format!("cannot write to standard output: {e}")),
    }
}

fn run_register(args: &GenHistoryArgs, mode: Mode) -> ExitCode {
    let anomaly = match args.anomaly.parse::<Anomaly>() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("faultline gen-history: --anomaly: {e}");
            return ExitCode::from(exit::BAD_ARGS);
        }
    };
    let cfg = SynthConfig {
        ops: args.ops,
        keys: args.keys,
        concurrency: args.concurrency,
        indeterminate: args.indeterminate,
        seed: args.seed,
        key_dist: args.key_dist,
        anomaly,
        mode,
        ..Default::default()
    };
    let synth = match generate(&cfg) {
        Ok(s) => s,
        Err(e) => return refused(&e),
    };
    if let Err(code) = write_or_exit(args, &synth.history) {
        return code;
    }
    match (&synth.anomaly_key, synth.anomaly_index) {
        (Some(key), Some(index)) => {
            eprintln!(
                "gen-history: {} entries; {} injected on key {key} at index {index}",
                synth.history.len(),
                cfg.anomaly
            )
        }
        _ => eprintln!("gen-history: {} entries; no anomaly", synth.history.len()),
    }
    exit::ok()
}

fn write_edn(args: &GenHistoryArgs, history: &analysis::history::History) -> Result<(), String> {
    use analysis::formats::edn_write::write_txn_history;
    match &args.out {
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            let mut out = std::io::BufWriter::new(file);
            write_txn_history(&mut out, history)
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            write_txn_history(&mut out, history)
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write to standard output: {e}"))
        }
    }
}

fn write_stdout(history: &analysis::history::History) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for op in &history.ops {
        serde_json::to_writer(&mut out, op).map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
