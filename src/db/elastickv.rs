//! elastickv (bootjp/elastickv), the Go multi-Raft KV faultline was written for. Nodes come
//! from a user-provided image (`--image`, built from elastickv's own Dockerfile) or static
//! binary (`--db-binary`); faultline cannot build elastickv here. The client is refkv's:
//! elastickv serves the same RawKV / Distribution / RaftAdmin subset, without the commit
//! metadata extension fields — so epoch-authority is `not-applicable` (nothing to attribute
//! writes to epochs with), and the split checker applies only to splits forced by the split
//! nemesis (elastickv has no auto-split yet). See `docs/elastickv.md`.
//!
//! Node flags, as elastickv's `main.go` declares them: `--address` (gRPC + Raft),
//! `--redisAddress`, `--raftId`, `--raftDataDir`, and either `--raftBootstrapMembers
//! id=host:port,...` (one group) or `--raftGroups gid=host:port,...` +
//! `--raftGroupPeers gid=id@host:port,...;...` + `--shardRanges start:end=gid,...` (several
//! groups, each on its own port), plus `--raftRedisMap raftAddr=redisAddr,...`.

pub mod leader_reads;
pub mod versions;

use super::{Db, DbKind, NodeLayout, Reports};
use leader_reads::LeaderDirectory;
use futures::future::BoxFuture;
use futures::FutureExt;
use nemesis::{FaultKind, NodeInfo};
use std::sync::Arc;
use workloads::client::{
    CallResult, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply, ScanReply, SplitReply, SplitRequest,
    WriteReply,
};
use workloads::{CallError, Certainty, ClientOptions, GrpcConnector};

/// elastickv's Redis port on every node (it always serves Redis; faultline does not use it).
pub const REDIS_PORT: u16 = 6379;

#[derive(Debug, Clone)]
pub struct Elastickv {
    /// Raft groups (`--groups`); group g listens on the node's port + g − 1.
    pub groups: u32,
}

impl Elastickv {
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

impl Db for Elastickv {
    fn kind(&self) -> DbKind {
        DbKind::Elastickv
    }

    fn node_command(&self, node: &NodeInfo, all: &[NodeInfo], layout: &NodeLayout, extra: &[String]) -> Vec<String> {
        let redis = |n: &NodeInfo| format!("{}:{REDIS_PORT}", n.ip);
        let mut cmd = vec![layout.binary.clone()];
        let mut flag = |name: &str, value: String| cmd.push(format!("--{name}={value}"));
        flag("address", node.addr.clone());
        flag("redisAddress", redis(node));
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
        let map: Vec<String> = all
            .iter()
            .flat_map(|n| (1..=u64::from(self.groups)).map(move |g| format!("{}={}", Self::group_addr(n, g), redis(n))))
            .collect();
        flag("raftRedisMap", map.join(","));
        cmd.extend(extra.iter().cloned());
        cmd
    }

    fn groups(&self) -> Vec<u64> {
        (1..=u64::from(self.groups)).collect()
    }

    fn connector(&self, mut options: ClientOptions, nodes: &[NodeEndpoint]) -> Arc<dyn Connector> {
        // grpc-go answers keep-alive pings more frequent than every 5 minutes with GOAWAY.
        options.keepalive = None;
        // elastickv ignores refkv's compare-and-set extension of RawPut (it would write
        // unconditionally), so cas is never sent: it fails definitely as `unimplemented`.
        options.cas_supported = false;
        let inner = GrpcConnector { options };
        let clients = nodes.iter().filter_map(|n| inner.connect(n).ok()).collect();
        Arc::new(ElastickvConnector { inner, leaders: Arc::new(LeaderDirectory::new(clients)) })
    }

    fn reports(&self) -> Reports {
        Reports { commit_meta: false, catalog: true, splits: true }
    }

    fn workloads(&self) -> &'static [&'static str] {
        &["hotspot", "register", "set"]
    }

    fn probes_versions(&self) -> bool {
        true
    }

    fn faults(&self) -> &'static [FaultKind] {
        &FaultKind::ALL
    }
}

