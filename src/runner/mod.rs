//! The test runner: Jepsen's `core/run!` for faultline. One run goes through fixed phases —
//! setup (sweep stale resources, build the image, start the cluster, wait until ready) →
//! main (workload + catalog watcher + nemesis, concurrently, for the time limit) → heal →
//! recovery wait → final reads through every node → teardown → analysis → `results.json`.
//! Ctrl-C at any point skips to healing and teardown and still writes a verdict.

pub mod analysis_phase;
pub mod logging;
pub mod node_watch;
pub mod op_chunks;
pub mod oracle;
pub mod plan;
pub mod progress;
pub mod sink;
pub mod store;
pub mod store_versions;
pub mod phases;

use crate::cmd::exit;
use crate::cmd::test::TestArgs;
use plan::{BadArgs, Plan};
use std::process::ExitCode;

/// Entry point of `faultline test`.
pub fn main(args: TestArgs) -> ExitCode {
    let plan = match Plan::from_args(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("faultline test: {e:#}");
            return ExitCode::from(exit::BAD_ARGS);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("faultline test: cannot start the async runtime: {e}");
            return ExitCode::from(exit::INTERNAL);
        }
    };
    let outcome = rt.block_on(phases::run(plan));
    // Do not wait for stray blocking tasks (e.g. a hung docker call) at exit.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    match outcome {
        Ok(validity) => ExitCode::from(validity.exit_code()),
        Err(e) if e.downcast_ref::<BadArgs>().is_some() => {
            eprintln!("faultline test: {e:#}");
            ExitCode::from(exit::BAD_ARGS)
        }
        Err(e) => {
            eprintln!("faultline test: error: {e:#}");
            ExitCode::from(exit::INTERNAL)
        }
    }
}

/// Entry point of `faultline cleanup`.
pub fn cleanup_main(args: crate::cmd::cleanup::CleanupArgs) -> ExitCode {
    run_simple("cleanup", crate::cmd::cleanup::cleanup(args))
}

/// Entry point of `faultline image`.
pub fn image_main(args: crate::cmd::image::ImageArgs) -> ExitCode {
    run_simple("image", crate::cmd::image::build(args))
}

/// Runs a small command on a one-thread runtime: exit 0 or 255 with the error.
fn run_simple(name: &str, fut: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("faultline {name}: cannot start the async runtime: {e}");
            return ExitCode::from(exit::INTERNAL);
        }
    };
    match rt.block_on(fut) {
        Ok(()) => ExitCode::from(exit::VALID),
        Err(e) => {
            eprintln!("faultline {name}: error: {e:#}");
            ExitCode::from(exit::INTERNAL)
        }
    }
}
