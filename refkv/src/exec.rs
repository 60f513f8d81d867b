//! Executing an operation on the node that leads a group, and the wire form of forwarded
//! operations (`RefkvInternal.Execute`).
//!
//! Every reply says plainly whether the operation definitely did not happen
//! ([`ExecReply::NotLeader`], [`ExecReply::Rejected`], [`ExecReply::Unavailable`]) or may have
//! happened ([`ExecReply::Indeterminate`]); the forwarder retries only the former.

use std::time::Duration;

use openraft::error::{CheckIsLeaderError, ClientWriteError, RaftError};
use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::mvcc::SnapshotRead;
use crate::node::{GroupHandle, NodeCore};
use crate::types::{Command, CommandResult, Key};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ExecOp {
    Write(Command),
    Read {
        key: Key,
        epoch: u64,
    },
    /// Pairs in `[start, end)` of one route, under its epoch.
    Scan {
        start: Key,
        end: Key,
        limit: usize,
        epoch: u64,
    },
    ReadCatalog,
    /// Linearizable range read without ownership checks (move jobs copy with it).
    RawRange {
        start: Key,
        end: Key,
        limit: usize,
        max_bytes: usize,
    },
    /// Snapshot read of a transactional key at timestamp `ts`, under route `epoch`.
    TxnRead {
        key: Key,
        epoch: u64,
        ts: u64,
    },
    /// One timestamp from the oracle (default group leader only, `tso.rs`).
    AllocTs,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ExecReply {
    Committed {
        result: CommandResult,
        term: u64,
        index: u64,
        node: u64,
    },
    Value {
        value: Option<Vec<u8>>,
        term: u64,
        index: u64,
        node: u64,
    },
    Pairs {
        pairs: Vec<(Key, Vec<u8>)>,
        term: u64,
        index: u64,
        node: u64,
    },
    Catalog {
        catalog: Catalog,
    },
    TxnRead {
        read: SnapshotRead,
        term: u64,
        index: u64,
        node: u64,
    },
    /// A timestamp from the oracle, larger than every one handed out before this request.
    Ts {
        ts: u64,
    },
    /// Definitely not executed: this node does not lead the group.
    NotLeader {
        leader: Option<u64>,
    },
    /// Definitely not executed: the epoch fence refused it.
    Rejected {
        current_epoch: u64,
        reason: String,
    },
    /// Definitely not executed (no quorum, unknown group, …).
    Unavailable(String),
    /// May or may not have been executed.
    Indeterminate(String),
}

impl ExecReply {
    /// Replies after which the forwarder may try again (nothing happened).
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            ExecReply::NotLeader { .. } | ExecReply::Unavailable(_)
        )
    }
}

