//! # faultline — the command-line harness
//!
//! A thin entry point: parses the command line and hands it to [`faultline::cmd::run`].
//! `faultline test` builds and starts a cluster, runs a workload under a nemesis, records
//! the history and judges it; `faultline analyze` re-checks histories on disk. See
//! `faultline --help`.

use clap::Parser;
use faultline::{cmd, exit};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match cmd::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(exit::BAD_ARGS)
            } else {
                exit::ok()
            };
        }
    };
    cmd::run(cli)
}
