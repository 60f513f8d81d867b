//! `--read-path leader`: single-key reads sent to the leader of the key's group instead of
//! through the process's own node. The group comes from the route catalog (`ListRoutes`),
//! the leader from RaftAdmin `Status` of every node (a claimant at the highest term any
//! node reports; a deposed claimant at a lower term is never chosen); both are cached for [`TTL`] and forgotten when a read through them fails. When no
//! leader is known the read fails definitely (`leader-not-found`): a read that did not
//! happen is harmless.
//!
//! Invariant: the directory's node clients must answer `status(g)` for group `g` itself
//! (elastickv: each group's RaftAdmin at its own address, see `elastickv::node`), otherwise
//! one group's leader is taken for all.

use analysis::catalog::route_contains;
use analysis::history::{CommitMeta, RouteRecord};
use futures::future::join_all;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use workloads::client::{
    CallResult, CatalogStream, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply,
    ScanReply, SplitReply, SplitRequest, WriteReply,
};
use workloads::{CallError, Certainty};

/// How long a route table or a leader stays trusted without a failure.
pub const TTL: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Cache {
    routes: Option<(Instant, Vec<RouteRecord>)>,
    leaders: HashMap<u64, (Instant, usize)>,
}

/// Which node leads which group, shared by every client of a run.
pub struct LeaderDirectory {
    nodes: Vec<Arc<dyn KvTarget>>,
    cache: Mutex<Cache>,
}

impl LeaderDirectory {
    /// A directory over one client per node.
    pub fn new(nodes: Vec<Arc<dyn KvTarget>>) -> LeaderDirectory {
        LeaderDirectory {
            nodes,
            cache: Mutex::new(Cache::default()),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn routes(&self) -> Option<Vec<RouteRecord>> {
        if let Some((at, routes)) = &self.cache().routes {
            if at.elapsed() < TTL {
                return Some(routes.clone());
            }
        }
        for node in &self.nodes {
            if let Ok(catalog) = node.list_routes().await {
                self.cache().routes = Some((Instant::now(), catalog.routes.clone()));
                return Some(catalog.routes);
            }
        }
        None
    }

    /// The group whose route holds `key` (the default group 1 when no catalog answers).
    pub async fn group_of(&self, key: &[u8]) -> u64 {
        let key = String::from_utf8_lossy(key);
        match self.routes().await {
            Some(routes) => routes
                .iter()
                .find(|r| route_contains(r, &key))
                .map(|r| r.group)
                .unwrap_or(1),
            None => 1,
        }
    }

    /// The index of the node leading `group`, if some node claims it.
    pub async fn leader(&self, group: u64) -> Option<usize> {
        if let Some((at, i)) = self.cache().leaders.get(&group) {
            if at.elapsed() < TTL {
                return Some(*i);
            }
        }
        let views = join_all(self.nodes.iter().map(|n| n.status(group))).await;
        let answered: Vec<(usize, &GroupStatus)> = views
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().ok().map(|s| (i, s)))
            .collect();
        let leader =
            answered[workloads::cluster::current_leader(answered.iter().map(|(_, s)| *s))?].0;
        self.cache().leaders.insert(group, (Instant::now(), leader));
        Some(leader)
    }

    /// The client of the node leading `group`, if some node claims it.
    pub async fn leader_node(&self, group: u64) -> Option<Arc<dyn KvTarget>> {
        let i = self.leader(group).await?;
        self.nodes.get(i).cloned()
    }

    /// Forgets what is known about `group` (after a failed read through it).
    pub fn forget(&self, group: u64) {
        let mut cache = self.cache();
        cache.leaders.remove(&group);
        cache.routes = None;
    }

    /// Reads `key` from the leader of its group.
    pub async fn read(&self, key: &[u8]) -> CallResult<ReadReply> {
        let group = self.group_of(key).await;
        let Some(i) = self.leader(group).await else {
            return Err(CallError::new(
                Certainty::Definite,
                "leader-not-found",
                format!("no node leads group {group}"),
            ));
        };
        let result = self.nodes[i]
            .read(key)
            .await
            .map(|r| served_by(r, self.nodes[i].node()));
        if result.is_err() {
            self.forget(group);
        }
        result
    }
}

/// Names the node that answered in the reply's metadata (the history's `node` is the
/// process's own node, not the leader the read went to), unless the store named one.
fn served_by(mut reply: ReadReply, node: &str) -> ReadReply {
    reply
        .meta
        .get_or_insert_with(CommitMeta::default)
        .node
        .get_or_insert_with(|| node.to_string());
    reply
}

/// A node's client whose reads go through a [`LeaderDirectory`]; everything else goes to
/// the node itself.
pub struct LeaderReadClient {
    pub inner: Arc<dyn KvTarget>,
    pub leaders: Arc<LeaderDirectory>,
}

impl KvTarget for LeaderReadClient {
    fn node(&self) -> &str {
        self.inner.node()
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        let key = key.to_vec();
        async move { self.leaders.read(&key).await }.boxed()
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.inner.write(key, value)
    }
    /// Its node's client: the capabilities (cas, transactions, split jobs, versioned reads,
    /// …) are the node's.
    fn wrapped(&self) -> Option<&dyn KvTarget> {
        Some(self.inner.as_ref())
    }
    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.inner.delete(key)
    }
    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        self.inner.scan(start, end, limit)
    }
    fn list_routes(&self) -> BoxFuture<'_, CallResult<analysis::history::CatalogSnapshot>> {
        self.inner.list_routes()
    }
    fn split(&self, request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        self.inner.split(request)
    }
    fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        self.inner.status(group)
    }
    fn watch_catalog(&self, after_version: u64) -> BoxFuture<'_, CallResult<CatalogStream>> {
        self.inner.watch_catalog(after_version)
    }
}

