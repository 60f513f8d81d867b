//! A behaviour double of elastickv (d9a031d) for tests that cannot run the real thing: an
//! in-process cluster of `nodes` × `groups` tonic servers on loopback, each (node, group) at
//! its own address like elastickv's per-group gRPC servers (`main.go` ~2719–2775), answering
//! as the cited code does:
//!
//! - `RawScanAt`: nothing for `limit == 0` (`kv/shard_store.go` ~302), "invalid request" for a
//!   negative limit or one above 1025 (`adapter/grpc.go` ~276–301);
//! - `RaftAdmin.Status` of *the group the server belongs to*, whatever group is asked
//!   (`internal/raftadmin/server.go` ~50–70); health SERVING only on a leader
//!   (`internal/raftadmin/health.go` ~63–138);
//! - `SplitRange` only on the catalog (group 1) leader, else FailedPrecondition "not leader
//!   for distribution catalog" (`adapter/distribution_server.go` ~421–433); `WatchCatalog`
//!   Unavailable elsewhere (~205); optionally `Internal` after the split committed (~573);
//!   `StartSplitMigration` UNIMPLEMENTED (absent at d9a031d);
//! - `RawPut`: optionally every n-th put is applied *and then* answered "etcd raft engine
//!   is not leader" (a proposal appended before the leader stepped down, `engine.go` ~3699),
//!   every m-th refused before anything with the HLC ceiling text (`kv/hlc.go` ~29), and
//!   every l-th applied and then answered "leader proxy circuit open" (an earlier forward
//!   attempt landed, `kv/leader_proxy.go` ~98–150);
//! - `RawGet` on a node that does not lead the key's group answers as of a lagging
//!   timestamp (`follower_lag`): the newest version committed at least that long ago, the
//!   shape of `globalSnapshotTS` using the node's own `LastCommitTS` (`adapter/ts.go` ~40).
//!
//! Group g is led by node `g % nodes`, so the catalog leader is never the first node.
//! Invariant: state is one linearizable store; only the read path above may lag.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_stream::wrappers::TcpListenerStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};
use workloads::proto::health::{self, health_check_response::ServingStatus, health_server};
use workloads::proto::kv::{self, distribution_server, raft_admin_server, raw_kv_server};

/// How the double misbehaves (all off by default).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub nodes: usize,
    pub groups: u64,
    /// How far behind a non-leader's reads are.
    pub follower_lag: Duration,
    /// Every n-th put is applied and then answered "not leader" (0 = never).
    pub not_leader_after_apply_every: u64,
    /// Every m-th put is refused with the HLC ceiling text (0 = never).
    pub hlc_refused_every: u64,
    /// Every l-th put is applied and then answered "leader proxy circuit open" (0 = never).
    pub circuit_open_after_apply_every: u64,
    /// SplitRange answers Internal after committing.
    pub split_internal_after_commit: bool,
}

#[derive(Debug, Clone)]
struct Route {
    id: u64,
    start: Vec<u8>,
    end: Vec<u8>,
    group: u64,
    parent: u64,
}

#[derive(Default)]
struct State {
    /// Per key: (commit instant, value), oldest first.
    versions: BTreeMap<Vec<u8>, Vec<(Instant, Vec<u8>)>>,
    catalog_version: u64,
    routes: Vec<Route>,
    next_route: u64,
}

/// What the double was asked, for assertions.
#[derive(Default)]
pub struct Calls {
    pub puts: AtomicU64,
    pub split_range: AtomicU64,
    pub split_migration: AtomicU64,
    pub scan_limits: Mutex<Vec<i64>>,
}

pub struct Double {
    pub opts: Options,
    /// `addrs[node][group - 1]`.
    pub addrs: Vec<Vec<SocketAddr>>,
    state: Mutex<State>,
    pub calls: Calls,
}

const NOT_CATALOG_LEADER: &str = "not leader for distribution catalog";

impl Double {
    /// The node leading `group` (0-based).
    pub fn leader(&self, group: u64) -> usize {
        (group as usize) % self.opts.nodes
    }

