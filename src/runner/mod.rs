//! The test runner: Jepsen's `core/run!` for faultline. One run goes through fixed phases —
//! setup (sweep stale resources, build the image, start the cluster, wait until ready) →
//! main (workload + catalog watcher + nemesis, concurrently, for the time limit) → heal →
//! recovery wait → final reads through every node → teardown → analysis → `results.json`.
//! Ctrl-C at any point skips to healing and teardown and still writes a verdict.

pub mod analysis_phase;
pub mod launch;
mod live;
pub mod logging;
pub mod node_watch;
pub mod phases;
pub mod plan;
pub mod progress;
pub mod record;
pub mod sink;
pub mod spec;
pub mod store;
pub mod store_control;
#[cfg(test)]
mod store_control_tests;
pub mod store_versions;

pub use spec::{GeneratorFactory, TestSpec};

use analysis::verdict::Validity;
use plan::Plan;

/// Why a run produced no verdict of its own.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The spec asks for something impossible (exit code 254); the message names the flag.
    #[error("{0}")]
    BadArgs(String),
    /// The run failed (exit code 255); its directory still holds an `unknown` verdict when
    /// it got that far.
    #[error("{0:#}")]
    Internal(anyhow::Error),
}

/// Runs one test: validates `spec`, then runs every phase and returns the verdict's
/// validity. Needs a multi-thread tokio runtime.
pub async fn run(spec: TestSpec) -> Result<Validity, RunError> {
    let plan = Plan::from_spec(&spec).map_err(|e| RunError::BadArgs(e.0))?;
    phases::run(plan).await.map_err(RunError::Internal)
}
