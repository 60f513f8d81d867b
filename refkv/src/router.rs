//! Any node accepts any request: find the route for the key in the routing view, send the
//! operation to the owning group's leader (locally or over `RefkvInternal.Execute`), and
//! retry within the budget while the outcome is definitely "did not happen" (no leader,
//! leader changed, route epoch stale). Ambiguous outcomes are returned as such, never
//! retried.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::catalog::{Catalog, Route};
use crate::exec::{exec_local, forward_timeout, ExecOp, ExecReply};
use crate::node::NodeCore;
use crate::proto::internal::ExecuteRequest;
use crate::sm::CATALOG_GROUP;
use crate::types::{Command, Key};

const RETRY_PAUSE: Duration = Duration::from_millis(25);

/// A routed operation's reply with the route and catalog version it was routed under.
pub struct Routed {
    pub reply: ExecReply,
    pub route: Route,
    pub catalog_version: u64,
}

/// Is a gRPC failure of a forwarded call certainly a failure to deliver it?
fn never_delivered(status: &tonic::Status) -> bool {
    let msg = status.message();
    status.code() == tonic::Code::Unavailable
        && (msg.contains("tcp connect error") || msg.contains("error trying to connect"))
}

impl NodeCore {
    /// Sends `op` to `group`'s leader, retrying definite failures until the budget ends.
    pub async fn execute(&self, group: u64, op: ExecOp, mutating: bool) -> ExecReply {
        let deadline = Instant::now() + self.cfg.retry_budget;
        let mut hint: Option<u64> = None;
        loop {
            let leader = hint
                .take()
                .or_else(|| self.group(group).and_then(|g| g.leader()));
            let reply = match leader {
                None => ExecReply::NotLeader { leader: None },
                Some(l) if l == self.id => exec_local(self, group, op.clone()).await,
                Some(l) => self.forward(l, group, &op, mutating).await,
            };
            if !reply.retryable() || Instant::now() >= deadline {
                return match reply {
                    ExecReply::NotLeader { .. } => ExecReply::Unavailable(format!(
                        "no leader for raft group {group} found within {:?}",
                        self.cfg.retry_budget
                    )),
                    r => r,
                };
            }
            if let ExecReply::NotLeader { leader: Some(h) } = reply {
                if Some(h) != leader {
                    hint = Some(h);
                    continue;
                }
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    async fn forward(&self, to: u64, group: u64, op: &ExecOp, mutating: bool) -> ExecReply {
        let mut client = match self.peers.client(to) {
            Ok(c) => c,
            Err(e) => return ExecReply::Unavailable(e),
        };
        let payload = match serde_json::to_vec(op) {
            Ok(p) => p,
            Err(e) => return ExecReply::Unavailable(format!("encoding forwarded op: {e}")),
        };
        let call = client.execute(ExecuteRequest {
            group_id: group,
            payload,
        });
        let lost = |why: String| {
            if mutating {
                ExecReply::Indeterminate(format!("outcome unknown: forwarded to node {to}: {why}"))
            } else {
                ExecReply::Unavailable(format!("forwarded read to node {to} failed: {why}"))
            }
        };
        match tokio::time::timeout(forward_timeout(self.cfg.commit_timeout), call).await {
            Err(_) => lost("no answer in time".into()),
            Ok(Err(status)) if never_delivered(&status) => {
                ExecReply::Unavailable(format!("node {to} unreachable: {}", status.message()))
            }
            Ok(Err(status)) => lost(status.message().to_string()),
            Ok(Ok(r)) => serde_json::from_slice(&r.into_inner().payload)
                .unwrap_or_else(|e| lost(format!("undecodable reply: {e}"))),
        }
    }

    /// Re-reads the catalog from the catalog group's leader into the routing view.
    pub async fn refresh_catalog(&self) -> Option<Arc<Catalog>> {
        match self
            .execute(CATALOG_GROUP, ExecOp::ReadCatalog, false)
            .await
        {
            ExecReply::Catalog { catalog } => {
                let catalog = Arc::new(catalog);
                self.offer_catalog(catalog.clone());
                Some(catalog)
            }
            _ => None,
        }
    }

    /// Routes a key operation (`make` builds it for a route epoch), refreshing the routing
    /// view and retrying while the fence refuses it, until the budget ends.
    pub async fn route_key(
        &self,
        key: &[u8],
        mutating: bool,
        make: impl Fn(u64) -> ExecOp,
    ) -> Routed {
        let deadline = Instant::now() + self.cfg.retry_budget;
        loop {
            let catalog = self.catalog();
            let Some(route) = catalog.route_for_key(key).cloned() else {
                return Routed {
                    reply: ExecReply::Unavailable("no route covers the key".into()),
                    route: empty_route(),
                    catalog_version: catalog.version,
                };
            };
            let reply = if self.bugs.stale_read && !mutating {
                self.local_stale(route.group, make(route.epoch))
            } else if let Some(refused) =
                self.proxy_admission(mutating, &route, route.group, route.epoch)
            {
                refused
            } else {
                self.execute(route.group, make(route.epoch), mutating).await
            };
            if let ExecReply::Rejected { .. } = reply {
                if Instant::now() < deadline {
                    self.refresh_catalog().await;
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
            }
            return Routed {
                reply,
                route,
                catalog_version: catalog.version,
            };
        }
    }

    /// Seeded bug `proxy-fence`: the fence is checked here, against this node's routing
    /// view, instead of when the write is applied. `None` = admitted (or the bug is off).
    fn proxy_admission(
        &self,
        mutating: bool,
        route: &Route,
        group: u64,
        epoch: u64,
    ) -> Option<ExecReply> {
        if !self.bugs.proxy_fence || !mutating {
            return None;
        }
        let refuse = |reason: String| {
            Some(ExecReply::Rejected {
                current_epoch: route.epoch,
                reason,
            })
        };
        if route.state == crate::catalog::RouteState::WriteFenced {
            return refuse("range is write-fenced (moving)".into());
        }
        if (route.group, route.epoch) != (group, epoch) {
            return refuse(format!("stale route epoch {epoch} for group {group}"));
        }
        None
    }

    /// A put that is not routed: proposed to `group`'s leader as if routed under `epoch`
    /// (the stale-client probe of docs/refkv.md). A refusal is returned, never retried.
    pub async fn put_pinned(&self, key: &[u8], value: &[u8], group: u64, epoch: u64) -> Routed {
        let catalog = self.catalog();
        let viewed = catalog
            .route_for_key(key)
            .cloned()
            .unwrap_or_else(empty_route);
        let route = Route {
            group,
            epoch,
            ..viewed.clone()
        };
        let cmd = Command::Put {
            key: key.to_vec(),
            value: value.to_vec(),
            epoch,
            cas: None,
        };
        let reply = match self.proxy_admission(true, &viewed, group, epoch) {
            Some(refused) => refused,
            None => self.execute(group, ExecOp::Write(cmd), true).await,
        };
        Routed {
            reply,
            route,
            catalog_version: catalog.version,
        }
    }

    /// Seeded bug `stale-read`: answer a read from this node's replica, unconfirmed.
    fn local_stale(&self, group: u64, op: ExecOp) -> ExecReply {
        let Some(g) = self.group(group) else {
            return ExecReply::Unavailable(format!("unknown group {group}"));
        };
        let state = g.shared.read();
        let index = state.last_applied.map(|l| l.index).unwrap_or(0);
        match op {
            ExecOp::Read { key, .. } => ExecReply::Value {
                value: state.kv.get(&key).cloned(),
                term: g.term(),
                index,
                node: self.id,
            },
            ExecOp::Scan {
                start, end, limit, ..
            } => {
                let pairs = state
                    .range(&start, &end)
                    .take(limit)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                ExecReply::Pairs {
                    pairs,
                    term: g.term(),
                    index,
                    node: self.id,
                }
            }
            ExecOp::TxnRead { key, ts, .. } => {
                let read = match crate::mvcc::Cell::decode(state.kv.get(&key).map(Vec::as_slice)) {
                    Ok(cell) => cell.read_at(ts),
                    Err(_) => crate::mvcc::SnapshotRead::NotTxnKey,
                };
                ExecReply::TxnRead {
                    read,
                    term: g.term(),
                    index,
                    node: self.id,
                }
            }
            _ => ExecReply::Unavailable("not a read".into()),
        }
    }

    pub async fn put(&self, key: &[u8], value: &[u8], cas: Option<crate::types::Cas>) -> Routed {
        self.route_key(key, true, |epoch| {
            ExecOp::Write(Command::Put {
                key: key.to_vec(),
                value: value.to_vec(),
                epoch,
                cas: cas.clone(),
            })
        })
        .await
    }

    pub async fn delete(&self, key: &[u8]) -> Routed {
        self.route_key(key, true, |epoch| {
            ExecOp::Write(Command::Delete {
                key: key.to_vec(),
                epoch,
            })
        })
        .await
    }

    pub async fn get(&self, key: &[u8]) -> Routed {
        self.route_key(key, false, |epoch| ExecOp::Read {
            key: key.to_vec(),
            epoch,
        })
        .await
    }

    /// A scan of `[start, end)` (empty end = unbounded), route by route in key order. Each
    /// route's part is a linearizable read taken between the call's start and its end.
    pub async fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<(Routed, Vec<(Key, Vec<u8>)>)>, Routed> {
        let mut parts = Vec::new();
        let mut cursor = start.to_vec();
        let mut remaining = limit;
        while remaining > 0 {
            let route_end = {
                let catalog = self.catalog();
                match catalog.route_for_key(&cursor) {
                    Some(r) => r.end.clone(),
                    None => break,
                }
            };
            let seg_end = min_end(&route_end, end);
            let seg_start = cursor.clone();
            let routed = self
                .route_key(&cursor, false, |epoch| ExecOp::Scan {
                    start: seg_start.clone(),
                    end: seg_end.clone(),
                    limit: remaining,
                    epoch,
                })
                .await;
            let pairs = match &routed.reply {
                ExecReply::Pairs { pairs, .. } => pairs.clone(),
                _ => return Err(routed),
            };
            // The route may have split since we computed seg_end; only trust the part the
            // route we were served by covers, and continue from its end.
            let served_end = min_end(&routed.route.end, &seg_end);
            let pairs: Vec<_> = pairs
                .into_iter()
                .filter(|(k, _)| crate::catalog::below_end(k, &served_end))
                .collect();
            remaining -= pairs.len().min(remaining);
            parts.push((routed, pairs));
            // Done when the served part reaches the end of the keyspace or of the request.
            if served_end.is_empty() || (!end.is_empty() && served_end.as_slice() >= end) {
                break;
            }
            cursor = served_end;
        }
        Ok(parts)
    }
}

/// The smaller of two exclusive ends (empty = unbounded).
fn min_end(a: &[u8], b: &[u8]) -> Key {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_vec(),
        (_, true) => a.to_vec(),
        _ => a.min(b).to_vec(),
    }
}

fn empty_route() -> Route {
    Route {
        id: 0,
        start: Vec::new(),
        end: Vec::new(),
        group: 0,
        state: crate::catalog::RouteState::Active,
        parent: 0,
        epoch: 0,
    }
}
