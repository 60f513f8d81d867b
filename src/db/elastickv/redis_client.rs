//! elastickv through its Redis adapter (`--client redis`): a process's data operations
//! (GET, SET, the cas script, SCAN or MGET) go over Redis to its own node's Redis address,
//! everything else (RaftAdmin status for readiness and leader discovery, the catalog and
//! the split nemesis, the store-version probes) over gRPC as with `--client grpc`.
//!
//! What each Redis read promises at d9a031d: a plain `GET` on the key's leader passes a
//! lease read for the key's group and then reads the local store at the node's `readTS()`
//! (`adapter/redis_strings.go` ~318–345; on a follower it is proxied to the leader, ~320);
//! a script takes a lease read of the *default* group at its start and reads every key at
//! that `startTS` (`adapter/redis_lua_context.go` ~267–276), then commits as one
//! transaction; `SCAN` reads the node's own store (and crashes the node at d9a031d).
//!
//! Invariant: the Redis endpoint of a node is its gRPC IP at [`super::REDIS_PORT`], under
//! the same node name, so the history names the same node either way.

use analysis::history::CatalogSnapshot;
use futures::future::BoxFuture;
use std::sync::Arc;
use workloads::client::redis::{RedisClient, RedisConnector, RedisOptions};
use workloads::client::{
    CallResult, CatalogStream, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply, ScanReply, SplitMigration, SplitReply, SplitRequest, VersionedReads, WriteReply,
};

/// The Redis endpoints of elastickv nodes given by their gRPC endpoints.
pub fn redis_endpoints(nodes: &[NodeEndpoint]) -> Vec<NodeEndpoint> {
    nodes
        .iter()
        .map(|n| {
            let host = n.addr.rsplit_once(':').map_or(n.addr.as_str(), |(h, _)| h);
            NodeEndpoint {
                name: n.name.clone(),
                addr: format!("{host}:{}", super::REDIS_PORT),
            }
        })
        .collect()
}

/// One process's client: data over Redis, control over gRPC.
pub struct EkvRedisClient {
    data: RedisClient,
    control: Arc<dyn KvTarget>,
}

impl KvTarget for EkvRedisClient {
    fn node(&self) -> &str {
        self.data.node()
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        self.data.read(key)
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.data.write(key, value)
    }
    /// Its Redis data client: cas (a Lua script) and transactions (`MULTI`/`EXEC`) are
    /// the Redis adapter's.
    fn wrapped(&self) -> Option<&dyn KvTarget> {
        Some(&self.data)
    }
    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.data.delete(key)
    }
    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>> {
        self.data.scan(start, end, limit)
    }
    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>> {
        self.control.list_routes()
    }
    fn split(&self, request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        self.control.split(request)
    }
    fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        self.control.status(group)
    }
    fn watch_catalog(&self, after_version: u64) -> BoxFuture<'_, CallResult<CatalogStream>> {
        self.control.watch_catalog(after_version)
    }
    fn as_split_migration(&self) -> Option<&dyn SplitMigration> {
        self.control.as_split_migration()
    }
    /// The store-version probes read over gRPC.
    fn as_versioned(&self) -> Option<&dyn VersionedReads> {
        self.control.as_versioned()
    }
}

/// Makes [`EkvRedisClient`]s over a gRPC connector and a Redis connector of the same nodes.
pub struct EkvRedisConnector {
    pub grpc: Arc<dyn Connector>,
    pub redis: RedisConnector,
}

impl EkvRedisConnector {
    pub fn new(grpc: Arc<dyn Connector>, nodes: &[NodeEndpoint], options: RedisOptions) -> EkvRedisConnector {
        EkvRedisConnector {
            grpc,
            redis: RedisConnector::new(redis_endpoints(nodes), options),
        }
    }
}

impl Connector for EkvRedisConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        let redis_node = redis_endpoints(std::slice::from_ref(node)).remove(0);
        Ok(Arc::new(EkvRedisClient {
            data: self.redis.client(&redis_node)?,
            control: self.grpc.connect(node)?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_redis_endpoint_is_its_ip_at_the_redis_port_under_the_same_name() {
        let nodes = [NodeEndpoint {
            name: "n2".into(),
            addr: "10.77.3.12:50051".into(),
        }];
        assert_eq!(
            redis_endpoints(&nodes),
            [NodeEndpoint {
                name: "n2".into(),
                addr: "10.77.3.12:6379".into()
            }]
        );
    }
}
