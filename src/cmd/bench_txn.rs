//! `faultline bench --txn`: the isolation checker measured as users run it — a whole
//! `faultline analyze` process on a list-append history file. Five histories are
//! generated (`analysis::txn_synth`, 100 keys, 1–4 micro-ops per transaction, 50
//! processes, 1 % indeterminate, a final read of every key): 100,000 valid transactions, 1,000,000 valid ones, and
//! 100,000 with one injected G-single, each written to a temporary JSON Lines file, and the
//! two valid ones again as EDN files in Elle's own format (Jepsen op maps). Each file is
//! checked under strict-serializable by this same executable, `--txn-runs` times; the best
//! wall time and the peak resident memory of that child (from `wait4`'s rusage) are
//! reported, with whether the verdict was the expected one. For the EDN files the bench
//! also reads and checks the file in-process, to split the time between reading and
//! checking (best of `--txn-runs` each). The generated history is
//! dropped and its memory handed back to the system before the children run, and each child
//! is forked (not vforked): its peak RSS would otherwise count this process's memory.
//!
//! Invariant: a case whose verdict or anomaly name is not the expected one fails the
//! bench (exit 1), whatever its speed.

use analysis::history::txn::TxnModel;
use analysis::txn_synth::{generate_txn, TxnAnomaly, TxnSynthConfig};
use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One benchmark case.
struct Case {
    name: &'static str,
    txns: u64,
    anomaly: TxnAnomaly,
    /// The anomaly type the verdict must name (None: the history must be valid).
    expect: Option<&'static str>,
    /// Written as EDN (Elle's format) instead of JSON Lines.
    edn: bool,
}

/// Which files `--txn` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TxnFormats {
    /// JSON Lines and EDN.
    All,
    /// Only the JSON Lines files.
    Jsonl,
    /// Only the EDN files.
    Edn,
}

/// What one measured child did.
struct Measured {
    wall: Duration,
    max_rss_bytes: u64,
    valid: String,
    anomaly_types: Vec<String>,
}

/// Runs the cases (`runs` times each, best wall time kept); `scale` divides every size
/// (1 = the sizes).
pub fn bench_txn(
    runs: usize,
    seed: u64,
    scale: u64,
    formats: TxnFormats,
    say: &dyn Fn(String),
) -> Result<(Value, bool), String> {
    let cases = [
        Case {
            name: "valid-100k",
            txns: 100_000 / scale,
            anomaly: TxnAnomaly::None,
            expect: None,
            edn: false,
        },
        Case {
            name: "g-single-100k",
            txns: 100_000 / scale,
            anomaly: TxnAnomaly::GSingle,
            expect: Some("G-single"),
            edn: false,
        },
        Case {
            name: "valid-1m",
            txns: 1_000_000 / scale,
            anomaly: TxnAnomaly::None,
            expect: None,
            edn: false,
        },
        Case {
            name: "valid-100k-edn",
            txns: 100_000 / scale,
            anomaly: TxnAnomaly::None,
            expect: None,
            edn: true,
        },
        Case {
            name: "valid-1m-edn",
            txns: 1_000_000 / scale,
            anomaly: TxnAnomaly::None,
            expect: None,
            edn: true,
        },
    ];
    let wanted = |c: &Case| match formats {
        TxnFormats::All => true,
        TxnFormats::Jsonl => !c.edn,
        TxnFormats::Edn => c.edn,
    };
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temporary directory: {e}"))?;
    let mut report = serde_json::Map::new();
    let mut all_good = true;
    for case in cases.iter().filter(|c| wanted(c)) {
        let (figures, good) = bench_case(case, runs, seed, dir.path(), say)?;
        all_good &= good;
        report.insert(case.name.into(), figures);
    }
    Ok((Value::Object(report), all_good))
}

fn bench_case(
    case: &Case,
    runs: usize,
    seed: u64,
    dir: &Path,
    say: &dyn Fn(String),
) -> Result<(Value, bool), String> {
    let cfg = TxnSynthConfig {
        model: TxnModel::ListAppend,
        txns: case.txns,
        keys: 100,
        concurrency: 50,
        indeterminate: 0.01,
        min_len: 1,
        max_len: 4,
        max_writes_per_key: 128,
        anomaly: case.anomaly,
        seed,
        // Without a final read of each key the last appends are unobserved: unknown.
        final_reads: true,
        ..TxnSynthConfig::default()
    };
    let ext = if case.edn { "edn" } else { "jsonl" };
    let file = dir.join(format!("{}.{ext}", case.name));
    let injected = write_case(&cfg, &file, case.edn)?;
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let mut best: Option<Measured> = None;
    for _ in 0..runs {
        let m = analyze_child(&file, dir)?;
        if best.as_ref().is_none_or(|b| m.wall < b.wall) {
            best = Some(m);
        }
    }
    let best = best.ok_or("--txn-runs must be at least 1")?;
    let split = match case.edn {
        true => Some(read_and_check_in_process(&file, runs)?),
        false => None,
    };
    let good = match case.expect {
        None => best.valid == "valid",
        Some(kind) => {
            best.valid == "invalid" && best.anomaly_types.iter().any(|t| t.starts_with(kind))
        }
    };
    say(format!(
        "txn {:<14} {:>8} txns {:>6.1} MB  analyze (whole process, best of {runs}): {:>7.3} s, peak RSS {:>7.1} MB  verdict {} {}{}",
        case.name,
        case.txns,
        bytes as f64 / 1e6,
        best.wall.as_secs_f64(),
        best.max_rss_bytes as f64 / 1e6,
        best.valid,
        best.anomaly_types.join(","),
        if good { "" } else { "  UNEXPECTED" }
    ));
    let mut figures = json!({
        "txns": case.txns, "file_bytes": bytes, "runs": runs,
        "best_wall_s": best.wall.as_secs_f64(), "peak_rss_bytes": best.max_rss_bytes,
        "valid": best.valid, "anomaly_types": best.anomaly_types, "as_expected": good,
        "injected": injected,
    });
    if let Some((read, check)) = split {
        say(format!(
            "txn {:<14} in-process, best of {runs}: read {:>7.3} s, check {:>7.3} s",
            case.name,
            read.as_secs_f64(),
            check.as_secs_f64()
        ));
        figures["in_process_read_s"] = json!(read.as_secs_f64());
        figures["in_process_check_s"] = json!(check.as_secs_f64());
    }
    Ok((figures, good))
}

