//! Targets: Jepsen's *db* + *client* declaration for each store faultline can test. A
//! [`Db`] says how a node is started (its command line, given where the binary and the
//! data dir are), which Raft groups readiness waits for, which client speaks to it, which
//! workloads and faults make sense, what the store reports (commit metadata, a route
//! catalog) and therefore which checkers apply. A checker that cannot apply to a target is
//! reported `not-applicable` with the reason, never `valid`.
//!
//! Five targets: [`refkv::Refkv`] (the reference store in this workspace), [`etcd::Etcd`]
//! (Debian's etcd-server, one Raft group, no catalog), [`elastickv::Elastickv`] (a
//! user-provided image or binary; refkv's wire protocol without commit metadata, or its
//! Redis adapter with `--client redis`), [`redis::Redis`] (Debian's redis-server, one node)
//! and [`null::Null`] (an in-process map: no nodes, for testing the harness itself).

pub mod capability;
pub mod data_control;
pub mod dynamodb;
pub mod leader_reads;
pub mod s3;
pub mod sqs;

use futures::future::BoxFuture;
use nemesis::{FaultKind, NodeInfo};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use workloads::client::{Connector, NodeEndpoint, Protocol};
use workloads::{ClientOptions, WorkloadKind};

pub use capability::{Capabilities, Capability};

/// Declares the targets: each line is `Variant "name" in module => constructor from
/// --groups`. The module (`src/db/<module>.rs`), the `--db` value, the name in `test.json`
/// and the [`Db`] built for a run all come from here, so a new target is its file plus one
/// line.
macro_rules! targets {
    ($($variant:ident $name:literal in $module:ident => $build:expr,)*) => {
        $(pub mod $module;)*

        /// The `--db` choice.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
        #[serde(rename_all = "lowercase")]
        pub enum DbKind {
            $($variant,)*
        }

        impl DbKind {
            /// Every target, in table order.
            pub const ALL: &[DbKind] = &[$(DbKind::$variant),*];

            /// The target called `name` (its `--db` value), if any.
            pub fn from_name(name: &str) -> Option<DbKind> {
                DbKind::ALL.iter().copied().find(|k| k.name() == name)
            }

            pub fn name(self) -> &'static str {
                match self {
                    $(DbKind::$variant => $name,)*
                }
            }

            /// The target's declaration; `groups` is `--groups` (refkv, elastickv).
            pub fn build(self, groups: u32) -> Arc<dyn Db> {
                match self {
                    $(DbKind::$variant => Arc::new(($build)(groups)),)*
                }
            }
        }
    };
}

targets! {
    Refkv "refkv" in refkv => |groups| refkv::Refkv { groups },
    Etcd "etcd" in etcd => |_groups| etcd::Etcd,
    Elastickv "elastickv" in elastickv => |groups| elastickv::Elastickv { groups },
    Redis "redis" in redis => |_groups| redis::Redis,
    Null "null" in null => |_groups| null::Null::default(),
}

/// The `--cluster` choice: how the nodes run.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ClusterKind {
    /// Containers on a labelled Docker bridge network.
    #[default]
    Docker,
    /// Plain processes, each in its own network namespace (root, no Docker).
    Netns,
    /// A cluster someone else runs: no lifecycle, client-side and split faults only.
    External,
    /// No nodes: the store lives in faultline's own process ([`Capability::InProcess`]). Chosen
    /// by the target, never on the command line.
    #[value(skip)]
    #[serde(rename = "in-process")]
    InProcess,
    /// One node per host of `--hosts`, driven over SSH.
    Ssh,
}

impl ClusterKind {
    pub fn name(self) -> &'static str {
        match self {
            ClusterKind::Docker => "docker",
            ClusterKind::Netns => "netns",
            ClusterKind::External => "external",
            ClusterKind::InProcess => "in-process",
            ClusterKind::Ssh => "ssh",
        }
    }

    /// The kind called `name` (as `test.json` records it, by the serde names), if any: every
    /// variant is read without a list to keep up to date.
    pub fn from_name(name: &str) -> Option<ClusterKind> {
        serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
    }

    /// Whether faultline runs server processes it can watch (and kill, pause, partition).
    /// Exhaustive on purpose: a new kind must say.
    pub fn runs_nodes(self) -> bool {
        match self {
            ClusterKind::Docker | ClusterKind::Netns | ClusterKind::Ssh => true,
            ClusterKind::External | ClusterKind::InProcess => false,
        }
    }

    /// Faults this kind of cluster can inject at all: on an external cluster only those
    /// that act through the store's API.
    pub fn allows(self, fault: FaultKind) -> bool {
        self.runs_nodes() || !fault.fault().acts_on_nodes()
    }
}

