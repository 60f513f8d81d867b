//! Subcommands of the `faultline` binary, one module each.

pub mod analyze;
pub mod bench;
pub mod bench_harness;
pub mod bench_hot;
pub mod cleanup;
pub mod image;
pub mod gen_history;
pub mod matrix;
pub mod report;
pub mod serve;
pub mod test;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exit codes, following Jepsen's conventions.
pub mod exit {
    pub const VALID: u8 = 0;
    pub const INVALID: u8 = 1;
    pub const UNKNOWN: u8 = 2;
    pub const BAD_ARGS: u8 = 254;
    pub const INTERNAL: u8 = 255;
}

#[derive(Parser, Debug)]
#[command(name = "faultline", version, about = "Jepsen-style fault injection for range-sharded Raft KV stores that split hot ranges")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a test: start a cluster, run a workload under a nemesis, check the history.
    Test(test::TestArgs),
    /// Remove every container and network faultline created.
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
        Command::Test(args) => crate::runner::main(args),
        Command::Cleanup(args) => crate::runner::cleanup_main(args),
        Command::Image(args) => crate::runner::image_main(args),
        Command::Report(args) => report::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::GenHistory(args) => gen_history::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Matrix(args) => matrix::run(args),
    }
}
