//! Cluster lifecycle: Jepsen's *db*. A [`Cluster`] is a running set of server nodes the
//! harness can start, fault (through [`nemesis::NodeControl`]), collect logs from and tear
//! down. [`docker::DockerCluster`] runs each node as a sandbox container holding the network
//! namespace plus a server container joined to it; other kinds (network namespaces without
//! Docker, external clusters) and other servers (etcd, elastickv) implement the same trait.
//! Clusters that run their nodes also report every exit of a server process
//! ([`Cluster::poll_exits`], bookkeeping in [`lifecycle`]).

pub mod docker;
pub mod external;
pub mod lifecycle;
pub mod netns;
pub mod owner;
pub mod ssh;
pub mod subnet;
pub mod sweep;

use anyhow::Result;
use futures::future::BoxFuture;
use nemesis::NodeControl;
use std::path::Path;

/// A running cluster under test.
pub trait Cluster: NodeControl {
    /// A JSON description for `test.json` (kind, network, image, node addresses).
    fn describe(&self) -> serde_json::Value;
    /// Copies every node's server log into `dir/<node>.log`.
    fn collect_logs<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<()>>;
    /// Removes every resource of the cluster. Safe to call more than once. Every exit from
    /// the moment it starts is expected.
    fn teardown(&self) -> BoxFuture<'_, Result<()>>;
    /// Whether faultline runs the nodes, so that their exits can be watched.
    fn watches_lifecycle(&self) -> bool {
        true
    }
    /// The exits of server processes not reported before, each once, marked expected when a
    /// kill or the teardown caused them.
    fn poll_exits(&self) -> BoxFuture<'_, Result<Vec<lifecycle::NodeExit>>>;
    /// Nodes whose exit [`Cluster::poll_exits`] reported and that were not started since.
    fn down_nodes(&self) -> Vec<String> {
        Vec::new()
    }
}
