//! The phases of a started cluster, in order: readiness → main (workload, catalog watcher
//! and nemesis together; the nemesis heals everything before it returns) → recovery →
//! final reads. Setup, teardown and analysis are `phases.rs`'s.
//!
//! Invariants: an interrupt ends the phase under way and skips recovery and final reads,
//! and the report still says what ran; the catalog watcher runs from before the main phase
//! to after the final reads, so every catalog change in that time is in the history.

use super::phases::{own_cpu_seconds, unless_interrupted};
use super::plan::Plan;
use super::progress;
use super::record::{NemesisCounts, PhasesRecord};
use super::sink::JsonlSink;
use super::store_control::ClientStoreControl;
use crate::cluster::Cluster;
use analysis::history::store_keys::StoreKeys;
use analysis::history::{HistorySink, JobPhase};
use anyhow::{Context, Result};
use nemesis::faults::Ctx;
use nemesis::{Nemesis, NemesisStatus};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use workloads::client::{Connector, NodeEndpoint};
use workloads::{Stats, WatcherSummary, WorkloadConfig, WorkloadSummary};

/// What the phases after cluster start report.
pub(super) struct PhaseReport {
    pub json: PhasesRecord,
    pub problems: Vec<String>,
}

/// What the phases of one started cluster share.
struct Live<'a> {
    plan: &'a Plan,
    cluster: Arc<dyn Cluster>,
    sink: Arc<JsonlSink>,
    interrupt: &'a CancellationToken,
    nodes: Vec<NodeEndpoint>,
    groups: Vec<u64>,
    connector: Arc<dyn Connector>,
}

/// setup (readiness) → main → heal → recovery → final reads. Teardown is the caller's.
pub(super) async fn with_cluster(
    plan: &Plan,
    cluster: Arc<dyn Cluster>,
    sink: Arc<JsonlSink>,
    interrupt: &CancellationToken,
) -> Result<PhaseReport> {
    let mut json = PhasesRecord::default();
    let mut problems = Vec::new();
    let cfg = plan.workload.clone();
    json.workload_config = Some(cfg.clone());
    let nodes = endpoints(cluster.as_ref());
    let connector: Arc<dyn Connector> = plan.db.connector(plan.client_options(), &nodes);
    let store_keys = plan.db.store_keys(&plan.client_options());
    record_store_keys(&sink, &store_keys);
    tracing::info!(
        "data operations through the {} protocol",
        plan.protocol().name()
    );
    let live = Live {
        plan,
        cluster,
        sink,
        interrupt,
        nodes,
        groups: plan.db.groups(),
        connector,
    };
    match live.wait_ready().await? {
        Some(ready_s) => json.ready_s = Some(ready_s),
        None => return Ok(PhaseReport { json, problems }),
    }
    let watcher = CatalogWatcher::spawn(&live);
    let stats = Arc::new(Stats::new());
    let summary = live
        .main_phase(&cfg, store_keys, stats.clone(), &mut json)
        .await?;
    let nodes = running_nodes(live.cluster.as_ref(), live.nodes.clone(), &mut json);
    if !interrupt.is_cancelled() {
        live.recovery(&nodes, &mut json, &mut problems).await;
    }
    if !interrupt.is_cancelled() {
        live.final_reads(&nodes, &summary, stats, &mut json, &mut problems)
            .await;
    }
    json.watcher = watcher.stop().await;
    Ok(PhaseReport { json, problems })
}

fn endpoints(cluster: &dyn Cluster) -> Vec<NodeEndpoint> {
    cluster
        .nodes()
        .iter()
        .map(|n| NodeEndpoint {
            name: n.name.clone(),
            addr: n.addr.clone(),
        })
        .collect()
}

/// The catalog watcher, running from before the main phase until stopped.
struct CatalogWatcher {
    task: JoinHandle<Result<WatcherSummary>>,
    cancel: CancellationToken,
}

