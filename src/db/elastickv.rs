//! elastickv (bootjp/elastickv), the Go multi-Raft KV faultline was written for. Nodes come
//! from a user-provided image (`--image`) or binary (`--db-binary`); faultline never builds
//! elastickv. The client speaks elastickv's RawKV / Distribution / RaftAdmin subset
//! ([`node`], [`client`], [`errors`]); elastickv reports no commit metadata, so
//! epoch-authority is `not-applicable`, and the split checker applies only to splits forced
//! by the split nemesis (elastickv has no auto-split at d9a031d). See `docs/elastickv.md`.
//!
//! Node flags, as elastickv's `main.go` declares them (~60–140): `--address` (gRPC + Raft of
//! group 1), `--redisAddress`, `--dynamoAddress`, `--s3Address`, `--sqsAddress`, `--metricsAddress`, `--pprofAddress`,
//! `--raftId`, `--raftDataDir`, and either `--raftBootstrapMembers id=host:port,...` (one
//! group) or `--raftGroups gid=host:port,...` with `--raftGroupPeers
//! gid=id@host:port,...;...` and `--shardRanges start:end=gid,...` (several groups, each on
//! its own port), plus `--raftRedisMap raftAddr=redisAddr,...`, `--raftDynamoMap
//! raftAddr=dynamoAddr,...`, `--raftS3Map raftAddr=s3Addr,...` and `--raftSqsMap
//! raftAddr=sqsAddr,...` (a follower forwards Redis, DynamoDB, S3 and SQS requests to the
//! leader).
//!
//! Invariant: every listening address a node is given contains its own IP, so nodes that
//! share a network namespace never collide; metrics and pprof are switched off (empty
//! address) because elastickv refuses them on a non-loopback address without a token.

pub mod client;
pub mod errors;
pub mod node;
pub mod redis_client;
pub mod versions;

use super::leader_reads::LeaderDirectory;
use super::{Capabilities, Capability, Db, DbKind, NodeLayout, Reports};
use client::ElastickvClient;
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{FaultKind, NodeInfo};
use node::EkvNode;
use std::path::PathBuf;
use std::sync::Arc;
use workloads::client::{Connector, KvTarget, NodeEndpoint, Protocol, ReadPath};
use analysis::history::store_keys::StoreKeys;
use workloads::client::dynamodb::tables::append_table_names;
use workloads::{ClientCapability, ClientOptions, GrpcConnector};

/// elastickv's Redis port on every node (`--client redis` sends data operations there).
pub const REDIS_PORT: u16 = 6379;
/// elastickv's DynamoDB-compatible API port on every node (`--client dynamodb`).
pub const DYNAMO_PORT: u16 = super::dynamodb::DYNAMO_PORT;
/// elastickv's S3-compatible API port on every node (`--client s3`).
pub const S3_PORT: u16 = super::s3::S3_PORT;
/// elastickv's SQS-compatible API port on every node (`--client sqs`).
pub const SQS_PORT: u16 = super::sqs::SQS_PORT;

#[derive(Debug, Clone)]
pub struct Elastickv {
    /// Raft groups (`--groups`); group g listens on the node's port + g − 1.
    pub groups: u32,
}

impl Elastickv {
    /// `raftAddr=apiAddr,...` over every node and group: where a follower forwards an API's
    /// requests to the group's leader (`--raftRedisMap`, `--raftDynamoMap`, `--raftS3Map`,
    /// `--raftSqsMap`).
    fn leader_map(&self, all: &[NodeInfo], api: impl Fn(&NodeInfo) -> String) -> String {
        let groups = 1..=u64::from(self.groups);
        let pairs: Vec<String> = all
            .iter()
            .flat_map(|n| groups.clone().map(move |g| (n, g)))
            .map(|(n, g)| format!("{}={}", Self::group_addr(n, g), api(n)))
            .collect();
        pairs.join(",")
    }

    /// The Raft/gRPC address of `group` on `node`.
    fn group_addr(node: &NodeInfo, group: u64) -> String {
        let port = node.addr.rsplit(':').next().and_then(|p| p.parse::<u64>().ok()).unwrap_or(50051);
        format!("{}:{}", node.ip, port + group - 1)
    }

    fn raft_id(node: &NodeInfo) -> String {
        node.name.clone()
    }

    /// `--shardRanges`: the keyspace cut into `groups` ranges at single-letter boundaries
    /// (`:g=1,g:n=2,n:=3` for three groups).
    pub fn shard_ranges(groups: u64) -> String {
        let cuts: Vec<String> = (1..groups).map(|i| ((b'a' + (26 * i / groups) as u8) as char).to_string()).collect();
        let mut bounds = vec![String::new()];
        bounds.extend(cuts);
        bounds.push(String::new());
        (0..groups as usize).map(|i| format!("{}:{}={}", bounds[i], bounds[i + 1], i + 1)).collect::<Vec<_>>().join(",")
    }
}

