//! One elastickv node as faultline reaches it: the node's first gRPC server (group 1's
//! address) for RawKV and Distribution, and one RaftAdmin per group at that group's own
//! address. elastickv starts a gRPC server per Raft group (`main.go` ~2719–2775); each
//! registers the shared RawKV and Distribution services but its *own* group's RaftAdmin,
//! whose `Status` takes no group (`internal/raftadmin/server.go` ~50–70). So asking one
//! address for "group 3" answers for whatever group listens there.
//!
//! Invariants: `status(g)` goes to group g's address (group 0 is the default group, 1);
//! failed mutations are re-classified by elastickv's texts ([`super::errors`]).

use super::errors::reclassify_mutation;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::sync::Arc;
use workloads::client::{
    CallResult, CatalogStream, Connector, GroupStatus, KvTarget, Lacking, NodeEndpoint, ReadReply, ScanReply, SplitJobs, SplitMigration, SplitReply, SplitRequest, VersionedReads, WriteReply,
};
use workloads::{CallError, Certainty};

/// The address of `group` on the node whose group-1 address is `addr` (`ip:port`): group g
/// listens on port + g − 1 (faultline's node layout, [`super::Elastickv::group_addr`]).
pub fn group_address(addr: &str, group: u64) -> anyhow::Result<String> {
    let (host, port) = addr.rsplit_once(':').ok_or_else(|| anyhow::anyhow!("node address {addr:?}: expected ip:port"))?;
    let port: u64 = port.parse().map_err(|_| anyhow::anyhow!("node address {addr:?}: bad port"))?;
    let port = port + group.max(1) - 1;
    if port > u64::from(u16::MAX) {
        anyhow::bail!("node address {addr:?}: group {group} would listen on port {port}");
    }
    Ok(format!("{host}:{port}"))
}

/// A node's clients: `rpc` at its first address, `admin[g - 1]` at group g's.
pub struct EkvNode {
    pub rpc: Arc<dyn KvTarget>,
    pub admin: Vec<Arc<dyn KvTarget>>,
}

impl EkvNode {
    /// Clients for `node` with `groups` groups, made by `inner` (no connection is opened yet).
    pub fn connect(inner: &dyn Connector, node: &NodeEndpoint, groups: u64) -> anyhow::Result<EkvNode> {
        let rpc = inner.connect(node)?;
        let mut admin = vec![rpc.clone()];
        for g in 2..=groups {
            admin.push(inner.connect(&NodeEndpoint { name: node.name.clone(), addr: group_address(&node.addr, g)? })?);
        }
        Ok(EkvNode { rpc, admin })
    }
}

fn mutation<T: Send + 'static>(fut: BoxFuture<'_, CallResult<T>>) -> BoxFuture<'_, CallResult<T>> {
    fut.map(|r| r.map_err(reclassify_mutation)).boxed()
}

impl KvTarget for EkvNode {
    fn node(&self) -> &str {
        self.rpc.node()
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        self.rpc.read(key)
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        mutation(self.rpc.write(key, value))
    }
    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        mutation(self.rpc.delete(key))
    }
    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        self.rpc.scan(start, end, limit)
    }
    fn list_routes(&self) -> BoxFuture<'_, CallResult<analysis::history::CatalogSnapshot>> {
        self.rpc.list_routes()
    }
    fn split(&self, request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        mutation(self.rpc.split(request))
    }
    fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        let index = group.max(1) as usize - 1;
        match self.admin.get(index) {
            Some(admin) => async move {
                let mut s = admin.status(group.max(1)).await?;
                s.group = group.max(1);
                Ok(s)
            }
            .boxed(),
            None => {
                let err = CallError::new(Certainty::Definite, "invalid-argument", format!("no group {group} on this node ({} groups)", self.admin.len()));
                async move { Err(err) }.boxed()
            }
        }
    }
    fn watch_catalog(&self, after_version: u64) -> BoxFuture<'_, CallResult<CatalogStream>> {
        self.rpc.watch_catalog(after_version)
    }
    /// Its own, to re-classify a failed move as every mutation.
    fn as_split_migration(&self) -> Option<&dyn SplitMigration> {
        Some(self)
    }
    fn as_split_jobs(&self) -> Option<&dyn SplitJobs> {
        self.rpc.as_split_jobs()
    }
    fn as_versioned(&self) -> Option<&dyn VersionedReads> {
        self.rpc.as_versioned()
    }
}

impl SplitMigration for EkvNode {
    fn start_split_migration(&self, request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        mutation(self.rpc.as_split_migration().unwrap_or(&Lacking).start_split_migration(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_g_listens_on_the_nodes_port_plus_g_minus_one() {
        assert_eq!(group_address("10.0.0.1:50051", 1).unwrap(), "10.0.0.1:50051");
        assert_eq!(group_address("10.0.0.1:50051", 3).unwrap(), "10.0.0.1:50053");
        assert_eq!(group_address("10.0.0.1:50051", 0).unwrap(), "10.0.0.1:50051", "0 is the default group");
        assert!(group_address("10.0.0.1", 2).is_err());
        assert!(group_address("10.0.0.1:65535", 2).is_err());
    }
}
