//! An etcd v3 client implementing [`KvTarget`], so every faultline workload (`register`,
//! `set`, `append`, `rw-register`), the final reads and leader discovery run against etcd unchanged.
//!
//! The mapping onto etcd's API (`proto/etcd`, faultline's own subset of etcdserverpb):
//! - read → `KV.Range` of one key, linearizable (`serializable = false`);
//! - write → `KV.Put`; delete → `KV.DeleteRange`;
//! - compare-and-set → `KV.Txn` comparing the key's `VALUE` with the expected value (or its
//!   `CREATE` revision with 0 when the key must be absent), `Put` on success;
//!   `succeeded = false` is a definite `fail`;
//! - scan → `KV.Range` over `[start, end)` (an empty end = `"\0"`, every key ≥ start);
//! - status → `Maintenance.Status`: the member is the leader when the leader id it reports
//!   is its own member id (from the response header).
//!
//! - transactions (Elle's list-append and rw-register micro-ops) → [`txn`]: one `KV.Txn`
//!   per rw-register transaction; for list-append, a `Txn` of ranges then a `Txn` that
//!   compares each appended key's `mod_revision` (retried on a failed compare).
//!
//! etcd has no route catalog and no splits: `list_routes`, `split` and `watch_catalog`
//! answer a definite `unimplemented`. Errors are classified by [`classify`].

pub mod classify;
pub mod txn;

use crate::client::classify::CallKind;
use crate::client::grpc::ClientOptions;
use crate::client::{
    CallError, CallResult, Certainty, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply,
    ScanReply, SplitReply, SplitRequest, WriteReply,
};
use analysis::history::CatalogSnapshot;
use anyhow::Context;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// Generated stubs for faultline's etcd proto subset.
#[allow(clippy::all, missing_docs)]
pub mod proto {
    /// etcd's KV and Maintenance services.
    pub mod etcdserverpb {
        tonic::include_proto!("etcdserverpb");
    }
    /// etcd's stored key/value record.
    pub mod mvccpb {
        tonic::include_proto!("mvccpb");
    }
}

use proto::etcdserverpb as pb;
use proto::etcdserverpb::kv_client::KvClient as KvStub;
use proto::etcdserverpb::maintenance_client::MaintenanceClient;

/// The largest response accepted (a scan of a whole key prefix).
const MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// A client bound to one etcd member.
#[derive(Clone)]
pub struct EtcdClient {
    node: String,
    timeout: Duration,
    kv: KvStub<Channel>,
    maintenance: MaintenanceClient<Channel>,
}

impl EtcdClient {
    /// A client whose connection opens on first use. HTTP/2 keep-alive pings are left off:
    /// etcd (grpc-go) answers frequent pings with GOAWAY `too_many_pings` by default.
    pub fn connect_lazy(node: &NodeEndpoint, opts: &ClientOptions) -> anyhow::Result<EtcdClient> {
        let uri = format!("http://{}", node.addr);
        let channel = Endpoint::from_shared(uri)
            .with_context(|| {
                format!(
                    "node {}: bad etcd address {:?} (expected ip:port)",
                    node.name, node.addr
                )
            })?
            .connect_timeout(opts.connect_timeout)
            .tcp_nodelay(true)
            .connect_lazy();
        Ok(EtcdClient {
            node: node.name.clone(),
            timeout: opts.call_timeout,
            kv: KvStub::new(channel.clone()).max_decoding_message_size(MAX_RESPONSE_BYTES),
            maintenance: MaintenanceClient::new(channel),
        })
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut req = tonic::Request::new(message);
        req.set_timeout(self.timeout);
        req
    }

