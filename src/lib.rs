//! # faultline — the harness as a library
//!
//! Jepsen's *runner* for range-sharded Raft KV stores: [`runner`] builds and starts a
//! cluster ([`cluster`], [`db`]), runs a workload under a nemesis, records the history and
//! judges it with the `analysis` checkers; [`cmd`] holds the subcommands of the `faultline`
//! binary (a thin `main.rs`), [`report`] and [`matrix`] read finished runs.
//!
//! Module layering (no cycles): `cmd` → `runner` → `db` → `cluster` → `docker`/`image`;
//! `exit` is the one definition of the process exit codes.

pub mod cluster;
pub mod cmd;
pub mod db;
pub mod docker;
pub mod exit;
#[cfg(test)]
mod fake_target;
pub mod image;
pub mod junit;
pub mod matrix;
pub mod report;
pub mod runner;
