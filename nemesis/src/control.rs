//! What the nemesis needs from a cluster: its nodes, process control (kill, restart,
//! pause, resume) and where each node's network commands run (its network namespace, or
//! its own host over SSH). A cluster implementation (Docker, netns, SSH in `faultline`)
//! provides it; the nemesis never knows how nodes are run.

use crate::net::NetExec;
use anyhow::Result;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// One node of the cluster under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// Short name used in histories and logs: `n1`, `n2`, ...
    pub name: String,
    /// The server's node id (`--id`), 1-based.
    pub id: u64,
    /// The node's address on the test network.
    pub ip: Ipv4Addr,
    /// Client/peer endpoint, `IP:PORT`.
    pub addr: String,
}

/// Process and network control over the nodes of a running cluster.
pub trait NodeControl: Send + Sync {
    /// All nodes, in id order.
    fn nodes(&self) -> &[NodeInfo];
    /// Kills the node's server process at once (SIGKILL); its network namespace survives.
    fn kill<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Starts a killed node's server again with the same data dir.
    fn restart<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Freezes the node's server process (SIGSTOP or cgroup freeze).
    fn pause<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Unfreezes a paused node.
    fn resume<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<()>>;
    /// A path naming the node's network namespace (`/proc/<pid>/ns/net` or
    /// `/run/netns/<name>`), for `nsenter --net=<path>`.
    fn netns<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PathBuf>>;
    /// Where the node's firewall and traffic-control commands run: by default inside its
    /// network namespace ([`NodeControl::netns`]).
    fn node_net<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<Box<dyn NetExec + 'a>>> {
        async move { Ok(Box::new(self.netns(node).await?) as Box<dyn NetExec>) }.boxed()
    }
    /// Whether packet loss may use netem on the node's `eth0` (a namespace of ours has one;
    /// a real host's interfaces carry the harness's own traffic too).
    fn netem_usable(&self) -> bool {
        true
    }
}

impl NodeInfo {
    /// The node with this name, or an error naming the known ones.
    pub fn find<'a>(nodes: &'a [NodeInfo], name: &str) -> Result<&'a NodeInfo> {
        nodes.iter().find(|n| n.name == name).ok_or_else(|| {
            let known: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
            anyhow::anyhow!("no node named {name:?} (nodes: {})", known.join(", "))
        })
    }
}