/// Where a node's files are, as the node's process sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLayout {
    /// The server binary (`/refkv` in the image, an absolute host path for `netns`).
    pub binary: String,
    /// The node's own data dir.
    pub data_dir: String,
}

impl NodeLayout {
    /// Inside a faultline node image: the binary at `/<name>`, data bind-mounted at `/data`.
    pub fn image(binary_name: &str) -> NodeLayout {
        NodeLayout {
            binary: format!("/{binary_name}"),
            data_dir: "/data".into(),
        }
    }
}

/// What a store reports besides values, which decides the checkers that apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Reports {
    /// Commit metadata (group, term, log index, route epoch) on every response.
    pub commit_meta: bool,
    /// A versioned route catalog (ListRoutes / WatchCatalog).
    pub catalog: bool,
    /// Range splits (forced by the split nemesis or automatic).
    pub splits: bool,
}

/// A store faultline can test.
pub trait Db: Send + Sync + fmt::Debug {
    fn kind(&self) -> DbKind;
    /// The command line of `node` (argv, binary first). `extra` are `--server-arg`s etc.
    fn node_command(
        &self,
        node: &NodeInfo,
        all: &[NodeInfo],
        layout: &NodeLayout,
        extra: &[String],
    ) -> Vec<String>;
    /// The Raft groups readiness and recovery wait for (each must have a leader).
    fn groups(&self) -> Vec<u64>;
    /// The client factory for the workloads, the final reads and leader discovery, for a
    /// cluster of `nodes`.
    fn connector(&self, options: ClientOptions, nodes: &[NodeEndpoint]) -> Arc<dyn Connector>;
    /// Where the store keeps what the client of `options` calls key `k` (recorded in the
    /// history; the exercise counts and the aimed split compare these with the catalog).
    /// Default: the client's keys themselves.
    fn store_keys(&self, options: &ClientOptions) -> analysis::history::store_keys::StoreKeys {
        let _ = options;
        analysis::history::store_keys::StoreKeys::Identity
    }
    /// Server flags that place the run's keys, as `store_keys` stores them, over the groups
    /// (after the target's own flags, before the `--server-arg`s, which may override them):
    /// elastickv's `--shardRanges` spreading a multi-table run's tables. None by default.
    fn placement_args(&self, store_keys: &analysis::history::store_keys::StoreKeys) -> Vec<String> {
        let _ = store_keys;
        Vec::new()
    }
    fn reports(&self) -> Reports;
    /// Everything the target offers beyond the calls every target answers (see
    /// [`Capability`]): declared once, as one set.
    fn capabilities(&self) -> Capabilities;
    /// The store's per-route split cooldown in seconds, given every server's extra flags
    /// (the target's own, then `--server-arg`s), when it has one the split checker can hold
    /// it to; `None`: no ping-pong check.
    fn split_cooldown_s(&self, server_args: &[String]) -> Option<f64> {
        let _ = server_args;
        None
    }
    /// Faults the store can be subjected to (the cluster kind may restrict them further).
    fn faults(&self) -> &'static [FaultKind];

    /// The run is over and its cluster torn down: drop the data a store keeps inside this
    /// process (the in-process `null` store's map), so the analysis does not pay for it.
    fn forget_data(&self) {}
    /// The client protocols (`--client`) the store speaks; the first is the default.
    fn protocols(&self) -> &'static [Protocol] {
        &[Protocol::Grpc]
    }
    /// The only cluster size the target supports, if it has one (`--nodes` is then ignored).
    fn nodes(&self) -> Option<u8> {
        None
    }
    /// The target's own server flags, from the run's options (before the user's
    /// `--server-arg`s): refkv's `--groups`, `--auto-split` and `--bug`; none by default.
    fn server_args(&self, _auto_split: bool, _bug: Option<&str>) -> Vec<String> {
        Vec::new()
    }
    /// The server binary on this machine when `--db-binary` is not given (built, found on
    /// the PATH, or an error saying what to pass).
    fn default_binary(&self) -> BoxFuture<'static, anyhow::Result<PathBuf>>;
}

