//! # workloads — faultline's clients and generators
//!
//! Jepsen's *client* and *generator*: an elastickv-compatible gRPC client (RawKV,
//! Distribution, RaftAdmin, health) that classifies every outcome as definite (`ok` /
//! `fail`) or indeterminate (`info`), Jepsen-style processes, the workloads (`hotspot`,
//! `register`, `set`), the catalog watcher and the final reads. Every actor records its
//! entries through an [`analysis::history::HistorySink`]; the sink assigns index and time.
//!
//! ## API used by the runner (`src/runner/phases.rs`)
//!
//! ```text
//! cluster::wait_ready_with(connector, nodes, groups, timeout)      -> Ok when every group has a leader
//! run_workload_with(cfg, connector, nodes, sink, stats, cancel)    -> WorkloadSummary
//! run_catalog_watcher_with(connector, nodes, sink, cancel, opts)   -> WatcherSummary   (runs until cancel)
//! cluster::wait_caught_up_with(connector, nodes, groups, timeout)  -> Ok when every node applied what leaders committed
//! final_reads_with(connector, summary, nodes, sink, stats, cancel, opts) -> FinalReadsReport
//! ```
//!
//! The [`client::Connector`] is the seam through which a target's client plugs in (the
//! target's `Db::connector` in the runner). Each has a plain version without it
//! (`wait_ready`, `run_workload`, `run_catalog_watcher`, `final_reads`,
//! `leader_of_group`) that uses the gRPC client configured from the [`WorkloadConfig`] (or
//! default deadlines), for tools such as `examples/smoke.rs`.
//!
//! A typical run:
//! 1. `wait_ready_with(connector, &nodes, &[1, 2, 3], 60 s)`;
//! 2. spawn `run_catalog_watcher_with` with its own cancellation token;
//! 3. `run_workload_with` (returns after `time_limit_s`, or early on cancel);
//! 4. heal, wait for readiness again, then `final_reads_with` (process numbers continue
//!    from `summary.next_process`);
//! 5. cancel the watcher.
//!
//! History conventions are in `generators` (values, keys), the operations themselves
//! ([`kv_ops`], [`txn`]: what each records and how a client runs it, behind
//! [`operation::OpSpec`]) and `execute` (completions). Classification rules are in
//! [`client::classify`]; the optional client capabilities in [`client::capability`].

pub mod client;
pub mod cluster;
pub mod config;
pub mod etcd;
pub mod execute;
pub mod final_reads;
pub mod generators;
pub mod kv_ops;
pub mod named;
pub mod null;
pub mod objects;
pub mod operation;
pub mod processes;
pub mod proto;
pub mod queue;
pub mod rate;
pub mod stats;
pub mod txn;
pub mod watcher;
pub mod zset;

pub use client::grpc::{ClientOptions, GrpcConnector, KvClient};
pub use client::{
    CallError, Certainty, ClientCapability, Connector, KvTarget, NodeEndpoint, Protocol, ReadPath,
    SetRead,
};
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
    let connector: Arc<dyn Connector> = Arc::new(GrpcConnector {
        options: cfg.client_options(),
    });
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
    run_generator_with(
        cfg,
        generators::build(cfg),
        connector,
        nodes,
        sink,
        stats,
        cancel,
    )
    .await
}

/// [`run_workload_with`] driving a caller-supplied generator instead of the one `cfg`
/// names (`cfg` still gives concurrency, rate, time limit and client deadlines).
pub async fn run_generator_with(
    cfg: &WorkloadConfig,
    generator: Box<dyn generators::Workload>,
    connector: Arc<dyn Connector>,
    nodes: &[NodeEndpoint],
    sink: Arc<dyn HistorySink>,
    stats: Arc<Stats>,
    cancel: CancellationToken,
) -> anyhow::Result<WorkloadSummary> {
    let ctx = ProcessContext {
        nodes: nodes.to_vec(),
        connector,
        sink,
        stats,
        cancel,
    };
    processes::run_processes(cfg, generator, ctx).await
}

/// Follows the route catalog (stream, or polling fallback) until `cancel` fires.
pub async fn run_catalog_watcher(
    nodes: &[NodeEndpoint],
    sink: Arc<dyn HistorySink>,
    cancel: CancellationToken,
) -> anyhow::Result<WatcherSummary> {
    let connector: Arc<dyn Connector> = Arc::new(GrpcConnector::default());
    watcher::run_catalog_watcher_with(connector, nodes, sink, cancel, WatcherOptions::default())
        .await
}

pub use watcher::run_catalog_watcher_with;

/// Runs the workload's final operations (`summary.final_ops`: reads of everything it
/// touched) through every node, with process numbers starting at `summary.next_process`.
pub async fn final_reads(
    cfg: &WorkloadConfig,
    summary: &WorkloadSummary,
    nodes: &[NodeEndpoint],
    sink: Arc<dyn HistorySink>,
    stats: Arc<Stats>,
    cancel: CancellationToken,
    opts: FinalReadsOptions,
) -> FinalReadsReport {
    let connector: Arc<dyn Connector> = Arc::new(GrpcConnector {
        options: cfg.client_options(),
    });
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
    let ctx = ProcessContext {
        nodes: nodes.to_vec(),
        connector,
        sink,
        stats,
        cancel,
    };
    final_reads::run_final_reads(&ctx, &summary.final_ops, summary.next_process, opts).await
}

/// Waits until every node answers and every group in `groups` has a leader (RaftAdmin
/// Status with the `group_id` extension). refkv numbers its groups from 1 (group 1 is the
/// default group).
pub async fn wait_ready(
    nodes: &[NodeEndpoint],
    groups: &[u64],
    timeout: Duration,
) -> anyhow::Result<()> {
    cluster::wait_ready_with(&GrpcConnector::default(), nodes, groups, timeout).await
}

/// The name of the node leading `group` right now, if any node claims it.
pub async fn leader_of_group(nodes: &[NodeEndpoint], group: u64) -> Option<String> {
    cluster::leader_of_group_with(&GrpcConnector::default(), nodes, group).await
}
