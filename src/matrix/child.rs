//! Running the matrix's `faultline test` children one at a time, with progress lines, a
//! per-run deadline and a clean stop on Ctrl-C (the current run is interrupted the way a
//! person would — it heals, tears down and writes its verdict — and no new run starts).

use super::configs::Config;
use super::table::RunRow;
use analysis::verdict::{Validity, Verdict};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the matrix runs.
#[derive(Debug, Clone)]
pub struct MatrixPlan {
    pub configs: Vec<Config>,
    pub runs: u32,
    pub time_limit: u64,
    pub nemesis_interval: f64,
    /// The store the children write to (each run keeps its directory).
    pub store: PathBuf,
    /// First seed; run i of every configuration uses seed + i. None: each run picks one.
    pub seed: Option<u64>,
    /// Extra `faultline test` arguments for every run.
    pub test_args: Vec<String>,
    /// This matrix's own directory (rows, table, child logs).
    pub dir: PathBuf,
}

/// What came out.
pub struct MatrixOutcome {
    pub rows: Vec<RunRow>,
    pub interrupted: bool,
}

/// Beyond the workload, a run gets this long (cluster start, recovery, final reads,
/// analysis) before the matrix interrupts it.
const RUN_OVERHEAD_BUDGET: Duration = Duration::from_secs(900);
/// After an interrupt, a child gets this long to heal and write its verdict before SIGKILL.
const INTERRUPT_GRACE: Duration = Duration::from_secs(180);

/// `faultline test`'s exit code for bad arguments.
const BAD_ARGS: i32 = crate::exit::BAD_ARGS as i32;

/// Runs every configuration `runs` times, appending each row to `dir/rows.jsonl`.
pub fn run_matrix(plan: &MatrixPlan) -> Result<MatrixOutcome> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(run_all(plan))
}

async fn run_all(plan: &MatrixPlan) -> Result<MatrixOutcome> {
    std::fs::create_dir_all(&plan.dir)
        .with_context(|| format!("creating {}", plan.dir.display()))?;
    let rows_path = plan.dir.join("rows.jsonl");
    let mut rows_file = std::fs::File::create(&rows_path)
        .with_context(|| format!("creating {}", rows_path.display()))?;
    let total = plan.configs.len() * plan.runs as usize;
    let mut rows = Vec::new();
    let mut k = 0;
    for config in &plan.configs {
        for i in 1..=plan.runs {
            k += 1;
            let (row, interrupted) = run_one(plan, config, i, k, total).await?;
            if row.exit_code == Some(BAD_ARGS) && row.run_dir.is_none() {
                // Every further run would be refused the same way.
                let log =
                    std::fs::read_to_string(plan.dir.join(format!("{}-{i}.log", config.name)))
                        .unwrap_or_default();
                anyhow::bail!(
                    "`faultline test` refused its arguments for {}: {}",
                    config.name,
                    log.trim()
                );
            }
            writeln!(rows_file, "{}", serde_json::to_string(&row)?)
                .with_context(|| format!("writing {}", rows_path.display()))?;
            rows.push(row);
            if interrupted {
                eprintln!(
                    "matrix: interrupted — {k} of {total} runs recorded in {}",
                    rows_path.display()
                );
                return Ok(MatrixOutcome {
                    rows,
                    interrupted: true,
                });
            }
        }
    }
    Ok(MatrixOutcome {
        rows,
        interrupted: false,
    })
}

fn test_name(config: &Config) -> String {
    format!("matrix-{}", config.name)
}

fn child_args(plan: &MatrixPlan, config: &Config, run: u32) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "test".into(),
        "--store".into(),
        plan.store.display().to_string(),
    ];
    args.extend([
        "--test-name".into(),
        test_name(config),
        "--no-progress".into(),
    ]);
    // A configuration that needs its own length or fault pace says so in its extra flags.
    if !config.extra.contains(&"--time-limit") {
        args.extend(["--time-limit".into(), plan.time_limit.to_string()]);
    }
    if !config.extra.contains(&"--nemesis-interval") {
        args.extend([
            "--nemesis-interval".into(),
            plan.nemesis_interval.to_string(),
        ]);
    }
    if let Some(s) = plan.seed {
        args.extend(["--seed".into(), s.wrapping_add(u64::from(run)).to_string()]);
    }
    args.extend(config.scenario_args().into_iter().map(String::from));
    args.extend(plan.test_args.iter().cloned());
    args
}

