//! Conversions from the wire messages to the history model: commit metadata, routes, split
//! jobs and catalog events. Keys are recorded as (lossy) UTF-8 strings; faultline's
//! workloads only use ASCII keys.

use super::CatalogEvent;
use crate::proto::kv;
use analysis::history::{CatalogSnapshot, CommitMeta, RouteRecord, SplitJobRecord};

/// Key bytes as the history writes them.
pub fn key_text(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// The refkv `meta` extension as history metadata; `None` when the store sent none (an
/// elastickv server, which ignores the extension) or it is all zero.
pub fn commit_meta(meta: Option<&kv::CommitMeta>) -> Option<CommitMeta> {
    let m = meta?;
    let nonzero = |v: u64| (v != 0).then_some(v);
    let out = CommitMeta {
        group: nonzero(m.group_id),
        term: nonzero(m.term),
        log_index: nonzero(m.log_index),
        route_id: nonzero(m.route_id),
        route_epoch: nonzero(m.route_epoch),
        node: (!m.node_id.is_empty()).then(|| m.node_id.clone()),
        catalog_version: nonzero(m.catalog_version),
    };
    (out != CommitMeta::default()).then_some(out)
}

/// The metadata of a write's reply: the extension's when the store sends it (refkv), else
/// the plain `commit_index` of `RawPutResponse`/`RawDeleteResponse` field 1 as `log_index`
/// (elastickv: the Raft log index of the write's entry in its group; 0 = not reported).
pub fn write_meta(meta: Option<&kv::CommitMeta>, commit_index: u64) -> Option<CommitMeta> {
    commit_meta(meta).or_else(|| {
        (commit_index != 0).then(|| CommitMeta {
            log_index: Some(commit_index),
            ..CommitMeta::default()
        })
    })
}

pub fn route_state_name(state: i32) -> &'static str {
    match kv::RouteState::try_from(state) {
        Ok(kv::RouteState::Active) => "ACTIVE",
        Ok(kv::RouteState::WriteFenced) => "WRITE_FENCED",
        Ok(kv::RouteState::MigratingSource) => "MIGRATING_SOURCE",
        Ok(kv::RouteState::MigratingTarget) => "MIGRATING_TARGET",
        Ok(kv::RouteState::Unspecified) | Err(_) => "UNSPECIFIED",
    }
}

pub fn route_record(route: &kv::RouteDescriptor) -> RouteRecord {
    RouteRecord {
        id: route.route_id,
        start: key_text(&route.start),
        end: key_text(&route.end),
        group: route.raft_group_id,
        state: route_state_name(route.state).to_string(),
        epoch: route.epoch,
        parent: (route.parent_route_id != 0).then_some(route.parent_route_id),
    }
}

pub fn job_phase_name(phase: i32) -> &'static str {
    use kv::SplitJobPhase as P;
    match P::try_from(phase) {
        Ok(P::Planned) => "PLANNED",
        Ok(P::Backfill) => "BACKFILL",
        Ok(P::Fence) => "FENCE",
        Ok(P::DeltaCopy) => "DELTA_COPY",
        Ok(P::Cutover) => "CUTOVER",
        Ok(P::Cleanup) => "CLEANUP",
        Ok(P::Done) => "DONE",
        Ok(P::Failed) => "FAILED",
        Ok(P::Abandoning) => "ABANDONING",
        Ok(P::Abandoned) => "ABANDONED",
        Ok(P::None) | Err(_) => "NONE",
    }
}

pub fn job_record(job: &kv::SplitJob) -> SplitJobRecord {
    SplitJobRecord {
        id: job.job_id,
        route_id: job.source_route_id,
        split_key: key_text(&job.split_key),
        source_group: job.source_group_id,
        target_group: job.target_group_id,
        phase: job_phase_name(job.phase).to_string(),
        // proto3 default 0: the store did not say (refkv's epochs start at 1).
        new_epoch: (job.new_epoch != 0).then_some(job.new_epoch),
    }
}

/// Routes sorted by start key, the order the checkers expect.
fn sorted_routes(routes: &[kv::RouteDescriptor]) -> Vec<RouteRecord> {
    let mut out: Vec<RouteRecord> = routes.iter().map(route_record).collect();
    out.sort_by(|a, b| a.start.cmp(&b.start).then(a.id.cmp(&b.id)));
    out
}

pub fn snapshot_from_list(resp: &kv::ListRoutesResponse) -> CatalogSnapshot {
    CatalogSnapshot {
        version: resp.catalog_version,
        routes: sorted_routes(&resp.routes),
        jobs: resp.jobs.iter().map(job_record).collect(),
    }
}

/// A watch event, or `None` for an event with no payload (ignored).
pub fn catalog_event(event: &kv::CatalogWatchEvent) -> Option<CatalogEvent> {
    use kv::catalog_watch_event::Payload;
    match event.payload.as_ref()? {
        Payload::Snapshot(s) => Some(CatalogEvent::Reset(CatalogSnapshot {
            version: s.version,
            routes: sorted_routes(&s.routes),
            jobs: s.jobs.iter().map(job_record).collect(),
        })),
        Payload::Delta(d) => {
            let mut upserts = Vec::new();
            let mut deleted_routes = Vec::new();
            for m in &d.mutations {
                match kv::CatalogDeltaMutationOp::try_from(m.op) {
                    Ok(kv::CatalogDeltaMutationOp::Delete) => deleted_routes.push(m.route_id),
                    _ => {
                        if let Some(route) = &m.route {
                            upserts.push(route_record(route));
                        }
                    }
                }
            }
            Some(CatalogEvent::Delta {
                previous_version: d.previous_version,
                version: d.version,
                upserts,
                deleted_routes,
                jobs: d.jobs.iter().map(job_record).collect(),
            })
        }
    }
}

