//! Test support: an in-process fake store speaking the RawKV / Distribution / RaftAdmin
//! gRPC services with scripted failures, and an in-memory history sink.

#![allow(dead_code)]

use analysis::history::{HistorySink, Op};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_stream::Stream;
use tonic::{Code, Request, Response, Status};
use workloads::proto::kv::{self, distribution_server, raft_admin_server, raw_kv_server};
use workloads::NodeEndpoint;

/// How the fake answers one call.
#[derive(Debug, Clone)]
pub enum Reply {
    Normal,
    Error(Code),
    /// Sleep this long, then answer normally.
    Delay(Duration),
}

/// How WatchCatalog behaves.
#[derive(Debug, Clone)]
pub enum WatchMode {
    Unimplemented,
    Error(Code),
    /// Send these events, then keep the stream open.
    Events(Vec<kv::CatalogWatchEvent>),
}

pub struct FakeStore {
    pub name: String,
    data: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
    put_script: Mutex<VecDeque<Reply>>,
    get_script: Mutex<VecDeque<Reply>>,
    pub puts: AtomicU64,
    pub gets: AtomicU64,
    /// ListRoutes answers in order; the last one repeats.
    catalog: Mutex<VecDeque<kv::ListRoutesResponse>>,
    pub list_calls: AtomicU64,
    /// ListRoutes fails (Unavailable) once this many calls have been answered.
    list_limit: AtomicU64,
    watch: Mutex<WatchMode>,
    leads: Mutex<HashSet<u64>>,
    pub term: AtomicU64,
}

impl FakeStore {
    pub fn new(name: &str) -> Arc<FakeStore> {
        Arc::new(FakeStore {
            name: name.to_string(),
            data: Mutex::new(BTreeMap::new()),
            put_script: Mutex::new(VecDeque::new()),
            get_script: Mutex::new(VecDeque::new()),
            puts: AtomicU64::new(0),
            gets: AtomicU64::new(0),
            catalog: Mutex::new(VecDeque::from([list_response(
                1,
                vec![route(1, "", "", 1, 0)],
                vec![],
            )])),
            list_calls: AtomicU64::new(0),
            list_limit: AtomicU64::new(u64::MAX),
            watch: Mutex::new(WatchMode::Unimplemented),
            leads: Mutex::new(HashSet::new()),
            term: AtomicU64::new(1),
        })
    }

    pub fn script_puts(&self, replies: impl IntoIterator<Item = Reply>) {
        self.put_script.lock().unwrap().extend(replies);
    }

    pub fn script_gets(&self, replies: impl IntoIterator<Item = Reply>) {
        self.get_script.lock().unwrap().extend(replies);
    }

    pub fn set_catalog_sequence(&self, responses: Vec<kv::ListRoutesResponse>) {
        *self.catalog.lock().unwrap() = responses.into();
    }

    pub fn fail_lists_after(&self, calls: u64) {
        self.list_limit.store(calls, Ordering::SeqCst);
    }

    pub fn set_watch(&self, mode: WatchMode) {
        *self.watch.lock().unwrap() = mode;
    }

    pub fn set_leader_of(&self, groups: &[u64]) {
        *self.leads.lock().unwrap() = groups.iter().copied().collect();
    }

    pub fn insert(&self, key: &str, value: &str) {
        self.data
            .lock()
            .unwrap()
            .insert(key.as_bytes().to_vec(), value.as_bytes().to_vec());
    }

    /// Drops `key` as a store that lost an acknowledged write would.
    pub fn remove(&self, key: &str) {
        self.data.lock().unwrap().remove(key.as_bytes());
    }

    pub fn get(&self, key: &str) -> Option<String> {
        self.data
            .lock()
            .unwrap()
            .get(key.as_bytes())
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }

    fn meta(&self) -> Option<kv::CommitMeta> {
        Some(kv::CommitMeta {
            group_id: 1,
            term: self.term.load(Ordering::SeqCst),
            log_index: 1,
            node_id: self.name.clone(),
            ..Default::default()
        })
    }
}

async fn apply(script: &Mutex<VecDeque<Reply>>) -> Result<(), Status> {
    let reply = script.lock().unwrap().pop_front().unwrap_or(Reply::Normal);
    match reply {
        Reply::Normal => Ok(()),
        Reply::Error(code) => Err(Status::new(code, "scripted failure")),
        Reply::Delay(d) => {
            tokio::time::sleep(d).await;
            Ok(())
        }
    }
}

pub fn route(id: u64, start: &str, end: &str, group: u64, parent: u64) -> kv::RouteDescriptor {
    kv::RouteDescriptor {
        route_id: id,
        start: start.as_bytes().to_vec(),
        end: end.as_bytes().to_vec(),
        raft_group_id: group,
        state: kv::RouteState::Active as i32,
        parent_route_id: parent,
        epoch: 1,
    }
}

pub fn list_response(
    version: u64,
    routes: Vec<kv::RouteDescriptor>,
    jobs: Vec<kv::SplitJob>,
) -> kv::ListRoutesResponse {
    kv::ListRoutesResponse {
        catalog_version: version,
        routes,
        jobs,
    }
}

