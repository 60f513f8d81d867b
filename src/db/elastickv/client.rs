//! One process's elastickv client: mutations and (with `--read-path node`) reads through
//! the node the process is bound to, as elastickv's own clients do; reads through the
//! leader directory with `--read-path leader`; catalog changes on the catalog leader.
//!
//! elastickv serves catalog changes only on the default group's leader: `SplitRange`
//! answers FailedPrecondition "not leader for distribution catalog" elsewhere
//! (`adapter/distribution_server.go` ~116, ~421–433) and `WatchCatalog` Unavailable
//! "catalog watch requires the catalog-group leader" (~205). The default group is the
//! lowest group id (`shard_config.go` ~483), here always 1.
//!
//! Invariants: a split refused by every catalog leader tried stays refused (the error is
//! returned as it came); an `Internal` answer after the commit point (`distribution_server.go`
//! ~486, ~573–577, ~624–630) is reported as a split only when the catalog shows it, else the
//! indeterminate error stands.

use crate::db::leader_reads::LeaderDirectory;
use analysis::history::{CatalogSnapshot, RouteRecord};
use futures::future::BoxFuture;
use futures::FutureExt;
use std::sync::Arc;
use std::time::Duration;
use workloads::client::{CallResult, CatalogStream, GroupStatus, KvTarget, Lacking, ReadPath, ReadReply, ScanReply, SplitJobs, SplitMigration, SplitReply, SplitRequest, VersionedReads, WriteReply};
use workloads::{CallError, Certainty};

/// The group holding elastickv's route catalog.
pub const CATALOG_GROUP: u64 = 1;
/// Catalog leaders tried for one split (each found afresh after a refusal).
const CATALOG_ATTEMPTS: usize = 3;
/// Catalog reads made to resolve an indeterminate split, and the pause between them.
const RESOLVE_ATTEMPTS: usize = 5;
const RESOLVE_PAUSE: Duration = Duration::from_millis(200);

/// elastickv's text for a catalog call sent to a node that does not lead the catalog group.
pub const NOT_CATALOG_LEADER: &str = "not leader for distribution catalog";

pub struct ElastickvClient {
    /// The process's own node.
    pub node: Arc<dyn KvTarget>,
    pub leaders: Arc<LeaderDirectory>,
    pub read_path: ReadPath,
}

impl ElastickvClient {
    /// The catalog leader's client, or a definite failure when no node leads group 1.
    async fn catalog_leader(&self) -> CallResult<Arc<dyn KvTarget>> {
        self.leaders
            .leader_node(CATALOG_GROUP)
            .await
            .ok_or_else(|| CallError::new(Certainty::Definite, "leader-not-found", format!("no node leads the catalog group {CATALOG_GROUP}")))
    }

    /// Sends a catalog change to the catalog leader, finding it again after a refusal.
    async fn on_catalog_leader(&self, request: &SplitRequest) -> CallResult<SplitReply> {
        let mut last = None;
        for _ in 0..CATALOG_ATTEMPTS {
            let leader = match self.catalog_leader().await {
                Ok(l) => l,
                Err(e) => {
                    last = Some(e);
                    tokio::time::sleep(RESOLVE_PAUSE).await;
                    continue;
                }
            };
            let result = if request.target_group.is_some() { leader.as_split_migration().unwrap_or(&Lacking).start_split_migration(request.clone()).await } else { leader.split(request.clone()).await };
            match result {
                Err(e) if e.message.ends_with(NOT_CATALOG_LEADER) => {
                    self.leaders.forget(CATALOG_GROUP);
                    last = Some(e);
                }
                Err(e) if e.tag == "internal" => return self.resolve(request, leader.as_ref(), e).await,
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| CallError::new(Certainty::Definite, "leader-not-found", "no catalog leader")))
    }

