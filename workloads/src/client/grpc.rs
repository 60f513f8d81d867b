//! [`KvClient`]: the elastickv-compatible gRPC client (RawKV, Distribution, RaftAdmin,
//! health) over one tonic channel to one node. Every unary call carries a deadline (sent as
//! `grpc-timeout` and enforced locally) and every failure comes back classified.

use super::classify::{classify, CallError, CallKind};
use super::convert::{
    catalog_event, commit_meta, job_record, raft_state_name, route_record, snapshot_from_list,
    write_meta,
};
use super::{
    CallResult, CatalogStream, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply,
    ScanReply, SplitReply, SplitRequest, WriteReply,
};
use crate::proto::health::health_client::HealthClient;
use crate::proto::health::{health_check_response::ServingStatus, HealthCheckRequest};
use crate::proto::kv;
use crate::proto::kv::distribution_client::DistributionClient;
use crate::proto::kv::raft_admin_client::RaftAdminClient;
use crate::proto::kv::raw_kv_client::RawKvClient;
use analysis::history::{CatalogSnapshot, SplitJobRecord};
use anyhow::Context;
use futures::future::BoxFuture;
use futures::StreamExt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// Keys asked for per RawScanAt: elastickv rejects a limit above 1025 (`adapter/grpc.go`
/// ~287–301, `maxGRPCScanLimit`) and returns nothing for 0 (`kv/shard_store.go` ~302), so a
/// whole range is read in pages and 0 is never sent.
pub const SCAN_PAGE: u64 = 1024;

/// Largest response accepted (scans of a whole hot range can be large).
const MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// Deadlines and connection settings of a [`KvClient`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    /// Deadline of every unary call.
    pub call_timeout: Duration,
    /// How long establishing the TCP connection may take. Kept below the call deadline so
    /// that an unreachable node yields a definite "could not connect" instead of a timeout.
    pub connect_timeout: Duration,
    /// HTTP/2 keep-alive ping interval while calls or streams are open (the ping must be
    /// answered within the same time), so a partition breaks a silent catalog stream
    /// promptly. `None` disables pings: grpc-go servers (elastickv) by default answer
    /// pings more frequent than every 5 minutes with GOAWAY `too_many_pings`.
    pub keepalive: Option<Duration>,
    /// Whether the server honours refkv's RawPut extensions (compare-and-set, and the pinned
    /// group/epoch of a stale-write probe). elastickv does not: it would ignore the fields
    /// and write unconditionally, so with `false` the client has no compare-and-set
    /// ([`KvTarget::as_cas`] is `None`) and every pinned write fails definitely
    /// (`unimplemented`) without being sent.
    pub cas_supported: bool,
    /// Whether the server serves refkv's `RefkvTxn` service (the transaction workloads).
    /// elastickv does not: with `false` the client has no transactions
    /// ([`KvTarget::as_txn`] is `None`).
    pub refkv_txn: bool,
    /// Where single-key reads go (`--read-path`); targets that route reads themselves
    /// (elastickv, refkv) honour it, the plain [`KvClient`] always reads through its node.
    pub read_path: super::ReadPath,
    /// The protocol of data operations (`--client`); targets without a Redis side ignore it.
    pub protocol: super::Protocol,
    /// How a Redis client reads sets (`--set-read`).
    pub set_read: super::SetRead,
    /// A DynamoDB register run's attribute types (`--value-type`).
    pub value_types: Option<super::dynamodb::value_types::ValueTypes>,
    /// How many tables a DynamoDB client's list-append keys are spread over (`--tables`).
    pub dynamo_tables: u32,
}

impl ClientOptions {
    /// The deadlines and set read of a [`super::redis::RedisClient`].
    pub fn redis(&self) -> super::redis::RedisOptions {
        super::redis::RedisOptions {
            call_timeout: self.call_timeout,
            connect_timeout: self.connect_timeout,
            set_read: self.set_read,
        }
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            call_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_millis(1000),
            keepalive: Some(Duration::from_secs(2)),
            cas_supported: true,
            refkv_txn: true,
            read_path: super::ReadPath::Node,
            protocol: super::Protocol::Grpc,
            set_read: super::SetRead::Scan,
            value_types: None,
            dynamo_tables: 1,
        }
    }
}

