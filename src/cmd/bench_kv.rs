//! `faultline bench --kv [FILE,...]`: time to verdict of kv histories, each loaded and
//! checked in this process exactly as `faultline analyze FILE` checks it (format and model
//! detected, default initial value): the best and median of `--runs`, the verdict, and
//! how the linearizability checker decided the keys (fast path, search, invalid, unknown,
//! not checked). Without files, every history of `<histories>/kv/`. Figures are
//! in-process (no process start-up), so they compare engines, not binaries.

use analysis::analyze::{analyze, AnalyzeOptions, ModelChoice};
use analysis::verdict::Validity;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The key counts reported per file, as the checker names them.
const KEY_COUNTS: [&str; 6] = [
    "keys",
    "keys-fast-path",
    "keys-wgl",
    "keys-invalid",
    "keys-unknown",
    "keys-not-checked",
];

/// Times every file of `files` (or of `<histories>/kv/` when empty) `runs` times.
pub fn bench_kv(
    files: &[PathBuf],
    histories: &Path,
    runs: usize,
    say: &dyn Fn(String),
) -> Result<Value, String> {
    let files = if files.is_empty() {
        kv_folder(&histories.join("kv"))?
    } else {
        files.to_vec()
    };
    let mut figures = Vec::new();
    for path in &files {
        let (times, verdict, counts) = time_file(path, runs)?;
        let counts_text: Vec<String> = KEY_COUNTS
            .iter()
            .map(|c| format!("{c}={}", counts[*c]))
            .collect();
        say(format!(
            "kv {:<14} {:<8} to verdict: min {:.2} ms, median {:.2} ms ({runs} runs, in-process)  {}",
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            format!("{verdict:?}").to_lowercase(),
            ms(times.0),
            ms(times.1),
            counts_text.join(" ")
        ));
        figures.push(json!({
            "file": path.display().to_string(),
            "valid": verdict,
            "min_ms": ms(times.0),
            "median_ms": ms(times.1),
            "runs": runs,
            "counts": counts,
        }));
    }
    Ok(Value::Array(figures))
}

/// The `*.txt` histories of a folder, by name.
fn kv_folder(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    Ok(files)
}

/// (min, median) wall time of load + check, the verdict, and the linearizable key counts.
fn time_file(path: &Path, runs: usize) -> Result<((Duration, Duration), Validity, Value), String> {
    let opts = AnalyzeOptions {
        model: Some(ModelChoice::Auto),
        ..Default::default()
    };
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        let loaded = analysis::formats::load_file(path, None).map_err(|e| e.to_string())?;
        let verdict = analyze(&loaded.history, loaded.format.default_initial(), &opts)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        times.push(started.elapsed());
        last = Some(verdict);
    }
    times.sort();
    let verdict = last.ok_or("no run")?;
    let lin = verdict.checkers.get(analysis::checkers::linearizable::NAME);
    let counts: serde_json::Map<String, Value> = KEY_COUNTS
        .iter()
        .map(|c| {
            (
                c.to_string(),
                json!(lin.and_then(|r| r.counts.get(*c)).copied().unwrap_or(0)),
            )
        })
        .collect();
    Ok((
        (times[0], times[times.len() / 2]),
        verdict.valid,
        Value::Object(counts),
    ))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