pub fn raft_state_name(state: i32) -> &'static str {
    match kv::RaftAdminState::try_from(state) {
        Ok(kv::RaftAdminState::Leader) => "LEADER",
        Ok(kv::RaftAdminState::Follower) => "FOLLOWER",
        Ok(kv::RaftAdminState::Candidate) => "CANDIDATE",
        Ok(kv::RaftAdminState::Shutdown) => "SHUTDOWN",
        Ok(kv::RaftAdminState::Unknown) | Err(_) => "UNKNOWN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_meta_is_none_and_partial_meta_keeps_what_was_sent() {
        assert_eq!(commit_meta(None), None);
        assert_eq!(commit_meta(Some(&kv::CommitMeta::default())), None);
        let m = kv::CommitMeta {
            group_id: 2,
            term: 5,
            log_index: 77,
            node_id: "n1".into(),
            ..Default::default()
        };
        let out = commit_meta(Some(&m)).expect("meta");
        assert_eq!(out.group, Some(2));
        assert_eq!(out.term, Some(5));
        assert_eq!(out.log_index, Some(77));
        assert_eq!(out.node.as_deref(), Some("n1"));
        assert_eq!(out.route_epoch, None);
    }

    #[test]
    fn a_write_without_the_extension_keeps_its_commit_index() {
        assert_eq!(write_meta(None, 0), None, "0 = not reported");
        assert_eq!(
            write_meta(None, 412),
            Some(CommitMeta {
                log_index: Some(412),
                ..CommitMeta::default()
            })
        );
        let m = kv::CommitMeta {
            group_id: 2,
            log_index: 77,
            ..Default::default()
        };
        assert_eq!(
            write_meta(Some(&m), 412).and_then(|m| m.log_index),
            Some(77),
            "the extension wins"
        );
    }

    #[test]
    fn route_and_job_records() {
        let r = kv::RouteDescriptor {
            route_id: 4,
            start: b"hot/".to_vec(),
            end: vec![],
            raft_group_id: 2,
            state: kv::RouteState::WriteFenced as i32,
            parent_route_id: 1,
            epoch: 3,
        };
        let rec = route_record(&r);
        assert_eq!(
            (rec.id, rec.start.as_str(), rec.end.as_str(), rec.group),
            (4, "hot/", "", 2)
        );
        assert_eq!(
            (rec.state.as_str(), rec.epoch, rec.parent),
            ("WRITE_FENCED", 3, Some(1))
        );
        let j = kv::SplitJob {
            job_id: 9,
            source_route_id: 4,
            split_key: b"hot/5".to_vec(),
            target_group_id: 3,
            phase: kv::SplitJobPhase::DeltaCopy as i32,
            source_group_id: 2,
            ..Default::default()
        };
        let jr = job_record(&j);
        assert_eq!(
            (
                jr.id,
                jr.route_id,
                jr.split_key.as_str(),
                jr.source_group,
                jr.target_group,
                jr.phase.as_str()
            ),
            (9, 4, "hot/5", 2, 3, "DELTA_COPY")
        );
        assert_eq!(jr.new_epoch, None, "proto3's 0: the store did not say");
        assert_eq!(
            job_record(&kv::SplitJob { new_epoch: 7, ..j }).new_epoch,
            Some(7)
        );
        assert_eq!(job_phase_name(999), "NONE");
    }

    #[test]
    fn list_response_routes_are_sorted_by_start() {
        let mk = |id, start: &str| kv::RouteDescriptor {
            route_id: id,
            start: start.as_bytes().to_vec(),
            ..Default::default()
        };
        let resp = kv::ListRoutesResponse {
            catalog_version: 7,
            routes: vec![mk(3, "m"), mk(1, ""), mk(2, "c")],
            jobs: vec![],
        };
        let snap = snapshot_from_list(&resp);
        assert_eq!(snap.version, 7);
        assert_eq!(
            snap.routes.iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn delta_event_separates_upserts_and_deletes() {
        use kv::catalog_watch_event::Payload;
        let route = kv::RouteDescriptor {
            route_id: 5,
            ..Default::default()
        };
        let ev = kv::CatalogWatchEvent {
            payload: Some(Payload::Delta(kv::CatalogDeltaRecord {
                previous_version: 1,
                version: 2,
                mutations: vec![
                    kv::CatalogDeltaMutation {
                        op: kv::CatalogDeltaMutationOp::Delete as i32,
                        route_id: 1,
                        route: None,
                    },
                    kv::CatalogDeltaMutation {
                        op: kv::CatalogDeltaMutationOp::Upsert as i32,
                        route_id: 5,
                        route: Some(route),
                    },
                ],
                jobs: vec![],
            })),
        };
        match catalog_event(&ev) {
            Some(CatalogEvent::Delta {
                previous_version: 1,
                version: 2,
                upserts,
                deleted_routes,
                ..
            }) => {
                assert_eq!(deleted_routes, vec![1]);
                assert_eq!(upserts.len(), 1);
                assert_eq!(upserts[0].id, 5);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            catalog_event(&kv::CatalogWatchEvent { payload: None }),
            None
        );
    }
}
