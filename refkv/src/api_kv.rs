//! The client-facing RawKV and RaftAdmin services, and the mapping of internal outcomes to
//! gRPC status codes (the definite / indeterminate contract documented in docs/refkv.md).

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::autosplit::AccessKind;
use crate::exec::ExecReply;
use crate::node::NodeCore;
use crate::proto::api::raft_admin_server::RaftAdmin;
use crate::proto::api::raw_kv_server::RawKv;
use crate::proto::api::*;
use crate::proto::internal::ElectRequest;
use crate::router::Routed;
use crate::sm::CATALOG_GROUP;
use crate::types::{Cas, CommandResult};

#[derive(Clone)]
pub struct Api {
    pub node: Arc<NodeCore>,
}

/// Maps a reply that is not a success to the status a client sees.
/// - `Unavailable`: definitely not applied (no leader, unreachable, not applied in budget).
/// - `Aborted`: definitely not applied (the route epoch fence refused it; current epoch in
///   the message).
/// - `DeadlineExceeded` / `Unknown` with a message starting "outcome unknown": may have
///   been applied.
pub fn failure_status(reply: &ExecReply) -> Status {
    match reply {
        ExecReply::Rejected {
            current_epoch,
            reason,
        } => Status::aborted(format!(
            "stale route epoch: {reason}; current epoch {current_epoch}"
        )),
        ExecReply::Unavailable(m) => Status::unavailable(m.clone()),
        ExecReply::NotLeader { .. } => Status::unavailable("not leader"),
        ExecReply::Indeterminate(m) if m.contains("within") || m.contains("in time") => {
            Status::deadline_exceeded(m.clone())
        }
        ExecReply::Indeterminate(m) => Status::unknown(m.clone()),
        other => Status::internal(format!("unexpected reply {other:?}")),
    }
}

pub fn meta(node: &NodeCore, routed: &Routed, term: u64, index: u64, served_by: u64) -> CommitMeta {
    let _ = node;
    CommitMeta {
        group_id: routed.route.group,
        term,
        log_index: index,
        route_id: routed.route.id,
        route_epoch: routed.route.epoch,
        node_id: served_by.to_string(),
        catalog_version: routed.catalog_version,
    }
}

fn need_key(key: &[u8]) -> Result<(), Status> {
    if key.is_empty() {
        return Err(Status::invalid_argument("key must not be empty"));
    }
    Ok(())
}

fn written(node: &NodeCore, routed: Routed) -> Result<(u64, bool, CommitMeta), Status> {
    match &routed.reply {
        ExecReply::Committed {
            result: CommandResult::Written { applied, .. },
            term,
            index,
            node: by,
        } => Ok((*index, *applied, meta(node, &routed, *term, *index, *by))),
        other => Err(failure_status(other)),
    }
}

#[tonic::async_trait]
impl RawKv for Api {
    async fn raw_put(
        &self,
        req: Request<RawPutRequest>,
    ) -> Result<Response<RawPutResponse>, Status> {
        let r = req.into_inner();
        need_key(&r.key)?;
        let cas = match (r.cas, r.expect_absent) {
            (false, _) => None,
            (true, true) => Some(Cas::ExpectAbsent),
            (true, false) => Some(Cas::Expect(r.expected)),
        };
        let routed = if r.group_id != 0 {
            if cas.is_some() {
                return Err(Status::invalid_argument(
                    "a pinned put (group_id) cannot be a compare-and-set",
                ));
            }
            self.node
                .put_pinned(&r.key, &r.value, r.group_id, r.route_epoch)
                .await
        } else {
            self.node.put(&r.key, &r.value, cas).await
        };
        self.node
            .sampler
            .record(routed.route.id, &r.key, AccessKind::Write);
        let (commit_index, success, meta) = written(&self.node, routed)?;
        Ok(Response::new(RawPutResponse {
            commit_index,
            success,
            meta: Some(meta),
        }))
    }

    async fn raw_get(
        &self,
        req: Request<RawGetRequest>,
    ) -> Result<Response<RawGetResponse>, Status> {
        let r = req.into_inner();
        need_key(&r.key)?;
        let routed = self.node.get(&r.key).await;
        self.node
            .sampler
            .record(routed.route.id, &r.key, AccessKind::Read);
        match &routed.reply {
            ExecReply::Value {
                value,
                term,
                index,
                node,
            } => {
                let meta = meta(&self.node, &routed, *term, *index, *node);
                Ok(Response::new(RawGetResponse {
                    read_at_index: *index,
                    exists: value.is_some(),
                    value: value.clone().unwrap_or_default(),
                    meta: Some(meta),
                }))
            }
            other => Err(failure_status(other)),
        }
    }

