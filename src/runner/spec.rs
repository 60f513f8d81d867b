//! [`TestSpec`]: what one run is asked to do — Jepsen's test map before it is resolved —
//! as plain data, free of any command-line type. `faultline test` builds one from its flags
//! (`crate::cmd::test`); a program can build one directly and call [`crate::runner::run`].
//!
//! `TestSpec::default()` holds `faultline test`'s defaults (taken from its flag
//! definitions, so there is one place for them).
//!
//! Invariant: nothing here is validated yet; [`super::plan::Plan::from_spec`] checks every
//! field (naming the flag it came from) before anything starts.

use crate::db::{ClusterKind, DbKind};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use workloads::generators::Workload;
use workloads::{Protocol, ReadPath, SetRead, WorkloadConfig};

/// A caller's own generator, built from the run's resolved workload configuration (seed,
/// keys, ...). The run is still judged as `TestSpec::workload` says (its checkers, final
/// reads of what the generator touched).
#[derive(Clone)]
pub struct GeneratorFactory(pub Arc<BuildGenerator>);

/// What a [`GeneratorFactory`] calls.
pub type BuildGenerator = dyn Fn(&WorkloadConfig) -> Box<dyn Workload> + Send + Sync;

impl fmt::Debug for GeneratorFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GeneratorFactory(..)")
    }
}

/// The options of one run, as given (see `faultline test --help` for each one's meaning).
#[derive(Debug, Clone)]
pub struct TestSpec {
    pub nodes: u8,
    pub db: DbKind,
    pub cluster: ClusterKind,
    /// With `ClusterKind::External`: `host:port,...`.
    pub endpoints: Option<String>,
    pub groups: u32,
    /// A seeded bug of the target, if it has any (refkv).
    pub bug: Option<String>,
    pub db_binary: Option<PathBuf>,
    /// An existing local node image instead of building one.
    pub image: Option<String>,
    pub no_auto_split: bool,
    /// Flags appended verbatim to every server's command line.
    pub server_args: Vec<String>,
    pub subnet: Option<String>,
    pub restart_crashed: bool,
    pub leave_running: bool,
    pub workload: String,
    pub key_dist: Option<String>,
    /// `--key-count`: keys in play (register keyspace; transactions' active keys).
    pub key_count: Option<u64>,
    /// `--txn-length MIN..MAX`: micro-ops per transaction.
    pub txn_length: Option<String>,
    /// `--max-writes-per-key`: writes a transaction key takes before it is retired.
    pub max_writes_per_key: Option<u64>,
    /// `--set-size`: inserts a set takes before a fresh set replaces it.
    pub set_size: Option<u64>,
    /// `--consistency-model`: what the isolation checker holds transactions to.
    pub consistency_model: Option<String>,
    /// `--read-fraction`: reads among register operations.
    pub read_fraction: Option<f64>,
    pub concurrency: Option<String>,
    pub rate: Option<f64>,
    pub read_path: ReadPath,
    /// The data operations' protocol; `None`: the target's default.
    pub client: Option<Protocol>,
    /// `--value-type`: a DynamoDB register run's attribute type(s).
    pub value_type: Option<String>,
    pub set_read: SetRead,
    /// `--tables`: the DynamoDB list-append tables (1: `jepsen_append` alone).
    pub tables: u32,
    pub time_limit: u64,
    /// `None`: chosen at random and recorded.
    pub seed: Option<u64>,
    pub nemesis: String,
    pub nemesis_interval: f64,
    pub partition_modes: String,
    /// `--move-phase`: a split-job phase name or `random`.
    pub move_phase: String,
    /// `--move-action`: one action of the `move` fault, or `rotate`.
    pub move_action: String,
    /// `--abort-phase`: the pre-CUTOVER phase `abort-move` abandons in, or `random`.
    pub abort_phase: String,
    /// `--txn-move-aim`: one window of the `txn-move` fault, or `random`.
    pub txn_move_aim: String,
    pub loss_probability: f64,
    pub recovery_timeout: u64,
    pub store: PathBuf,
    pub test_name: Option<String>,
    pub no_progress: bool,
    /// Drive this generator instead of the one `workload` names.
    pub generator: Option<GeneratorFactory>,
    /// With `ClusterKind::Ssh`: the hosts and how to reach them.
    pub ssh: crate::cluster::ssh::SshOptions,
}

impl TestSpec {
    /// The test's name in the store: `test_name`, else `<db>-<workload>-<nemesis>[-bug-<bug>]`.
    pub fn name(&self) -> String {
        self.test_name.clone().unwrap_or_else(|| {
            let nemesis = self.nemesis.replace(',', "+");
            let bug = self
                .bug
                .as_ref()
                .map(|b| format!("-bug-{b}"))
                .unwrap_or_default();
            format!("{}-{}-{}{bug}", self.db.name(), self.workload, nemesis)
        })
    }
}
