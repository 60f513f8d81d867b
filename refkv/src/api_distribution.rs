//! The Distribution service: route catalog reads, SplitRange (catalog-version CAS) and the
//! WatchCatalog stream (a snapshot, then one delta per catalog change this node observes).

use std::sync::Arc;

use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::api_kv::{failure_status, Api};
use crate::catalog::{Catalog, CatalogError, Job, JobPhase, Route, RouteState as RS};
use crate::exec::{ExecOp, ExecReply};
use crate::proto::api::distribution_server::Distribution;
use crate::proto::api::*;
use crate::sm::CATALOG_GROUP;
use crate::types::{Command, CommandResult};

pub fn route_pb(r: &Route) -> RouteDescriptor {
    let state = match r.state {
        RS::Active => RouteState::Active,
        RS::WriteFenced => RouteState::WriteFenced,
        RS::MigratingSource => RouteState::MigratingSource,
        RS::MigratingTarget => RouteState::MigratingTarget,
    };
    RouteDescriptor {
        route_id: r.id,
        start: r.start.clone(),
        end: r.end.clone(),
        raft_group_id: r.group,
        state: state as i32,
        parent_route_id: r.parent,
        epoch: r.epoch,
    }
}

pub fn job_pb(j: &Job) -> SplitJob {
    let phase = match j.phase {
        JobPhase::Planned => SplitJobPhase::Planned,
        JobPhase::Backfill => SplitJobPhase::Backfill,
        JobPhase::Fence => SplitJobPhase::Fence,
        JobPhase::DeltaCopy => SplitJobPhase::DeltaCopy,
        JobPhase::Cutover => SplitJobPhase::Cutover,
        JobPhase::Cleanup => SplitJobPhase::Cleanup,
        JobPhase::Done => SplitJobPhase::Done,
        JobPhase::Abandoning => SplitJobPhase::Abandoning,
        JobPhase::Abandoned => SplitJobPhase::Abandoned,
    };
    SplitJob {
        job_id: j.id,
        source_route_id: j.parent_route,
        split_key: j.split_key.clone(),
        target_group_id: j.target_group,
        phase: phase as i32,
        last_error: j.last_error.clone(),
        started_at_ms: j.started_ms,
        updated_at_ms: j.updated_ms,
        terminal_at_ms: j.terminal_ms,
        source_group_id: j.source_group,
    }
}

fn routes_pb(c: &Catalog) -> Vec<RouteDescriptor> {
    c.sorted_routes().into_iter().map(route_pb).collect()
}

fn jobs_pb(c: &Catalog) -> Vec<SplitJob> {
    c.jobs.values().map(job_pb).collect()
}

/// The changes from `old` to `new` as one delta record.
pub fn delta(old: &Catalog, new: &Catalog) -> CatalogDeltaRecord {
    let mut mutations = Vec::new();
    for (id, r) in &new.routes {
        if old.routes.get(id) != Some(r) {
            mutations.push(CatalogDeltaMutation {
                op: CatalogDeltaMutationOp::Upsert as i32,
                route_id: *id,
                route: Some(route_pb(r)),
            });
        }
    }
    for id in old.routes.keys().filter(|id| !new.routes.contains_key(id)) {
        mutations.push(CatalogDeltaMutation { op: CatalogDeltaMutationOp::Delete as i32, route_id: *id, route: None });
    }
    let jobs = new.jobs.values().filter(|j| old.jobs.get(&j.id) != Some(*j)).map(job_pb).collect();
    CatalogDeltaRecord { previous_version: old.version, version: new.version, mutations, jobs }
}

fn snapshot_event(c: &Catalog) -> CatalogWatchEvent {
    CatalogWatchEvent {
        payload: Some(catalog_watch_event::Payload::Snapshot(CatalogSnapshotReset {
            version: c.version,
            routes: routes_pb(c),
            jobs: jobs_pb(c),
        })),
    }
}

impl Api {
    async fn fresh_catalog(&self) -> Result<Arc<Catalog>, Status> {
        self.node
            .refresh_catalog()
            .await
            .ok_or_else(|| Status::unavailable("catalog group has no reachable leader"))
    }
}

