//! `faultline cleanup`: removes every container and network labelled `faultline=1` and the
//! network namespaces of `--cluster netns` runs (or only the runs it names, or only the
//! stale ones; `--list` shows what is up); with `--hosts`, instead sweeps SSH hosts of what
//! `--cluster ssh` runs left there (never anything else on them). A run started with
//! `--leave-running` is never stale: only naming it, or cleaning up everything, removes it.

use super::test::ssh_args::SshHostArgs;
use crate::cluster::ssh::SshOptions;
use clap::Args;
use std::process::ExitCode;

/// `faultline cleanup --help`'s text.
pub const CLEANUP_LONG_ABOUT: &str = "Removes every Docker container and network that faultline \
created (label faultline=1): clusters of finished, crashed or --leave-running runs, and the \
docker-compose cluster; and, as root, the network namespaces of --cluster netns runs. Never \
touches anything else. With RUN arguments, removes only those runs (their ids, as --list \
shows them). With --stale, removes only the resources of runs whose harness process is gone, \
as every `faultline test` does at start; a run started with --leave-running is never stale, \
so only naming it (or a bare `faultline cleanup`) removes it. --list shows every run that \
is up, with its owner and whether it was left running.\n\n\
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
    #[arg(long, conflicts_with_all = ["hosts", "hosts_file", "runs", "list"])]
    pub stale: bool,

    /// Show every run whose Docker resources or network namespaces are up (with its owner
    /// and whether it was left running), and remove nothing.
    #[arg(long, conflicts_with_all = ["hosts", "hosts_file", "runs"])]
    pub list: bool,

    /// Remove only these runs (ids as `--list` shows them), left running or not.
    #[arg(value_name = "RUN", conflicts_with_all = ["hosts", "hosts_file"])]
    pub runs: Vec<String>,

    #[command(flatten)]
    pub ssh: SshHostArgs,
}

/// Runs `faultline cleanup`; SSH host flags that cannot be right are refused (exit 254)
/// before any connection.
pub fn run(args: CleanupArgs) -> ExitCode {
    let options = args.ssh.into_options();
    if !options.names_hosts() {
        if args.list {
            return super::run_simple("cleanup", list_here());
        }
        if !args.runs.is_empty() {
            return super::run_simple("cleanup", remove_named(args.runs));
        }
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

/// Prints every run that is up here: `RUN  KIND  OWNER`.
async fn list_here() -> anyhow::Result<()> {
    let mut lines = Vec::new();
    for (run, tag) in crate::cluster::netns::list_runs().await {
        lines.push(format!(
            "{run}\tnetns\t{}",
            crate::cluster::owner::describe(&tag)
        ));
    }
    match crate::docker::check_engine().await {
        Ok(_) => {
            for (run, tag) in crate::cluster::sweep::list_runs().await? {
                let owner = if tag.is_empty() {
                    "no owner (not a test run)".to_string()
                } else {
                    crate::cluster::owner::describe(&tag)
                };
                lines.push(format!("{run}\tdocker\t{owner}"));
            }
        }
        Err(e) => eprintln!("faultline cleanup: Docker not listed: {e:#}"),
    }
    if lines.is_empty() {
        println!("no faultline run is up");
    }
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

/// Removes the named runs' namespaces and Docker resources.
async fn remove_named(runs: Vec<String>) -> anyhow::Result<()> {
    let netns: Vec<String> = crate::cluster::netns::list_runs()
        .await
        .into_iter()
        .map(|(run, _)| run)
        .collect();
    let docker_up = crate::docker::check_engine().await.is_ok();
    let in_docker = if docker_up {
        crate::cluster::sweep::list_runs().await?
    } else {
        Default::default()
    };
    for run in &runs {
        let mut found = false;
        if netns.contains(run) {
            crate::cluster::netns::remove_run(run).await?;
            found = true;
        }
        if in_docker.contains_key(run) {
            crate::cluster::sweep::remove_run(run).await?;
            found = true;
        }
        if found {
            println!("removed run {run}");
        } else {
            anyhow::bail!("no run {run} is up (see `faultline cleanup --list`)");
        }
    }
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
