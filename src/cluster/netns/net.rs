//! The `ip` commands behind a netns cluster: namespaces, the bridge in the switch
//! namespace, veth pairs and addresses. Every name carries the run id, so a sweep can find
//! exactly what faultline made.

use super::NS_PREFIX;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Stdio;
use tokio::process::Command;

/// Runs `ip ARGS`, failing with its stderr.
async fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .context("could not run `ip` (iproute2)")?;
    if !out.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Name of the namespace of `node` (`sw` = the switch).
pub fn ns_name(run_id: &str, node: &str) -> String {
    format!("{NS_PREFIX}{run_id}-{node}")
}

pub fn ns_path(run_id: &str, node: &str) -> PathBuf {
    PathBuf::from("/run/netns").join(ns_name(run_id, node))
}

/// The run a faultline namespace belongs to (`faultline-<run>-<node>`).
pub fn run_of(ns: &str) -> Option<&str> {
    let rest = ns.strip_prefix(NS_PREFIX)?;
    rest.rsplit_once('-')
        .map(|(run, _)| run)
        .filter(|r| !r.is_empty())
}

/// Six hex digits naming the run in interface names (15 bytes at most).
pub fn short_id(run_id: &str) -> String {
    let h = run_id.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    format!("{:06x}", h & 0xff_ffff)
}

/// The host end of the link to the switch.
pub fn host_link(run_id: &str) -> String {
    format!("fl{}h", short_id(run_id))
}

/// A third octet `X` such that nothing on this machine uses `10.79.X.0/24` yet.
pub async fn free_octet(run_id: &str) -> Result<u8> {
    let used = format!(
        "{}\n{}",
        ip(&["-4", "-o", "addr"]).await?,
        ip(&["-4", "route", "show", "table", "all"]).await?
    );
    let start = u32::from_str_radix(&short_id(run_id), 16).unwrap_or(0);
    (0..250u32)
        .map(|i| ((start + i) % 250 + 1) as u8)
        .find(|x| !used.contains(&format!("10.79.{x}.")))
        .context("no free 10.79.X.0/24 subnet on this machine; run `faultline cleanup`")
}

/// Creates the switch namespace with its bridge, one namespace per node linked to it, and
/// the host's link, all addressed in `10.79.<octet>.0/24`.
pub async fn create_network(run_id: &str, octet: u8, nodes: &[String]) -> Result<()> {
    let s = short_id(run_id);
    let sw = ns_name(run_id, "sw");
    ip(&["netns", "add", &sw]).await?;
    ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"]).await?;
    ip(&["-n", &sw, "link", "set", "br0", "up"]).await?;
    ip(&["-n", &sw, "link", "set", "lo", "up"]).await?;
    for (i, node) in nodes.iter().enumerate() {
        let ns = ns_name(run_id, node);
        let (inner, outer) = (format!("fl{s}a{i}"), format!("fl{s}b{i}"));
        ip(&["netns", "add", &ns]).await?;
        ip(&[
            "link", "add", &inner, "type", "veth", "peer", "name", &outer,
        ])
        .await?;
        ip(&["link", "set", &inner, "netns", &ns]).await?;
        ip(&["link", "set", &outer, "netns", &sw]).await?;
        ip(&["-n", &ns, "link", "set", &inner, "name", "eth0"]).await?;
        ip(&[
            "-n",
            &ns,
            "addr",
            "add",
            &format!("10.79.{octet}.{}/24", 11 + i),
            "dev",
            "eth0",
        ])
        .await?;
        ip(&["-n", &ns, "link", "set", "eth0", "up"]).await?;
        ip(&["-n", &ns, "link", "set", "lo", "up"]).await?;
        ip(&["-n", &sw, "link", "set", &outer, "master", "br0", "up"]).await?;
    }
    let (host, peer) = (host_link(run_id), format!("fl{s}s"));
    ip(&["link", "add", &host, "type", "veth", "peer", "name", &peer]).await?;
    ip(&["link", "set", &peer, "netns", &sw]).await?;
    ip(&["-n", &sw, "link", "set", &peer, "master", "br0", "up"]).await?;
    ip(&["addr", "add", &format!("10.79.{octet}.1/24"), "dev", &host]).await?;
    ip(&["link", "set", &host, "up"]).await?;
    Ok(())
}

/// Deletes the host's end of the run's link (and with it the peer), if it exists.
pub async fn delete_host_link(run_id: &str) {
    let _ = ip(&["link", "del", &host_link(run_id)]).await;
}

/// Every faultline namespace on this machine.
pub async fn list_namespaces() -> Result<Vec<String>> {
    let out = ip(&["netns", "list"]).await?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(NS_PREFIX))
        .map(str::to_string)
        .collect())
}

/// Processes running in a namespace.
pub async fn pids_in(ns: &str) -> Vec<i32> {
    ip(&["netns", "pids", ns])
        .await
        .map(|o| o.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Deletes a namespace (its veth ends go with it, taking their peers along).
pub async fn delete_namespace(ns: &str) -> Result<()> {
    ip(&["netns", "delete", ns]).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_run_and_fit_interface_limits() {
        let run = "fl3a9f0012345";
        assert_eq!(ns_name(run, "n2"), "faultline-fl3a9f0012345-n2");
        assert_eq!(run_of(&ns_name(run, "sw")), Some(run));
        assert_eq!(run_of("faultline-"), None);
        assert_eq!(run_of("other-ns"), None);
        assert!(host_link(run).len() <= 15);
        assert!(format!("fl{}a8", short_id(run)).len() <= 15);
        assert_ne!(short_id("a"), short_id("b"));
    }
}
