//! Subcommands of the `faultline` binary, one module each.

pub mod analyze;
pub mod bench;
pub mod bench_harness;
pub mod bench_hot;
pub mod bench_kv;
pub mod bench_txn;
pub mod cleanup;
pub mod gen_history;
pub mod image;
pub mod matrix;
pub mod report;
pub mod serve;
pub mod test;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "faultline",
    version,
    about = "Jepsen-style fault injection for range-sharded Raft KV stores that split hot ranges"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)] // parsed once per process; boxing buys nothing
pub enum Command {
    /// Run a test: start a cluster, run a workload under a nemesis, check the history.
    Test(test::TestArgs),
    /// Remove what faultline created here (containers, networks, namespaces) or, with --hosts, on SSH hosts.
    #[command(long_about = cleanup::CLEANUP_LONG_ABOUT)]
    Cleanup(cleanup::CleanupArgs),
    /// Build the node image (static refkv + sandbox) used by tests and docker-compose.yml.
    Image(image::ImageArgs),
    /// Write a run's self-contained report.html (verdict, plots, heat map, timelines).
    Report(report::ReportArgs),
    /// Serve the store on 127.0.0.1: a run list linking to each run's report.
    Serve(serve::ServeArgs),
    /// Check histories on disk (faultline JSONL, Jepsen logs, Knossos EDN, Porcupine kv).
    Analyze(analyze::AnalyzeArgs),
    /// Write a synthetic history of a simulated linearizable register store (JSON Lines).
    GenHistory(gen_history::GenHistoryArgs),
    /// Benchmark the checker core: labelled histories and a large synthetic history.
    Bench(bench::BenchArgs),
    /// Detection matrix: clean refkv and each seeded bug, several runs, bug × checker table.
    #[command(long_about = matrix::MATRIX_LONG_ABOUT)]
    Matrix(matrix::MatrixArgs),
}

pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Test(args) => test::run(args),
        Command::Cleanup(args) => cleanup::run(args),
        Command::Image(args) => run_simple("image", image::build(args)),
        Command::Report(args) => report::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::GenHistory(args) => gen_history::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Matrix(args) => matrix::run(args),
    }
}

/// Runs a small command on a one-thread runtime: exit 0 or 255 with the error.
pub(crate) fn run_simple(
    name: &str,
    fut: impl std::future::Future<Output = anyhow::Result<()>>,
) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("faultline {name}: cannot start the async runtime: {e}");
            return ExitCode::from(crate::exit::INTERNAL);
        }
    };
    match rt.block_on(fut) {
        Ok(()) => crate::exit::ok(),
        Err(e) => {
            eprintln!("faultline {name}: error: {e:#}");
            ExitCode::from(crate::exit::INTERNAL)
        }
    }
}
