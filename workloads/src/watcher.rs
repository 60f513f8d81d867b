//! The catalog watcher: follows the store's route catalog for the whole test and records
//! every catalog version it observes as an `info` entry (process `watcher`, f `catalog`,
//! value = the whole [`CatalogSnapshot`] at that version, split jobs included when the
//! store reports them, node = where it was observed).
//!
//! It streams `WatchCatalog` (applying deltas to its own copy of the catalog) and falls
//! back to polling `ListRoutes` every `poll_interval` when the stream cannot be opened —
//! for good if the store does not implement it, otherwise for `retry_stream_after` before
//! trying the stream again. When a node fails it moves on to the next one. Only versions
//! newer than the last recorded one are recorded, so the recorded versions strictly
//! increase even when a lagging node is consulted after a fresher one.
//!
//! A catalog that carries no split jobs (elastickv's messages have no job list) is
//! completed from `ListSplitJobs` before it is recorded; a store without that RPC answers
//! `unimplemented`, which is counted once in the summary (`split_jobs_unsupported`) and the
//! catalog is then recorded as the store reported it.

use crate::client::{CatalogEvent, CatalogStream, Connector, KvTarget, Lacking, NodeEndpoint};
use analysis::history::{
    events, CatalogSnapshot, HistorySink, Op, OpType, Process, RouteRecord, SplitJobRecord,
};
use anyhow::bail;
use futures::StreamExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatcherOptions {
    /// Interval between `ListRoutes` polls when not streaming.
    pub poll_interval: Duration,
    /// How long to poll after a failed stream open before trying to stream again.
    pub retry_stream_after: Duration,
    /// Pause before moving to the next node after a failure.
    pub backoff: Duration,
}

impl Default for WatcherOptions {
    fn default() -> Self {
        WatcherOptions {
            poll_interval: Duration::from_millis(200),
            retry_stream_after: Duration::from_secs(5),
            backoff: Duration::from_millis(200),
        }
    }
}

/// What the watcher did, for the runner's log and the vacuity checks.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WatcherSummary {
    /// Catalog entries recorded.
    pub recorded: u64,
    pub last_version: Option<u64>,
    /// Stream events received (0 = the store was only polled).
    pub stream_events: u64,
    pub polls: u64,
    /// Attempts to open the catalog stream.
    pub stream_attempts: u64,
    /// Failures that made the watcher switch nodes.
    pub node_switches: u64,
    /// The store answered `ListSplitJobs` with `unimplemented`.
    #[serde(default)]
    pub split_jobs_unsupported: bool,
}

/// The watcher's copy of the catalog.
#[derive(Debug, Clone, Default)]
struct CatalogState {
    version: u64,
    routes: BTreeMap<u64, RouteRecord>,
    jobs: BTreeMap<u64, SplitJobRecord>,
}

impl CatalogState {
    fn from_snapshot(s: &CatalogSnapshot) -> CatalogState {
        CatalogState {
            version: s.version,
            routes: s.routes.iter().map(|r| (r.id, r.clone())).collect(),
            jobs: s.jobs.iter().map(|j| (j.id, j.clone())).collect(),
        }
    }

    /// Applies a delta; false when it does not follow the current version (a gap).
    fn apply(
        &mut self,
        previous: u64,
        version: u64,
        upserts: &[RouteRecord],
        deleted: &[u64],
        jobs: &[SplitJobRecord],
    ) -> bool {
        if previous != self.version {
            return false;
        }
        for id in deleted {
            self.routes.remove(id);
        }
        for r in upserts {
            self.routes.insert(r.id, r.clone());
        }
        for j in jobs {
            self.jobs.insert(j.id, j.clone());
        }
        self.version = version;
        true
    }

    fn snapshot(&self) -> CatalogSnapshot {
        let mut routes: Vec<RouteRecord> = self.routes.values().cloned().collect();
        routes.sort_by(|a, b| a.start.cmp(&b.start).then(a.id.cmp(&b.id)));
        CatalogSnapshot {
            version: self.version,
            routes,
            jobs: self.jobs.values().cloned().collect(),
        }
    }
}

struct Watcher {
    nodes: Vec<NodeEndpoint>,
    connector: Arc<dyn Connector>,
    sink: Arc<dyn HistorySink>,
    cancel: CancellationToken,
    opts: WatcherOptions,
    state: Option<CatalogState>,
    summary: WatcherSummary,
    stream_supported: bool,
}