/// The fake's gRPC face (a local type, so the generated service traits can be implemented).
#[derive(Clone)]
pub struct Svc(pub Arc<FakeStore>);

impl std::ops::Deref for Svc {
    type Target = FakeStore;
    fn deref(&self) -> &FakeStore {
        &self.0
    }
}

#[tonic::async_trait]
impl raw_kv_server::RawKv for Svc {
    async fn raw_put(
        &self,
        request: Request<kv::RawPutRequest>,
    ) -> Result<Response<kv::RawPutResponse>, Status> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        apply(&self.put_script).await?;
        let r = request.into_inner();
        let mut data = self.data.lock().unwrap();
        if r.cas {
            let current = data.get(&r.key);
            let matches = if r.expect_absent {
                current.is_none()
            } else {
                current == Some(&r.expected)
            };
            if !matches {
                return Ok(Response::new(kv::RawPutResponse {
                    commit_index: 0,
                    success: false,
                    meta: None,
                }));
            }
        }
        data.insert(r.key, r.value);
        Ok(Response::new(kv::RawPutResponse {
            commit_index: 1,
            success: true,
            meta: self.meta(),
        }))
    }

    async fn raw_get(
        &self,
        request: Request<kv::RawGetRequest>,
    ) -> Result<Response<kv::RawGetResponse>, Status> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        apply(&self.get_script).await?;
        let r = request.into_inner();
        let value = self.data.lock().unwrap().get(&r.key).cloned();
        Ok(Response::new(kv::RawGetResponse {
            read_at_index: 1,
            exists: value.is_some(),
            value: value.unwrap_or_default(),
            meta: self.meta(),
        }))
    }

    async fn raw_delete(
        &self,
        request: Request<kv::RawDeleteRequest>,
    ) -> Result<Response<kv::RawDeleteResponse>, Status> {
        let r = request.into_inner();
        let existed = self.data.lock().unwrap().remove(&r.key).is_some();
        Ok(Response::new(kv::RawDeleteResponse {
            commit_index: 1,
            success: existed,
            meta: self.meta(),
        }))
    }

    async fn raw_scan_at(
        &self,
        request: Request<kv::RawScanAtRequest>,
    ) -> Result<Response<kv::RawScanAtResponse>, Status> {
        apply(&self.get_script).await?;
        let r = request.into_inner();
        let data = self.data.lock().unwrap();
        let kvs = data
            .iter()
            .filter(|(k, _)| **k >= r.start_key && (r.end_key.is_empty() || **k < r.end_key))
            .map(|(k, v)| kv::RawKvPair {
                key: k.clone(),
                value: v.clone(),
            })
            .collect();
        Ok(Response::new(kv::RawScanAtResponse {
            kv: kvs,
            meta: self.meta().into_iter().collect(),
        }))
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<kv::CatalogWatchEvent, Status>> + Send>>;

#[tonic::async_trait]
impl distribution_server::Distribution for Svc {
    async fn get_route(
        &self,
        _: Request<kv::GetRouteRequest>,
    ) -> Result<Response<kv::GetRouteResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn list_routes(
        &self,
        _: Request<kv::ListRoutesRequest>,
    ) -> Result<Response<kv::ListRoutesResponse>, Status> {
        if self.list_calls.fetch_add(1, Ordering::SeqCst) >= self.list_limit.load(Ordering::SeqCst)
        {
            return Err(Status::unavailable("scripted: node down"));
        }
        let mut seq = self.catalog.lock().unwrap();
        let resp = if seq.len() > 1 {
            seq.pop_front()
        } else {
            seq.front().cloned()
        };
        resp.map(Response::new)
            .ok_or_else(|| Status::unavailable("no catalog"))
    }

    async fn split_range(
        &self,
        _: Request<kv::SplitRangeRequest>,
    ) -> Result<Response<kv::SplitRangeResponse>, Status> {
        Err(Status::failed_precondition("not the catalog leader"))
    }

    async fn start_split_migration(
        &self,
        _: Request<kv::StartSplitMigrationRequest>,
    ) -> Result<Response<kv::StartSplitMigrationResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn get_split_job(
        &self,
        _: Request<kv::GetSplitJobRequest>,
    ) -> Result<Response<kv::GetSplitJobResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn list_split_jobs(
        &self,
        _: Request<kv::ListSplitJobsRequest>,
    ) -> Result<Response<kv::ListSplitJobsResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn abandon_split_job(
        &self,
        _: Request<kv::AbandonSplitJobRequest>,
    ) -> Result<Response<kv::AbandonSplitJobResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn retry_split_job(
        &self,
        _: Request<kv::RetrySplitJobRequest>,
    ) -> Result<Response<kv::RetrySplitJobResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn get_catalog_capabilities(
        &self,
        _: Request<kv::CatalogCapabilitiesRequest>,
    ) -> Result<Response<kv::CatalogCapabilitiesResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    type WatchCatalogStream = EventStream;

    async fn watch_catalog(
        &self,
        _: Request<kv::CatalogWatchRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let mode = self.watch.lock().unwrap().clone();
        match mode {
            WatchMode::Unimplemented => Err(Status::unimplemented("no watch in this fake")),
            WatchMode::Error(code) => Err(Status::new(code, "scripted watch failure")),
            WatchMode::Events(events) => {
                let head = tokio_stream::iter(events.into_iter().map(Ok));
                let stream = tokio_stream::StreamExt::chain(head, futures::stream::pending());
                Ok(Response::new(Box::pin(stream)))
            }
        }
    }
}

#[tonic::async_trait]
impl raft_admin_server::RaftAdmin for Svc {
    async fn status(
        &self,
        request: Request<kv::RaftAdminStatusRequest>,
    ) -> Result<Response<kv::RaftAdminStatusResponse>, Status> {
        let group = request.into_inner().group_id;
        let leads = self.leads.lock().unwrap().contains(&group);
        let state = if leads {
            kv::RaftAdminState::Leader
        } else {
            kv::RaftAdminState::Follower
        };
        Ok(Response::new(kv::RaftAdminStatusResponse {
            state: state as i32,
            term: self.term.load(Ordering::SeqCst),
            group_id: group,
            node_id: self.name.clone(),
            ..Default::default()
        }))
    }

    async fn transfer_leadership(
        &self,
        _: Request<kv::RaftAdminTransferLeadershipRequest>,
    ) -> Result<Response<kv::RaftAdminTransferLeadershipResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }
}

