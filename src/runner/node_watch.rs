//! The node watcher: looks at the cluster's server processes every [`POLL_EVERY`] from the
//! moment the cluster started until the runner stops it (before teardown), and records
//! what it sees in the history — `node-watch` when it starts, a `node-exit` per exit,
//! `node-restart` when `--restart-crashed` starts a crashed node again, `node-watch-end`
//! after a last look (`docs/history-format.md`). The `crashes` checker judges them.
//!
//! Invariants: an unexpected exit is logged at once and the run goes on; a crashed node
//! stays down unless the nemesis restarts it, or `--restart-crashed` is given; the watch
//! only ends after a final look, whose success `node-watch-end` records, so that a verdict
//! of "no crash" always rests on a look taken after the last fault.

use super::sink::JsonlSink;
use crate::cluster::lifecycle::NodeExit;
use crate::cluster::Cluster;
use analysis::history::{events, HistorySink, Op, OpType, Process};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Time between two looks at the server processes.
pub const POLL_EVERY: Duration = Duration::from_millis(500);
/// Failed looks logged in full (later ones are only counted).
const FAILURES_LOGGED: u64 = 3;

/// A running node watcher.
pub struct NodeWatcher {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

/// Starts watching `cluster`; `None` when faultline does not run its nodes (external).
pub fn spawn(
    cluster: Arc<dyn Cluster>,
    sink: Arc<JsonlSink>,
    restart_crashed: bool,
) -> Option<NodeWatcher> {
    if !cluster.watches_lifecycle() {
        tracing::info!("node watch: off — faultline does not run the nodes of this cluster, so it cannot see them exit");
        return None;
    }
    let cancel = CancellationToken::new();
    let watch = Watch {
        cluster,
        sink,
        restart_crashed,
        polls: 0,
        failed_polls: 0,
    };
    let task = tokio::spawn(watch.run(cancel.clone()));
    Some(NodeWatcher { cancel, task })
}

impl NodeWatcher {
    /// Takes a last look, records `node-watch-end` and returns.
    pub async fn stop(self) {
        self.cancel.cancel();
        if let Err(e) = self.task.await {
            tracing::error!("the node watcher failed: {e}");
        }
    }
}

struct Watch {
    cluster: Arc<dyn Cluster>,
    sink: Arc<JsonlSink>,
    restart_crashed: bool,
    polls: u64,
    failed_polls: u64,
}

impl Watch {
    fn record(&self, f: &str, node: Option<&str>, value: Value) {
        self.sink.record(Op {
            index: 0,
            kind: OpType::Info,
            process: Process::Watcher,
            f: f.into(),
            key: None,
            value,
            time: 0,
            node: node.map(Into::into),
            error: None,
            meta: None,
        });
    }

    async fn run(mut self, cancel: CancellationToken) {
        let nodes: Vec<&str> = self
            .cluster
            .nodes()
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        let value = json!({"nodes": nodes, "cluster": self.cluster.describe()["kind"], "poll_ms": POLL_EVERY.as_millis() as u64, "restart_crashed": self.restart_crashed});
        self.record(events::NODE_WATCH, None, value);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(POLL_EVERY) => {}
            }
            self.look().await;
        }
        let final_poll_ok = self.look().await;
        let value = json!({"final_poll_ok": final_poll_ok, "polls": self.polls, "failed_polls": self.failed_polls});
        self.record(events::NODE_WATCH_END, None, value);
    }

    /// One look at every server process; false if the cluster could not say.
    async fn look(&mut self) -> bool {
        self.polls += 1;
        match self.cluster.poll_exits().await {
            Ok(exits) => {
                for exit in exits {
                    self.exit_seen(exit).await;
                }
                true
            }
            Err(e) => {
                self.failed_polls += 1;
                if self.failed_polls <= FAILURES_LOGGED {
                    tracing::warn!("node watch: could not look at the server processes: {e:#}");
                }
                false
            }
        }
    }

    async fn exit_seen(&self, exit: NodeExit) {
        let value = json!({
            "expected": exit.expected, "exit_code": exit.exit_code, "signal": exit.signal,
            "crash_line": exit.crash_line, "log_tail": exit.log_tail,
        });
        self.record(events::NODE_EXIT, Some(&exit.node), value);
        if exit.expected {
            tracing::info!(
                "node watch: {} exited as asked ({})",
                exit.node,
                exit.status()
            );
            return;
        }
        let why = exit
            .crash_line
            .as_deref()
            .map(|l| format!(": {l}"))
            .unwrap_or_default();
        let next = if self.restart_crashed {
            "restarting it (--restart-crashed)"
        } else {
            "it stays down unless the nemesis restarts it (--restart-crashed brings it back)"
        };
        tracing::error!(
            "node watch: {} exited on its own ({}){why} — the run goes on; {next}",
            exit.node,
            exit.status()
        );
        if self.restart_crashed {
            let result = self.cluster.restart(&exit.node).await;
            if let Err(e) = &result {
                tracing::error!("node watch: restarting {}: {e:#}", exit.node);
            }
            let error = result.err().map(|e| format!("{e:#}"));
            self.record(
                events::NODE_RESTART,
                Some(&exit.node),
                json!({"ok": error.is_none(), "error": error}),
            );
        }
    }
}
