//! `faultline matrix`: the detection matrix — clean refkv and each seeded bug under the
//! nemeses that expose it, several runs each, tabulated bug × checker (see
//! docs/detection-matrix.md).

use crate::exit;
use crate::matrix::{self, configs, MatrixPlan};
use analysis::verdict::Validity;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

pub const MATRIX_LONG_ABOUT: &str = "\
Runs `faultline test` against clean refkv and against refkv with each seeded bug (--bug), \
--runs times each, every run a child process with its own cluster and its own kept store \
directory (store/matrix-<config>/<timestamp>/). Each bug runs under the faults that expose \
it (see docs/detection-matrix.md) and counts as caught when the checker expected to catch it \
says invalid.

Writes <store>/matrix/<timestamp>/{rows.jsonl, rows.json, table.md, <config>-<run>.log} and, \
with --out, the table with the command, date and machine into that Markdown file (between \
<!-- matrix:begin --> and <!-- matrix:end --> when present).

Ctrl-C stops the current run cleanly (it heals, tears down and writes its verdict), starts \
no further run and still writes the table of what ran; a second Ctrl-C kills the run.

Exit code: 0 when every bug was caught in every run and clean refkv was valid in every run, \
1 otherwise, 2 when interrupted, 254 on bad arguments, 255 on an internal error.";

#[derive(Args, Debug)]
#[command(long_about = MATRIX_LONG_ABOUT)]
pub struct MatrixArgs {
    /// Runs per configuration.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,

    /// Seconds of workload per run (`faultline test --time-limit`).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(5..=3600))]
    pub time_limit: u64,

    // Help built from the matrix's bug list, so it names every bug the matrix runs.
    #[arg(long, default_value = "all", help = bugs_help())]
    pub bugs: String,

    /// Skip the clean-refkv configurations.
    #[arg(long)]
    pub no_clean: bool,

    /// Which clean configurations to run: `all`, or a comma-separated list of: clean (the
    /// key-value hotspot under partition, kill, split, move, abort-move), clean-txn (the
    /// append transactions under partition, kill, split, move, txn-move), clean-txn+dynamodb
    /// (clean-txn through refkv's DynamoDB API).
    #[arg(long, default_value = "all")]
    pub clean: String,

    /// Seconds between fault changes (`faultline test --nemesis-interval`).
    #[arg(long, default_value_t = 5.0)]
    pub nemesis_interval: f64,

    /// First seed; run i uses seed + i (default: each run picks and records its own).
    #[arg(long)]
    pub seed: Option<u64>,

    /// Directory of the store (runs and the matrix's own files).
    #[arg(long, default_value = "store")]
    pub store: PathBuf,

    /// Write the table (with command, date, machine) into this Markdown file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Run nothing: render the table of an earlier matrix from its rows (`rows.jsonl` or
    /// `rows.json`) into --out and the terminal.
    #[arg(long, value_name = "FILE")]
    pub from_rows: Option<PathBuf>,

    /// Extra `faultline test` argument for every run, verbatim; repeat for several
    /// (e.g. `--test-arg=--concurrency=3n`).
    #[arg(long = "test-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub test_args: Vec<String>,
}

/// Parses `--clean`: `all`, or a comma-separated list of [`configs::CLEAN`] names.
fn parse_clean(text: &str) -> Result<Vec<&'static str>, String> {
    if text.trim() == "all" {
        return Ok(configs::CLEAN.to_vec());
    }
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            configs::CLEAN
                .iter()
                .copied()
                .find(|c| *c == name)
                .ok_or_else(|| {
                    format!(
                        "unknown --clean {name:?}: expected all or a list of {}",
                        configs::CLEAN.join(", ")
                    )
                })
        })
        .collect()
}

/// The `--bugs` help: every bug row of [`configs::bug_rows`].
fn bugs_help() -> String {
    format!(
        "Seeded bugs to run: `all`, `none`, or a comma-separated list of: {} (`<bug>+<client>`: \
         the bug's scenario through that client)",
        configs::bug_rows().collect::<Vec<_>>().join(", ")
    )
}

