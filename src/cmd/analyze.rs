//! `faultline analyze`: check histories on disk — faultline's own JSON Lines or the
//! Jepsen, Knossos and Porcupine formats — and print or write their verdicts.
//!
//! Each PATH is a history file or a directory searched recursively (a run directory
//! holding `history.jsonl`, such as `store/latest`, contributes just that file, and is
//! judged by the run's own checker registry with the facts of its `test.json`, see
//! [`run_dir`]). Inputs are
//! read and checked in parallel. The exit code is the worst verdict over all inputs
//! (0 valid, 1 invalid, 2 unknown); 254 if an argument is bad or an input cannot be read,
//! 255 on an internal error.

mod inputs;
mod isolation_text;
mod output;
mod run_checkers;
mod run_dir;

use crate::exit;
use crate::runner::analysis_phase;
use analysis::analyze::{analyze, AnalyzeOptions, ModelChoice};
use analysis::checkers::isolation::ConsistencyModel;
use analysis::checkers::linearizable::LinearizableOptions;
use analysis::checkers::registry;
use analysis::formats::{load_file_as, Format, FormatError, LoadedHistory, TxnForm};
use analysis::history::History;
use analysis::verdict::{Validity, Verdict};
use clap::builder::PossibleValuesParser;
use clap::Args;
use rayon::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
#[command(
    after_help = "Exit code: the worst verdict over all inputs — 0 valid, 1 invalid, 2 unknown; \
254 bad arguments or an unreadable input; 255 internal error.\n\
The history format is described in docs/history-format.md."
)]
pub struct AnalyzeArgs {
    /// History format; `auto` detects it from the content (file extension as a hint).
    #[arg(long, default_value = "auto", value_parser = ["auto", "jsonl", "jepsen-log", "edn", "porcupine-kv"])]
    pub format: String,

    /// What to check: `auto` picks linearizability (cas-register for read/write/cas, kv for
    /// get/put/append), set-full (for add/read-set/scan) and/or isolation (for txn, under
    /// list-append or rw-register as its micro-ops show), zset (for zadd/zincrby/zrem/
    /// zrange/zrangebyscore) and/or queue (for send/receive/delete-message) from the
    /// operations present. `objects` judges S3 object reads for torn bodies (the `objects`
    /// workload's history; `auto` judges such a file as registers).
    #[arg(long, default_value = "auto", value_parser = PossibleValuesParser::new(registry::model_names()))]
    pub model: String,

    /// Isolation: the consistency model transactions are checked under (Elle's names).
    #[arg(long, value_name = "MODEL", default_value = "strict-serializable",
          value_parser = PossibleValuesParser::new(ConsistencyModel::NAMES))]
    pub consistency_model: String,

    /// Initial value of every register/key, as JSON (`null` = absent). Default per format:
    /// jsonl and jepsen-log null, edn 0, porcupine-kv "".
    #[arg(long, value_name = "JSON", value_parser = parse_json)]
    pub initial: Option<serde_json::Value>,

    /// Print one line per input: `<path><TAB><valid|invalid|unknown>`.
    #[arg(long)]
    pub summary: bool,

    /// Write the verdict to DIR/results.json.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Linearizability: wall-time budget per key, in seconds; past it the key is `unknown`.
    /// Isolation: wall-time budget of the cycle search; past it the verdict is `unknown`.
    #[arg(long, value_name = "SECS", value_parser = parse_positive_secs)]
    pub time_budget: Option<Duration>,

    /// Linearizability: memory budget per key, in MiB; past it the key is `unknown`.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
    pub memory_budget: Option<u64>,

    /// Linearizability: check every key even after one is proven invalid (by default the
    /// other keys get 100 ms more and are then reported not checked).
    #[arg(long)]
    pub all_anomalies: bool,

    /// Set-full: the store promises linearizable reads, so a stale element is invalid.
    #[arg(long)]
    pub linearizable_set: bool,

    /// A run directory's `history.jsonl` of at least this many MiB is judged part by part
    /// (by key group, never held whole) when every checker its run plans can be; 0 streams
    /// every run history. Same results either way.
    #[arg(long, value_name = "MIB", default_value_t = analysis_phase::STREAM_ABOVE_BYTES >> 20)]
    pub stream_above: u64,

    /// History files, or directories to search for them.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

fn parse_json(s: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(s).map_err(|e| format!("not valid JSON ({e}); e.g. null, 0, '\"\"'"))
}

fn parse_positive_secs(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(Duration::from_secs_f64(x)),
        _ => Err(format!("{s:?} is not a positive number of seconds")),
    }
}

/// The result of one input.
pub(crate) enum Outcome {
    Checked {
        /// The history as read; a run history judged part by part keeps none (empty).
        loaded: Box<LoadedHistory>,
        /// History entries read.
        entries: usize,
        verdict: Verdict,
        initial: serde_json::Value,
    },
    /// Unreadable or unusable input (exit 254).
    BadInput(String),
    /// A bug in faultline (exit 255).
    Internal(String),
}