/// Run directories of a test name that exist now.
fn run_dirs(store: &Path, name: &str) -> BTreeSet<PathBuf> {
    let Ok(entries) = std::fs::read_dir(store.join(name)) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name() != "latest" && e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

async fn run_one(
    plan: &MatrixPlan,
    config: &Config,
    run: u32,
    k: usize,
    total: usize,
) -> Result<(RunRow, bool)> {
    let exe = std::env::current_exe().context("locating the faultline binary")?;
    let args = child_args(plan, config, run);
    let before = run_dirs(&plan.store, &test_name(config));
    let log_path = plan.dir.join(format!("{}-{run}.log", config.name));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let label = format!("[{k}/{total}] {} run {run}/{}", config.name, plan.runs);
    eprintln!("matrix: {label}: faultline {}", args.join(" "));
    let started = Instant::now();
    let mut child = tokio::process::Command::new(&exe)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().context("duplicating the log handle")?)
        .stderr(log)
        // Its own process group: a terminal Ctrl-C reaches only the matrix, which forwards
        // exactly one interrupt (a second one would abort the child without cleanup).
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let deadline = Duration::from_secs(plan.time_limit) + RUN_OVERHEAD_BUDGET;
    let (status, interrupted, timed_out) = tokio::select! {
        s = child.wait() => (s, false, false),
        _ = tokio::signal::ctrl_c() => {
            eprintln!("\nmatrix: interrupted — stopping the current run cleanly (it heals, tears down and writes its verdict)");
            (stop_child(&mut child).await, true, false)
        }
        _ = tokio::time::sleep(deadline) => {
            eprintln!("matrix: {label}: no verdict after {} s — interrupting it", deadline.as_secs());
            (stop_child(&mut child).await, false, true)
        }
    };
    let wall_s = started.elapsed().as_secs_f64();
    let exit_code = status.as_ref().ok().and_then(|s| s.code());
    let new_dir = run_dirs(&plan.store, &test_name(config))
        .difference(&before)
        .last()
        .cloned();
    let mut row = read_row(config, run, new_dir.as_deref(), exit_code, wall_s);
    row.interrupted = interrupted;
    if timed_out {
        row.error.get_or_insert_with(|| {
            format!("interrupted after the {} s deadline", deadline.as_secs())
        });
    }
    if let Err(e) = status {
        row.error = Some(format!("waiting for the child: {e}"));
    }
    eprintln!(
        "matrix: {label}: {} in {wall_s:.0} s{} (log {})",
        summary(&row),
        where_(&row),
        log_path.display()
    );
    Ok((row, interrupted))
}

/// SIGINT, then wait (a second Ctrl-C or the grace period escalates to SIGKILL).
async fn stop_child(
    child: &mut tokio::process::Child,
) -> std::io::Result<std::process::ExitStatus> {
    if let Some(pid) = child.id() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGINT,
        );
    }
    tokio::select! {
        s = child.wait() => s,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("matrix: second interrupt — killing the run (`faultline cleanup` removes its cluster)");
            let _ = child.start_kill();
            child.wait().await
        }
        _ = tokio::time::sleep(INTERRUPT_GRACE) => {
            eprintln!("matrix: the run did not stop within {} s — killing it (`faultline cleanup` removes its cluster)", INTERRUPT_GRACE.as_secs());
            let _ = child.start_kill();
            child.wait().await
        }
    }
}

fn where_(row: &RunRow) -> String {
    row.run_dir
        .as_ref()
        .map(|d| format!(" — {d}"))
        .unwrap_or_default()
}

fn summary(row: &RunRow) -> String {
    let mut s = row.verdict.to_uppercase();
    let invalid: Vec<&str> = row
        .checkers
        .iter()
        .filter(|(_, v)| v.as_str() == "invalid")
        .map(|(c, _)| c.as_str())
        .collect();
    if !invalid.is_empty() {
        s.push_str(&format!(" ({} invalid)", invalid.join(", ")));
    }
    if row.bug.is_some() {
        s.push_str(if row.caught() {
            " — caught"
        } else {
            " — NOT caught"
        });
    }
    if let Some(e) = &row.error {
        s.push_str(&format!(" — {e}"));
    }
    s
}

