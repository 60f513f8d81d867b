//! # workloads — faultline's clients and generators
//!
//! Jepsen's *client* and *generator*: an elastickv-compatible gRPC client (RawKV,
//! Distribution, RaftAdmin, health) that classifies every outcome as definite (`ok` /
//! `fail`) or indeterminate (`info`), Jepsen-style processes, the workloads (`hotspot`,
//! `register`, `set`), the catalog watcher and the final reads. Every actor records its
//! entries through an [`analysis::history::HistorySink`]; the sink assigns index and time.
//!
//! ## API used by the runner
//!
//! ```text
//! run_workload(cfg, nodes, sink, stats, cancel)        -> WorkloadSummary
//! run_catalog_watcher(nodes, sink, cancel)              -> WatcherSummary   (runs until cancel)
//! final_reads(cfg, summary, nodes, sink, stats, cancel, opts) -> FinalReadsReport
//! wait_ready(nodes, groups, timeout)                    -> Ok when every group has a leader
//! leader_of_group(nodes, group)                         -> Option<node name>
//! ```
//!
//! Each has a `*_with` variant taking a [`client::Connector`], the seam through which
//! another store's client (etcd) plugs in; the plain versions use the gRPC client
//! configured from the [`WorkloadConfig`] (or default deadlines).
//!
//! A typical run:
//! 1. `wait_ready(&nodes, &[1, 2, 3], 60 s)`;
//! 2. spawn `run_catalog_watcher` with its own cancellation token;
//! 3. `run_workload` (returns after `time_limit_s`, or early on cancel);
//! 4. heal, `wait_ready` again, then `final_reads` with process numbers from
//!    `summary.next_process`;
//! 5. cancel the watcher.
//!
//! History conventions are in `generators` (values, keys, scans) and `execute`
//! (completions). Classification rules are in [`client::classify`].

pub mod client;
pub mod cluster;
pub mod etcd;
pub mod config;
pub mod execute;
pub mod final_reads;
pub mod generators;
pub mod null;
pub mod processes;
pub mod proto;
pub mod rate;
pub mod stats;
pub mod watcher;

pub use client::grpc::{ClientOptions, GrpcConnector, KvClient};
pub use client::{CallError, Certainty, Connector, KvTarget, NodeEndpoint, ReadPath};
pub use config::{Concurrency, KeyDist, WorkloadConfig, WorkloadKind};
pub use final_reads::{FinalReadsOptions, FinalReadsReport};
pub use processes::{ProcessContext, WorkloadSummary};
pub use stats::{Stats, StatsSnapshot};
pub use watcher::{WatcherOptions, WatcherSummary};

use analysis::history::HistorySink;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Runs the configured workload against `nodes` until `cfg.time_limit_s` passes or
/// `cancel` fires, recording every operation into `sink`.
pub async fn run_workload(
    cfg: &WorkloadConfig,
    nodes: &[NodeEndpoint],
    sink: Arc<dyn HistorySink>,
    stats: Arc<Stats>,
    cancel: CancellationToken,
) -> anyhow::Result<WorkloadSummary> {
    let connector: Arc<dyn Connector> = Arc::new(GrpcConnector { options: cfg.client_options() });
    run_workload_with(cfg, connector, nodes, sink, stats, cancel).await
}

/// [`run_workload`] with a caller-supplied client factory.
pub async fn run_workload_with(
    cfg: &WorkloadConfig,
    connector: Arc<dyn Connector>,
    nodes: &[NodeEndpoint],
    sink: Arc<dyn HistorySink>,
    stats: Arc<Stats>,
    cancel: CancellationToken,
) -> anyhow::Result<WorkloadSummary> {
    let ctx = ProcessContext { nodes: nodes.to_vec(), connector, sink, stats, cancel };
    processes::run_processes(cfg, generators::build(cfg), ctx).await
}

/// Follows the route catalog (stream, or polling fallback) until `cancel` fires.
pub async fn run_catalog_watcher(nodes: &[NodeEndpoint], sink: Arc<dyn HistorySink>, cancel: CancellationToken) -> anyhow::Result<WatcherSummary> {
    let connector: Arc<dyn Connector> = Arc::new(GrpcConnector::default());
    watcher::run_catalog_watcher_with(connector, nodes, sink, cancel, WatcherOptions::default()).await
}

pub use watcher::run_catalog_watcher_with;

/// Reads back everything `summary` says the workload touched, through every node, with
/// process numbers starting at `summary.next_process`.
pub async fn final_reads(
    cfg: &WorkloadConfig,
    summary: &WorkloadSummary,
    nodes: &[NodeEndpoint],
    sink: Arc<dyn HistorySink>,
    stats: Arc<Stats>,
    cancel: CancellationToken,
    opts: FinalReadsOptions,
) -> FinalReadsReport {
    let connector: Arc<dyn Connector> = Arc::new(GrpcConnector { options: cfg.client_options() });
    final_reads_with(connector, summary, nodes, sink, stats, cancel, opts).await
}

/// [`final_reads`] with a caller-supplied client factory.
pub async fn final_reads_with(
    connector: Arc<dyn Connector>,
    summary: &WorkloadSummary,
    nodes: &[NodeEndpoint],
    sink: Arc<dyn HistorySink>,
    stats: Arc<Stats>,
    cancel: CancellationToken,
    opts: FinalReadsOptions,
) -> FinalReadsReport {
    let ctx = ProcessContext { nodes: nodes.to_vec(), connector, sink, stats, cancel };
    final_reads::run_final_reads(&ctx, &summary.touched, summary.next_process, opts).await
}

/// Waits until every node answers and every group in `groups` has a leader (RaftAdmin
/// Status with the `group_id` extension). refkv numbers its groups from 1 (group 1 is the
/// default group).
pub async fn wait_ready(nodes: &[NodeEndpoint], groups: &[u64], timeout: Duration) -> anyhow::Result<()> {
    cluster::wait_ready_with(&GrpcConnector::default(), nodes, groups, timeout).await
}

/// The name of the node leading `group` right now, if any node claims it.
pub async fn leader_of_group(nodes: &[NodeEndpoint], group: u64) -> Option<String> {
    cluster::leader_of_group_with(&GrpcConnector::default(), nodes, group).await
}