impl CatalogWatcher {
    /// Starts it; on a store that reports no catalog it only waits to be stopped.
    fn spawn(live: &Live<'_>) -> Self {
        let cancel = CancellationToken::new();
        let has_catalog = live.plan.db.reports().catalog;
        let (connector, nodes, sink, stop) = (
            live.connector.clone(),
            live.nodes.clone(),
            live.sink.clone(),
            cancel.clone(),
        );
        let task = tokio::spawn(async move {
            if !has_catalog {
                stop.cancelled().await;
                return Ok(Default::default());
            }
            workloads::watcher::run_catalog_watcher_with(
                connector,
                &nodes,
                sink,
                stop,
                Default::default(),
            )
            .await
        });
        CatalogWatcher { task, cancel }
    }

    /// Stops it: its summary, or `None` (logged) if it failed.
    async fn stop(self) -> Option<WatcherSummary> {
        self.cancel.cancel();
        match self.task.await {
            Ok(Ok(w)) => Some(w),
            Ok(Err(e)) => {
                tracing::warn!("catalog watcher: {e:#}");
                None
            }
            Err(e) => {
                tracing::warn!("catalog watcher task: {e}");
                None
            }
        }
    }
}

impl Live<'_> {
    /// Waits (90 s at most) until every group has a leader: the seconds it took, or `None`
    /// when interrupted.
    async fn wait_ready(&self) -> Result<Option<f64>> {
        let t = Instant::now();
        let ready = workloads::cluster::wait_ready_with(
            self.connector.as_ref(),
            &self.nodes,
            &self.groups,
            Duration::from_secs(90),
        );
        match unless_interrupted(self.interrupt, ready).await {
            Some(r) => r.context("waiting for the cluster to become ready")?,
            None => return Ok(None),
        }
        tracing::info!("cluster ready in {:.1} s", t.elapsed().as_secs_f64());
        Ok(Some(t.elapsed().as_secs_f64()))
    }

    /// The nemesis of this run, sharing `status` with the live display.
    async fn nemesis(&self, store_keys: StoreKeys, status: Arc<NemesisStatus>) -> Nemesis {
        let plan = self.plan;
        let store = ClientStoreControl::new(
            self.nodes.clone(),
            self.connector.clone(),
            self.groups.clone(),
            self.sink.clone(),
            plan.db.reports().catalog,
        )
        .with_store_keys(store_keys);
        Nemesis {
            ctx: Ctx {
                control: self.cluster.clone(),
                store: Arc::new(store),
                sink: self.sink.clone(),
                loss_probability: plan.spec.loss_probability,
                partition_modes: plan.partition_modes.clone(),
                use_netem: netem_available(self.cluster.as_ref()).await,
                move_phase: plan.move_phase,
                move_action: plan.move_action,
                abort_phase: plan.abort_phase,
                txn_move_aim: plan.txn_move_aim,
            },
            kinds: plan.nemesis.clone(),
            interval: plan.nemesis_interval,
            seed: plan.seed,
            status,
        }
    }

    /// The workload and the nemesis together, with the live display, until the time limit
    /// or an interrupt; the nemesis has healed everything when this returns.
    async fn main_phase(
        &self,
        cfg: &WorkloadConfig,
        store_keys: StoreKeys,
        stats: Arc<Stats>,
        json: &mut PhasesRecord,
    ) -> Result<WorkloadSummary> {
        let plan = self.plan;
        let nemesis_status = Arc::new(NemesisStatus::default());
        let nemesis = self.nemesis(store_keys, nemesis_status.clone()).await;
        let main_done = CancellationToken::new();
        let progress_task = tokio::spawn(progress::run(
            self.sink.clone(),
            nemesis_status.clone(),
            plan.time_limit,
            !plan.spec.no_progress,
            main_done.clone(),
        ));
        let t = Instant::now();
        let cpu_before_main = own_cpu_seconds();
        tracing::info!(
            "main phase: {} workload for {} s, nemesis {:?}",
            cfg.workload,
            plan.time_limit.as_secs(),
            plan.spec.nemesis
        );
        let history: Arc<dyn HistorySink> = self.sink.clone();
        let generator = match &plan.spec.generator {
            Some(factory) => (factory.0)(cfg),
            None => workloads::generators::build(cfg),
        };
        let workload = workloads::run_generator_with(
            cfg,
            generator,
            self.connector.clone(),
            &self.nodes,
            history,
            stats,
            self.interrupt.child_token(),
        );
        let nemesis_cancel = self.interrupt.child_token();
        let (summary, ()) = tokio::join!(
            async {
                let r = workload.await;
                nemesis_cancel.cancel();
                r
            },
            async {
                // An in-process store has no node to fault or heal (the plan allows it no fault).
                if plan.spec.cluster != crate::db::ClusterKind::InProcess {
                    nemesis.run(nemesis_cancel.clone()).await
                }
            }
        );
        main_done.cancel();
        let _ = progress_task.await;
        let summary = summary.context("the workload failed")?;
        record_main_phase(json, &summary, t, cpu_before_main, &nemesis_status);
        Ok(summary)
    }

    /// Waits (`--recovery-timeout`) for the cluster to recover through `nodes`; a cluster
    /// that does not is a problem of the run.
    async fn recovery(
        &self,
        nodes: &[NodeEndpoint],
        json: &mut PhasesRecord,
        problems: &mut Vec<String>,
    ) {
        let t = Instant::now();
        let timeout = Duration::from_secs(self.plan.spec.recovery_timeout);
        let recovering = recover(
            self.connector.as_ref(),
            nodes,
            &self.groups,
            timeout,
            self.plan.db.as_ref(),
        );
        match unless_interrupted(self.interrupt, recovering).await {
            Some(Ok(())) => tracing::info!("recovered in {:.1} s", t.elapsed().as_secs_f64()),
            Some(Err(e)) => {
                tracing::warn!("recovery: {e:#}");
                problems.push(format!("the cluster did not recover after healing: {e:#}"));
            }
            None => {}
        }
        json.recovery_s = Some(t.elapsed().as_secs_f64());
    }

    /// Reads every touched key (and drains what the workload asks) through every node in
    /// `nodes` (60 s at most); a key/node pair never read is a problem of the run.
    async fn final_reads(
        &self,
        nodes: &[NodeEndpoint],
        summary: &WorkloadSummary,
        stats: Arc<Stats>,
        json: &mut PhasesRecord,
        problems: &mut Vec<String>,
    ) {
        let t = Instant::now();
        let opts = workloads::final_reads::FinalReadsOptions {
            timeout: Duration::from_secs(60),
            ..Default::default()
        };
        let report = workloads::final_reads_with(
            self.connector.clone(),
            summary,
            nodes,
            self.sink.clone(),
            stats,
            self.interrupt.child_token(),
            opts,
        )
        .await;
        tracing::info!(
            "final reads: {} of {} attempts succeeded in {:.1} s",
            report.succeeded,
            report.attempts,
            t.elapsed().as_secs_f64()
        );
        if !report.unread.is_empty() {
            problems.push(format!(
                "final reads never succeeded for {} key/node pairs",
                report.unread.len()
            ));
        }
        json.final_reads = Some(report);
    }
}