/// The row of a finished run, from its results.json and test.json.
pub fn read_row(
    config: &Config,
    run: u32,
    dir: Option<&Path>,
    exit_code: Option<i32>,
    wall_s: f64,
) -> RunRow {
    let mut row = RunRow {
        config: config.name.to_string(),
        bug: config.bug.map(str::to_string),
        run,
        workload: config.workload.to_string(),
        nemesis: config.nemesis.to_string(),
        expected: config.expected.iter().map(|s| s.to_string()).collect(),
        expected_kinds: config
            .expected_kinds
            .iter()
            .map(|(c, k)| (c.to_string(), k.iter().map(|s| s.to_string()).collect()))
            .collect(),
        anomaly_kinds: BTreeMap::new(),
        seed: None,
        exit_code,
        verdict: "error".into(),
        checkers: BTreeMap::new(),
        reasons: BTreeMap::new(),
        wall_s,
        run_dir: dir.map(|d| d.display().to_string()),
        interrupted: false,
        error: None,
    };
    let Some(dir) = dir else {
        row.error = Some(format!(
            "no run directory was created (exit code {exit_code:?})"
        ));
        return row;
    };
    if let Ok(text) = std::fs::read_to_string(dir.join("test.json")) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            row.seed = v["test"]["seed"].as_u64();
        }
    }
    let path = dir.join("results.json");
    let verdict: Result<Verdict, String> = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
    match verdict {
        Ok(v) => {
            row.verdict = v.valid.as_str().into();
            for (name, r) in v.checkers {
                let kinds: BTreeSet<String> = r
                    .anomalies
                    .iter()
                    .filter_map(|a| a["kind"].as_str().map(str::to_string))
                    .collect();
                if !kinds.is_empty() {
                    row.anomaly_kinds
                        .insert(name.clone(), kinds.into_iter().collect());
                }
                if let Some(reason) = r.reason {
                    row.reasons.insert(name.clone(), reason);
                }
                row.checkers.insert(name, r.valid.as_str().into());
            }
            if v.valid == Validity::NotApplicable {
                row.verdict = "unknown".into();
            }
        }
        Err(e) => row.error = Some(format!("{}: {e} (exit code {exit_code:?})", path.display())),
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> MatrixPlan {
        MatrixPlan {
            configs: Vec::new(),
            runs: 1,
            time_limit: 30,
            nemesis_interval: 7.0,
            store: PathBuf::from("store"),
            seed: None,
            test_args: Vec::new(),
            dir: PathBuf::from("store/matrix/x"),
        }
    }

    fn flag_values<'a>(args: &'a [String], flag: &str) -> Vec<&'a str> {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    }

    #[test]
    fn a_configuration_with_its_own_length_and_pace_overrides_the_matrix_ones() {
        let no_fence = super::super::configs::config_for(Some("no-fence")).expect("configured");
        let args = child_args(&plan(), &no_fence, 1);
        assert_eq!(flag_values(&args, "--time-limit"), ["20"], "{args:?}");
        assert_eq!(flag_values(&args, "--nemesis-interval"), ["5"], "{args:?}");
        let stale_read = super::super::configs::config_for(Some("stale-read")).expect("configured");
        let args = child_args(&plan(), &stale_read, 1);
        assert_eq!(flag_values(&args, "--time-limit"), ["30"], "{args:?}");
        assert_eq!(flag_values(&args, "--nemesis-interval"), ["7"], "{args:?}");
    }

    #[test]
    fn a_slow_copy_row_gets_the_throttle_and_no_auto_split_and_others_neither() {
        let slow =
            super::super::configs::config_for(Some("resume-skips-delta")).expect("configured");
        let args = child_args(&plan(), &slow, 1);
        for flag in super::super::configs::SLOW_COPIES {
            assert_eq!(
                args.iter().filter(|a| *a == flag).count(),
                1,
                "{flag} once in {args:?}"
            );
        }
        let plain = super::super::configs::config_for(Some("stale-read")).expect("configured");
        let args = child_args(&plan(), &plain, 1);
        assert!(
            super::super::configs::SLOW_COPIES
                .iter()
                .all(|f| !args.iter().any(|a| a == f)),
            "{args:?}"
        );
    }
}