/// A gRPC client bound to one node.
#[derive(Clone)]
pub struct KvClient {
    node: String,
    timeout: Duration,
    cas_supported: bool,
    refkv_txn: bool,
    channel: Channel,
    kv: RawKvClient<Channel>,
    dist: DistributionClient<Channel>,
    admin: RaftAdminClient<Channel>,
    health: HealthClient<Channel>,
}

impl KvClient {
    /// A client whose connection is opened on first use (and reopened after failures).
    pub fn connect_lazy(node: &NodeEndpoint, opts: &ClientOptions) -> anyhow::Result<KvClient> {
        let uri = format!("http://{}", node.addr);
        let mut endpoint = Endpoint::from_shared(uri)
            .with_context(|| {
                format!(
                    "node {}: bad address {:?} (expected ip:port)",
                    node.name, node.addr
                )
            })?
            .connect_timeout(opts.connect_timeout)
            .tcp_nodelay(true);
        if let Some(interval) = opts.keepalive {
            endpoint = endpoint
                .http2_keep_alive_interval(interval)
                .keep_alive_timeout(interval)
                .keep_alive_while_idle(false);
        }
        let channel = endpoint.connect_lazy();
        Ok(KvClient {
            node: node.name.clone(),
            timeout: opts.call_timeout,
            cas_supported: opts.cas_supported,
            refkv_txn: opts.refkv_txn,
            channel: channel.clone(),
            kv: RawKvClient::new(channel.clone()).max_decoding_message_size(MAX_RESPONSE_BYTES),
            dist: DistributionClient::new(channel.clone())
                .max_decoding_message_size(MAX_RESPONSE_BYTES),
            admin: RaftAdminClient::new(channel.clone()),
            health: HealthClient::new(channel),
        })
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut req = tonic::Request::new(message);
        req.set_timeout(self.timeout);
        req
    }