/// The main phase's figures into the run's record (and the log).
fn record_main_phase(
    json: &mut PhasesRecord,
    summary: &WorkloadSummary,
    started: Instant,
    cpu_before: Option<f64>,
    nemesis_status: &NemesisStatus,
) {
    let main_s = started.elapsed().as_secs_f64();
    let ok_per_s = summary.stats.ok as f64 / summary.elapsed_s.max(1e-9);
    tracing::info!(
        "main phase done in {main_s:.1} s: {} ok, {} fail, {} info ({ok_per_s:.0} ok ops/s)",
        summary.stats.ok,
        summary.stats.fail,
        summary.stats.info
    );
    json.ok_ops_per_s = Some(ok_per_s);
    if let (Some(a), Some(b)) = (cpu_before, own_cpu_seconds()) {
        json.main_harness_cpu_share = Some((b - a) / main_s.max(1e-9));
        tracing::info!(
            "harness CPU during the main phase: {:.1}% of one core",
            100.0 * (b - a) / main_s.max(1e-9)
        );
    }
    json.workload = Some(summary.clone());
    json.main_s = Some(started.elapsed().as_secs_f64());
    json.nemesis = Some(NemesisCounts {
        faults_started: nemesis_status.faults_started.load(Relaxed),
        splits_forced: nemesis_status.splits_forced.load(Relaxed),
    });
}

