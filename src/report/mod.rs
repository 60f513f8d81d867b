//! # report — a self-contained `report.html` per run, and a small server for the store
//!
//! `faultline report <run-dir>` turns a run directory (`history.jsonl`, `results.json`,
//! `test.json`) into one HTML file with everything inline (works offline from disk): the
//! verdict per checker with reasons, each anomaly with links to its ops, latency and
//! throughput plots (plotters, SVG) with nemesis bands and catalog-change marks, a route ×
//! time heat map, a transactions summary for txn histories ([`txn_summary`]), each
//! isolation cycle drawn ([`txn_cycle`]) and placed among the faults ([`cycle_when`]), and
//! per-process timelines around each anomaly. `faultline serve` serves the store with a run
//! list ([`runs`], [`http`]).
//!
//! The history is streamed once into a compact model ([`model`], [`load`]); every drawing
//! is bounded (aggregated points, bucketed rates, windowed timelines), so a 1M-op history
//! renders in seconds into a page of a few MB. See `docs/report.md`.

mod anomaly;
mod catalog;
mod cycle_when;
mod heatmap;
pub mod http;
mod load;
mod model;
mod page;
mod plots;
pub mod runs;
mod svg;
mod timeline;
mod txn_cycle;
mod txn_summary;

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The file name of a run's report inside its run directory.
pub const REPORT_FILE: &str = "report.html";

/// What generating a report did, for the command's output and the benchmark.
#[derive(Debug)]
pub struct Generated {
    pub path: PathBuf,
    pub bytes: usize,
    pub history_entries: u64,
    pub read_time: Duration,
    pub render_time: Duration,
}

/// Drawing or templating failed: a defect of faultline, not of the run directory.
#[derive(Debug)]
pub struct RenderError(pub String);

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rendering the report failed: {}", self.0)
    }
}

impl std::error::Error for RenderError {}

/// Renders the report of `run_dir` and writes it to `out` (default `run_dir/report.html`).
pub fn generate(run_dir: &Path, out: Option<&Path>) -> Result<Generated> {
    if !run_dir.is_dir() {
        anyhow::bail!("{} is not a run directory", run_dir.display());
    }
    let history = run_dir.join("history.jsonl");
    if !history.is_file() {
        anyhow::bail!(
            "{}: no history.jsonl — is this a faultline run directory (store/<test>/<timestamp>/)?",
            run_dir.display()
        );
    }
    let started = Instant::now();
    let verdict = load::read_verdict(run_dir)?;
    let options = load::read_options(run_dir)?;
    let plan = page::Plan::from_verdict(verdict.as_ref());
    let model = load::read_history(run_dir, &plan.keep_ranges())?;
    let read_time = started.elapsed();
    let inputs = page::Inputs {
        run_name: run_name(run_dir),
        verdict: verdict.as_ref(),
        options: options.as_ref(),
    };
    let html = page::render(&inputs, &model, &plan).map_err(|e| RenderError(format!("{e:#}")))?;
    let path = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| run_dir.join(REPORT_FILE));
    std::fs::write(&path, &html).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Generated {
        path,
        bytes: html.len(),
        history_entries: model.entries,
        read_time,
        render_time: started.elapsed() - read_time,
    })
}

/// `<test>/<timestamp>` from a run directory path (whatever its last two components are).
fn run_name(run_dir: &Path) -> String {
    let canonical = run_dir
        .canonicalize()
        .unwrap_or_else(|_| run_dir.to_path_buf());
    let parts: Vec<String> = canonical
        .components()
        .rev()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}