    async fn call<T>(
        &self,
        kind: CallKind,
        fut: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> CallResult<T> {
        match tokio::time::timeout(self.timeout, fut).await {
            Err(_) => Err(CallError::timed_out(kind)),
            Ok(Err(status)) => Err(classify::classify_etcd(kind, &status)),
            Ok(Ok(resp)) => Ok(resp.into_inner()),
        }
    }

    async fn range(&self, req: pb::RangeRequest) -> CallResult<pb::RangeResponse> {
        let mut c = self.kv.clone();
        self.call(CallKind::Read, c.range(self.request(req))).await
    }

    async fn put(&self, key: &[u8], value: &[u8]) -> CallResult<WriteReply> {
        let mut c = self.kv.clone();
        let req = pb::PutRequest {
            key: key.to_vec(),
            value: value.to_vec(),
            ..Default::default()
        };
        self.call(CallKind::Mutation, c.put(self.request(req)))
            .await?;
        Ok(WriteReply {
            applied: true,
            meta: None,
        })
    }

    async fn txn(&self, req: pb::TxnRequest) -> CallResult<WriteReply> {
        let mut c = self.kv.clone();
        let resp = self
            .call(CallKind::Mutation, c.txn(self.request(req)))
            .await?;
        Ok(WriteReply {
            applied: resp.succeeded,
            meta: None,
        })
    }

    async fn remove(&self, key: &[u8]) -> CallResult<WriteReply> {
        let mut c = self.kv.clone();
        let req = pb::DeleteRangeRequest {
            key: key.to_vec(),
            ..Default::default()
        };
        self.call(CallKind::Mutation, c.delete_range(self.request(req)))
            .await?;
        Ok(WriteReply {
            applied: true,
            meta: None,
        })
    }

    async fn member_status(&self) -> CallResult<GroupStatus> {
        let mut c = self.maintenance.clone();
        let resp = self
            .call(CallKind::Read, c.status(self.request(pb::StatusRequest {})))
            .await?;
        let header = resp.header.ok_or_else(|| {
            CallError::bad_response(CallKind::Read, "Status without a response header")
        })?;
        Ok(group_status(header.member_id, &resp))
    }
}

/// The single "group" an etcd cluster is, as one member sees it.
pub fn group_status(member_id: u64, resp: &pb::StatusResponse) -> GroupStatus {
    let is_leader = resp.leader != 0 && resp.leader == member_id;
    let state = match (resp.leader, is_leader) {
        (0, _) => "CANDIDATE",
        (_, true) => "LEADER",
        (_, false) => "FOLLOWER",
    };
    GroupStatus {
        group: 1,
        node_id: format!("{member_id:x}"),
        is_leader,
        state: state.to_string(),
        leader_id: if resp.leader == 0 {
            String::new()
        } else {
            format!("{:x}", resp.leader)
        },
        leader_address: String::new(),
        term: resp.raft_term,
        commit_index: resp.raft_index,
        applied_index: resp.raft_index,
    }
}

/// The exclusive end etcd expects: `"\0"` (no upper bound) for an empty `end`.
pub fn range_end(end: &[u8]) -> Vec<u8> {
    if end.is_empty() {
        vec![0]
    } else {
        end.to_vec()
    }
}

/// The comparison of a compare-and-set: the key's value equals `expected`, or (for `None`)
/// the key does not exist (create revision 0).
pub fn cas_compare(key: &[u8], expected: Option<&[u8]>) -> pb::Compare {
    use pb::compare::{CompareResult, CompareTarget, TargetUnion};
    let (target, union) = match expected {
        Some(v) => (CompareTarget::Value, TargetUnion::Value(v.to_vec())),
        None => (CompareTarget::Create, TargetUnion::CreateRevision(0)),
    };
    pb::Compare {
        result: CompareResult::Equal as i32,
        target: target as i32,
        key: key.to_vec(),
        target_union: Some(union),
    }
}

fn unsupported(what: &str) -> CallError {
    CallError::new(
        Certainty::Definite,
        "unimplemented",
        format!("etcd has no {what}"),
    )
}

impl KvTarget for EtcdClient {
    fn node(&self) -> &str {
        &self.node
    }

    fn as_txn(&self) -> Option<&dyn crate::client::TxnClient> {
        Some(self)
    }

    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        let req = pb::RangeRequest {
            key: key.to_vec(),
            ..Default::default()
        };
        async move {
            let resp = self.range(req).await?;
            Ok(ReadReply {
                value: resp.kvs.into_iter().next().map(|kv| kv.value),
                meta: None,
            })
        }
        .boxed()
    }

    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        let (key, value) = (key.to_vec(), value.to_vec());
        async move { self.put(&key, &value).await }.boxed()
    }

    fn as_cas(&self) -> Option<&dyn crate::client::CasClient> {
        Some(self)
    }

    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        let key = key.to_vec();
        async move { self.remove(&key).await }.boxed()
    }

    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        let key = if start.is_empty() {
            vec![0]
        } else {
            start.to_vec()
        };
        let req = pb::RangeRequest {
            key,
            range_end: range_end(end),
            limit: limit.min(i64::MAX as u64) as i64,
            ..Default::default()
        };
        async move {
            let resp = self.range(req).await?;
            Ok(ScanReply {
                pairs: resp.kvs.into_iter().map(|kv| (kv.key, kv.value)).collect(),
                metas: vec![],
            })
        }
        .boxed()
    }

    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
        async { Err(unsupported("route catalog")) }.boxed()
    }

    fn split(&self, _request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        async { Err(unsupported("range splits")) }.boxed()
    }

    fn status(&self, _group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        async move { self.member_status().await }.boxed()
    }
}

impl crate::client::CasClient for EtcdClient {
    fn cas(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: &[u8],
    ) -> BoxFuture<'_, CallResult<WriteReply>> {
        let put = pb::PutRequest {
            key: key.to_vec(),
            value: new.to_vec(),
            ..Default::default()
        };
        let req = pb::TxnRequest {
            compare: vec![cas_compare(key, expected)],
            success: vec![pb::RequestOp {
                request: Some(pb::request_op::Request::RequestPut(put)),
            }],
            failure: vec![],
        };
        async move { self.txn(req).await }.boxed()
    }
}

/// Makes [`EtcdClient`]s: a fresh connection per process.
#[derive(Debug, Clone, Default)]
pub struct EtcdConnector {
    pub options: ClientOptions,
}

impl Connector for EtcdConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(EtcdClient::connect_lazy(node, &self.options)?))
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod txn_tests;
