//! refkv, the reference store in this workspace: every group on every node, commit
//! metadata on every response, a watched route catalog, splits and cross-group moves — so
//! every checker applies.

use super::{Db, DbKind, NodeLayout, Reports};
use nemesis::{FaultKind, NodeInfo};
use std::sync::Arc;
use super::leader_reads::LeaderReadConnector;
use workloads::client::{Connector, NodeEndpoint, ReadPath};
use workloads::{ClientOptions, GrpcConnector};

#[derive(Debug, Clone)]
pub struct Refkv {
    /// Raft groups per node (`--groups`).
    pub groups: u32,
}

impl Db for Refkv {
    fn kind(&self) -> DbKind {
        DbKind::Refkv
    }

    fn node_command(&self, node: &NodeInfo, all: &[NodeInfo], layout: &NodeLayout, extra: &[String]) -> Vec<String> {
        let peers: Vec<String> = all.iter().map(|n| format!("{}={}", n.id, n.addr)).collect();
        let mut cmd = vec![layout.binary.clone(), "serve".into(), "--id".into(), node.id.to_string()];
        cmd.extend(["--listen".into(), node.addr.clone(), "--peers".into(), peers.join(",")]);
        cmd.extend(["--data-dir".into(), layout.data_dir.clone()]);
        cmd.extend(extra.iter().cloned());
        cmd
    }

    fn groups(&self) -> Vec<u64> {
        (1..=u64::from(self.groups)).collect()
    }

    fn connector(&self, options: ClientOptions, nodes: &[NodeEndpoint]) -> Arc<dyn Connector> {
        let plain: Arc<dyn Connector> = Arc::new(GrpcConnector { options });
        match options.read_path {
            ReadPath::Node => plain,
            ReadPath::Leader => Arc::new(LeaderReadConnector::new(plain, nodes)),
        }
    }

    fn read_paths(&self) -> bool {
        true
    }

    fn reports(&self) -> Reports {
        Reports { commit_meta: true, catalog: true, splits: true }
    }

    fn workloads(&self) -> &'static [&'static str] {
        &["hotspot", "register", "set"]
    }

    fn faults(&self) -> &'static [FaultKind] {
        FaultKind::ALL
    }
}
