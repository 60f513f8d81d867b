//! Firewall and traffic-control commands for one node, run where its network is: inside a
//! local network namespace, from the host, with `nsenter --net=<ns>` (a [`Path`] is a
//! [`NetExec`]), or on the node's own host (an SSH cluster's [`NetExec`]). Each command is a
//! child process, so no thread of the harness ever changes namespace. All rules live in one
//! chain, [`CHAIN`], hooked into INPUT and OUTPUT, so healing is a flush and the host's own
//! rules are never touched.

use anyhow::{bail, Context, Result};
use futures::future::BoxFuture;
use futures::FutureExt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

/// The chain holding every rule faultline adds.
pub const CHAIN: &str = "FAULTLINE";

/// Runs a command inside the network namespace `ns`.
pub async fn in_netns(ns: &Path, program: &str, args: &[&str]) -> Result<String> {
    if !ns.is_absolute() {
        bail!("network namespace path {} is not absolute", ns.display());
    }
    let out = Command::new("nsenter")
        .arg(format!("--net={}", ns.display()))
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("could not run nsenter (util-linux) for {program}"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` in {} failed ({}): {}",
            args.join(" "),
            ns.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Where one node's network commands run.
pub trait NetExec: Send + Sync {
    /// Runs `program args` in the node's network; its stdout, or an error with its stderr.
    fn run<'a>(&'a self, program: &'a str, args: &'a [&'a str]) -> BoxFuture<'a, Result<String>>;
}

impl NetExec for Path {
    fn run<'a>(&'a self, program: &'a str, args: &'a [&'a str]) -> BoxFuture<'a, Result<String>> {
        in_netns(self, program, args).boxed()
    }
}

impl NetExec for PathBuf {
    fn run<'a>(&'a self, program: &'a str, args: &'a [&'a str]) -> BoxFuture<'a, Result<String>> {
        in_netns(self, program, args).boxed()
    }
}

async fn iptables<N: NetExec + ?Sized>(ns: &N, args: &[&str]) -> Result<String> {
    let mut full = vec!["-w", "5"];
    full.extend_from_slice(args);
    ns.run("iptables", &full).await
}

/// Creates [`CHAIN`] (if missing) and hooks it first into INPUT and OUTPUT.
pub async fn ensure_chain<N: NetExec + ?Sized>(ns: &N) -> Result<()> {
    if iptables(ns, &["-S", CHAIN]).await.is_err() {
        iptables(ns, &["-N", CHAIN]).await?;
    }
    for hook in ["INPUT", "OUTPUT"] {
        if iptables(ns, &["-C", hook, "-j", CHAIN]).await.is_err() {
            iptables(ns, &["-I", hook, "1", "-j", CHAIN]).await?;
        }
    }
    Ok(())
}

/// Drops every packet arriving from `from` (one direction only).
pub async fn drop_inbound_from<N: NetExec + ?Sized>(ns: &N, from: Ipv4Addr) -> Result<()> {
    iptables(ns, &["-A", CHAIN, "-s", &from.to_string(), "-j", "DROP"])
        .await
        .map(drop)
}

/// Drops every packet sent to `to` (one direction only).
pub async fn drop_outbound_to<N: NetExec + ?Sized>(ns: &N, to: Ipv4Addr) -> Result<()> {
    iptables(ns, &["-A", CHAIN, "-d", &to.to_string(), "-j", "DROP"])
        .await
        .map(drop)
}

/// Drops a random fraction `p` of the packets arriving from `from`.
pub async fn lose_inbound_from<N: NetExec + ?Sized>(ns: &N, from: Ipv4Addr, p: f64) -> Result<()> {
    let p = format!("{:.4}", p.clamp(0.0, 1.0));
    iptables(
        ns,
        &[
            "-A",
            CHAIN,
            "-s",
            &from.to_string(),
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            &p,
            "-j",
            "DROP",
        ],
    )
    .await
    .map(drop)
}

/// Removes every faultline rule in the namespace (the chain stays, empty).
pub async fn flush<N: NetExec + ?Sized>(ns: &N) -> Result<()> {
    if iptables(ns, &["-S", CHAIN]).await.is_err() {
        return Ok(());
    }
    iptables(ns, &["-F", CHAIN]).await.map(drop)
}

/// Unhooks [`CHAIN`] from INPUT and OUTPUT and deletes it, if it exists: what a host that
/// outlives the run must be left as (a namespace of ours dies with its rules).
pub async fn remove_chain<N: NetExec + ?Sized>(ns: &N) -> Result<()> {
    if iptables(ns, &["-S", CHAIN]).await.is_err() {
        return Ok(());
    }
    for hook in ["INPUT", "OUTPUT"] {
        while iptables(ns, &["-C", hook, "-j", CHAIN]).await.is_ok() {
            iptables(ns, &["-D", hook, "-j", CHAIN]).await?;
        }
    }
    iptables(ns, &["-F", CHAIN]).await?;
    iptables(ns, &["-X", CHAIN]).await.map(drop)
}

/// The rules currently in [`CHAIN`] (`-A FAULTLINE ...` lines), for checks and tests.
pub async fn rules<N: NetExec + ?Sized>(ns: &N) -> Result<Vec<String>> {
    let out = iptables(ns, &["-S", CHAIN]).await?;
    Ok(out
        .lines()
        .filter(|l| l.starts_with("-A"))
        .map(str::to_string)
        .collect())
}

/// Whether `tc qdisc ... netem` works in this namespace (it does not on kernels built
/// without sch_netem); probed by adding and removing a no-op qdisc.
pub async fn netem_available<N: NetExec + ?Sized>(ns: &N, dev: &str) -> bool {
    let added = ns
        .run(
            "tc",
            &["qdisc", "add", "dev", dev, "root", "netem", "loss", "0%"],
        )
        .await
        .is_ok();
    if added {
        let _ = ns.run("tc", &["qdisc", "del", "dev", dev, "root"]).await;
    }
    added
}

/// Applies netem packet loss on `dev` (only when [`netem_available`]).
pub async fn netem_loss<N: NetExec + ?Sized>(ns: &N, dev: &str, p: f64) -> Result<()> {
    let pct = format!("{:.2}%", p.clamp(0.0, 1.0) * 100.0);
    ns.run(
        "tc",
        &[
            "qdisc", "replace", "dev", dev, "root", "netem", "loss", &pct,
        ],
    )
    .await
    .map(drop)
}

/// Removes any netem qdisc from `dev` (no error if there is none).
pub async fn netem_clear<N: NetExec + ?Sized>(ns: &N, dev: &str) {
    let _ = ns.run("tc", &["qdisc", "del", "dev", dev, "root"]).await;
}
