//! refkv, the reference store in this workspace: every group on every node, commit
//! metadata on every response, a watched route catalog, splits and cross-group moves — so
//! every checker applies.

use super::leader_reads::LeaderReadConnector;
use super::{Capabilities, Capability, Db, DbKind, NodeLayout, Reports};
use crate::image;
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{FaultKind, NodeInfo};
use std::path::PathBuf;
use std::sync::Arc;
use workloads::client::{Connector, NodeEndpoint, Protocol, ReadPath};
use analysis::history::store_keys::StoreKeys;
use workloads::client::dynamodb::tables::append_table_names;
use workloads::{ClientCapability, ClientOptions, GrpcConnector};

/// refkv's default `--split-cooldown` (its `AutoSplitConfig::default().cooldown`).
pub const DEFAULT_SPLIT_COOLDOWN_S: f64 = 30.0;

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
        cmd.extend(["--dynamo-listen".into(), format!("{}:{}", node.ip, super::dynamodb::DYNAMO_PORT)]);
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

    /// `--split-cooldown` among the server flags, else refkv's default.
    fn split_cooldown_s(&self, server_args: &[String]) -> Option<f64> {
        Some(flag_duration_s(server_args, "--split-cooldown").unwrap_or(DEFAULT_SPLIT_COOLDOWN_S))
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

    fn groups(&self) -> Vec<u64> {
        (1..=u64::from(self.groups)).collect()
    }

    fn connector(&self, options: ClientOptions, nodes: &[NodeEndpoint]) -> Arc<dyn Connector> {
        let plain: Arc<dyn Connector> = Arc::new(GrpcConnector { options });
        let grpc: Arc<dyn Connector> = match options.read_path {
            ReadPath::Node => plain,
            ReadPath::Leader => Arc::new(LeaderReadConnector::new(plain, nodes)),
        };
        match options.protocol {
            Protocol::Dynamodb => Arc::new(super::dynamodb::connector(grpc, &options)),
            Protocol::Grpc | Protocol::Redis | Protocol::S3 | Protocol::Sqs => grpc,
        }
    }

    /// Through DynamoDB, an item is stored at its hash key, a 0 byte, its table (refkv
    /// `dynamo/model.rs`, `item_key`); through gRPC, at the client's key.
    fn store_keys(&self, options: &ClientOptions) -> StoreKeys {
        match options.protocol {
            Protocol::Dynamodb => StoreKeys::DynamoItemKey {
                tables: append_table_names(options.dynamo_tables),
            },
            Protocol::Grpc | Protocol::Redis => StoreKeys::Identity,
            // Objects are kept under keys of the S3 adapter's own (`!s3|obj|head|…`).
            Protocol::S3 | Protocol::Sqs => StoreKeys::Unknown,
        }
    }

    /// gRPC (refkv's own protocol) and its DynamoDB subset (`--dynamo-listen`, docs/dynamodb.md).
    fn protocols(&self) -> &'static [Protocol] {
        &[Protocol::Grpc, Protocol::Dynamodb]
    }

    /// A static binary with seeded bugs, linearizable reads that can be aimed at a group
    /// leader, compare-and-set, and transactions through its `RefkvTxn` service (two-phase
    /// commit across groups; docs/refkv.md) over gRPC and over its DynamoDB subset.
    fn capabilities(&self) -> Capabilities {
        Capabilities::of(&[
            Capability::StaticBinary,
            Capability::SeededBugs,
            Capability::LeaderReadPath,
            Capability::LinearizableReads,
            Capability::Client(Protocol::Grpc, ClientCapability::Cas),
            Capability::Client(Protocol::Grpc, ClientCapability::Txn),
            Capability::Client(Protocol::Dynamodb, ClientCapability::Txn),
        ])
    }

    fn reports(&self) -> Reports {
        Reports { commit_meta: true, catalog: true, splits: true }
    }

    fn faults(&self) -> &'static [FaultKind] {
        FaultKind::ALL
    }
}

/// The value of a duration flag (`--flag=30s` or `--flag 30s`; `s`, `ms`, `m` or plain
/// seconds) among server arguments; the last occurrence wins.
pub fn flag_duration_s(args: &[String], flag: &str) -> Option<f64> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        let value = match a.strip_prefix(flag) {
            Some(rest) if rest.starts_with('=') => Some(&rest[1..]),
            Some("") => args.get(i + 1).map(String::as_str),
            _ => None,
        };
        if let Some(v) = value.and_then(parse_duration_s) {
            found = Some(v);
        }
    }
    found
}

fn parse_duration_s(v: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60.0)
    } else {
        (v, 1.0)
    };
    num.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).map(|x| x * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_flags_in_every_spelling() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(flag_duration_s(&args(&["--split-cooldown", "30s"]), "--split-cooldown"), Some(30.0));
        assert_eq!(flag_duration_s(&args(&["--split-cooldown=500ms"]), "--split-cooldown"), Some(0.5));
        assert_eq!(flag_duration_s(&args(&["--split-cooldown=2m", "--split-cooldown=7"]), "--split-cooldown"), Some(7.0));
        assert_eq!(flag_duration_s(&args(&["--split-cooldown-x=5s", "--split-cooldown"]), "--split-cooldown"), None);
        assert_eq!(flag_duration_s(&args(&["--split-cooldown=soon"]), "--split-cooldown"), None);
    }
}