fn split_error(e: &CatalogError) -> Status {
    match e {
        CatalogError::VersionMismatch { .. } => Status::aborted(e.to_string()),
        CatalogError::UnknownRoute(_) => Status::not_found(e.to_string()),
        CatalogError::KeyOutsideRoute(_) | CatalogError::UnknownGroup(_) => Status::invalid_argument(e.to_string()),
        _ => Status::failed_precondition(e.to_string()),
    }
}

#[tonic::async_trait]
impl Distribution for Api {
    async fn get_route(&self, req: Request<GetRouteRequest>) -> Result<Response<GetRouteResponse>, Status> {
        let key = req.into_inner().key;
        let c = self.fresh_catalog().await?;
        let r = c.route_for_key(&key).ok_or_else(|| Status::not_found("no route covers the key"))?;
        Ok(Response::new(GetRouteResponse {
            start: r.start.clone(),
            end: r.end.clone(),
            raft_group_id: r.group,
            route_id: r.id,
            epoch: r.epoch,
            catalog_version: c.version,
        }))
    }

    async fn list_routes(&self, _: Request<ListRoutesRequest>) -> Result<Response<ListRoutesResponse>, Status> {
        let c = self.fresh_catalog().await?;
        Ok(Response::new(ListRoutesResponse { catalog_version: c.version, routes: routes_pb(&c), jobs: jobs_pb(&c) }))
    }

    async fn split_range(&self, req: Request<SplitRangeRequest>) -> Result<Response<SplitRangeResponse>, Status> {
        let r = req.into_inner();
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
        let cmd = Command::Split {
            expected_version: r.expected_catalog_version,
            route_id: r.route_id,
            split_key: r.split_key,
            target_group: r.target_group_id,
            now_ms,
        };
        match self.node.execute(CATALOG_GROUP, ExecOp::Write(cmd), true).await {
            ExecReply::Committed { result: CommandResult::Split(Ok(out)), .. } => Ok(Response::new(SplitRangeResponse {
                catalog_version: out.version,
                left: Some(route_pb(&out.left)),
                right: Some(route_pb(&out.right)),
                job_id: out.job_id,
            })),
            ExecReply::Committed { result: CommandResult::Split(Err(e)), .. } => Err(split_error(&e)),
            ExecReply::Unavailable(m) => Err(Status::failed_precondition(format!("not catalog leader: {m}"))),
            other => Err(failure_status(&other)),
        }
    }

    async fn start_split_migration(
        &self,
        _: Request<StartSplitMigrationRequest>,
    ) -> Result<Response<StartSplitMigrationResponse>, Status> {
        // refkv moves ranges through SplitRange's target_group_id extension.
        Err(Status::unimplemented("refkv moves ranges through SplitRange with target_group_id"))
    }

    async fn get_catalog_capabilities(
        &self,
        _: Request<CatalogCapabilitiesRequest>,
    ) -> Result<Response<CatalogCapabilitiesResponse>, Status> {
        let c = self.node.catalog();
        Ok(Response::new(CatalogCapabilitiesResponse {
            supported_protocol_versions: vec![1],
            current_version: c.version,
            oldest_delta_version: c.version,
            max_batch_size: 1,
        }))
    }

    type WatchCatalogStream = ReceiverStream<Result<CatalogWatchEvent, Status>>;

    async fn watch_catalog(&self, req: Request<CatalogWatchRequest>) -> Result<Response<Self::WatchCatalogStream>, Status> {
        let after = req.into_inner().after_version;
        let mut rx = self.node.catalog_tx.subscribe();
        let (tx, out) = tokio::sync::mpsc::channel(64);
        tokio::spawn(async move {
            let mut last = rx.borrow_and_update().clone();
            if (after == 0 || after != last.version) && tx.send(Ok(snapshot_event(&last))).await.is_err() {
                return;
            }
            while rx.changed().await.is_ok() {
                let now = rx.borrow_and_update().clone();
                let event = CatalogWatchEvent { payload: Some(catalog_watch_event::Payload::Delta(delta(&last, &now))) };
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
                last = now;
            }
        });
        Ok(Response::new(ReceiverStream::new(out)))
    }
}
