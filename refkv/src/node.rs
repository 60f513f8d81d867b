//! A refkv node: one Raft instance per group (every node hosts every group), the shared
//! peer connections, and the node's routing view of the catalog.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openraft::storage::RaftLogStorage;
use openraft::{BasicNode, Config, RaftLogReader, ServerState, SnapshotPolicy};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::bugs::Bugs;
use crate::catalog::Catalog;
use crate::network::{NetworkFactory, PeerClients};
use crate::sm::CATALOG_GROUP;
use crate::store::{self, Shared};
use crate::types::{NodeId, Raft};

/// Tunables, from the command line or a JSON `--config` file (see docs/refkv.md).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tunables {
    pub groups: u64,
    /// Initial route boundaries (UTF-8 strings); routes are assigned round-robin to groups.
    pub initial_splits: Vec<String>,
    pub heartbeat_ms: u64,
    pub election_min_ms: u64,
    pub election_max_ms: u64,
    /// How long a node keeps retrying a request that definitely did not happen (no leader,
    /// leader changed, stale route) before answering Unavailable/Aborted.
    pub retry_budget_ms: u64,
    /// How long a leader waits for a proposed write to commit before answering
    /// "outcome unknown".
    pub commit_timeout_ms: u64,
    pub snapshot_every_logs: u64,
    /// Log entries kept behind a snapshot (a follower further behind gets the snapshot).
    pub snapshot_keep_logs: u64,
    /// Move-job copy throttle.
    pub copy_bytes_per_sec: u64,
    /// Grace period before a moved range's old copy is deleted at the source.
    pub cleanup_grace_ms: u64,
    /// Auto-split sampler/detector/scheduler settings (see refkv/src/autosplit/mod.rs).
    pub auto_split: crate::autosplit::AutoSplitConfig,
    /// Test only: the move-job driver grants the target `Own` in DELTA_COPY and then holds
    /// the job there instead of stepping it to CUTOVER (until it is abandoned), so that a
    /// test can abandon a job whose target already owns the range.
    pub hold_before_cutover: bool,
    /// How long a transaction's locks protect it: after that a reader that meets one may
    /// roll the transaction back (liveness only; safety never depends on clocks).
    pub txn_lock_ttl_ms: u64,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            groups: 3,
            initial_splits: Vec::new(),
            heartbeat_ms: 100,
            election_min_ms: 500,
            election_max_ms: 1000,
            retry_budget_ms: 5000,
            commit_timeout_ms: 3000,
            snapshot_every_logs: 5000,
            snapshot_keep_logs: 1000,
            copy_bytes_per_sec: 4 << 20,
            cleanup_grace_ms: 2000,
            auto_split: crate::autosplit::AutoSplitConfig::default(),
            hold_before_cutover: false,
            txn_lock_ttl_ms: 1000,
        }
    }
}

pub struct NodeConfig {
    pub id: NodeId,
    pub listen: String,
    pub peers: BTreeMap<NodeId, String>,
    pub data_dir: PathBuf,
    pub bugs: Bugs,
    pub tunables: Tunables,
    pub auto_split: bool,
    /// Where to serve the DynamoDB-compatible API (`--dynamo-listen`), if anywhere.
    pub dynamo_listen: Option<String>,
}

/// Derived runtime settings.
pub struct Settings {
    pub retry_budget: Duration,
    pub commit_timeout: Duration,
    pub tunables: Tunables,
}

pub struct GroupHandle {
    pub id: u64,
    pub raft: Raft,
    pub shared: Arc<Shared>,
}

impl GroupHandle {
    pub fn term(&self) -> u64 {
        self.raft.metrics().borrow().current_term
    }

    pub fn leader(&self) -> Option<NodeId> {
        self.raft.metrics().borrow().current_leader
    }

    pub fn is_leader(&self, me: NodeId) -> bool {
        let m = self.raft.metrics();
        let m = m.borrow();
        m.state == ServerState::Leader && m.current_leader == Some(me)
    }
}

pub struct NodeCore {
    pub id: NodeId,
    pub peers: Arc<PeerClients>,
    pub groups: BTreeMap<u64, GroupHandle>,
    pub bugs: Bugs,
    pub cfg: Settings,
    /// The routing view: the newest catalog this node has seen (local apply or refresh).
    pub catalog_tx: watch::Sender<Arc<Catalog>>,
    pub auto_split: AtomicBool,
    /// This node's request sampler (auto-split), fed on the request path.
    pub sampler: crate::autosplit::Sampler,
    pub split_cfg: crate::autosplit::AutoSplitConfig,
    /// The timestamp batch this node hands out while it leads the default group.
    pub tso: crate::tso::TimestampOracle,
    /// Test only: the transactions this node coordinates that hold their locks, and the
    /// hold a test may arm at their commit point (`RefkvTxn.TxnHold`).
    pub txn_hold: crate::txn_hold::TxnHold,
}

impl NodeCore {
    pub fn group(&self, id: u64) -> Option<&GroupHandle> {
        self.groups.get(&id)
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog_tx.borrow().clone()
    }