/// An option of the run that its target (or cluster kind) does not support; the message
/// names the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    #[error("--db {db} starts its own node; --cluster external is not supported")]
    ExternalCluster { db: &'static str },
    #[error("--db {db} runs in this process; it has no nodes, so --{flag} has no meaning")]
    NoNodes {
        db: &'static str,
        flag: &'static str,
    },
    #[error("--cluster {cluster} is chosen by the target; --db {db} runs its own nodes")]
    ClusterOfTarget {
        cluster: &'static str,
        db: &'static str,
    },
    #[error("{0}")]
    UnknownWorkload(String),
    #[error("--workload {workload} is not supported with --db {db} (supported: {supported})")]
    Workload {
        workload: String,
        db: &'static str,
        supported: String,
    },
    #[error("--nemesis {fault} is not supported with --db {db}")]
    Fault {
        fault: &'static str,
        db: &'static str,
    },
    #[error("--nemesis {fault} is not supported with --db {db}: it runs inside faultline, with no node to fault (use --nemesis none)")]
    InProcessFault {
        fault: &'static str,
        db: &'static str,
    },
    #[error("--nemesis {fault} needs control over the nodes; --cluster {cluster} allows only `split` (or none)")]
    NodeFault {
        fault: &'static str,
        cluster: &'static str,
    },
    #[error("--bug seeds bugs into refkv only, not --db {db}")]
    Bug { db: &'static str },
    #[error("--client {client} is not supported with --db {db} (supported: {supported})")]
    Client {
        client: &'static str,
        db: &'static str,
        supported: String,
    },
}

/// Whether `workload` makes sense against `db`: a workload that loads a hot range for the
/// splitter only where the store splits ranges (or declares
/// [`Capability::HotRangeWithoutSplits`]), and only through a protocol whose client has every
/// capability the workload needs.
pub fn supports_workload(db: &dyn Db, workload: WorkloadKind) -> bool {
    let spec = workload.spec();
    let caps = db.capabilities();
    let hot_range_ok =
        !spec.hot_range || db.reports().splits || caps.has(Capability::HotRangeWithoutSplits);
    hot_range_ok && !caps.protocols_with(db.protocols(), spec.needs).is_empty()
}

/// The workloads `db` supports, in table order.
pub fn supported_workloads(db: &dyn Db) -> Vec<WorkloadKind> {
    WorkloadKind::ALL
        .iter()
        .copied()
        .filter(|w| supports_workload(db, *w))
        .collect()
}

/// Checks the run's options against what the target supports.
pub fn validate(
    db: &dyn Db,
    cluster: ClusterKind,
    workload: &str,
    faults: &[FaultKind],
    bug: Option<&str>,
) -> Result<(), Unsupported> {
    let name = db.kind().name();
    if db.nodes().is_some() && cluster == ClusterKind::External {
        return Err(Unsupported::ExternalCluster { db: name });
    }
    let caps = db.capabilities();
    if cluster == ClusterKind::InProcess && !caps.has(Capability::InProcess) {
        return Err(Unsupported::ClusterOfTarget {
            cluster: cluster.name(),
            db: name,
        });
    }
    let kind = WorkloadKind::from_name(workload).ok_or_else(|| {
        Unsupported::UnknownWorkload(format!(
            "--workload: {}",
            workload.parse::<WorkloadKind>().unwrap_err()
        ))
    })?;
    if !supports_workload(db, kind) {
        let supported: Vec<&str> = supported_workloads(db)
            .into_iter()
            .map(WorkloadKind::name)
            .collect();
        return Err(Unsupported::Workload {
            workload: workload.to_string(),
            db: name,
            supported: supported.join(", "),
        });
    }
    if let Some(kind) = faults.iter().find(|k| !db.faults().contains(k)) {
        return Err(match caps.has(Capability::InProcess) {
            true => Unsupported::InProcessFault {
                fault: kind.name(),
                db: name,
            },
            false => Unsupported::Fault {
                fault: kind.name(),
                db: name,
            },
        });
    }
    if let Some(kind) = faults.iter().find(|k| !cluster.allows(**k)) {
        return Err(Unsupported::NodeFault {
            fault: kind.name(),
            cluster: cluster.name(),
        });
    }
    if bug.is_some() && !caps.has(Capability::SeededBugs) {
        return Err(Unsupported::Bug { db: name });
    }
    Ok(())
}

/// `name` in a directory of the PATH; the error names the Debian `package` that has it.
pub fn on_path(name: &str, package: &str) -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()).ok_or_else(|| {
        anyhow::anyhow!("no `{name}` on the PATH: install Debian's {package} (apt-get install -y {package}) or pass --db-binary")
    })
}

/// The protocol a run uses: `--client` if given (and spoken by `db`), else the target's default.
pub fn protocol(db: &dyn Db, asked: Option<Protocol>) -> Result<Protocol, Unsupported> {
    let spoken = db.protocols();
    match asked {
        None => Ok(spoken[0]),
        Some(p) if spoken.contains(&p) => Ok(p),
        Some(p) => {
            let names: Vec<&str> = spoken.iter().map(|p| p.name()).collect();
            Err(Unsupported::Client {
                client: p.name(),
                db: db.kind().name(),
                supported: names.join(", "),
            })
        }
    }
}

#[cfg(test)]
mod tests;
