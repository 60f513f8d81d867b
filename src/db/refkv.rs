//! refkv, the reference store in this workspace: every group on every node, commit
//! metadata on every response, a watched route catalog, splits and cross-group moves — so
//! every checker applies.

use super::leader_reads::LeaderReadConnector;
use super::{Db, DbKind, NodeLayout, Reports};
use crate::image;
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{FaultKind, NodeInfo};
use std::path::PathBuf;
use std::sync::Arc;
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

    fn server_args(&self, auto_split: bool, bug: Option<&str>) -> Vec<String> {
        let mut args = vec!["--groups".to_string(), self.groups.to_string()];
        if auto_split {
            args.push("--auto-split".to_string());
        }
        if let Some(b) = bug {
            args.extend(["--bug".to_string(), b.to_string()]);
        }
        args
    }

    fn seeded_bugs(&self) -> bool {
        true
    }

    /// Built statically from this workspace (a no-op when up to date).
    fn default_binary(&self) -> BoxFuture<'static, anyhow::Result<PathBuf>> {
        async {
            match image::workspace_root() {
                Some(root) => image::build_static_server(&root).await,
                None => anyhow::bail!(
                    "the faultline sources are not next to this binary, so refkv cannot be built: pass --db-binary or --image"
                ),
            }
        }
        .boxed()
    }

    fn static_binary(&self) -> bool {
        true
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
