//! `faultline cleanup`: removes every container and network labelled `faultline=1`.

use clap::Args;

/// Options of `faultline cleanup`.
#[derive(Args, Debug, Clone)]
#[command(long_about = "Removes every Docker container and network that faultline created \
(label faultline=1): clusters of finished, crashed or --leave-running runs, and the \
docker-compose cluster. Never touches anything else. With --stale, removes only the \
resources of runs whose harness process is gone, as every `faultline test` does at start.")]
pub struct CleanupArgs {
    /// Only remove resources of runs whose owning harness process has exited.
    #[arg(long)]
    pub stale: bool,
}

pub async fn cleanup(args: CleanupArgs) -> anyhow::Result<()> {
    // `--cluster netns` runs: network namespaces named faultline-<run>-* (root only).
    let netns_runs = if args.stale { crate::cluster::netns::sweep_stale().await? } else { crate::cluster::netns::remove_all().await? };
    if !netns_runs.is_empty() {
        println!("removed the network namespaces of {} netns runs", netns_runs.len());
    }
    crate::docker::check_engine().await?;
    let swept = if args.stale {
        crate::cluster::sweep::sweep_stale().await?
    } else {
        crate::cluster::sweep::remove_all().await?
    };
    println!("removed {} containers and {} networks", swept.containers, swept.networks);
    Ok(())
}
