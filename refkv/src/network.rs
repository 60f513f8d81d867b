//! Raft transport over gRPC: one `RefkvInternal.Raft` call per Raft RPC, tagged with the
//! group id; request and response bodies are JSON of openraft's own message types.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tonic::transport::{Channel, Endpoint};

use crate::proto::internal::refkv_internal_client::RefkvInternalClient;
use crate::proto::internal::{RaftKind, RaftMessage};
use crate::types::{Entry, NodeId, TypeConfig};

/// How a Raft RPC that got no answer in time is described (matched to shrink appends).
const TIMED_OUT: &str = "timed out";

/// The most JSON one AppendEntries RPC carries when it holds more than one entry.
///
/// openraft 0.9 gives every AppendEntries one heartbeat interval (100 ms by default) to be
/// encoded, sent, decoded, appended and answered. A follower that lagged (paused, restarted)
/// was sent up to `max_payload_entries` entries at once; with large entries (a move's copy
/// batches hold 32 KB of data, ~130 KB of JSON) that is megabytes that never arrive in time,
/// and openraft re-sent the same batch forever: the follower stayed at its old log index.
pub const MAX_APPEND_BYTES: usize = 256 << 10;

/// How many of `entries`, from the first, fit in `budget` bytes of JSON; at least one (a
/// single entry is always sent whole).
pub fn entries_within(entries: &[Entry], budget: usize) -> usize {
    let mut total = 0usize;
    for (i, entry) in entries.iter().enumerate() {
        total = total.saturating_add(json_len(entry));
        if total > budget {
            return i.max(1);
        }
    }
    entries.len()
}

/// The length of `value` as JSON, without building the text.
fn json_len<T: Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serializing our own types into a counter cannot fail; if it ever did, the entry
    // counts as too big to batch (it is then sent alone).
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// Lazily connected gRPC channels to every peer, shared by all groups and the forwarder.
pub struct PeerClients {
    addrs: BTreeMap<NodeId, String>,
    channels: Mutex<BTreeMap<NodeId, Channel>>,
}

impl PeerClients {
    pub fn new(addrs: BTreeMap<NodeId, String>) -> PeerClients {
        PeerClients {
            addrs,
            channels: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn addr(&self, id: NodeId) -> Option<&str> {
        self.addrs.get(&id).map(|s| s.as_str())
    }

    pub fn ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.addrs.keys().copied()
    }

    /// A client for `id` (channels reconnect by themselves after a peer restarts).
    pub fn client(&self, id: NodeId) -> Result<RefkvInternalClient<Channel>, String> {
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ch) = channels.get(&id) {
            return Ok(RefkvInternalClient::new(ch.clone()).max_decoding_message_size(256 << 20));
        }
        let addr = self
            .addrs
            .get(&id)
            .ok_or_else(|| format!("unknown node {id}"))?;
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| format!("bad address {addr}: {e}"))?
            .connect_timeout(Duration::from_millis(500))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(2))
            .keep_alive_timeout(Duration::from_secs(2));
        let ch = endpoint.connect_lazy();
        channels.insert(id, ch.clone());
        Ok(RefkvInternalClient::new(ch).max_decoding_message_size(256 << 20))
    }
}

pub struct NetworkFactory {
    pub group: u64,
    pub peers: Arc<PeerClients>,
}

pub struct Connection {
    group: u64,
    target: NodeId,
    peers: Arc<PeerClients>,
}

impl RaftNetworkFactory<TypeConfig> for NetworkFactory {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Connection {
        Connection {
            group: self.group,
            target,
            peers: self.peers.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Msg(String);

impl Connection {
    async fn call<Req, Resp, E>(
        &self,
        kind: RaftKind,
        req: &Req,
        ttl: Duration,
    ) -> Result<Resp, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        // The deadline runs from here (encoding included), so that a `ttl` shorter than
        // openraft's own timeout really fires first.
        let deadline = tokio::time::Instant::now() + ttl;
        let payload =
            serde_json::to_vec(req).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let mut client = self
            .peers
            .client(self.target)
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&Msg(e))))?;
        let msg = RaftMessage {
            group_id: self.group,
            kind: kind as i32,
            payload,
        };
        let reply = match tokio::time::timeout_at(deadline, client.raft(msg)).await {
            Err(_) => {
                return Err(RPCError::Unreachable(Unreachable::new(&Msg(format!(
                    "raft rpc to {} {TIMED_OUT}",
                    self.target
                )))))
            }
            Ok(Err(status)) => {
                return Err(RPCError::Unreachable(Unreachable::new(&Msg(status
                    .message()
                    .to_string()))))
            }
            Ok(Ok(r)) => r.into_inner(),
        };
        let result: Result<Resp, RaftError<NodeId, E>> = serde_json::from_slice(&reply.payload)
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Connection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let entries = rpc.entries.len() as u64;
        // A follower far behind (paused or restarted while a move copied data) would be sent
        // up to `max_payload_entries` large entries at once: cap the batch by bytes (openraft
        // retries at once with the hint for its next few RPCs).
        let fit = entries_within(&rpc.entries, MAX_APPEND_BYTES) as u64;
        if fit < entries {
            tracing::debug!(
                group = self.group,
                target = self.target,
                entries,
                fit,
                "append batch over the byte cap: fewer entries"
            );
            return Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(fit),
            ));
        }
        // A batch that still cannot arrive within the heartbeat-sized timeout never would:
        // ask openraft for smaller batches instead of retrying the same one. Our deadline
        // (3/4 of openraft's) must fire first, or openraft reports its own timeout and the
        // batch is never shrunk.
        let ttl = if entries > 1 {
            option.soft_ttl()
        } else {
            option.hard_ttl()
        };
        match self.call(RaftKind::Append, &rpc, ttl).await {
            Err(RPCError::Unreachable(u)) if entries > 1 && u.to_string().contains(TIMED_OUT) => {
                Err(RPCError::PayloadTooLarge(
                    PayloadTooLarge::new_entries_hint(entries / 2),
                ))
            }
            other => other,
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.call(RaftKind::Snapshot, &rpc, option.hard_ttl()).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.call(RaftKind::Vote, &rpc, option.hard_ttl()).await
    }
}

/// Server side: decode one Raft RPC, hand it to the group's Raft, encode the result.
pub async fn handle_raft_message(
    raft: &crate::types::Raft,
    kind: RaftKind,
    payload: &[u8],
) -> Result<Vec<u8>, String> {
    fn decode<T: DeserializeOwned>(p: &[u8]) -> Result<T, String> {
        serde_json::from_slice(p).map_err(|e| format!("bad raft payload: {e}"))
    }
    let out = match kind {
        RaftKind::Append => serde_json::to_vec(&raft.append_entries(decode(payload)?).await),
        RaftKind::Vote => serde_json::to_vec(&raft.vote(decode(payload)?).await),
        RaftKind::Snapshot => serde_json::to_vec(&raft.install_snapshot(decode(payload)?).await),
        RaftKind::Unspecified => return Err("raft message kind unspecified".into()),
    };
    out.map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