pub fn run(args: MatrixArgs) -> ExitCode {
    if let Some(path) = &args.from_rows {
        return render_rows(path, args.out.as_deref());
    }
    let configs = match chosen_configs(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("faultline matrix: {e}");
            return ExitCode::from(exit::BAD_ARGS);
        }
    };
    let stamp = crate::runner::store::utc_timestamp(std::time::SystemTime::now());
    let plan = MatrixPlan {
        configs,
        runs: args.runs,
        time_limit: args.time_limit,
        nemesis_interval: args.nemesis_interval,
        store: args.store.clone(),
        seed: args.seed,
        test_args: args.test_args.clone(),
        dir: args.store.join("matrix").join(stamp),
    };
    let command = command_line();
    if let Err(e) = std::fs::create_dir_all(&plan.dir)
        .and_then(|_| std::fs::write(plan.dir.join("command.txt"), format!("{command}\n")))
    {
        eprintln!(
            "faultline matrix: cannot write {}: {e}",
            plan.dir.join("command.txt").display()
        );
        return ExitCode::from(exit::INTERNAL);
    }
    let outcome = match matrix::run_matrix(&plan) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("faultline matrix: {e:#}");
            return ExitCode::from(exit::INTERNAL);
        }
    };
    if let Err(e) = write_results(&plan, &args, &outcome, &command) {
        eprintln!("faultline matrix: {e:#}");
        return ExitCode::from(exit::INTERNAL);
    }
    eprintln!("\n{}", matrix::table::render(&outcome.rows));
    eprintln!("matrix: rows and table in {}", plan.dir.display());
    matrix_exit(&outcome)
}

/// The configurations `args` asks for (the clean ones, then the seeded bugs), or why they
/// are refused: an unknown bug or clean row, a too-short `--nemesis-interval`, nothing.
fn chosen_configs(args: &MatrixArgs) -> Result<Vec<configs::Config>, String> {
    let bugs = configs::parse_bugs(&args.bugs)?;
    if !(args.nemesis_interval.is_finite() && args.nemesis_interval >= 0.5) {
        return Err(format!(
            "--nemesis-interval {} must be at least 0.5 seconds",
            args.nemesis_interval
        ));
    }
    let cleans = match parse_clean(&args.clean)? {
        _ if args.no_clean => Vec::new(),
        c => c,
    };
    let configs: Vec<configs::Config> = cleans
        .into_iter()
        .chain(bugs.iter().copied())
        .filter_map(configs::config_named)
        .collect();
    if configs.is_empty() {
        return Err("nothing to run (--no-clean with --bugs none)".into());
    }
    Ok(configs)
}

/// The matrix's exit status: unknown when interrupted, valid when every clean row is valid
/// and every seeded bug was caught, else invalid.
fn matrix_exit(outcome: &matrix::MatrixOutcome) -> ExitCode {
    if outcome.interrupted {
        return exit::of(Validity::Unknown);
    }
    let all_good = outcome.rows.iter().all(|r| {
        if r.bug.is_none() {
            r.verdict == "valid"
        } else {
            r.caught()
        }
    });
    exit::of(if all_good {
        Validity::Valid
    } else {
        Validity::Invalid
    })
}

fn write_results(
    plan: &MatrixPlan,
    args: &MatrixArgs,
    outcome: &matrix::MatrixOutcome,
    command: &str,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let rows_json = plan.dir.join("rows.json");
    std::fs::write(
        &rows_json,
        serde_json::to_string_pretty(&outcome.rows)? + "\n",
    )
    .with_context(|| format!("writing {}", rows_json.display()))?;
    matrix::write_out(
        &plan.dir.join("table.md"),
        &outcome.rows,
        command,
        outcome.interrupted,
        None,
    )?;
    if let Some(out) = &args.out {
        matrix::write_out(out, &outcome.rows, command, outcome.interrupted, None)?;
        eprintln!("matrix: table written to {}", out.display());
    }
    Ok(())
}

/// This invocation as a person would type it.
fn command_line() -> String {
    shown_command(std::env::args().skip(1))
}

