//! etcd (Debian's `etcd-server`, 3.4): three members bootstrapped statically
//! (`--initial-cluster` with IP:port peer URLs), one Raft group, linearizable reads by
//! default. No route catalog, no splits, no commit metadata in faultline's sense: the
//! linearizability, set-full, isolation (the `append` and `rw-register` transactions, as
//! `KV.Txn`) and vacuity checkers apply; epoch-authority and split are `not-applicable`.
//!
//! The node image (`crate::image`) holds `/etcd`, the C libraries it links (Debian builds
//! it as a dynamic executable — found with `ldd` and copied in), and the sandbox `/pause`, on
//! an empty base; nothing is pulled. See `docs/etcd.md`.

use super::{Capabilities, Capability, Db, DbKind, NodeLayout, Reports};
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{FaultKind, NodeInfo};
use std::path::PathBuf;
use std::sync::Arc;
use workloads::client::{Connector, NodeEndpoint, Protocol};
use workloads::etcd::EtcdConnector;
use workloads::{ClientCapability, ClientOptions};

/// etcd's peer (Raft) port on every member; the client port is the node address's port.
pub const PEER_PORT: u16 = 2380;

#[derive(Debug, Clone, Default)]
pub struct Etcd;

/// The `etcd` binary on the PATH.
pub fn find_etcd() -> anyhow::Result<PathBuf> {
    super::on_path("etcd", "etcd-server")
}

/// The member name of a node (`n1`, ...), used in `--initial-cluster`.
fn peer_url(node: &NodeInfo) -> String {
    format!("http://{}:{PEER_PORT}", node.ip)
}

impl Db for Etcd {
    fn kind(&self) -> DbKind {
        DbKind::Etcd
    }

    fn node_command(&self, node: &NodeInfo, all: &[NodeInfo], layout: &NodeLayout, extra: &[String]) -> Vec<String> {
        let cluster: Vec<String> = all.iter().map(|n| format!("{}={}", n.name, peer_url(n))).collect();
        let client_url = format!("http://{}", node.addr);
        let mut cmd = vec![layout.binary.clone()];
        for (flag, value) in [
            ("--name", node.name.clone()),
            ("--data-dir", format!("{}/etcd", layout.data_dir)),
            ("--listen-client-urls", client_url.clone()),
            ("--advertise-client-urls", client_url),
            ("--listen-peer-urls", peer_url(node)),
            ("--initial-advertise-peer-urls", peer_url(node)),
            ("--initial-cluster", cluster.join(",")),
            ("--initial-cluster-state", "new".into()),
            ("--initial-cluster-token", "faultline".into()),
            ("--logger", "zap".into()),
        ] {
            cmd.push(format!("{flag}={value}"));
        }
        cmd.extend(extra.iter().cloned());
        cmd
    }

    /// `etcd` on the PATH.
    fn default_binary(&self) -> BoxFuture<'static, anyhow::Result<PathBuf>> {
        std::future::ready(find_etcd()).boxed()
    }

    fn groups(&self) -> Vec<u64> {
        vec![1]
    }

    fn connector(&self, options: ClientOptions, _nodes: &[NodeEndpoint]) -> Arc<dyn Connector> {
        Arc::new(EtcdConnector { options })
    }

    fn reports(&self) -> Reports {
        Reports { commit_meta: false, catalog: false, splits: false }
    }

    fn faults(&self) -> &'static [FaultKind] {
        &[FaultKind::PARTITION, FaultKind::KILL, FaultKind::PAUSE, FaultKind::LOSS]
    }

    /// Linearizable reads (etcd's default), compare-and-set as a `Txn` comparing the
    /// value, and transactions as `KV.Txn` (`workloads::etcd::txn`), over gRPC.
    fn capabilities(&self) -> Capabilities {
        Capabilities::of(&[
            Capability::LinearizableReads,
            Capability::Client(Protocol::Grpc, ClientCapability::Cas),
            Capability::Client(Protocol::Grpc, ClientCapability::Txn),
        ])
    }
}
