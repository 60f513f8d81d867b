//! What the nemesis needs from a cluster: its nodes, process control (kill, restart,
//! pause, resume) and the network namespace of each node. A cluster implementation (the
//! Docker cluster in `faultline`, later plain-process namespaces) provides it; the nemesis
//! never knows how nodes are run.

use anyhow::Result;
use futures::future::BoxFuture;
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