/// Why a watch/poll session on one node ended.
enum SessionEnd {
    /// The node failed: move to the next.
    NodeFailed,
    /// Polled for a while after a failed stream open: try streaming again here.
    RetryStream,
    Cancelled,
}

/// Runs the catalog watcher until `cancel` fires.
pub async fn run_catalog_watcher_with(
    connector: Arc<dyn Connector>,
    nodes: &[NodeEndpoint],
    sink: Arc<dyn HistorySink>,
    cancel: CancellationToken,
    opts: WatcherOptions,
) -> anyhow::Result<WatcherSummary> {
    if nodes.is_empty() {
        bail!("the catalog watcher needs at least one node");
    }
    let mut w = Watcher {
        nodes: nodes.to_vec(),
        connector,
        sink,
        cancel,
        opts,
        state: None,
        summary: WatcherSummary::default(),
        stream_supported: true,
    };
    w.run().await?;
    Ok(w.summary)
}

impl Watcher {
    async fn run(&mut self) -> anyhow::Result<()> {
        let mut index = 0usize;
        while !self.cancel.is_cancelled() {
            let node = self.nodes[index % self.nodes.len()].clone();
            let client = self.connector.connect(&node)?;
            let end = if self.stream_supported {
                self.stream_session(&*client, &node.name).await
            } else {
                self.poll_session(&*client, &node.name, None).await
            };
            match end {
                SessionEnd::Cancelled => break,
                SessionEnd::RetryStream => continue,
                SessionEnd::NodeFailed => {
                    index += 1;
                    self.summary.node_switches += 1;
                    tracing::debug!(node = %node.name, "catalog watcher switching node");
                    if !self.pause(self.opts.backoff).await {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Sleeps unless cancelled first; false when cancelled.
    async fn pause(&self, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = self.cancel.cancelled() => false,
        }
    }

    async fn stream_session(&mut self, client: &dyn KvTarget, node: &str) -> SessionEnd {
        if self.state.is_none() {
            // Start from a full listing so the first recorded catalog does not depend on
            // whether the stream opens with a snapshot.
            if let Ok(s) = client.list_routes().await {
                self.observe_with_jobs(CatalogState::from_snapshot(&s), client, node)
                    .await;
            }
        }
        let after = self.state.as_ref().map_or(0, |s| s.version);
        self.summary.stream_attempts += 1;
        let opened = tokio::select! {
            r = client.watch_catalog(after) => r,
            _ = self.cancel.cancelled() => return SessionEnd::Cancelled,
        };
        match opened {
            Ok(stream) => self.consume(stream, client, node).await,
            Err(e) if e.tag == "unimplemented" => {
                tracing::info!(node, "WatchCatalog not supported; polling ListRoutes");
                self.stream_supported = false;
                self.poll_session(client, node, None).await
            }
            Err(e) => {
                tracing::debug!(node, error = %e, "WatchCatalog failed; polling for a while");
                self.poll_session(client, node, Some(self.opts.retry_stream_after))
                    .await
            }
        }
    }

    async fn consume(
        &mut self,
        mut stream: CatalogStream,
        client: &dyn KvTarget,
        node: &str,
    ) -> SessionEnd {
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                _ = self.cancel.cancelled() => return SessionEnd::Cancelled,
            };
            match item {
                Some(Ok(event)) => {
                    self.summary.stream_events += 1;
                    if !self.apply_event(event, client, node).await {
                        return SessionEnd::NodeFailed;
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(node, error = %e, "catalog stream broke");
                    return SessionEnd::NodeFailed;
                }
                None => return SessionEnd::NodeFailed,
            }
        }
    }

    /// Applies one stream event (resynchronising with a listing after a gap); false when
    /// the node cannot be followed any more.
    async fn apply_event(
        &mut self,
        event: CatalogEvent,
        client: &dyn KvTarget,
        node: &str,
    ) -> bool {
        match event {
            CatalogEvent::Reset(s) => {
                self.observe_with_jobs(CatalogState::from_snapshot(&s), client, node)
                    .await
            }
            CatalogEvent::Delta {
                previous_version,
                version,
                upserts,
                deleted_routes,
                jobs,
            } => {
                let mut next = self.state.clone().unwrap_or_default();
                if next.apply(previous_version, version, &upserts, &deleted_routes, &jobs) {
                    self.observe_with_jobs(next, client, node).await;
                } else {
                    match client.list_routes().await {
                        Ok(s) => {
                            self.observe_with_jobs(CatalogState::from_snapshot(&s), client, node)
                                .await
                        }
                        Err(_) => return false,
                    }
                }
            }
        }
        true
    }

    /// Polls `ListRoutes` until the node fails, `limit` passes, or cancellation.
    async fn poll_session(
        &mut self,
        client: &dyn KvTarget,
        node: &str,
        limit: Option<Duration>,
    ) -> SessionEnd {
        let until = limit.map(|d| Instant::now() + d);
        loop {
            let listed = tokio::select! {
                r = client.list_routes() => r,
                _ = self.cancel.cancelled() => return SessionEnd::Cancelled,
            };
            self.summary.polls += 1;
            match listed {
                Ok(s) => {
                    self.observe_with_jobs(CatalogState::from_snapshot(&s), client, node)
                        .await
                }
                Err(_) => return SessionEnd::NodeFailed,
            }
            if until.is_some_and(|u| Instant::now() >= u) {
                return SessionEnd::RetryStream;
            }
            if !self.pause(self.opts.poll_interval).await {
                return SessionEnd::Cancelled;
            }
        }
    }

    /// [`Watcher::observe`], after completing a job-less newer catalog from `ListSplitJobs`.
    async fn observe_with_jobs(
        &mut self,
        mut state: CatalogState,
        client: &dyn KvTarget,
        node: &str,
    ) {
        let newer = self.summary.last_version.is_none_or(|v| state.version > v);
        if newer && state.jobs.is_empty() && !self.summary.split_jobs_unsupported {
            match client
                .as_split_jobs()
                .unwrap_or(&Lacking)
                .list_split_jobs()
                .await
            {
                Ok(jobs) => state.jobs = jobs.into_iter().map(|j| (j.id, j)).collect(),
                Err(e) if e.tag == "unimplemented" => {
                    tracing::info!(
                        node,
                        "ListSplitJobs not supported; recording catalogs without jobs"
                    );
                    self.summary.split_jobs_unsupported = true;
                }
                Err(e) => {
                    tracing::debug!(node, error = %e, "ListSplitJobs failed; recording the catalog as reported")
                }
            }
        }
        self.observe(state, node);
    }

    /// Adopts `state` if it is newer than what was recorded, and records it.
    fn observe(&mut self, state: CatalogState, node: &str) {
        let newer = self.summary.last_version.is_none_or(|v| state.version > v);
        if !newer {
            // An older or equal view (e.g. a lagging node): keep following from our copy if
            // it is the same version, but never record a step backwards.
            if self.state.is_none() {
                self.state = Some(state);
            }
            return;
        }
        let snapshot = state.snapshot();
        self.summary.last_version = Some(snapshot.version);
        self.summary.recorded += 1;
        self.sink.record(catalog_entry(snapshot, node));
        self.state = Some(state);
    }
}

/// The history entry for one observed catalog version.
pub fn catalog_entry(snapshot: CatalogSnapshot, node: &str) -> Op {
    Op {
        index: 0,
        kind: OpType::Info,
        process: Process::Watcher,
        f: events::CATALOG.into(),
        key: None,
        value: serde_json::to_value(&snapshot).unwrap_or(serde_json::Value::Null),
        time: 0,
        node: Some(node.into()),
        error: None,
        meta: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(id: u64, start: &str, end: &str) -> RouteRecord {
        RouteRecord {
            id,
            start: start.into(),
            end: end.into(),
            group: 1,
            state: "ACTIVE".into(),
            epoch: 1,
            parent: None,
        }
    }

    #[test]
    fn deltas_apply_in_order_and_gaps_are_refused() {
        let mut s = CatalogState::from_snapshot(&CatalogSnapshot {
            version: 1,
            routes: vec![route(1, "", "")],
            jobs: vec![],
        });
        let split = [route(2, "", "m"), route(3, "m", "")];
        assert!(s.apply(1, 2, &split, &[1], &[]));
        let snap = s.snapshot();
        assert_eq!(snap.version, 2);
        assert_eq!(
            snap.routes.iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![2, 3]
        );
        assert!(!s.apply(5, 6, &[], &[], &[]));
        assert_eq!(s.version, 2);
    }

    #[test]
    fn catalog_entry_is_a_watcher_info_event() {
        let op = catalog_entry(
            CatalogSnapshot {
                version: 4,
                routes: vec![route(1, "", "")],
                jobs: vec![],
            },
            "n2",
        );
        assert_eq!(
            (op.kind, op.process, op.f.as_str()),
            (OpType::Info, Process::Watcher, "catalog")
        );
        let back: CatalogSnapshot = serde_json::from_value(op.value).unwrap();
        assert_eq!(back.version, 4);
    }
}