    /// Runs one unary call under the deadline and classifies its failure.
    async fn call<T>(
        &self,
        kind: CallKind,
        fut: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> CallResult<T> {
        match tokio::time::timeout(self.timeout, fut).await {
            Err(_) => Err(CallError::timed_out(kind)),
            Ok(Err(status)) => Err(classify(kind, &status)),
            Ok(Ok(resp)) => Ok(resp.into_inner()),
        }
    }

    /// grpc.health.v1 Check of the whole server: true when it reports SERVING.
    pub async fn health(&self) -> CallResult<bool> {
        let mut c = self.health.clone();
        let req = self.request(HealthCheckRequest {
            service: String::new(),
        });
        let resp = self.call(CallKind::Read, c.check(req)).await?;
        Ok(resp.status == ServingStatus::Serving as i32)
    }

    async fn put(&self, req: kv::RawPutRequest) -> CallResult<WriteReply> {
        let mut c = self.kv.clone();
        let resp = self
            .call(CallKind::Mutation, c.raw_put(self.request(req)))
            .await?;
        Ok(WriteReply {
            applied: resp.success,
            meta: write_meta(resp.meta.as_ref(), resp.commit_index),
        })
    }

    async fn get(&self, key: Vec<u8>) -> CallResult<ReadReply> {
        let mut c = self.kv.clone();
        let req = self.request(kv::RawGetRequest {
            key,
            ..Default::default()
        });
        let resp = self.call(CallKind::Read, c.raw_get(req)).await?;
        let meta = commit_meta(resp.meta.as_ref());
        Ok(ReadReply {
            value: resp.exists.then_some(resp.value),
            meta,
        })
    }

    /// `key` as of the store timestamp `ts` (RawGet with `ts` set).
    async fn get_at(&self, key: Vec<u8>, ts: u64) -> CallResult<ReadReply> {
        let mut c = self.kv.clone();
        let req = self.request(kv::RawGetRequest {
            key,
            ts,
            ..Default::default()
        });
        let resp = self.call(CallKind::Read, c.raw_get(req)).await?;
        Ok(ReadReply {
            value: resp.exists.then_some(resp.value),
            meta: commit_meta(resp.meta.as_ref()),
        })
    }

    /// elastickv's `RawLatestCommitTS` for one key, called by path: it is not part of the
    /// RawKV service refkv serves (`proto/kv.proto`).
    async fn latest_ts(&self, key: Vec<u8>) -> CallResult<Option<u64>> {
        let mut grpc = tonic::client::Grpc::new(self.channel.clone());
        let path = tonic::codegen::http::uri::PathAndQuery::from_static("/RawKV/RawLatestCommitTS");
        let codec = tonic_prost::ProstCodec::<
            kv::RawLatestCommitTsRequest,
            kv::RawLatestCommitTsResponse,
        >::default();
        let req = self.request(kv::RawLatestCommitTsRequest { key });
        let call = async move {
            grpc.ready().await.map_err(|e| {
                tonic::Status::unavailable(format!("connection failed before sending: {e}"))
            })?;
            grpc.unary(req, path, codec).await
        };
        let resp = self.call(CallKind::Read, call).await?;
        Ok(resp.exists.then_some(resp.ts))
    }

    async fn remove(&self, key: Vec<u8>) -> CallResult<WriteReply> {
        let mut c = self.kv.clone();
        let req = self.request(kv::RawDeleteRequest { key });
        let resp = self.call(CallKind::Mutation, c.raw_delete(req)).await?;
        Ok(WriteReply {
            applied: resp.success,
            meta: write_meta(resp.meta.as_ref(), resp.commit_index),
        })
    }

    async fn scan_page(&self, start: Vec<u8>, end: Vec<u8>, limit: u64) -> CallResult<ScanReply> {
        let mut c = self.kv.clone();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let req = self.request(kv::RawScanAtRequest {
            start_key: start,
            end_key: end,
            limit,
            ..Default::default()
        });
        let resp = self.call(CallKind::Read, c.raw_scan_at(req)).await?;
        Ok(ScanReply {
            pairs: resp.kv.into_iter().map(|p| (p.key, p.value)).collect(),
            metas: resp
                .meta
                .iter()
                .filter_map(|m| commit_meta(Some(m)))
                .collect(),
        })
    }

    /// The range in pages of at most [`SCAN_PAGE`] keys, each from the key after the last
    /// one read, until a short page or `limit` keys.
    async fn scan_range(&self, start: Vec<u8>, end: Vec<u8>, limit: u64) -> CallResult<ScanReply> {
        let wanted = if limit == 0 { u64::MAX } else { limit };
        let mut out = ScanReply::default();
        let mut from = start;
        loop {
            let page_limit = (wanted - out.pairs.len() as u64).min(SCAN_PAGE);
            let page = self
                .scan_page(from.clone(), end.clone(), page_limit)
                .await?;
            let short = (page.pairs.len() as u64) < page_limit;
            out.metas.extend(page.metas);
            if let Some((last, _)) = page.pairs.last() {
                if *last < from {
                    return Err(CallError::bad_response(
                        CallKind::Read,
                        "RawScanAt returned a key before the page's start",
                    ));
                }
                from = last.clone();
                from.push(0);
            }
            out.pairs.extend(page.pairs);
            if short || out.pairs.len() as u64 >= wanted {
                return Ok(out);
            }
        }
    }

    async fn routes(&self) -> CallResult<CatalogSnapshot> {
        let mut c = self.dist.clone();
        let resp = self
            .call(
                CallKind::Read,
                c.list_routes(self.request(kv::ListRoutesRequest {})),
            )
            .await?;
        Ok(snapshot_from_list(&resp))
    }

    async fn split_range(&self, r: SplitRequest) -> CallResult<SplitReply> {
        let mut c = self.dist.clone();
        // Same-group only: SplitRange's deprecated target_group_id is never sent (an old
        // leader would ignore it and split in place); moves go through StartSplitMigration.
        let req = self.request(kv::SplitRangeRequest {
            expected_catalog_version: r.expected_catalog_version,
            route_id: r.route_id,
            split_key: r.split_key,
            ..Default::default()
        });
        let resp = self.call(CallKind::Mutation, c.split_range(req)).await?;
        Ok(SplitReply {
            catalog_version: resp.catalog_version,
            left: resp.left.as_ref().map(route_record),
            right: resp.right.as_ref().map(route_record),
            job_id: (resp.job_id != 0).then_some(resp.job_id),
            resolved_from: None,
        })
    }

    async fn split_migration(&self, r: SplitRequest) -> CallResult<SplitReply> {
        let mut c = self.dist.clone();
        let req = self.request(kv::StartSplitMigrationRequest {
            expected_catalog_version: r.expected_catalog_version,
            route_id: r.route_id,
            split_key: r.split_key,
            target_group_id: r.target_group.unwrap_or(0),
            options: Default::default(),
        });
        let resp = self
            .call(CallKind::Mutation, c.start_split_migration(req))
            .await?;
        Ok(SplitReply {
            catalog_version: resp.catalog_version,
            left: None,
            right: None,
            job_id: (resp.job_id != 0).then_some(resp.job_id),
            resolved_from: None,
        })
    }

    async fn get_split_job(&self, job_id: u64) -> CallResult<SplitJobRecord> {
        let mut c = self.dist.clone();
        let resp = self
            .call(
                CallKind::Read,
                c.get_split_job(self.request(kv::GetSplitJobRequest { job_id })),
            )
            .await?;
        resp.job
            .as_ref()
            .map(job_record)
            .ok_or_else(|| CallError::bad_response(CallKind::Read, "GetSplitJob returned no job"))
    }

    async fn split_jobs(&self) -> CallResult<Vec<SplitJobRecord>> {
        let mut c = self.dist.clone();
        let resp = self
            .call(
                CallKind::Read,
                c.list_split_jobs(self.request(kv::ListSplitJobsRequest::default())),
            )
            .await?;
        Ok(resp.jobs.iter().map(job_record).collect())
    }

    async fn abandon_job(&self, job_id: u64) -> CallResult<()> {
        let mut c = self.dist.clone();
        self.call(
            CallKind::Mutation,
            c.abandon_split_job(self.request(kv::AbandonSplitJobRequest { job_id })),
        )
        .await?;
        Ok(())
    }

    async fn retry_job(&self, job_id: u64) -> CallResult<()> {
        let mut c = self.dist.clone();
        self.call(
            CallKind::Mutation,
            c.retry_split_job(self.request(kv::RetrySplitJobRequest { job_id })),
        )
        .await?;
        Ok(())
    }

    async fn group_status(&self, group: u64) -> CallResult<GroupStatus> {
        let mut c = self.admin.clone();
        let req = self.request(kv::RaftAdminStatusRequest { group_id: group });
        let resp = self.call(CallKind::Read, c.status(req)).await?;
        let state = raft_state_name(resp.state);
        Ok(GroupStatus {
            group: if resp.group_id != 0 {
                resp.group_id
            } else {
                group
            },
            node_id: resp.node_id,
            is_leader: state == "LEADER",
            state: state.to_string(),
            leader_id: resp.leader_id,
            leader_address: resp.leader_address,
            term: resp.term,
            commit_index: resp.commit_index,
            applied_index: resp.applied_index,
        })
    }

    async fn open_watch(&self, after_version: u64) -> CallResult<CatalogStream> {
        let mut c = self.dist.clone();
        // No grpc-timeout on the request: the stream is long-lived. Only opening it is bounded.
        let req = tonic::Request::new(kv::CatalogWatchRequest {
            protocol_version: 1,
            after_version,
            max_batch_size: 0,
        });
        let stream = self.call(CallKind::Read, c.watch_catalog(req)).await?;
        let events = stream.filter_map(|item| async move {
            match item {
                Ok(event) => catalog_event(&event).map(Ok),
                Err(status) => Some(Err(classify(CallKind::Read, &status))),
            }
        });
        Ok(events.boxed())
    }
}

impl KvTarget for KvClient {
    fn node(&self) -> &str {
        &self.node
    }

    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        Box::pin(self.get(key.to_vec()))
    }

    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        let req = kv::RawPutRequest {
            key: key.to_vec(),
            value: value.to_vec(),
            ..Default::default()
        };
        Box::pin(self.put(req))
    }

    /// Only where the server has one (`ClientOptions::cas_supported`: refkv's RawPut
    /// extension; elastickv's RawPut would ignore the condition).
    fn as_cas(&self) -> Option<&dyn super::CasClient> {
        self.cas_supported.then_some(self as &dyn super::CasClient)
    }

    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        Box::pin(self.remove(key.to_vec()))
    }

    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        Box::pin(self.scan_range(start.to_vec(), end.to_vec(), limit))
    }

    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
        Box::pin(self.routes())
    }

    fn split(&self, request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        match request.target_group {
            Some(_) => Box::pin(self.split_migration(request)),
            None => Box::pin(self.split_range(request)),
        }
    }

    fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        Box::pin(self.group_status(group))
    }

    fn watch_catalog(&self, after_version: u64) -> BoxFuture<'_, CallResult<CatalogStream>> {
        Box::pin(self.open_watch(after_version))
    }

    fn as_txn(&self) -> Option<&dyn super::TxnClient> {
        self.refkv_txn.then_some(self as &dyn super::TxnClient)
    }

    fn as_txn_hold(&self) -> Option<&dyn super::TxnHoldControl> {
        self.refkv_txn.then_some(self as &dyn super::TxnHoldControl)
    }

    fn as_pinned_writes(&self) -> Option<&dyn super::PinnedWrites> {
        Some(self)
    }

    fn as_split_migration(&self) -> Option<&dyn super::SplitMigration> {
        Some(self)
    }

    fn as_split_jobs(&self) -> Option<&dyn super::SplitJobs> {
        Some(self)
    }

    fn as_versioned(&self) -> Option<&dyn super::VersionedReads> {
        Some(self)
    }
}