/// Records where the store keeps the client's keys, unless it keeps them as they are (a
/// history without the event means that: `docs/history-format.md`).
fn record_store_keys(sink: &JsonlSink, store_keys: &StoreKeys) {
    if store_keys.is_identity() {
        return;
    }
    sink.record(analysis::history::Op {
        index: 0,
        kind: analysis::history::OpType::Info,
        process: analysis::history::Process::Watcher,
        f: analysis::history::events::STORE_KEYS.into(),
        key: None,
        value: serde_json::to_value(store_keys).unwrap_or_default(),
        time: 0,
        node: None,
        error: None,
        meta: None,
    });
}

/// `nodes` without those whose server exited on its own and stays down: recovery and final
/// reads cannot wait for them (the `crashes` checker reports the exit).
fn running_nodes(
    cluster: &dyn Cluster,
    nodes: Vec<NodeEndpoint>,
    json: &mut PhasesRecord,
) -> Vec<NodeEndpoint> {
    let down = cluster.down_nodes();
    if down.is_empty() {
        return nodes;
    }
    tracing::warn!(
        "recovery and final reads skip {}: the server exited and was not started again",
        down.join(", ")
    );
    let running = nodes
        .into_iter()
        .filter(|n| !down.contains(&n.name))
        .collect();
    json.nodes_down_after_main = Some(down);
    running
}

/// Waits until every group has a leader again, (for stores that read from a node's own
/// state) every node has caught up, and no split job is still running.
async fn recover(
    connector: &dyn Connector,
    nodes: &[NodeEndpoint],
    groups: &[u64],
    timeout: Duration,
    db: &dyn crate::db::Db,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    workloads::cluster::wait_ready_with(connector, nodes, groups, timeout).await?;
    if db
        .capabilities()
        .has(crate::db::Capability::CatchUpBeforeFinalReads)
    {
        workloads::cluster::wait_caught_up_with(connector, nodes, groups, timeout).await?;
    }
    if !db.reports().catalog {
        return Ok(()); // no split jobs to settle
    }
    loop {
        let mut running = None;
        for n in nodes {
            let Ok(client) = connector.connect(n) else {
                continue;
            };
            if let Ok(catalog) = client.list_routes().await {
                running = Some(
                    catalog
                        .jobs
                        .iter()
                        .filter(|j| !j.job_phase().is_some_and(JobPhase::is_terminal))
                        .count(),
                );
                break;
            }
        }
        match running {
            Some(0) => return Ok(()),
            Some(n) if Instant::now() >= deadline => {
                anyhow::bail!("{n} split jobs still running after {} s", timeout.as_secs())
            }
            None if Instant::now() >= deadline => anyhow::bail!("no node answered ListRoutes"),
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

async fn netem_available(cluster: &dyn Cluster) -> bool {
    let Some(first) = cluster.nodes().first() else {
        return false;
    };
    if !cluster.netem_usable() {
        tracing::info!(
            "packet loss via iptables statistic (netem is not used on this kind of cluster)"
        );
        return false;
    }
    match cluster.node_net(&first.name).await {
        Ok(ns) => {
            let ok = nemesis::net::netem_available(&*ns, "eth0").await;
            tracing::info!(
                "tc netem {}",
                if ok {
                    "available: packet loss via netem"
                } else {
                    "not available: packet loss via iptables statistic"
                }
            );
            ok
        }
        Err(_) => false,
    }
}
