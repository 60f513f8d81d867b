//! `faultline cleanup`: removes every container and network labelled `faultline=1` and the
//! network namespaces of `--cluster netns` runs; with `--hosts`, instead sweeps SSH hosts of
//! what `--cluster ssh` runs left there (never anything else on them).

use super::test::ssh_args::SshHostArgs;
use crate::cluster::ssh::SshOptions;
use clap::Args;
use std::process::ExitCode;

/// `faultline cleanup --help`'s text.
pub const CLEANUP_LONG_ABOUT: &str = "Removes every Docker container and network that faultline \
created (label faultline=1): clusters of finished, crashed or --leave-running runs, and the \
docker-compose cluster; and, as root, the network namespaces of --cluster netns runs. Never \
touches anything else. With --stale, removes only the resources of runs whose harness process \
is gone, as every `faultline test` does at start.\n\n\
With --hosts (or --hosts-file), sweeps those SSH hosts instead, as a --cluster ssh run's \
setup does: removes the FAULTLINE iptables chain, kills the servers of ours that pidfiles \
under --ssh-dir name and deletes the node directories there (then --ssh-dir once empty). \
Use it after a harness was killed with SIGKILL; give the same host flags and --ssh-dir as \
the run. Exit code 254 for a bad flag, 255 when a host cannot be reached or swept.";

/// Options of `faultline cleanup`.
#[derive(Args, Debug, Clone)]
pub struct CleanupArgs {
    /// Only remove resources of runs whose owning harness process has exited (Docker and
    /// netns; not with --hosts).
    #[arg(long, conflicts_with_all = ["hosts", "hosts_file"])]
    pub stale: bool,

    #[command(flatten)]
    pub ssh: SshHostArgs,
}

/// Runs `faultline cleanup`; SSH host flags that cannot be right are refused (exit 254)
/// before any connection.
pub fn run(args: CleanupArgs) -> ExitCode {
    let options = args.ssh.into_options();
    if !options.names_hosts() {
        return super::run_simple("cleanup", cleanup_here(args.stale));
    }
    match options.validate() {
        Ok(hosts) => super::run_simple("cleanup", sweep_ssh_hosts(hosts, options)),
        Err(e) => {
            eprintln!("faultline cleanup: error: {e:#}");
            ExitCode::from(crate::exit::BAD_ARGS)
        }
    }
}

async fn sweep_ssh_hosts(hosts: Vec<String>, options: SshOptions) -> anyhow::Result<()> {
    crate::cluster::ssh::sweep_hosts(&hosts, &options).await?;
    println!(
        "swept {} SSH hosts ({}) under {}",
        hosts.len(),
        hosts.join(", "),
        options.dir
    );
    Ok(())
}

/// Docker containers and networks, and netns namespaces, on this machine.
async fn cleanup_here(stale: bool) -> anyhow::Result<()> {
    // `--cluster netns` runs: network namespaces named faultline-<run>-* (root only).
    let netns_runs = if stale {
        crate::cluster::netns::sweep_stale().await?
    } else {
        crate::cluster::netns::remove_all().await?
    };
    if !netns_runs.is_empty() {
        println!(
            "removed the network namespaces of {} netns runs",
            netns_runs.len()
        );
    }
    crate::docker::check_engine().await?;
    let swept = if stale {
        crate::cluster::sweep::sweep_stale().await?
    } else {
        crate::cluster::sweep::remove_all().await?
    };
    println!(
        "removed {} containers and {} networks",
        swept.containers, swept.networks
    );
    Ok(())
}
