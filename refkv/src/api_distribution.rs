//! The Distribution service: route catalog reads, SplitRange (catalog-version CAS), the
//! milestone-2 job API (StartSplitMigration, GetSplitJob, ListSplitJobs, AbandonSplitJob,
//! RetrySplitJob) and the WatchCatalog stream (a snapshot, then one delta per catalog change
//! this node observes). Every catalog change is one command committed by the catalog
//! group's leader; refusals map to gRPC codes in `catalog_status`.

use std::sync::Arc;

use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::api_kv::{failure_status, Api};
use crate::catalog::{Catalog, CatalogError, Job, JobPhase, Route, RouteState as RS, SplitOutcome};
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

pub fn phase_pb(p: JobPhase) -> SplitJobPhase {
    match p {
        JobPhase::Planned => SplitJobPhase::Planned,
        JobPhase::Backfill => SplitJobPhase::Backfill,
        JobPhase::Fence => SplitJobPhase::Fence,
        JobPhase::DeltaCopy => SplitJobPhase::DeltaCopy,
        JobPhase::Cutover => SplitJobPhase::Cutover,
        JobPhase::Cleanup => SplitJobPhase::Cleanup,
        JobPhase::Done => SplitJobPhase::Done,
        JobPhase::Failed => SplitJobPhase::Failed,
        JobPhase::Abandoning => SplitJobPhase::Abandoning,
        JobPhase::Abandoned => SplitJobPhase::Abandoned,
    }
}

fn optional_phase_pb(p: Option<JobPhase>) -> i32 {
    p.map(phase_pb).unwrap_or(SplitJobPhase::None) as i32
}

pub fn job_pb(j: &Job) -> SplitJob {
    SplitJob {
        job_id: j.id,
        source_route_id: j.parent_route,
        split_key: j.split_key.clone(),
        target_group_id: j.target_group,
        phase: phase_pb(j.phase) as i32,
        retry_phase: optional_phase_pb(j.retry_phase),
        abandon_from_phase: optional_phase_pb(j.abandon_from),
        last_error: j.last_error.clone(),
        started_at_ms: j.started_ms,
        updated_at_ms: j.updated_ms,
        terminal_at_ms: j.terminal_ms,
        source_group_id: j.source_group,
        moving_start: j.start.clone(),
        moving_end: j.end.clone(),
        old_epoch: j.old_epoch,
        new_epoch: j.new_epoch,
    }
}

