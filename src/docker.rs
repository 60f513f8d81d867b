//! A thin wrapper over the `docker` command-line client.
//!
//! faultline drives Docker through its CLI (always present where an engine is) rather than
//! the HTTP API: every call is a short child process whose failure is turned into an error
//! that says which command failed and what Docker printed. Everything faultline creates
//! carries the label `faultline=1` plus the run's labels, and the helpers here only ever
//! list or remove resources filtered by that label.

use anyhow::{bail, Context, Result};
use std::process::Stdio;
use tokio::process::Command;

/// The label every faultline-created container, network and image carries.
pub const LABEL: &str = "faultline=1";
/// Label key naming the run a container or network belongs to.
pub const RUN_LABEL: &str = "faultline.run";
/// Label key naming the harness process that owns a run: `<pid>:<start time in ticks>`.
pub const OWNER_LABEL: &str = "faultline.owner";

/// Runs `docker <args>` and returns its standard output, trimmed.
pub async fn docker(args: &[&str]) -> Result<String> {
    let out = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(no_docker_client)?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!(
            "`docker {}` failed ({}): {}",
            args.join(" "),
            out.status,
            stderr.trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Like [`docker`] but for owned argument lists.
pub async fn docker_owned(args: &[String]) -> Result<String> {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    docker(&refs).await
}

fn no_docker_client(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        anyhow::anyhow!(
            "the `docker` command was not found: faultline's Docker cluster needs the Docker CLI \
             and a running engine (install docker.io, or run without Docker: `--cluster netns`, as root)"
        )
    } else {
        anyhow::anyhow!("could not run `docker`: {e}")
    }
}

/// Checks that the Docker engine answers; the error tells a person what to do.
pub async fn check_engine() -> Result<String> {
    match docker(&["version", "--format", "{{.Server.Version}}"]).await {
        Ok(v) if !v.is_empty() => Ok(v),
        Ok(_) => {
            bail!("the Docker engine did not report a version; is it running? (`docker info`)")
        }
        Err(e) => Err(e).context(
            "the Docker engine is not reachable: start it (e.g. `service docker start` or \
             `systemctl start docker`) and check that `docker info` works for this user; \
             or run without Docker: `--cluster netns` (as root) runs each node as a process \
             in its own network namespace",
        ),
    }
}

/// IDs of the containers (running or not) whose labels match all `filters` (`key=value`).
pub async fn containers_with(filters: &[&str]) -> Result<Vec<String>> {
    let labels: Vec<String> = filters.iter().map(|f| format!("label={f}")).collect();
    let mut a: Vec<&str> = vec!["ps", "-aq", "--no-trunc"];
    for l in &labels {
        a.push("--filter");
        a.push(l);
    }
    Ok(lines(&docker(&a).await?))
}

/// IDs of the networks whose labels match all `filters` (`key=value`).
pub async fn networks_with(filters: &[&str]) -> Result<Vec<String>> {
    let labels: Vec<String> = filters.iter().map(|f| format!("label={f}")).collect();
    let mut a: Vec<&str> = vec!["network", "ls", "-q", "--no-trunc"];
    for l in &labels {
        a.push("--filter");
        a.push(l);
    }
    Ok(lines(&docker(&a).await?))
}

/// One label of a container or network, empty if absent.
pub async fn label_of(kind: &str, id: &str, key: &str) -> Result<String> {
    let fmt = format!("{{{{index .Config.Labels \"{key}\"}}}}");
    let fmt = if kind == "network" {
        format!("{{{{index .Labels \"{key}\"}}}}")
    } else {
        fmt
    };
    let out = docker(&[kind, "inspect", "--format", &fmt, id]).await?;
    Ok(if out == "<no value>" {
        String::new()
    } else {
        out
    })
}

/// Force-removes containers (kills them first), ignoring ones already gone.
pub async fn remove_containers(ids: &[String]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut args = vec!["rm".to_string(), "-f".to_string(), "-v".to_string()];
    args.extend(ids.iter().cloned());
    match docker_owned(&args).await {
        Ok(_) => Ok(()),
        Err(e) if e.to_string().contains("No such container") => Ok(()),
        Err(e) => Err(e),
    }
}

/// Removes networks, ignoring ones already gone.
pub async fn remove_networks(ids: &[String]) -> Result<()> {
    for id in ids {
        match docker(&["network", "rm", id]).await {
            Ok(_) => {}
            Err(e)
                if e.to_string().contains("No such network")
                    || e.to_string().contains("not found") => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The subnets (CIDR strings) of every Docker network on this engine.
pub async fn all_network_subnets() -> Result<Vec<String>> {
    let ids = lines(&docker(&["network", "ls", "-q"]).await?);
    let mut subnets = Vec::new();
    for id in ids {
        let out = docker(&[
            "network",
            "inspect",
            "--format",
            "{{range .IPAM.Config}}{{.Subnet}} {{end}}",
            &id,
        ])
        .await
        .unwrap_or_default();
        subnets.extend(out.split_whitespace().map(str::to_string));
    }
    Ok(subnets)
}

/// The host PID of a running container's init process (0 if it is not running).
pub async fn container_pid(name: &str) -> Result<u32> {
    let out = docker(&["inspect", "--format", "{{.State.Pid}}", name]).await?;
    out.parse::<u32>()
        .with_context(|| format!("docker inspect gave a non-numeric pid {out:?} for {name}"))
}

/// The state of a container (`running`, `paused`, `exited`, ...).
pub async fn container_state(name: &str) -> Result<String> {
    docker(&["inspect", "--format", "{{.State.Status}}", name]).await
}

fn lines(s: &str) -> Vec<String> {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}