impl Elastickv {
    /// `--shardRanges` with the tables of a multi-table DynamoDB run spread over the groups,
    /// table i (1-based) in group ((i − 1) mod groups) + 1, as elastickv's own multi-table
    /// launch does with two: every table's route key (`!ddb|route|table|…`, which sorts
    /// before the letter cuts) starts a range of its own, the rest of the keyspace as
    /// [`Elastickv::shard_ranges`] cuts it. `None` when there is nothing to spread.
    pub fn table_shard_ranges(groups: u64, store_keys: &StoreKeys) -> Option<String> {
        let StoreKeys::DynamoTableRoute { tables } = store_keys else { return None };
        if groups < 2 || tables.len() < 2 {
            return None;
        }
        let prefix = analysis::history::store_keys::DYNAMO_ROUTE_PREFIX;
        let mut starts: Vec<(String, u64)> = tables
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let key = format!("{prefix}{}", analysis::history::store_keys::base64url(t.as_bytes()));
                (key, i as u64 % groups + 1)
            })
            .collect();
        starts.sort();
        let letters = Self::shard_ranges(groups);
        let (first, rest) = letters.split_once(',').unwrap_or((letters.as_str(), ""));
        // The letter cuts' first range, `:<cut>=1`, is where the route keys lie.
        let first_end = first.strip_prefix(':')?.split_once('=')?.0.to_string();
        let mut ranges = vec![format!(":{}=1", starts[0].0)];
        for (i, (start, group)) in starts.iter().enumerate() {
            let end = starts.get(i + 1).map_or(first_end.as_str(), |(k, _)| k.as_str());
            ranges.push(format!("{start}:{end}={group}"));
        }
        ranges.extend(rest.split(',').filter(|r| !r.is_empty()).map(str::to_string));
        Some(ranges.join(","))
    }
}

impl Db for Elastickv {
    fn placement_args(&self, store_keys: &StoreKeys) -> Vec<String> {
        Self::table_shard_ranges(u64::from(self.groups), store_keys)
            .map(|r| vec![format!("--shardRanges={r}")])
            .unwrap_or_default()
    }

    fn kind(&self) -> DbKind {
        DbKind::Elastickv
    }

    fn node_command(&self, node: &NodeInfo, all: &[NodeInfo], layout: &NodeLayout, extra: &[String]) -> Vec<String> {
        let redis = |n: &NodeInfo| format!("{}:{REDIS_PORT}", n.ip);
        let mut cmd = vec![layout.binary.clone()];
        let mut flag = |name: &str, value: String| cmd.push(format!("--{name}={value}"));
        flag("address", node.addr.clone());
        flag("redisAddress", redis(node));
        flag("dynamoAddress", format!("{}:{DYNAMO_PORT}", node.ip));
        flag("s3Address", format!("{}:{S3_PORT}", node.ip));
        flag("sqsAddress", format!("{}:{SQS_PORT}", node.ip));
        flag("metricsAddress", String::new());
        flag("pprofAddress", String::new());
        flag("raftId", Self::raft_id(node));
        flag("raftDataDir", layout.data_dir.clone());
        if self.groups <= 1 {
            let members: Vec<String> = all.iter().map(|n| format!("{}={}", Self::raft_id(n), n.addr)).collect();
            flag("raftBootstrapMembers", members.join(","));
        } else {
            let groups = 1..=u64::from(self.groups);
            let own: Vec<String> = groups.clone().map(|g| format!("{g}={}", Self::group_addr(node, g))).collect();
            flag("raftGroups", own.join(","));
            let peers: Vec<String> = groups
                .map(|g| {
                    let members: Vec<String> =
                        all.iter().map(|n| format!("{}@{}", Self::raft_id(n), Self::group_addr(n, g))).collect();
                    format!("{g}={}", members.join(","))
                })
                .collect();
            flag("raftGroupPeers", peers.join(";"));
            flag("shardRanges", Self::shard_ranges(u64::from(self.groups)));
        }
        flag("raftRedisMap", self.leader_map(all, redis));
        flag("raftDynamoMap", self.leader_map(all, |n| format!("{}:{DYNAMO_PORT}", n.ip)));
        flag("raftS3Map", self.leader_map(all, |n| format!("{}:{S3_PORT}", n.ip)));
        flag("raftSqsMap", self.leader_map(all, |n| format!("{}:{SQS_PORT}", n.ip)));
        cmd.extend(extra.iter().cloned());
        cmd
    }