/// `ListSplitJobs`'s filters: `phase` is a `SplitJobPhase` name, with or without its
/// `SPLIT_JOB_PHASE_` prefix; live jobs pass any `since_terminal_at_ms`.
fn list_filter(r: &ListSplitJobsRequest) -> Result<impl Fn(&Job) -> bool, Status> {
    let phase = if r.phase.is_empty() {
        None
    } else {
        let name = if r.phase.starts_with("SPLIT_JOB_PHASE_") {
            r.phase.clone()
        } else {
            format!("SPLIT_JOB_PHASE_{}", r.phase)
        };
        let p = SplitJobPhase::from_str_name(&name).ok_or_else(|| {
            Status::invalid_argument(format!("unknown split job phase {:?}", r.phase))
        })?;
        Some(p)
    };
    let since = r.since_terminal_at_ms as i64;
    Ok(move |j: &Job| {
        phase.is_none_or(|p| phase_pb(j.phase) == p)
            && (!j.phase.is_terminal() || j.terminal_ms >= since)
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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
        mutations.push(CatalogDeltaMutation {
            op: CatalogDeltaMutationOp::Delete as i32,
            route_id: *id,
            route: None,
        });
    }
    let jobs = new
        .jobs
        .values()
        .filter(|j| old.jobs.get(&j.id) != Some(*j))
        .map(job_pb)
        .collect();
    CatalogDeltaRecord {
        previous_version: old.version,
        version: new.version,
        mutations,
        jobs,
    }
}

fn snapshot_event(c: &Catalog) -> CatalogWatchEvent {
    CatalogWatchEvent {
        payload: Some(catalog_watch_event::Payload::Snapshot(
            CatalogSnapshotReset {
                version: c.version,
                routes: routes_pb(c),
                jobs: jobs_pb(c),
            },
        )),
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

fn catalog_status(e: &CatalogError) -> Status {
    match e {
        CatalogError::VersionMismatch { .. } => Status::aborted(e.to_string()),
        CatalogError::UnknownRoute(_) | CatalogError::UnknownJob(_) => {
            Status::not_found(e.to_string())
        }
        CatalogError::KeyOutsideRoute(_)
        | CatalogError::UnknownGroup(_)
        | CatalogError::SameGroupMigration(_) => Status::invalid_argument(e.to_string()),
        _ => Status::failed_precondition(e.to_string()),
    }
}

impl Api {
    /// Commits a catalog command on the catalog group's leader.
    async fn catalog_write(&self, cmd: Command) -> Result<CommandResult, Status> {
        match self
            .node
            .execute(CATALOG_GROUP, ExecOp::Write(cmd), true)
            .await
        {
            ExecReply::Committed { result, .. } => Ok(result),
            ExecReply::Unavailable(m) => Err(Status::failed_precondition(format!(
                "not catalog leader: {m}"
            ))),
            other => Err(failure_status(&other)),
        }
    }

    async fn split_write(&self, cmd: Command) -> Result<SplitOutcome, Status> {
        match self.catalog_write(cmd).await? {
            CommandResult::Split(r) => r.map_err(|e| catalog_status(&e)),
            other => Err(Status::internal(format!(
                "unexpected split result {other:?}"
            ))),
        }
    }

    async fn job_write(&self, cmd: Command) -> Result<(), Status> {
        match self.catalog_write(cmd).await? {
            CommandResult::Job(r) => r.map_err(|e| catalog_status(&e)),
            other => Err(Status::internal(format!("unexpected job result {other:?}"))),
        }
    }
}

#[tonic::async_trait]
impl Distribution for Api {
    async fn get_route(
        &self,
        req: Request<GetRouteRequest>,
    ) -> Result<Response<GetRouteResponse>, Status> {
        let key = req.into_inner().key;
        let c = self.fresh_catalog().await?;
        let r = c
            .route_for_key(&key)
            .ok_or_else(|| Status::not_found("no route covers the key"))?;
        Ok(Response::new(GetRouteResponse {
            start: r.start.clone(),
            end: r.end.clone(),
            raft_group_id: r.group,
            route_id: r.id,
            epoch: r.epoch,
            catalog_version: c.version,
        }))
    }

    async fn list_routes(
        &self,
        _: Request<ListRoutesRequest>,
    ) -> Result<Response<ListRoutesResponse>, Status> {
        let c = self.fresh_catalog().await?;
        Ok(Response::new(ListRoutesResponse {
            catalog_version: c.version,
            routes: routes_pb(&c),
            jobs: jobs_pb(&c),
        }))
    }

    async fn split_range(
        &self,
        req: Request<SplitRangeRequest>,
    ) -> Result<Response<SplitRangeResponse>, Status> {
        let r = req.into_inner();
        #[allow(deprecated)]
        let target_group = r.target_group_id;
        let cmd = Command::Split {
            expected_version: r.expected_catalog_version,
            route_id: r.route_id,
            split_key: r.split_key,
            target_group,
            now_ms: now_ms(),
        };
        let out = self.split_write(cmd).await?;
        Ok(Response::new(SplitRangeResponse {
            catalog_version: out.version,
            left: Some(route_pb(&out.left)),
            right: Some(route_pb(&out.right)),
            job_id: out.job_id,
        }))
    }

    async fn start_split_migration(
        &self,
        req: Request<StartSplitMigrationRequest>,
    ) -> Result<Response<StartSplitMigrationResponse>, Status> {
        let r = req.into_inner();
        let cmd = Command::StartMigration {
            expected_version: r.expected_catalog_version,
            route_id: r.route_id,
            split_key: r.split_key,
            target_group: r.target_group_id,
            now_ms: now_ms(),
        };
        let out = self.split_write(cmd).await?;
        Ok(Response::new(StartSplitMigrationResponse {
            catalog_version: out.version,
            job_id: out.job_id,
        }))
    }

    async fn get_split_job(
        &self,
        req: Request<GetSplitJobRequest>,
    ) -> Result<Response<GetSplitJobResponse>, Status> {
        let id = req.into_inner().job_id;
        let c = self.fresh_catalog().await?;
        let job = c
            .jobs
            .get(&id)
            .ok_or_else(|| catalog_status(&CatalogError::UnknownJob(id)))?;
        Ok(Response::new(GetSplitJobResponse {
            job: Some(job_pb(job)),
        }))
    }

    async fn list_split_jobs(
        &self,
        req: Request<ListSplitJobsRequest>,
    ) -> Result<Response<ListSplitJobsResponse>, Status> {
        let r = req.into_inner();
        let keep = list_filter(&r)?;
        // Everything fits in one page (the catalog keeps 64 finished jobs): a cursor from a
        // previous page is past the end.
        if !r.page_cursor.is_empty() {
            return Ok(Response::new(ListSplitJobsResponse::default()));
        }
        let c = self.fresh_catalog().await?;
        let jobs = c
            .jobs
            .values()
            .rev()
            .filter(|j| keep(j))
            .map(job_pb)
            .collect();
        Ok(Response::new(ListSplitJobsResponse {
            jobs,
            next_page_cursor: Vec::new(),
        }))
    }

    async fn abandon_split_job(
        &self,
        req: Request<AbandonSplitJobRequest>,
    ) -> Result<Response<AbandonSplitJobResponse>, Status> {
        let job_id = req.into_inner().job_id;
        self.job_write(Command::AbandonJob {
            job_id,
            now_ms: now_ms(),
        })
        .await?;
        Ok(Response::new(AbandonSplitJobResponse {}))
    }

    async fn retry_split_job(
        &self,
        req: Request<RetrySplitJobRequest>,
    ) -> Result<Response<RetrySplitJobResponse>, Status> {
        let job_id = req.into_inner().job_id;
        self.job_write(Command::RetryJob {
            job_id,
            now_ms: now_ms(),
        })
        .await?;
        Ok(Response::new(RetrySplitJobResponse {}))
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

    async fn watch_catalog(
        &self,
        req: Request<CatalogWatchRequest>,
    ) -> Result<Response<Self::WatchCatalogStream>, Status> {
        let after = req.into_inner().after_version;
        let mut rx = self.node.catalog_tx.subscribe();
        let (tx, out) = tokio::sync::mpsc::channel(64);
        tokio::spawn(async move {
            let mut last = rx.borrow_and_update().clone();
            if (after == 0 || after != last.version)
                && tx.send(Ok(snapshot_event(&last))).await.is_err()
            {
                return;
            }
            while rx.changed().await.is_ok() {
                let now = rx.borrow_and_update().clone();
                let event = CatalogWatchEvent {
                    payload: Some(catalog_watch_event::Payload::Delta(delta(&last, &now))),
                };
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
                last = now;
            }
        });
        Ok(Response::new(ReceiverStream::new(out)))
    }
}