/// Wraps a connector so that every client it makes reads through one shared directory.
pub struct LeaderReadConnector {
    pub inner: Arc<dyn Connector>,
    pub leaders: Arc<LeaderDirectory>,
}

impl LeaderReadConnector {
    /// A directory over one client per node of `nodes`, made by `inner`.
    pub fn new(inner: Arc<dyn Connector>, nodes: &[NodeEndpoint]) -> LeaderReadConnector {
        let clients = nodes.iter().filter_map(|n| inner.connect(n).ok()).collect();
        LeaderReadConnector {
            inner,
            leaders: Arc::new(LeaderDirectory::new(clients)),
        }
    }
}

impl Connector for LeaderReadConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(LeaderReadClient {
            inner: self.inner.connect(node)?,
            leaders: self.leaders.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_target::{down, unserved_data_ops};
    use analysis::history::CatalogSnapshot;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// A node that leads the groups it is told to and answers reads with its own name.
    struct FakeNode {
        name: &'static str,
        leads: Mutex<Vec<u64>>,
        up: AtomicBool,
        reads: AtomicU64,
    }

    impl FakeNode {
        fn new(name: &'static str, leads: &[u64]) -> Arc<FakeNode> {
            Arc::new(FakeNode {
                name,
                leads: Mutex::new(leads.to_vec()),
                up: AtomicBool::new(true),
                reads: AtomicU64::new(0),
            })
        }
    }

    impl KvTarget for FakeNode {
        fn node(&self) -> &str {
            self.name
        }
        fn read(&self, _key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
            let up = self.up.load(Ordering::SeqCst);
            self.reads.fetch_add(1, Ordering::SeqCst);
            async move {
                if up {
                    Ok(ReadReply {
                        value: Some(self.name.as_bytes().to_vec()),
                        meta: None,
                    })
                } else {
                    Err(down())
                }
            }
            .boxed()
        }
        unserved_data_ops!();
        fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
            let route = |id, start: &str, end: &str, group| RouteRecord {
                id,
                start: start.into(),
                end: end.into(),
                group,
                state: "ACTIVE".into(),
                epoch: 1,
                parent: None,
            };
            let snapshot = CatalogSnapshot {
                version: 1,
                routes: vec![route(1, "", "m", 1), route(2, "m", "", 2)],
                jobs: vec![],
            };
            async move { Ok(snapshot) }.boxed()
        }
        fn split(&self, _: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
            async { Err(down()) }.boxed()
        }
        fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
            let leads = self.leads.lock().unwrap().contains(&group);
            let up = self.up.load(Ordering::SeqCst);
            async move {
                if !up {
                    return Err(down());
                }
                Ok(GroupStatus {
                    group,
                    is_leader: leads,
                    term: 1,
                    ..Default::default()
                })
            }
            .boxed()
        }
    }

    fn directory(nodes: &[Arc<FakeNode>]) -> LeaderDirectory {
        LeaderDirectory::new(
            nodes
                .iter()
                .map(|n| n.clone() as Arc<dyn KvTarget>)
                .collect(),
        )
    }

    #[tokio::test]
    async fn reads_go_to_the_leader_of_the_keys_group() {
        let nodes = [
            FakeNode::new("n1", &[1]),
            FakeNode::new("n2", &[2]),
            FakeNode::new("n3", &[]),
        ];
        let dir = directory(&nodes);
        assert_eq!(
            dir.read(b"a").await.unwrap().value.as_deref(),
            Some(&b"n1"[..]),
            "group 1 is led by n1"
        );
        assert_eq!(
            dir.read(b"x").await.unwrap().value.as_deref(),
            Some(&b"n2"[..]),
            "group 2 is led by n2"
        );
        let served = dir.read(b"x").await.unwrap().meta.and_then(|m| m.node);
        assert_eq!(
            served.as_deref(),
            Some("n2"),
            "the reply names the node that served it"
        );
        assert_eq!(
            nodes[2].reads.load(Ordering::SeqCst),
            0,
            "the follower never serves a read"
        );
    }

    #[tokio::test]
    async fn a_failed_read_forgets_the_leader_and_no_leader_is_a_definite_failure() {
        let nodes = [
            FakeNode::new("n1", &[1]),
            FakeNode::new("n2", &[]),
            FakeNode::new("n3", &[]),
        ];
        let dir = directory(&nodes);
        dir.read(b"a").await.unwrap();
        nodes[0].up.store(false, Ordering::SeqCst);
        assert!(dir.read(b"a").await.is_err(), "the cached leader is down");
        *nodes[1].leads.lock().unwrap() = vec![1];
        assert_eq!(
            dir.read(b"a").await.unwrap().value.as_deref(),
            Some(&b"n2"[..]),
            "the new leader is found"
        );
        *nodes[1].leads.lock().unwrap() = vec![];
        dir.forget(1);
        let err = dir.read(b"a").await.unwrap_err();
        assert_eq!(
            (err.tag, err.certainty),
            ("leader-not-found", Certainty::Definite)
        );
    }
}