pub fn run(args: AnalyzeArgs) -> ExitCode {
    let started = Instant::now();
    let format = Format::from_name(&args.format);
    let Some(model) = ModelChoice::from_name(&args.model) else {
        eprintln!("faultline analyze: unknown model {:?}", args.model);
        return ExitCode::from(exit::BAD_ARGS);
    };
    let (files, mut problems) = inputs::collect(&args.paths, format);
    if files.is_empty() && problems.is_empty() {
        problems.push("no history files found in the given paths".to_string());
    }
    let Ok(consistency) = args.consistency_model.parse::<ConsistencyModel>() else {
        eprintln!(
            "faultline analyze: unknown consistency model {:?}",
            args.consistency_model
        );
        return ExitCode::from(exit::BAD_ARGS);
    };
    let opts = analyze_options(&args, model, consistency);
    let outcomes: Vec<(PathBuf, Outcome)> = files
        .par_iter()
        .map(|path| {
            let stream_above = args.stream_above.saturating_mul(1 << 20);
            (path.clone(), check_one(path, format, &opts, stream_above))
        })
        .collect();

    for p in &problems {
        eprintln!("faultline analyze: {p}");
    }
    if args.summary {
        output::print_summary(&outcomes);
    } else {
        output::print_readable(&outcomes, started.elapsed());
    }
    if let Some(dir) = &args.out {
        if let Err(e) = output::write_results(dir, &outcomes) {
            eprintln!(
                "faultline analyze: cannot write {}: {e}",
                dir.join("results.json").display()
            );
            return ExitCode::from(exit::BAD_ARGS);
        }
    }
    let code = exit_code(&outcomes, !problems.is_empty());
    // The process ends here: freeing the loaded histories (a GB for a million
    // transactions) one allocation at a time would only delay the exit.
    std::mem::forget(outcomes);
    ExitCode::from(code)
}

fn analyze_options(
    args: &AnalyzeArgs,
    model: ModelChoice,
    consistency: ConsistencyModel,
) -> AnalyzeOptions {
    let mut linearizable = LinearizableOptions::default();
    if let Some(t) = args.time_budget {
        linearizable.per_key_time = t;
    }
    if args.all_anomalies {
        linearizable.first_invalid_grace = None;
    }
    if let Some(mib) = args.memory_budget {
        linearizable.per_key_memory_bytes = mib.saturating_mul(1 << 20);
    }
    AnalyzeOptions {
        model: Some(model),
        initial: args.initial.clone(),
        linearizable,
        set_full: analysis::checkers::set_full::SetFullOptions {
            linearizable: args.linearizable_set,
        },
        consistency: Some(consistency),
        isolation_time_budget: args.time_budget,
    }
}

/// Reads and checks one file, turning a panic into an internal error. A run history of at
/// least `stream_above` bytes is judged part by part when its plan allows.
fn check_one(
    path: &Path,
    format: Option<Format>,
    opts: &AnalyzeOptions,
    stream_above: u64,
) -> Outcome {
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<Outcome, FormatError> {
        let source = path.display().to_string();
        let as_run = opts.model == Some(ModelChoice::Auto) && opts.initial.is_none();
        if as_run && format.is_none_or(|f| f == Format::Jsonl) {
            if let Some(judged) = run_dir::streamed_verdict(path, stream_above) {
                let (verdict, report) = judged.map_err(|e| FormatError::new(&source, 0, e))?;
                return Ok(Outcome::Checked {
                    entries: report.ops,
                    loaded: Box::new(LoadedHistory {
                        history: History::default(),
                        format: Format::Jsonl,
                        report,
                    }),
                    verdict,
                    initial: Format::Jsonl.default_initial(),
                });
            }
        }
        // Transactions stay compact: the isolation checker never needs their JSON form.
        let loaded = load_file_as(path, format, TxnForm::Compact)?;
        let default_initial = loaded.format.default_initial();
        let initial = opts.initial.clone().unwrap_or(default_initial.clone());
        let entries = loaded.history.len();
        if as_run {
            if let Some(judged) = run_dir::run_verdict(path, &loaded.history) {
                let verdict = judged.map_err(|e| FormatError::new(&source, 0, e))?;
                return Ok(Outcome::Checked {
                    loaded: Box::new(loaded),
                    entries,
                    verdict,
                    initial,
                });
            }
        }
        match analyze(&loaded.history, default_initial, opts) {
            Ok(verdict) => {
                let verdict = run_checkers::add_evidence_checkers(&loaded.history, verdict);
                Ok(Outcome::Checked {
                    loaded: Box::new(loaded),
                    entries,
                    verdict,
                    initial,
                })
            }
            Err(e) => {
                let line = loaded.report.line_of(e.position).unwrap_or(0);
                Err(FormatError::new(&source, line, e.message))
            }
        }
    }));
    match result {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => Outcome::BadInput(e.to_string()),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Outcome::Internal(format!(
                "{}: internal error while checking: {what}",
                path.display()
            ))
        }
    }
}

/// Internal errors beat bad input, which beats the worst verdict.
fn exit_code(outcomes: &[(PathBuf, Outcome)], bad_paths: bool) -> u8 {
    if outcomes
        .iter()
        .any(|(_, o)| matches!(o, Outcome::Internal(_)))
    {
        return exit::INTERNAL;
    }
    if bad_paths
        || outcomes
            .iter()
            .any(|(_, o)| matches!(o, Outcome::BadInput(_)))
    {
        return exit::BAD_ARGS;
    }
    outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Checked { verdict, .. } => Some(verdict.valid),
            _ => None,
        })
        .fold(Validity::NotApplicable, Validity::merge)
        .exit_code()
}