/// refkv's RawPut extension; a server without it (`ClientOptions::cas_supported` off) or
/// group 0 answers a definite `unimplemented`, unsent.
impl super::PinnedWrites for KvClient {
    fn write_pinned(
        &self,
        key: &[u8],
        value: &[u8],
        group: u64,
        epoch: u64,
    ) -> BoxFuture<'_, CallResult<WriteReply>> {
        if !self.cas_supported || group == 0 {
            let err = CallError::new(
                super::Certainty::Definite,
                "unimplemented",
                "this server has no pinned writes",
            );
            return Box::pin(async move { Err(err) });
        }
        let req = kv::RawPutRequest {
            key: key.to_vec(),
            value: value.to_vec(),
            group_id: group,
            route_epoch: epoch,
            ..Default::default()
        };
        Box::pin(self.put(req))
    }
}

impl super::SplitMigration for KvClient {
    fn start_split_migration(
        &self,
        request: SplitRequest,
    ) -> BoxFuture<'_, CallResult<SplitReply>> {
        Box::pin(self.split_migration(request))
    }
}

impl super::SplitJobs for KvClient {
    fn split_job(&self, job_id: u64) -> BoxFuture<'_, CallResult<SplitJobRecord>> {
        Box::pin(self.get_split_job(job_id))
    }

    fn list_split_jobs(&self) -> BoxFuture<'_, CallResult<Vec<SplitJobRecord>>> {
        Box::pin(self.split_jobs())
    }

    fn abandon_split_job(&self, job_id: u64) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(self.abandon_job(job_id))
    }

    fn retry_split_job(&self, job_id: u64) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(self.retry_job(job_id))
    }
}

impl super::VersionedReads for KvClient {
    fn read_at(&self, key: &[u8], ts: u64) -> BoxFuture<'_, CallResult<ReadReply>> {
        Box::pin(self.get_at(key.to_vec(), ts))
    }

    fn latest_commit_ts(&self, key: &[u8]) -> BoxFuture<'_, CallResult<Option<u64>>> {
        Box::pin(self.latest_ts(key.to_vec()))
    }
}

impl super::CasClient for KvClient {
    fn cas(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: &[u8],
    ) -> BoxFuture<'_, CallResult<WriteReply>> {
        let req = kv::RawPutRequest {
            key: key.to_vec(),
            value: new.to_vec(),
            cas: true,
            expected: expected.map(<[u8]>::to_vec).unwrap_or_default(),
            expect_absent: expected.is_none(),
            ..Default::default()
        };
        Box::pin(self.put(req))
    }
}

#[path = "grpc_txn.rs"]
mod txn;
pub use txn::{txn_failure, txn_request, txn_values};

/// Makes a fresh [`KvClient`] (its own connection) per call.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcConnector {
    pub options: ClientOptions,
}

impl Connector for GrpcConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(KvClient::connect_lazy(node, &self.options)?))
    }
}