    /// None: faultline never builds elastickv.
    fn default_binary(&self) -> BoxFuture<'static, anyhow::Result<PathBuf>> {
        std::future::ready(Err(anyhow::anyhow!(
            "--db elastickv needs the elastickv server: --db-binary PATH (a binary built from bootjp/elastickv) \
             or, with Docker, --image TAG (see docs/elastickv.md)"
        )))
        .boxed()
    }

    fn groups(&self) -> Vec<u64> {
        (1..=u64::from(self.groups)).collect()
    }

    fn connector(&self, mut options: ClientOptions, nodes: &[NodeEndpoint]) -> Arc<dyn Connector> {
        // grpc-go answers keep-alive pings more frequent than every 5 minutes with GOAWAY.
        options.keepalive = None;
        options.cas_supported = false;
        options.refkv_txn = false;
        let connector = ElastickvConnector { inner: GrpcConnector { options }, groups: u64::from(self.groups), read_path: options.read_path, leaders: None };
        let directory: Vec<Arc<dyn KvTarget>> =
            nodes.iter().filter_map(|n| connector.node(n).ok()).map(|n| n as Arc<dyn KvTarget>).collect();
        let grpc = Arc::new(ElastickvConnector { leaders: Some(Arc::new(LeaderDirectory::new(directory))), ..connector });
        match options.protocol {
            Protocol::Grpc => grpc,
            Protocol::Redis => Arc::new(redis_client::EkvRedisConnector::new(grpc, nodes, options.redis())),
            Protocol::Dynamodb => Arc::new(super::dynamodb::connector(grpc, &options)),
            Protocol::S3 => Arc::new(super::s3::connector(grpc, &options)),
            Protocol::Sqs => Arc::new(super::sqs::connector(grpc, &options)),
        }
    }

    /// Through DynamoDB, every item of a table routes by the table's route key
    /// (`kv/shard_key.go` ~117–150); through Redis and gRPC by the client's key (the Redis
    /// adapter's `!lst|…` and `!redis|…` keys route by their user key, ~58–110).
    fn store_keys(&self, options: &ClientOptions) -> StoreKeys {
        match options.protocol {
            Protocol::Dynamodb => StoreKeys::DynamoTableRoute {
                tables: append_table_names(options.dynamo_tables),
            },
            Protocol::Grpc | Protocol::Redis => StoreKeys::Identity,
            // Objects and messages are kept under keys of the adapters' own (`!s3|obj|head|…`,
            // the SQS adapter's queue keys).
            Protocol::S3 | Protocol::Sqs => StoreKeys::Unknown,
        }
    }

    fn protocols(&self) -> &'static [Protocol] {
        &[Protocol::Grpc, Protocol::Redis, Protocol::Dynamodb, Protocol::S3, Protocol::Sqs]
    }

    /// Reads aimable at a leader; versions probed after the run; a catch-up wait before the
    /// final reads, because a node reads at its own LastCommitTS (adapter/ts.go ~40,
    /// kv/shard_store.go ~2291). Follower reads may be stale by design: no linearizable
    /// reads. Compare-and-set and transactions only through the Redis adapter (a Lua script
    /// of GET, compare, SET; `MULTI`/`EXEC`): RawPut has no condition (refkv's cas fields
    /// are an extension elastickv ignores) and its gRPC RawKV has no transactions; transactions
    /// also through its DynamoDB API (`TransactGetItems` / `TransactWriteItems`).
    fn capabilities(&self) -> Capabilities {
        Capabilities::of(&[
            Capability::LeaderReadPath,
            Capability::ProbesVersions,
            Capability::CatchUpBeforeFinalReads,
            Capability::Client(Protocol::Redis, ClientCapability::Cas),
            Capability::Client(Protocol::Redis, ClientCapability::Txn),
            Capability::Client(Protocol::Redis, ClientCapability::Zset),
            Capability::Client(Protocol::Dynamodb, ClientCapability::Txn),
            Capability::Client(Protocol::Sqs, ClientCapability::Queue),
            Capability::Client(Protocol::S3, ClientCapability::Objects),
        ])
    }

    fn reports(&self) -> Reports {
        Reports { commit_meta: false, catalog: true, splits: true }
    }

    fn faults(&self) -> &'static [FaultKind] {
        FaultKind::ALL
    }
}

/// Makes one [`ElastickvClient`] per process, all sharing one leader directory.
pub struct ElastickvConnector {
    pub inner: GrpcConnector,
    pub groups: u64,
    pub read_path: ReadPath,
    /// Set once the directory over every node is built.
    pub leaders: Option<Arc<LeaderDirectory>>,
}

impl ElastickvConnector {
    fn node(&self, endpoint: &NodeEndpoint) -> anyhow::Result<Arc<EkvNode>> {
        Ok(Arc::new(EkvNode::connect(&self.inner, endpoint, self.groups)?))
    }
}

impl Connector for ElastickvConnector {
    fn connect(&self, endpoint: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        let leaders = self.leaders.clone().unwrap_or_else(|| Arc::new(LeaderDirectory::new(Vec::new())));
        Ok(Arc::new(ElastickvClient { node: self.node(endpoint)?, leaders, read_path: self.read_path }))
    }
}

#[cfg(test)]
mod double_tests;
