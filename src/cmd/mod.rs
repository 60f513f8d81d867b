//! Subcommands of the `faultline` binary, one module each.

pub mod cleanup;
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
}

pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Test(args) => crate::runner::main(args),
        Command::Cleanup(args) => crate::runner::cleanup_main(args),
    }
}