/// Tag and certainty of a failed *mutation* from elastickv's error texts, or `None` when
/// the text says nothing the gRPC code did not (the generic rules stand). elastickv returns
/// its coordinator's errors as plain texts (gRPC `Unknown`, which the generic table must
/// treat as indeterminate); these texts say more:
///
/// | text contains        | meaning                                        | certainty     |
/// |----------------------|------------------------------------------------|---------------|
/// | `leadership lost`    | proposed, then the leader stepped down (hashicorp raft `ErrLeadershipLost`) | indeterminate |
/// | `leadership transfer`| refused: a transfer is in progress             | definite      |
/// | `not leader`, `not the leader` | refused by a follower, nothing proposed (`ErrNotLeader`) | definite |
/// | `leader not found`   | no leader known, nothing proposed (`ErrLeaderNotFound`) | definite |
/// | `proposal dropped`   | etcd raft dropped the proposal before appending it | definite   |
/// | `no route`/`route not found` | no route owns the key, nothing proposed | definite      |
pub fn elastickv_rule(message: &str) -> Option<(&'static str, Certainty)> {
    let m = message.to_ascii_lowercase();
    if m.contains("leadership lost") {
        Some(("leadership-lost", Certainty::Indeterminate))
    } else if m.contains("leadership transfer") {
        Some(("leadership-transfer", Certainty::Definite))
    } else if m.contains("not leader") || m.contains("not the leader") {
        Some(("not-leader", Certainty::Definite))
    } else if m.contains("leader not found") {
        Some(("leader-not-found", Certainty::Definite))
    } else if m.contains("proposal dropped") {
        Some(("proposal-dropped", Certainty::Definite))
    } else if m.contains("no route") || m.contains("route not found") {
        Some(("no-route", Certainty::Definite))
    } else {
        None
    }
}

/// Re-classifies a failed mutation by elastickv's texts. Errors the client made itself
/// (timeouts, connection failures) keep their classification: elastickv's texts only come
/// from the server.
pub fn reclassify_mutation(err: CallError) -> CallError {
    let from_client = matches!(err.tag, "timed-out" | "cancelled" | "bad-response") || err.message.contains("connection failed before sending");
    match elastickv_rule(&err.message) {
        Some((tag, certainty)) if !from_client => CallError::new(certainty, tag, err.message),
        _ => err,
    }
}

/// refkv's gRPC client with elastickv's error texts applied to mutations and reads sent
/// to the owning group's leader.
pub struct ElastickvConnector {
    pub inner: GrpcConnector,
    pub leaders: Arc<LeaderDirectory>,
}

impl Connector for ElastickvConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(ElastickvClient { inner: self.inner.connect(node)?, leaders: self.leaders.clone() }))
    }
}

/// One process's client: mutations through its own node (elastickv forwards them to the
/// leader), reads through the leader directory.
pub struct ElastickvClient {
    pub inner: Arc<dyn KvTarget>,
    pub leaders: Arc<LeaderDirectory>,
}

fn mutation<T: Send + 'static>(fut: BoxFuture<'_, CallResult<T>>) -> BoxFuture<'_, CallResult<T>> {
    fut.map(|r| r.map_err(reclassify_mutation)).boxed()
}

impl KvTarget for ElastickvClient {
    fn node(&self) -> &str {
        self.inner.node()
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        let key = key.to_vec();
        async move { self.leaders.read(&key).await }.boxed()
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        mutation(self.inner.write(key, value))
    }
    fn cas(&self, key: &[u8], expected: Option<&[u8]>, new: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        mutation(self.inner.cas(key, expected, new))
    }
    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        mutation(self.inner.delete(key))
    }
    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        self.inner.scan(start, end, limit)
    }
    fn read_at(&self, key: &[u8], ts: u64) -> BoxFuture<'_, CallResult<ReadReply>> {
        self.inner.read_at(key, ts)
    }
    fn latest_commit_ts(&self, key: &[u8]) -> BoxFuture<'_, CallResult<Option<u64>>> {
        self.inner.latest_commit_ts(key)
    }
    fn list_routes(&self) -> BoxFuture<'_, CallResult<analysis::history::CatalogSnapshot>> {
        self.inner.list_routes()
    }
    fn split(&self, request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        if request.target_group.is_some() {
            // elastickv's SplitRange is a catalog change within one group; no move plane.
            let refused = CallError::new(Certainty::Definite, "unimplemented", "elastickv splits are same-group only (no cross-group move)");
            return async move { Err(refused) }.boxed();
        }
        mutation(self.inner.split(request))
    }
    fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        self.inner.status(group)
    }
    fn watch_catalog(&self, after_version: u64) -> BoxFuture<'_, CallResult<workloads::client::CatalogStream>> {
        self.inner.watch_catalog(after_version)
    }
}
