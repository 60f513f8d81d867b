//! A process's client for a target whose data API is not its control API: the data calls
//! (reads, writes, deletes, scans and the data client's capabilities) go to the node's data
//! endpoint — an S3-, SQS- or DynamoDB-compatible API on its own port — and everything else
//! (status for readiness and leader discovery, the catalog and the split nemesis, the
//! transaction hold) over the target's gRPC client, as with `--client grpc`.
//!
//! Invariant: a node's data endpoint has the node's name, so the history names the same
//! node either way.

use analysis::history::CatalogSnapshot;
use futures::future::BoxFuture;
use std::sync::Arc;
use workloads::client::{
    CallResult, CatalogStream, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply,
    ScanReply, SplitMigration, SplitReply, SplitRequest, TxnHoldControl, VersionedReads,
    WriteReply,
};

/// The endpoint of a node's data API: the node's IP at `port`, under the node's name.
pub fn data_endpoint(node: &NodeEndpoint, port: u16) -> NodeEndpoint {
    let host = node
        .addr
        .rsplit_once(':')
        .map_or(node.addr.as_str(), |(h, _)| h);
    NodeEndpoint {
        name: node.name.clone(),
        addr: format!("{host}:{port}"),
    }
}

/// One process's client: data calls to the data API, control calls over gRPC.
pub struct DataControlClient {
    data: Arc<dyn KvTarget>,
    control: Arc<dyn KvTarget>,
}

impl KvTarget for DataControlClient {
    fn node(&self) -> &str {
        self.data.node()
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        self.data.read(key)
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.data.write(key, value)
    }
    /// The data client: its capabilities (cas, transactions, ...) are the run's.
    fn wrapped(&self) -> Option<&dyn KvTarget> {
        Some(self.data.as_ref())
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
    /// The split nemesis asks the gRPC side which transactions are in flight.
    fn as_txn_hold(&self) -> Option<&dyn TxnHoldControl> {
        self.control.as_txn_hold()
    }
    fn as_split_migration(&self) -> Option<&dyn SplitMigration> {
        self.control.as_split_migration()
    }
    /// None (each call a definite `unimplemented`): a data API stores an item or object
    /// under keys of its own (elastickv: `!ddb|item|…`, `!s3|obj|head|…`), not under the
    /// client's key, so a versions probe of that key over gRPC would describe another key.
    fn as_versioned(&self) -> Option<&dyn VersionedReads> {
        None
    }
}

/// Makes [`DataControlClient`]s over a gRPC connector and a data connector of the same
/// nodes, the data API at `port` on each node's IP.
pub struct DataControlConnector {
    pub grpc: Arc<dyn Connector>,
    pub data: Arc<dyn Connector>,
    pub port: u16,
}

impl Connector for DataControlConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(DataControlClient {
            data: self.data.connect(&data_endpoint(node, self.port))?,
            control: self.grpc.connect(node)?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_data_endpoint_is_its_ip_at_the_data_port_under_the_same_name() {
        let node = NodeEndpoint {
            name: "n3".into(),
            addr: "10.77.3.13:50051".into(),
        };
        assert_eq!(
            data_endpoint(&node, 9000),
            NodeEndpoint {
                name: "n3".into(),
                addr: "10.77.3.13:9000".into()
            }
        );
    }
}