    async fn raw_delete(
        &self,
        req: Request<RawDeleteRequest>,
    ) -> Result<Response<RawDeleteResponse>, Status> {
        let r = req.into_inner();
        need_key(&r.key)?;
        let routed = self.node.delete(&r.key).await;
        self.node
            .sampler
            .record(routed.route.id, &r.key, AccessKind::Write);
        let (commit_index, _existed, meta) = written(&self.node, routed)?;
        Ok(Response::new(RawDeleteResponse {
            commit_index,
            success: true,
            meta: Some(meta),
        }))
    }

    async fn raw_scan_at(
        &self,
        req: Request<RawScanAtRequest>,
    ) -> Result<Response<RawScanAtResponse>, Status> {
        let r = req.into_inner();
        let limit = if r.limit <= 0 {
            usize::MAX
        } else {
            r.limit as usize
        };
        if !r.end_key.is_empty() && r.end_key <= r.start_key {
            return Ok(Response::new(RawScanAtResponse {
                kv: vec![],
                meta: vec![],
            }));
        }
        let scan_limit = if r.reverse { usize::MAX } else { limit };
        let parts = self
            .node
            .scan(&r.start_key, &r.end_key, scan_limit)
            .await
            .map_err(|routed| failure_status(&routed.reply))?;
        let mut kv = Vec::new();
        let mut metas = Vec::new();
        for (routed, pairs) in parts {
            if let ExecReply::Pairs {
                term, index, node, ..
            } = &routed.reply
            {
                metas.push(meta(&self.node, &routed, *term, *index, *node));
            }
            kv.extend(
                pairs
                    .into_iter()
                    .map(|(key, value)| RawKvPair { key, value }),
            );
        }
        if r.reverse {
            kv.reverse();
            kv.truncate(limit);
        }
        Ok(Response::new(RawScanAtResponse { kv, meta: metas }))
    }
}

fn group_arg(g: u64) -> u64 {
    if g == 0 {
        CATALOG_GROUP
    } else {
        g
    }
}

#[tonic::async_trait]
impl RaftAdmin for Api {
    async fn status(
        &self,
        req: Request<RaftAdminStatusRequest>,
    ) -> Result<Response<RaftAdminStatusResponse>, Status> {
        let gid = group_arg(req.into_inner().group_id);
        let g = self
            .node
            .group(gid)
            .ok_or_else(|| Status::not_found(format!("unknown raft group {gid}")))?;
        let m = g.raft.metrics().borrow().clone();
        let state = match m.state {
            openraft::ServerState::Leader => RaftAdminState::Leader,
            openraft::ServerState::Follower | openraft::ServerState::Learner => {
                RaftAdminState::Follower
            }
            openraft::ServerState::Candidate => RaftAdminState::Candidate,
            openraft::ServerState::Shutdown => RaftAdminState::Shutdown,
        };
        let leader = m.current_leader;
        let applied = m.last_applied.map(|l| l.index).unwrap_or(0);
        Ok(Response::new(RaftAdminStatusResponse {
            state: state as i32,
            leader_id: leader.map(|l| l.to_string()).unwrap_or_default(),
            leader_address: leader
                .and_then(|l| self.node.peers.addr(l))
                .unwrap_or_default()
                .to_string(),
            term: m.current_term,
            commit_index: applied,
            applied_index: applied,
            last_log_index: m.last_log_index.unwrap_or(0),
            last_snapshot_index: m.snapshot.map(|l| l.index).unwrap_or(0),
            fsm_pending: m.last_log_index.unwrap_or(0).saturating_sub(applied),
            num_peers: m.membership_config.membership().voter_ids().count() as u64,
            last_contact_nanos: m
                .millis_since_quorum_ack
                .map(|ms| (ms * 1_000_000) as i64)
                .unwrap_or(0),
            group_id: gid,
            node_id: self.node.id.to_string(),
        }))
    }

    async fn transfer_leadership(
        &self,
        req: Request<RaftAdminTransferLeadershipRequest>,
    ) -> Result<Response<RaftAdminTransferLeadershipResponse>, Status> {
        let r = req.into_inner();
        let gid = group_arg(r.group_id);
        let g = self
            .node
            .group(gid)
            .ok_or_else(|| Status::not_found(format!("unknown raft group {gid}")))?;
        let target: u64 = if r.target_id.is_empty() {
            let leader = g.leader();
            self.node
                .peers
                .ids()
                .find(|id| Some(*id) != leader)
                .ok_or_else(|| Status::failed_precondition("no other voter"))?
        } else {
            r.target_id
                .parse()
                .map_err(|_| Status::invalid_argument(format!("bad target_id {:?}", r.target_id)))?
        };
        if self.node.peers.addr(target).is_none() {
            return Err(Status::invalid_argument(format!("unknown node {target}")));
        }
        // openraft 0.9 has no leader-transfer API: the target starts an election, which it
        // wins when its log is up to date (a follower's usually is).
        let mut client = self
            .node
            .peers
            .client(target)
            .map_err(Status::unavailable)?;
        client.elect(ElectRequest { group_id: gid }).await?;
        Ok(Response::new(RaftAdminTransferLeadershipResponse {}))
    }
}