    /// Installs `catalog` in the routing view if it is newer.
    pub fn offer_catalog(&self, catalog: Arc<Catalog>) {
        self.catalog_tx.send_if_modified(|cur| {
            if catalog.version > cur.version {
                *cur = catalog;
                true
            } else {
                false
            }
        });
    }

    pub fn auto_split_enabled(&self) -> bool {
        self.auto_split.load(Ordering::Relaxed)
    }

    pub fn set_auto_split(&self, on: bool) {
        self.auto_split.store(on, Ordering::Relaxed)
    }
}

fn raft_config(t: &Tunables) -> anyhow::Result<Arc<Config>> {
    let config = Config {
        cluster_name: "refkv".into(),
        heartbeat_interval: t.heartbeat_ms,
        election_timeout_min: t.election_min_ms,
        election_timeout_max: t.election_max_ms,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(t.snapshot_every_logs),
        max_in_snapshot_log_to_keep: t.snapshot_keep_logs,
        install_snapshot_timeout: 5000,
        max_payload_entries: 64,
        ..Default::default()
    };
    Ok(Arc::new(config.validate()?))
}

/// Opens every group's storage and starts its Raft. Returns the node and, per group,
/// whether its storage was pristine (first start: it must be initialized).
pub async fn start(cfg: &NodeConfig) -> anyhow::Result<(Arc<NodeCore>, Vec<u64>)> {
    let t = &cfg.tunables;
    let splits: Vec<Vec<u8>> = t
        .initial_splits
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let genesis = Catalog::genesis(t.groups, &splits)
        .map_err(|e| anyhow::anyhow!("bad catalog configuration: {e}"))?;
    std::fs::create_dir_all(&cfg.data_dir)
        .map_err(|e| anyhow::anyhow!("creating data dir {}: {e}", cfg.data_dir.display()))?;
    let peers = Arc::new(PeerClients::new(cfg.peers.clone()));
    let config = raft_config(t)?;
    let mut groups = BTreeMap::new();
    let mut pristine = Vec::new();
    for gid in 1..=t.groups {
        let (mut log, sm) = store::open(&cfg.data_dir, gid, &genesis, cfg.bugs)?;
        let state = log.get_log_state().await?;
        let vote = log.read_vote().await?;
        let first = log.try_get_log_entries(0..1).await?;
        if state.last_log_id.is_none() && vote.is_none() && first.is_empty() {
            pristine.push(gid);
        }
        let shared = sm.shared.clone();
        let network = NetworkFactory {
            group: gid,
            peers: peers.clone(),
        };
        let raft = Raft::new(cfg.id, config.clone(), network, log, sm).await?;
        groups.insert(
            gid,
            GroupHandle {
                id: gid,
                raft,
                shared,
            },
        );
    }
    let initial_catalog = groups[&CATALOG_GROUP]
        .shared
        .read()
        .catalog
        .clone()
        .unwrap_or(genesis);
    let (catalog_tx, _) = watch::channel(Arc::new(initial_catalog));
    let mut split_cfg = t.auto_split.clone();
    split_cfg.enabled = cfg.auto_split;
    split_cfg.split_midpoint_bug = cfg.bugs.split_midpoint;
    split_cfg.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    let core = NodeCore {
        sampler: crate::autosplit::Sampler::new(cfg.id, &split_cfg, std::time::Instant::now()),
        split_cfg,
        id: cfg.id,
        peers,
        groups,
        bugs: cfg.bugs,
        cfg: Settings {
            retry_budget: Duration::from_millis(t.retry_budget_ms),
            commit_timeout: Duration::from_millis(t.commit_timeout_ms),
            tunables: t.clone(),
        },
        catalog_tx,
        auto_split: AtomicBool::new(cfg.auto_split),
        tso: crate::tso::TimestampOracle::default(),
        txn_hold: crate::txn_hold::TxnHold::default(),
    };
    Ok((Arc::new(core), pristine))
}

/// First start only: form each pristine group with the full peer list. Every node does
/// this with the same membership, which openraft documents as safe.
pub async fn bootstrap(core: &NodeCore, pristine: &[u64]) {
    let members: BTreeMap<NodeId, BasicNode> = core
        .peers
        .ids()
        .map(|id| {
            (
                id,
                BasicNode {
                    addr: core.peers.addr(id).unwrap_or_default().to_string(),
                },
            )
        })
        .collect();
    for gid in pristine {
        if let Some(g) = core.group(*gid) {
            match g.raft.initialize(members.clone()).await {
                Ok(()) => tracing::info!(group = gid, "bootstrapped raft group"),
                Err(e) => tracing::info!(group = gid, "group already formed: {e}"),
            }
        }
    }
}

/// Keeps the routing view up to date with the local replica of the catalog group.
pub fn spawn_catalog_follower(core: Arc<NodeCore>) {
    let Some(g) = core.group(CATALOG_GROUP) else {
        return;
    };
    let mut rx = g.shared.catalog_tx.subscribe();
    tokio::spawn(async move {
        loop {
            let latest = rx.borrow_and_update().clone();
            if let Some(c) = latest {
                core.offer_catalog(c);
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    });
}
