//! # faultline — the command-line harness
//!
//! Jepsen's *runner* for range-sharded Raft KV stores: `faultline test` builds and starts a
//! cluster, runs a workload under a nemesis, records the history and judges it;
//! `faultline analyze` re-checks histories on disk. See `faultline --help`.

mod cluster;
mod cmd;
mod db;
mod docker;
mod image;
mod junit;
mod matrix;
mod runner;
mod report;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match cmd::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { cmd::exit::BAD_ARGS } else { cmd::exit::VALID };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    cmd::run(cli)
}