    /// An `Internal` after the commit point: the split happened if the catalog shows it.
    async fn resolve(&self, request: &SplitRequest, leader: &dyn KvTarget, err: CallError) -> CallResult<SplitReply> {
        for _ in 0..RESOLVE_ATTEMPTS {
            if let Ok(catalog) = leader.list_routes().await {
                if let Some(reply) = split_in_catalog(&catalog, request, &err) {
                    return Ok(reply);
                }
            }
            tokio::time::sleep(RESOLVE_PAUSE).await;
        }
        Err(err)
    }
}

/// The split `request` asked for, if `catalog` shows it done: a newer version with a route
/// ending and one starting at the split key, in the parent's place.
pub fn split_in_catalog(catalog: &CatalogSnapshot, request: &SplitRequest, err: &CallError) -> Option<SplitReply> {
    if catalog.version <= request.expected_catalog_version || request.target_group.is_some() {
        return None;
    }
    let key = String::from_utf8_lossy(&request.split_key);
    let find = |f: &dyn Fn(&RouteRecord) -> bool| catalog.routes.iter().find(|r| f(r)).cloned();
    let left = find(&|r| r.end == key && r.parent == Some(request.route_id))?;
    let right = find(&|r| r.start == key && r.parent == Some(request.route_id))?;
    Some(SplitReply { catalog_version: catalog.version, left: Some(left), right: Some(right), job_id: None, resolved_from: Some(err.history_text()) })
}

impl KvTarget for ElastickvClient {
    fn node(&self) -> &str {
        self.node.node()
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        match self.read_path {
            ReadPath::Node => self.node.read(key),
            ReadPath::Leader => {
                let key = key.to_vec();
                async move { self.leaders.read(&key).await }.boxed()
            }
        }
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.node.write(key, value)
    }
    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.node.delete(key)
    }
    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        self.node.scan(start, end, limit)
    }
    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
        self.node.list_routes()
    }
    fn split(&self, request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        async move { self.on_catalog_leader(&request).await }.boxed()
    }
    fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        self.node.status(group)
    }
    fn watch_catalog(&self, after_version: u64) -> BoxFuture<'_, CallResult<CatalogStream>> {
        async move {
            let leader = self.catalog_leader().await?;
            let stream = leader.watch_catalog(after_version).await;
            if stream.is_err() {
                self.leaders.forget(CATALOG_GROUP);
            }
            stream
        }
        .boxed()
    }
    /// Cross-group splits go to the catalog leader, as same-group ones do.
    fn as_split_migration(&self) -> Option<&dyn SplitMigration> {
        Some(self)
    }
    fn as_split_jobs(&self) -> Option<&dyn SplitJobs> {
        self.node.as_split_jobs()
    }
    fn as_versioned(&self) -> Option<&dyn VersionedReads> {
        self.node.as_versioned()
    }
}

impl SplitMigration for ElastickvClient {
    fn start_split_migration(&self, request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        async move { self.on_catalog_leader(&request).await }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(id: u64, start: &str, end: &str, parent: Option<u64>) -> RouteRecord {
        RouteRecord { id, start: start.into(), end: end.into(), group: 1, state: "ACTIVE".into(), epoch: 1, parent }
    }

    fn request() -> SplitRequest {
        SplitRequest { expected_catalog_version: 4, route_id: 1, split_key: b"m".to_vec(), target_group: None }
    }

    #[test]
    fn an_internal_error_after_commit_is_a_split_when_the_catalog_shows_it() {
        let err = CallError::new(Certainty::Indeterminate, "internal", "catalog split committed but local snapshot is stale");
        let done = CatalogSnapshot { version: 5, routes: vec![route(2, "", "m", Some(1)), route(3, "m", "", Some(1))], jobs: vec![] };
        let reply = split_in_catalog(&done, &request(), &err).expect("the catalog shows the split");
        assert_eq!((reply.left.map(|r| r.id), reply.right.map(|r| r.id)), (Some(2), Some(3)));
        assert!(reply.resolved_from.unwrap().contains("stale"));
        let unchanged = CatalogSnapshot { version: 4, routes: vec![route(1, "", "", None)], jobs: vec![] };
        assert!(split_in_catalog(&unchanged, &request(), &err).is_none(), "no evidence, no split");
    }
}