    /// `n1`..: the node names faultline gives `--endpoints`.
    pub fn endpoints(&self) -> String {
        self.addrs
            .iter()
            .map(|g| g[0].to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn group_of(&self, key: &[u8]) -> u64 {
        let s = self.state();
        s.routes
            .iter()
            .find(|r| r.start.as_slice() <= key && (r.end.is_empty() || key < r.end.as_slice()))
            .map_or(1, |r| r.group)
    }

    fn list(&self) -> kv::ListRoutesResponse {
        let s = self.state();
        kv::ListRoutesResponse {
            catalog_version: s.catalog_version,
            routes: s.routes.iter().map(descriptor).collect(),
            jobs: vec![],
        }
    }
}

fn descriptor(r: &Route) -> kv::RouteDescriptor {
    kv::RouteDescriptor {
        route_id: r.id,
        start: r.start.clone(),
        end: r.end.clone(),
        raft_group_id: r.group,
        state: kv::RouteState::Active as i32,
        parent_route_id: r.parent,
        epoch: 0,
    }
}

/// The initial routes: faultline's `--shardRanges` cut (`Elastickv::shard_ranges`).
fn initial_routes(groups: u64) -> Vec<Route> {
    let cut = |i: u64| {
        if i == 0 || i == groups {
            Vec::new()
        } else {
            vec![b'a' + (26 * i / groups) as u8]
        }
    };
    (0..groups)
        .map(|i| Route {
            id: i + 1,
            start: cut(i),
            end: cut(i + 1),
            group: i + 1,
            parent: 0,
        })
        .collect()
}

/// One (node, group) server.
#[derive(Clone)]
struct Svc {
    double: Arc<Double>,
    node: usize,
    group: u64,
}

impl Svc {
    fn leads(&self, group: u64) -> bool {
        self.double.leader(group) == self.node
    }
}

#[tonic::async_trait]
impl raw_kv_server::RawKv for Svc {
    async fn raw_put(
        &self,
        req: Request<kv::RawPutRequest>,
    ) -> Result<Response<kv::RawPutResponse>, Status> {
        let r = req.into_inner();
        let d = &self.double;
        let n = d.calls.puts.fetch_add(1, Ordering::SeqCst) + 1;
        let every = |k: u64| k > 0 && n.is_multiple_of(k);
        if every(d.opts.hlc_refused_every) {
            return Err(Status::unknown("allocate sharded raw log ts: hlc: physical/logical ceiling exhausted; refusing to issue persistence timestamp"));
        }
        d.state()
            .versions
            .entry(r.key)
            .or_default()
            .push((Instant::now(), r.value));
        if every(d.opts.not_leader_after_apply_every) {
            return Err(Status::unknown("etcd raft engine is not leader"));
        }
        if every(d.opts.circuit_open_after_apply_every) {
            return Err(Status::unknown(
                "leader id=\"n2\" term=2 unavailable until 12:00: leader proxy circuit open",
            ));
        }
        Ok(Response::new(kv::RawPutResponse {
            commit_index: n,
            success: true,
            meta: None,
        }))
    }

    async fn raw_get(
        &self,
        req: Request<kv::RawGetRequest>,
    ) -> Result<Response<kv::RawGetResponse>, Status> {
        let key = req.into_inner().key;
        let d = &self.double;
        let lag = if self.leads(d.group_of(&key)) {
            Duration::ZERO
        } else {
            d.opts.follower_lag
        };
        let as_of = Instant::now().checked_sub(lag).unwrap_or_else(Instant::now);
        let s = d.state();
        let value = s
            .versions
            .get(&key)
            .and_then(|vs| vs.iter().rev().find(|(t, _)| *t <= as_of))
            .map(|(_, v)| v.clone());
        Ok(Response::new(kv::RawGetResponse {
            read_at_index: 0,
            exists: value.is_some(),
            value: value.unwrap_or_default(),
            meta: None,
        }))
    }

    async fn raw_delete(
        &self,
        _: Request<kv::RawDeleteRequest>,
    ) -> Result<Response<kv::RawDeleteResponse>, Status> {
        Err(Status::unimplemented("the double does not delete"))
    }

    async fn raw_scan_at(
        &self,
        req: Request<kv::RawScanAtRequest>,
    ) -> Result<Response<kv::RawScanAtResponse>, Status> {
        let r = req.into_inner();
        self.double.calls.scan_limits.lock().unwrap().push(r.limit);
        if !(0..=1025).contains(&r.limit) {
            return Err(Status::unknown("invalid request"));
        }
        let s = self.double.state();
        let in_range = |k: &Vec<u8>| *k >= r.start_key && (r.end_key.is_empty() || *k < r.end_key);
        let kv = s
            .versions
            .iter()
            .filter(|(k, vs)| in_range(k) && !vs.is_empty())
            .take(r.limit as usize)
            .map(|(k, vs)| kv::RawKvPair {
                key: k.clone(),
                value: vs.last().map(|(_, v)| v.clone()).unwrap_or_default(),
            })
            .collect();
        Ok(Response::new(kv::RawScanAtResponse { kv, meta: vec![] }))
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<kv::CatalogWatchEvent, Status>> + Send>>;

impl Svc {
    fn split(&self, r: kv::SplitRangeRequest) -> Result<kv::SplitRangeResponse, Status> {
        let d = &self.double;
        let mut s = d.state();
        if s.catalog_version != r.expected_catalog_version {
            return Err(Status::failed_precondition("catalog version mismatch"));
        }
        let Some(i) = s.routes.iter().position(|x| x.id == r.route_id) else {
            return Err(Status::not_found("unknown route"));
        };
        let parent = s.routes[i].clone();
        let inside =
            parent.start < r.split_key && (parent.end.is_empty() || r.split_key < parent.end);
        if !inside {
            return Err(Status::invalid_argument("split key at route boundary"));
        }
        let (l, rt) = (s.next_route, s.next_route + 1);
        s.next_route += 2;
        let left = Route {
            id: l,
            start: parent.start.clone(),
            end: r.split_key.clone(),
            group: parent.group,
            parent: parent.id,
        };
        let right = Route {
            id: rt,
            start: r.split_key.clone(),
            end: parent.end.clone(),
            group: parent.group,
            parent: parent.id,
        };
        s.routes.splice(i..=i, [left.clone(), right.clone()]);
        s.catalog_version += 1;
        if d.opts.split_internal_after_commit {
            return Err(Status::internal(
                "catalog split committed but local snapshot is stale at 9: got 1, want 2",
            ));
        }
        Ok(kv::SplitRangeResponse {
            catalog_version: s.catalog_version,
            left: Some(descriptor(&left)),
            right: Some(descriptor(&right)),
            job_id: 0,
        })
    }
}

#[tonic::async_trait]
impl distribution_server::Distribution for Svc {
    async fn get_route(
        &self,
        _: Request<kv::GetRouteRequest>,
    ) -> Result<Response<kv::GetRouteResponse>, Status> {
        Err(Status::unimplemented("not in the double"))
    }

    async fn list_routes(
        &self,
        _: Request<kv::ListRoutesRequest>,
    ) -> Result<Response<kv::ListRoutesResponse>, Status> {
        Ok(Response::new(self.double.list()))
    }

    async fn split_range(
        &self,
        req: Request<kv::SplitRangeRequest>,
    ) -> Result<Response<kv::SplitRangeResponse>, Status> {
        self.double.calls.split_range.fetch_add(1, Ordering::SeqCst);
        if !self.leads(1) {
            return Err(Status::failed_precondition(NOT_CATALOG_LEADER));
        }
        self.split(req.into_inner()).map(Response::new)
    }

    async fn get_catalog_capabilities(
        &self,
        _: Request<kv::CatalogCapabilitiesRequest>,
    ) -> Result<Response<kv::CatalogCapabilitiesResponse>, Status> {
        Err(Status::unimplemented("not in the double"))
    }

    type WatchCatalogStream = EventStream;

    async fn watch_catalog(
        &self,
        _: Request<kv::CatalogWatchRequest>,
    ) -> Result<Response<EventStream>, Status> {
        if !self.leads(1) {
            return Err(Status::unavailable(
                "catalog watch requires the catalog-group leader",
            ));
        }
        // A reset whenever the catalog version moves (polled; the watcher accepts resets).
        let double = self.double.clone();
        let stream = futures::stream::unfold(0u64, move |seen| {
            let double = double.clone();
            async move {
                loop {
                    let list = double.list();
                    if list.catalog_version != seen {
                        let reset = kv::CatalogSnapshotReset {
                            version: list.catalog_version,
                            routes: list.routes,
                            jobs: vec![],
                        };
                        let event = kv::CatalogWatchEvent {
                            payload: Some(kv::catalog_watch_event::Payload::Snapshot(reset)),
                        };
                        return Some((Ok(event), list.catalog_version));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn start_split_migration(
        &self,
        _: Request<kv::StartSplitMigrationRequest>,
    ) -> Result<Response<kv::StartSplitMigrationResponse>, Status> {
        self.double
            .calls
            .split_migration
            .fetch_add(1, Ordering::SeqCst);
        Err(Status::unimplemented(
            "unknown method StartSplitMigration for service Distribution",
        ))
    }

    // Like StartSplitMigration, the rest of the milestone-2 job API is absent at d9a031d.
    async fn get_split_job(
        &self,
        _: Request<kv::GetSplitJobRequest>,
    ) -> Result<Response<kv::GetSplitJobResponse>, Status> {
        Err(Status::unimplemented(
            "unknown method GetSplitJob for service Distribution",
        ))
    }

    async fn list_split_jobs(
        &self,
        _: Request<kv::ListSplitJobsRequest>,
    ) -> Result<Response<kv::ListSplitJobsResponse>, Status> {
        Err(Status::unimplemented(
            "unknown method ListSplitJobs for service Distribution",
        ))
    }

    async fn abandon_split_job(
        &self,
        _: Request<kv::AbandonSplitJobRequest>,
    ) -> Result<Response<kv::AbandonSplitJobResponse>, Status> {
        Err(Status::unimplemented(
            "unknown method AbandonSplitJob for service Distribution",
        ))
    }

    async fn retry_split_job(
        &self,
        _: Request<kv::RetrySplitJobRequest>,
    ) -> Result<Response<kv::RetrySplitJobResponse>, Status> {
        Err(Status::unimplemented(
            "unknown method RetrySplitJob for service Distribution",
        ))
    }
}

#[tonic::async_trait]
impl raft_admin_server::RaftAdmin for Svc {
    async fn status(
        &self,
        _: Request<kv::RaftAdminStatusRequest>,
    ) -> Result<Response<kv::RaftAdminStatusResponse>, Status> {
        // The server's own group, whatever was asked: elastickv's Status has no group.
        let leader = self.double.leader(self.group);
        let state = if leader == self.node {
            kv::RaftAdminState::Leader
        } else {
            kv::RaftAdminState::Follower
        };
        Ok(Response::new(kv::RaftAdminStatusResponse {
            state: state as i32,
            leader_id: format!("n{}", leader + 1),
            leader_address: self.double.addrs[leader][self.group as usize - 1].to_string(),
            term: 1,
            ..Default::default()
        }))
    }

    async fn transfer_leadership(
        &self,
        _: Request<kv::RaftAdminTransferLeadershipRequest>,
    ) -> Result<Response<kv::RaftAdminTransferLeadershipResponse>, Status> {
        Err(Status::unimplemented("not in the double"))
    }
}

type HealthStream = Pin<Box<dyn Stream<Item = Result<health::HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl health_server::Health for Svc {
    async fn check(
        &self,
        _: Request<health::HealthCheckRequest>,
    ) -> Result<Response<health::HealthCheckResponse>, Status> {
        let status = if self.leads(self.group) {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        Ok(Response::new(health::HealthCheckResponse {
            status: status as i32,
        }))
    }

    type WatchStream = HealthStream;

    async fn watch(
        &self,
        _: Request<health::HealthCheckRequest>,
    ) -> Result<Response<HealthStream>, Status> {
        Err(Status::unimplemented("not in the double"))
    }
}

/// Binds every (node, group) address: node k at 127.0.77.(k+1), group g at base + g − 1.
async fn bind_all(nodes: usize, groups: u64) -> Vec<Vec<tokio::net::TcpListener>> {
    for attempt in 0..50u64 {
        let base = 20000 + ((std::process::id() as u64 * 7919 + attempt * 104_729) % 40000) as u16;
        let mut all = Vec::new();
        'nodes: for k in 0..nodes {
            let mut own = Vec::new();
            for g in 0..groups {
                let addr = format!("127.0.77.{}:{}", k + 1, base + g as u16);
                match tokio::net::TcpListener::bind(&addr).await {
                    Ok(l) => own.push(l),
                    Err(_) => break 'nodes,
                }
            }
            all.push(own);
        }
        if all.len() == nodes && all.iter().all(|g| g.len() == groups as usize) {
            return all;
        }
    }
    panic!("no free loopback ports for the elastickv double");
}

/// Starts the double; it serves until the runtime ends.
pub async fn start(opts: Options) -> Arc<Double> {
    let listeners = bind_all(opts.nodes, opts.groups).await;
    let addrs = listeners
        .iter()
        .map(|g| g.iter().map(|l| l.local_addr().expect("bound")).collect())
        .collect();
    let state = State {
        catalog_version: 1,
        routes: initial_routes(opts.groups),
        next_route: opts.groups + 1,
        ..Default::default()
    };
    let double = Arc::new(Double {
        opts,
        addrs,
        state: Mutex::new(state),
        calls: Calls::default(),
    });
    for (node, own) in listeners.into_iter().enumerate() {
        for (g, listener) in own.into_iter().enumerate() {
            let svc = Svc {
                double: double.clone(),
                node,
                group: g as u64 + 1,
            };
            let router = tonic::transport::Server::builder()
                .add_service(raw_kv_server::RawKvServer::new(svc.clone()))
                .add_service(distribution_server::DistributionServer::new(svc.clone()))
                .add_service(raft_admin_server::RaftAdminServer::new(svc.clone()))
                .add_service(health_server::HealthServer::new(svc));
            tokio::spawn(router.serve_with_incoming(TcpListenerStream::new(listener)));
        }
    }
    double
}