/// Serves `store` on a fresh loopback port; returns the endpoint.
pub async fn serve(store: Arc<FakeStore>) -> NodeEndpoint {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let router = tonic::transport::Server::builder()
        .add_service(raw_kv_server::RawKvServer::new(Svc(store.clone())))
        .add_service(distribution_server::DistributionServer::new(Svc(
            store.clone()
        )))
        .add_service(raft_admin_server::RaftAdminServer::new(Svc(store.clone())));
    tokio::spawn(router.serve_with_incoming(TcpListenerStream::new(listener)));
    NodeEndpoint {
        name: store.name.clone(),
        addr: addr.to_string(),
    }
}

/// An address nothing listens on (bound, then released).
pub async fn dead_endpoint(name: &str) -> NodeEndpoint {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr: SocketAddr = listener.local_addr().expect("local addr");
    drop(listener);
    NodeEndpoint {
        name: name.to_string(),
        addr: addr.to_string(),
    }
}

/// Keeps every recorded entry in memory, assigning indices like the runner's sink.
#[derive(Default)]
pub struct VecSink {
    ops: Mutex<Vec<Op>>,
}

impl VecSink {
    pub fn new() -> Arc<VecSink> {
        Arc::new(VecSink::default())
    }

    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().unwrap().clone()
    }
}

impl HistorySink for VecSink {
    fn record(&self, mut op: Op) -> u64 {
        let mut ops = self.ops.lock().unwrap();
        op.index = ops.len() as u64;
        ops.push(op);
        op_index(&ops)
    }
}

fn op_index(ops: &[Op]) -> u64 {
    ops.len() as u64 - 1
}

/// Checks that every client process alternates invoke → completion with matching f/key and
/// that no invocation is left without a completion.
pub fn assert_well_formed(ops: &[Op]) {
    use analysis::history::{OpType, Process};
    let mut open: std::collections::HashMap<u64, &Op> = Default::default();
    for op in ops {
        let Process::Client(p) = op.process else {
            continue;
        };
        match op.kind {
            OpType::Invoke => assert!(
                open.insert(p, op).is_none(),
                "process {p} invoked twice: {op:?}"
            ),
            _ => {
                let inv = open
                    .remove(&p)
                    .unwrap_or_else(|| panic!("completion without invoke: {op:?}"));
                assert_eq!(
                    (&inv.f, &inv.key, &inv.node),
                    (&op.f, &op.key, &op.node),
                    "mismatched pair"
                );
            }
        }
    }
    assert!(open.is_empty(), "invocations without completion: {open:?}");
}

/// A TCP proxy in front of a node that can be killed: every open connection is dropped
/// and the port stops accepting, like a crashed server process.
pub struct KillableProxy {
    pub endpoint: NodeEndpoint,
    tasks: tokio::task::JoinSet<()>,
    connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl KillableProxy {
    pub async fn start(name: &str, backend: &NodeEndpoint) -> KillableProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let backend = backend.addr.clone();
        let connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Default::default();
        let conns = connections.clone();
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let backend = backend.clone();
                let handle = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                conns.lock().unwrap().push(handle.abort_handle());
            }
        });
        KillableProxy {
            endpoint: NodeEndpoint {
                name: name.to_string(),
                addr: addr.to_string(),
            },
            tasks,
            connections,
        }
    }

    /// Stops accepting and drops every proxied connection.
    pub async fn kill(&mut self) {
        self.tasks.shutdown().await;
        for c in self.connections.lock().unwrap().drain(..) {
            c.abort();
        }
    }
}