/// Runs `op` on this node for `group`. Writes are proposed only here; this node must lead.
pub async fn exec_local(node: &NodeCore, group: u64, op: ExecOp) -> ExecReply {
    let Some(g) = node.group(group) else {
        return ExecReply::Unavailable(format!("unknown raft group {group}"));
    };
    match op {
        ExecOp::Write(cmd) => write(node, g, cmd).await,
        ExecOp::Read { key, epoch } => {
            let index = match linearize(node, g).await {
                Ok(i) => i,
                Err(r) => return r,
            };
            let term = g.term();
            match g.shared.read().read(&key, epoch) {
                Ok(value) => ExecReply::Value {
                    value,
                    term,
                    index,
                    node: node.id,
                },
                Err(r) => ExecReply::Rejected {
                    current_epoch: r.current_epoch,
                    reason: r.reason,
                },
            }
        }
        ExecOp::Scan {
            start,
            end,
            limit,
            epoch,
        } => {
            let index = match linearize(node, g).await {
                Ok(i) => i,
                Err(r) => return r,
            };
            let term = g.term();
            let state = g.shared.read();
            match state.ownership.check_read(&start, epoch) {
                Err(r) => {
                    return ExecReply::Rejected {
                        current_epoch: r.current_epoch,
                        reason: r.reason,
                    }
                }
                // The whole scanned range must lie in one owned range (a stale routing view
                // may span a boundary where part of the range moved away).
                Ok(o) if !o.end.is_empty() && (end.is_empty() || end > o.end) => {
                    return ExecReply::Rejected {
                        current_epoch: o.epoch,
                        reason: "scan crosses an ownership boundary".into(),
                    };
                }
                Ok(_) => {}
            }
            let pairs = state
                .range(&start, &end)
                .take(limit)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            ExecReply::Pairs {
                pairs,
                term,
                index,
                node: node.id,
            }
        }
        ExecOp::ReadCatalog => {
            if let Err(r) = linearize(node, g).await {
                return r;
            }
            match g.shared.read().catalog.clone() {
                Some(catalog) => ExecReply::Catalog { catalog },
                None => ExecReply::Unavailable(format!("group {group} holds no catalog")),
            }
        }
        ExecOp::RawRange {
            start,
            end,
            limit,
            max_bytes,
        } => {
            let index = match linearize(node, g).await {
                Ok(i) => i,
                Err(r) => return r,
            };
            let term = g.term();
            let mut bytes = 0;
            let pairs = g
                .shared
                .read()
                .range(&start, &end)
                .take(limit)
                .take_while(|(k, v)| {
                    let first = bytes == 0;
                    bytes += k.len() + v.len();
                    first || bytes <= max_bytes
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            ExecReply::Pairs {
                pairs,
                term,
                index,
                node: node.id,
            }
        }
        ExecOp::TxnRead { key, epoch, ts } => {
            let index = match linearize(node, g).await {
                Ok(i) => i,
                Err(r) => return r,
            };
            let term = g.term();
            match g.shared.read().txn_read(&key, epoch, ts) {
                Ok(read) => ExecReply::TxnRead {
                    read,
                    term,
                    index,
                    node: node.id,
                },
                Err(r) => ExecReply::Rejected {
                    current_epoch: r.current_epoch,
                    reason: r.reason,
                },
            }
        }
        ExecOp::AllocTs => crate::tso::next_ts(node, g).await,
    }
}

pub(crate) async fn write(node: &NodeCore, g: &GroupHandle, cmd: Command) -> ExecReply {
    let client_write = matches!(cmd, Command::Put { .. } | Command::Delete { .. });
    if node.bugs.ack_before_commit && client_write {
        // Seeded bug: acknowledge as soon as the entry is handed to Raft.
        let epoch = match &cmd {
            Command::Put { epoch, .. } | Command::Delete { epoch, .. } => *epoch,
            _ => 0,
        };
        return match g.raft.client_write_ff(cmd).await {
            Ok(_) => ExecReply::Committed {
                result: CommandResult::Written {
                    applied: true,
                    epoch,
                },
                term: g.term(),
                index: 0,
                node: node.id,
            },
            Err(e) => ExecReply::Unavailable(e.to_string()),
        };
    }
    let timeout = node.cfg.commit_timeout;
    match tokio::time::timeout(timeout, g.raft.client_write(cmd)).await {
        Err(_) => ExecReply::Indeterminate(format!(
            "outcome unknown: commit not confirmed within {timeout:?}"
        )),
        Ok(Ok(resp)) => match resp.data {
            CommandResult::Rejected {
                current_epoch,
                reason,
            } => ExecReply::Rejected {
                current_epoch,
                reason,
            },
            result => ExecReply::Committed {
                result,
                term: resp.log_id.leader_id.term,
                index: resp.log_id.index,
                node: node.id,
            },
        },
        // Openraft answers ForwardToLeader only before proposing or when the entry was
        // truncated from the log: it was not and will not be committed.
        Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))) => {
            ExecReply::NotLeader {
                leader: f.leader_id,
            }
        }
        Ok(Err(e)) => ExecReply::Indeterminate(format!("outcome unknown: {e}")),
    }
}

/// Confirms leadership with a quorum and waits until the state machine has applied up to
/// the read index (ReadIndex). Returns the read index.
pub(crate) async fn linearize(node: &NodeCore, g: &GroupHandle) -> Result<u64, ExecReply> {
    let timeout = node.cfg.commit_timeout;
    match tokio::time::timeout(timeout, g.raft.ensure_linearizable()).await {
        Err(_) => Err(ExecReply::Unavailable(format!(
            "leadership not confirmed within {timeout:?}"
        ))),
        Ok(Ok(id)) => Ok(id.map(|l| l.index).unwrap_or(0)),
        Ok(Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f)))) => {
            Err(ExecReply::NotLeader {
                leader: f.leader_id,
            })
        }
        Ok(Err(e)) => Err(ExecReply::Unavailable(e.to_string())),
    }
}

/// How long a forwarded call may take: the leader's own commit timeout plus slack.
pub fn forward_timeout(commit_timeout: Duration) -> Duration {
    commit_timeout + Duration::from_millis(1000)
}