/// Generates the history of `cfg` into `file` (as EDN if `edn`) and frees it; returns what
/// was injected.
fn write_case(cfg: &TxnSynthConfig, file: &Path, edn: bool) -> Result<Value, String> {
    let synth = generate_txn(cfg)?;
    let cannot = |e: std::io::Error| format!("cannot write {}: {e}", file.display());
    if edn {
        let mut out = std::io::BufWriter::new(std::fs::File::create(file).map_err(cannot)?);
        analysis::formats::edn_write::write_txn_history(&mut out, &synth.history)
            .and_then(|()| std::io::Write::flush(&mut out))
            .map_err(cannot)?;
    } else {
        analysis::formats::jsonl::write_history(file, &synth.history).map_err(cannot)?;
    }
    let injected = serde_json::to_value(&synth.injected).map_err(|e| e.to_string())?;
    drop(synth);
    // SAFETY: malloc_trim only returns free heap memory to the system.
    unsafe { libc::malloc_trim(0) };
    Ok(injected)
}

/// Reads `file` as `faultline analyze` does and checks it as its isolation checker does,
/// in this process: the best read time and the best check time of `runs`.
fn read_and_check_in_process(file: &Path, runs: usize) -> Result<(Duration, Duration), String> {
    use analysis::checkers::isolation::{check, Opts};
    use analysis::formats::{load_file_as, TxnForm};
    let (mut read, mut checked) = (Duration::MAX, Duration::MAX);
    for _ in 0..runs {
        let started = Instant::now();
        let loaded = load_file_as(file, None, TxnForm::Compact).map_err(|e| e.to_string())?;
        read = read.min(started.elapsed());
        let started = Instant::now();
        let result = check(&loaded.history, &Opts::default());
        checked = checked.min(started.elapsed());
        drop((result, loaded));
        // SAFETY: malloc_trim only returns free heap memory to the system.
        unsafe { libc::malloc_trim(0) };
    }
    Ok((read, checked))
}

/// `faultline analyze --model list-append FILE` as a child: wall time, its peak RSS and
/// the verdict it wrote.
fn analyze_child(file: &Path, dir: &Path) -> Result<Measured, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let out = dir.join("out");
    let started = Instant::now();
    let mut command = Command::new(exe);
    command
        .args([
            "analyze",
            "--model",
            "list-append",
            "--consistency-model",
            "strict-serializable",
            "--summary",
            "--out",
        ])
        .arg(&out)
        .arg(file)
        .stdout(Stdio::null());
    // A real fork, not a vfork: a vforked child's exec records this process's peak RSS
    // (the generated history's) as the child's own; a forked one's starts at this
    // process's current RSS, small once the history is freed.
    // SAFETY: the closure does nothing, so nothing unsafe runs between fork and exec.
    unsafe { command.pre_exec(|| Ok(())) };
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start faultline analyze: {e}"))?;
    let (status, max_rss_bytes) = wait_with_rusage(child.id())?;
    let wall = started.elapsed();
    if !matches!(status, 0..=2) {
        return Err(format!(
            "faultline analyze {} exited with {status}",
            file.display()
        ));
    }
    let results = std::fs::read_to_string(out.join("results.json"))
        .map_err(|e| format!("no results.json: {e}"))?;
    let doc: Value = serde_json::from_str(&results).map_err(|e| format!("results.json: {e}"))?;
    let iso = &doc["checkers"][analysis::checkers::isolation::NAME];
    let anomaly_types = iso["details"]["anomaly_types"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let valid = match &iso["valid"] {
        Value::Bool(true) => "valid".to_string(),
        Value::Bool(false) => "invalid".to_string(),
        Value::String(s) => s.clone(),
        _ => "missing".to_string(),
    };
    Ok(Measured {
        wall,
        max_rss_bytes,
        valid,
        anomaly_types,
    })
}

/// Waits for `pid`, returning its exit code and its peak resident set in bytes.
fn wait_with_rusage(pid: u32) -> Result<(i32, u64), String> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; wait4 fills it for the child we spawned and reap here.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    if reaped < 0 {
        return Err(format!(
            "waiting for faultline analyze: {}",
            std::io::Error::last_os_error()
        ));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    // Linux reports ru_maxrss in KiB.
    Ok((code, usage.ru_maxrss.max(0) as u64 * 1024))
}