/// The arguments as a person would type them, without `--store DIR`: where the runs were
/// kept is a folder of the machine that ran them, not part of what was measured.
fn shown_command(args: impl Iterator<Item = String>) -> String {
    let mut parts = vec!["faultline".to_string()];
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        if a == "--store" {
            args.next();
            continue;
        }
        if a.starts_with("--store=") {
            continue;
        }
        parts.push(if a.contains(' ') { format!("'{a}'") } else { a });
    }
    parts.join(" ")
}

/// `--from-rows`: re-renders a recorded matrix.
fn render_rows(path: &std::path::Path, out: Option<&std::path::Path>) -> ExitCode {
    let rows = match read_rows(path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("faultline matrix: {e}");
            return ExitCode::from(exit::BAD_ARGS);
        }
    };
    // Re-read each run's results with today's configuration (e.g. symptom kinds).
    let rows: Vec<matrix::table::RunRow> = rows.into_iter().map(refresh_row).collect();
    let command = rows_command(path).unwrap_or_else(command_line);
    if let Some(out) = out {
        if let Err(e) = matrix::write_out(
            out,
            &rows,
            &command,
            false,
            measured_from_dir(path).as_deref(),
        ) {
            eprintln!("faultline matrix: {e:#}");
            return ExitCode::from(exit::INTERNAL);
        }
    }
    println!("{}", matrix::table::render(&rows));
    exit::ok()
}

/// The row re-read from its run directory when that still exists.
fn refresh_row(row: matrix::table::RunRow) -> matrix::table::RunRow {
    let config = configs::config_named(&row.config);
    match (
        config,
        row.run_dir
            .as_deref()
            .map(std::path::Path::new)
            .filter(|d| d.join("results.json").is_file()),
    ) {
        (Some(config), Some(dir)) => {
            let mut fresh =
                matrix::read_row(&config, row.run, Some(dir), row.exit_code, row.wall_s);
            fresh.interrupted = row.interrupted;
            fresh.error = fresh.error.or(row.error);
            fresh
        }
        _ => row,
    }
}

/// Rows from `rows.json` (an array) or `rows.jsonl` (one row a line); errors name the line.
fn read_rows(path: &std::path::Path) -> Result<Vec<matrix::table::RunRow>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    if text.trim_start().starts_with('[') {
        return serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a list of matrix rows: {e}", path.display()));
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| format!("{}:{}: not a matrix row: {e}", path.display(), i + 1))
        })
        .collect()
}

/// The command recorded beside the rows (`command.txt`), if any.
fn rows_command(path: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(path.parent()?.join("command.txt")).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

/// "started <timestamp>" from a matrix directory named by its UTC start time.
fn measured_from_dir(rows: &std::path::Path) -> Option<String> {
    let name = rows.parent()?.file_name()?.to_str()?;
    name.ends_with('Z')
        .then(|| format!("runs started {name} (UTC)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn matrix_help_names_every_bug_the_matrix_runs() {
        let mut cli = crate::cmd::Cli::command().term_width(10_000);
        let matrix = cli
            .find_subcommand_mut("matrix")
            .expect("the matrix subcommand");
        let help = matrix.render_long_help().to_string();
        let mut from_bugs = help.lines().skip_while(|l| !l.contains("--bugs"));
        let first = from_bugs.next().unwrap_or_default();
        let rest = from_bugs.take_while(|l| !l.trim_start().starts_with("--"));
        let bugs_line = std::iter::once(first)
            .chain(rest)
            .collect::<Vec<_>>()
            .join(" ");
        for bug in configs::bug_rows() {
            assert!(
                bugs_line.contains(bug),
                "`faultline matrix --help` does not name {bug}:\n{bugs_line}"
            );
        }
    }

    #[test]
    fn the_shown_command_leaves_out_the_store_folder() {
        let args = [
            "matrix",
            "--runs",
            "10",
            "--store",
            "/var/runs/x",
            "--test-arg=--image=a b",
            "--store=/y",
        ];
        assert_eq!(
            shown_command(args.iter().map(|a| a.to_string())),
            "faultline matrix --runs 10 '--test-arg=--image=a b'"
        );
    }
}
