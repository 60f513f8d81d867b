//! Redis (Debian's `redis-server`) as a one-node target, so the Redis client is tested
//! against a real Redis-protocol server: register (with cas as a Lua script) and set
//! workloads, `kill` and `pause` faults. No route catalog, no splits, no commit metadata:
//! epoch-authority and split are `not-applicable`.
//!
//! The node runs with Redis's compiled-in persistence defaults (no config file): RDB
//! snapshots after 3600 s with ≥ 1 change, 300 s with ≥ 100, 60 s with ≥ 10000, and no
//! append-only file. So a `kill` (SIGKILL) loses every write acknowledged since the last
//! snapshot, and a short run that kills the node loses its earlier inserts: the set-full
//! checker reports them as lost, which is the promise Redis makes, not a harness fault.
//!
//! Invariant: the node listens on its own `ip:port` only and keeps its files in its data dir.

use super::{Capabilities, Capability, Db, DbKind, NodeLayout, Reports};
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{FaultKind, NodeInfo};
use std::path::PathBuf;
use std::sync::Arc;
use workloads::client::redis::RedisConnector;
use workloads::client::{Connector, NodeEndpoint, Protocol};
use workloads::{ClientCapability, ClientOptions};

#[derive(Debug, Clone, Default)]
pub struct Redis;

impl Db for Redis {
    fn kind(&self) -> DbKind {
        DbKind::Redis
    }

    fn node_command(&self, node: &NodeInfo, _all: &[NodeInfo], layout: &NodeLayout, extra: &[String]) -> Vec<String> {
        let port = node.addr.rsplit(':').next().unwrap_or("6379").to_string();
        let mut cmd = vec![layout.binary.clone()];
        for (flag, value) in [
            ("--bind", node.ip.to_string()),
            ("--port", port),
            ("--dir", layout.data_dir.clone()),
            ("--protected-mode", "no".into()),
            ("--daemonize", "no".into()),
        ] {
            cmd.push(flag.to_string());
            cmd.push(value);
        }
        cmd.extend(extra.iter().cloned());
        cmd
    }

    fn groups(&self) -> Vec<u64> {
        vec![1]
    }

    fn connector(&self, options: ClientOptions, nodes: &[NodeEndpoint]) -> Arc<dyn Connector> {
        Arc::new(RedisConnector::new(nodes.to_vec(), options.redis()))
    }

    fn reports(&self) -> Reports {
        Reports {
            commit_meta: false,
            catalog: false,
            splits: false,
        }
    }

    fn faults(&self) -> &'static [FaultKind] {
        &[FaultKind::KILL, FaultKind::PAUSE]
    }

    fn default_binary(&self) -> BoxFuture<'static, anyhow::Result<PathBuf>> {
        std::future::ready(super::on_path("redis-server", "redis-server")).boxed()
    }

    fn protocols(&self) -> &'static [Protocol] {
        &[Protocol::Redis]
    }

    /// One node's reads are linearizable; compare-and-set is a Lua script, transactions
    /// are `MULTI`/`EXEC`.
    fn capabilities(&self) -> Capabilities {
        Capabilities::of(&[
            Capability::LinearizableReads,
            Capability::Client(Protocol::Redis, ClientCapability::Cas),
            Capability::Client(Protocol::Redis, ClientCapability::Txn),
            Capability::Client(Protocol::Redis, ClientCapability::Zset),
        ])
    }

    fn nodes(&self) -> Option<u8> {
        Some(1)
    }
}
