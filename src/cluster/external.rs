//! `--cluster external`: a cluster someone else runs, reached at `--endpoints`. faultline
//! has no lifecycle over it — it neither starts, kills, pauses nor partitions its nodes, so
//! only client-side faults (none yet beyond the workload itself) and the split nemesis,
//! which goes through the store's API, apply; the plan refuses the others up front.
//!
//! The same type stands for the nodes of an in-process target (`--db null`,
//! [`ClusterKind::InProcess`]): named nodes that all reach the one store in faultline's own
//! process, with no process to kill, pause or partition.
//!
//! Invariant: every node-control call is refused with the reason; nothing is ever started
//! or removed, so teardown is a no-op.

use super::Cluster;
use crate::db::ClusterKind;
use anyhow::{bail, Context, Result};
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{NodeControl, NodeInfo};
use std::net::{Ipv4Addr, ToSocketAddrs};
use std::path::{Path, PathBuf};

/// A cluster faultline only talks to.
pub struct ExternalCluster {
    nodes: Vec<NodeInfo>,
    /// `External` or `InProcess`.
    kind: ClusterKind,
}

/// The client address of every node of an in-process cluster.
pub const IN_PROCESS_ADDR: &str = "in-process";

/// Parses `host:port,host:port,...` into nodes `n1`, `n2`, ... (host names are resolved
/// once, now; the IPv4 address is what partitions would need, kept for the history).
pub fn parse_endpoints(list: &str) -> Result<Vec<NodeInfo>> {
    let mut nodes = Vec::new();
    for (i, raw) in list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .enumerate()
    {
        let id = i as u64 + 1;
        let (host, port) = raw
            .rsplit_once(':')
            .with_context(|| format!("endpoint {raw:?}: expected host:port"))?;
        let port: u16 = port
            .parse()
            .with_context(|| format!("endpoint {raw:?}: bad port {port:?}"))?;
        let ip = (host, port)
            .to_socket_addrs()
            .with_context(|| format!("endpoint {raw:?}: cannot resolve {host:?}"))?
            .find_map(|a| match a.ip() {
                std::net::IpAddr::V4(v4) => Some(v4),
                std::net::IpAddr::V6(_) => None,
            })
            .unwrap_or(Ipv4Addr::UNSPECIFIED);
        nodes.push(NodeInfo {
            name: format!("n{id}"),
            id,
            ip,
            addr: raw.to_string(),
        });
    }
    if nodes.is_empty() {
        bail!("--endpoints is empty: give the nodes' client addresses, host:port,...");
    }
    Ok(nodes)
}

impl ExternalCluster {
    pub fn new(endpoints: &str) -> Result<ExternalCluster> {
        Ok(ExternalCluster {
            nodes: parse_endpoints(endpoints)?,
            kind: ClusterKind::External,
        })
    }

    /// `nodes` named nodes `n1`, ... of an in-process store.
    pub fn in_process(nodes: usize) -> ExternalCluster {
        let nodes = (1..=nodes as u64)
            .map(|id| NodeInfo {
                name: format!("n{id}"),
                id,
                ip: Ipv4Addr::LOCALHOST,
                addr: IN_PROCESS_ADDR.into(),
            })
            .collect();
        ExternalCluster {
            nodes,
            kind: ClusterKind::InProcess,
        }
    }

    fn refuse<'a, T: Send + 'a>(
        &self,
        what: &'static str,
        node: &'a str,
    ) -> BoxFuture<'a, Result<T>> {
        let why = match self.kind {
            ClusterKind::InProcess => "the store runs inside faultline: there is no node process",
            _ => "--cluster external gives faultline no control over the nodes",
        };
        async move { bail!("cannot {what} {node}: {why}") }.boxed()
    }
}

impl NodeControl for ExternalCluster {
    fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }
    fn kill<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        self.refuse("kill", node)
    }
    fn restart<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        self.refuse("restart", node)
    }
    fn pause<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        self.refuse("pause", node)
    }
    fn resume<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>> {
        self.refuse("resume", node)
    }
    fn netns<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PathBuf>> {
        self.refuse("partition", node)
    }
}

impl Cluster for ExternalCluster {
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": self.kind.name(),
            "nodes": self.nodes.iter().map(|n| serde_json::json!({"name": n.name, "addr": n.addr})).collect::<Vec<_>>(),
        })
    }

    fn collect_logs<'a>(&'a self, _dir: &'a Path) -> BoxFuture<'a, Result<()>> {
        async { Ok(()) }.boxed()
    }

    fn teardown(&self) -> BoxFuture<'_, Result<()>> {
        async { Ok(()) }.boxed()
    }

    /// Someone else runs the nodes (or there are none): faultline cannot see processes exit.
    fn watches_lifecycle(&self) -> bool {
        false
    }

    fn poll_exits(&self) -> BoxFuture<'_, Result<Vec<super::lifecycle::NodeExit>>> {
        async { Ok(Vec::new()) }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_become_named_nodes() {
        let nodes = parse_endpoints("127.0.0.1:2379, 127.0.0.2:2379").unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(
            (nodes[1].name.as_str(), nodes[1].id, nodes[1].addr.as_str()),
            ("n2", 2, "127.0.0.2:2379")
        );
        assert_eq!(nodes[1].ip, Ipv4Addr::new(127, 0, 0, 2));
    }

    #[test]
    fn bad_endpoints_are_explained() {
        for (bad, says) in [
            ("", "empty"),
            ("localhost", "host:port"),
            ("127.0.0.1:http", "bad port"),
        ] {
            let e = format!("{:#}", parse_endpoints(bad).unwrap_err());
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[tokio::test]
    async fn node_control_is_refused_with_the_reason() {
        let c = ExternalCluster::new("127.0.0.1:1").unwrap();
        let e = c.kill("n1").await.unwrap_err().to_string();
        assert!(e.contains("--cluster external"), "{e}");
        assert!(c.netns("n1").await.is_err());
        c.teardown().await.unwrap();
    }

    #[tokio::test]
    async fn in_process_nodes_are_named_and_refuse_control_with_the_reason() {
        let c = ExternalCluster::in_process(3);
        let names: Vec<&str> = c.nodes().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["n1", "n2", "n3"]);
        let e = c.pause("n2").await.unwrap_err().to_string();
        assert!(
            e.contains("cannot pause n2") && e.contains("inside faultline"),
            "{e}"
        );
        assert_eq!(c.describe()["kind"], "in-process");
        assert!(!c.watches_lifecycle());
    }
}
