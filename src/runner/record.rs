//! `test.json`, typed: what a run records about itself, read by `faultline report`,
//! `faultline analyze <run>`, `faultline matrix` and outside tools.
//!
//! Invariant: the JSON keys are a public contract (`docs/running.md`); a field may be added,
//! never renamed. [`TestRecord`] is the `"test"` object (the options as resolved);
//! [`RunRecord`] the whole file, filled in as the run goes (a key is absent until its phase
//! has run, so a crashed run's file says how far it got).

use super::plan::Plan;
use crate::db::{ClusterKind, DbKind, Reports};
use crate::image::NodeImage;
use serde::Serialize;
use std::path::PathBuf;
use workloads::{Protocol, ReadPath, SetRead};

/// The options of the run, validated and resolved (`"test"` in `test.json`).
#[derive(Debug, Clone, Serialize)]
pub struct TestRecord {
    pub name: String,
    pub seed: u64,
    pub db: DbKind,
    pub cluster: ClusterKind,
    pub endpoints: Option<String>,
    /// With `--cluster ssh`: the hosts (resolved from `--hosts-file`) and how they are reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh: Option<crate::cluster::ssh::SshOptions>,
    pub nodes: u8,
    pub groups: u32,
    pub bug: Option<String>,
    pub db_binary: Option<PathBuf>,
    pub image: Option<String>,
    /// Every server's extra flags: the target's own, then `--server-arg`s.
    pub server_args: Vec<String>,
    pub workload: String,
    pub read_path: ReadPath,
    /// The protocol of the data operations (`--client`, resolved).
    pub client: Protocol,
    /// How a Redis client read sets (`null` for gRPC).
    pub set_read: Option<SetRead>,
    /// `--tables`: the DynamoDB list-append tables (`null` for other clients).
    pub tables: Option<u32>,
    pub register_ops: Vec<&'static str>,
    /// Reads' and compare-and-sets' shares of register operations (writes: the rest).
    pub read_fraction: f64,
    pub cas_fraction: f64,
    pub key_dist: Option<String>,
    /// The model the isolation checker holds transactions to (transaction workloads only;
    /// absent: not a transaction workload).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency_model: Option<String>,
    pub concurrency: String,
    pub processes: usize,
    pub rate: f64,
    pub time_limit_s: u64,
    pub nemesis: Vec<&'static str>,
    pub nemesis_interval_s: f64,
    pub partition_modes: Vec<&'static str>,
    pub loss_probability: f64,
    pub recovery_timeout_s: u64,
    pub auto_split: bool,
    pub leave_running: bool,
    pub restart_crashed: bool,
    pub store: PathBuf,
    pub subnet: Option<String>,
    pub warnings: Vec<String>,
    /// What the target declares it reports (commit metadata, catalog, splits), which
    /// decides the checkers that apply.
    pub reports: Reports,
}

impl TestRecord {
    pub fn of(plan: &Plan) -> TestRecord {
        let a = &plan.spec;
        TestRecord {
            name: plan.test_name.clone(),
            seed: plan.seed,
            db: a.db,
            cluster: a.cluster,
            endpoints: a.endpoints.clone(),
            ssh: (a.cluster == ClusterKind::Ssh).then(|| a.ssh.clone()),
            nodes: a.nodes,
            groups: a.groups,
            bug: a.bug.clone(),
            db_binary: a.db_binary.clone(),
            image: a.image.clone(),
            server_args: plan.server_args.clone(),
            workload: a.workload.clone(),
            read_path: a.read_path,
            client: plan.protocol(),
            set_read: (plan.protocol() == Protocol::Redis).then_some(a.set_read),
            tables: (plan.protocol() == Protocol::Dynamodb).then_some(a.tables),
            register_ops: plan.register_ops(),
            read_fraction: plan.workload.read_fraction,
            cas_fraction: plan.workload.cas_fraction,
            key_dist: a.key_dist.clone(),
            consistency_model: plan.consistency_model().map(|m| m.to_string()),
            concurrency: plan.workload.concurrency.to_string(),
            processes: plan.workload.concurrency.processes(usize::from(a.nodes)),
            rate: plan.workload.rate,
            time_limit_s: a.time_limit,
            nemesis: plan.nemesis.iter().map(|k| k.name()).collect(),
            nemesis_interval_s: a.nemesis_interval,
            partition_modes: plan.partition_modes.iter().map(|m| m.name()).collect(),
            loss_probability: a.loss_probability,
            recovery_timeout_s: a.recovery_timeout,
            auto_split: !a.no_auto_split,
            leave_running: a.leave_running,
            restart_crashed: a.restart_crashed,
            store: a.store.clone(),
            subnet: a.subnet.clone(),
            warnings: plan.warnings(),
            reports: plan.db.reports(),
        }
    }
}

/// Versions of what ran.
#[derive(Debug, Clone, Serialize)]
pub struct Versions {
    pub faultline: &'static str,
    pub git_commit: Option<String>,
    pub docker_engine: String,
}

/// The whole `test.json`.
#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    pub test: TestRecord,
    pub versions: Versions,
    pub run_dir: PathBuf,
    pub started_utc: String,
    /// `Some(None)`: not a Docker cluster (recorded as `null`); `None`: not resolved yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<Option<NodeImage>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<PhasesRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_time_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harness_cpu_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harness_cpu_share: Option<f64>,
}

/// How many faults the nemesis started and splits it forced.
#[derive(Debug, Clone, Serialize)]
pub struct NemesisCounts {
    pub faults_started: u64,
    pub splits_forced: u64,
}

/// What the phases after cluster start measured (`"phases"` in `test.json`); a field is
/// absent when its phase did not run (interrupted, failed earlier, or skipped).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PhasesRecord {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_config: Option<workloads::config::WorkloadConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok_ops_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub main_harness_cpu_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<workloads::processes::WorkloadSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub main_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nemesis: Option<NemesisCounts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes_down_after_main: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_reads: Option<workloads::final_reads::FinalReadsReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watcher: Option<workloads::watcher::WatcherSummary>,
}
