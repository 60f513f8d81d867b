//! `--client dynamodb` for a target that also speaks refkv's gRPC (refkv, elastickv): a
//! process's transactions go through the AWS SDK to its own node's DynamoDB-compatible
//! endpoint ([`DYNAMO_PORT`] on the node's IP), everything else (status for readiness and
//! leader discovery, the catalog and the split nemesis, final-read catch-up) over gRPC as
//! with `--client grpc`.
//!
//! Invariant: the DynamoDB endpoint of a node has the node's name, so the history names the
//! same node either way.

use analysis::history::CatalogSnapshot;
use futures::future::BoxFuture;
use std::sync::Arc;
use workloads::client::dynamodb::{DynamoConnector, DynamoOptions};
use workloads::client::{
    CallResult, CatalogStream, Connector, GroupStatus, KvTarget, NodeEndpoint, ReadReply,
    ScanReply, SplitReply, SplitRequest, TxnHoldControl, WriteReply,
};
use workloads::ClientOptions;

/// The DynamoDB-compatible API's port on every node (elastickv's `--dynamoAddress`,
/// refkv's `--dynamo-listen`).
pub const DYNAMO_PORT: u16 = 8000;

/// The DynamoDB endpoint of a node given by its gRPC endpoint.
pub fn dynamo_endpoint(node: &NodeEndpoint) -> NodeEndpoint {
    let host = node
        .addr
        .rsplit_once(':')
        .map_or(node.addr.as_str(), |(h, _)| h);
    NodeEndpoint {
        name: node.name.clone(),
        addr: format!("{host}:{DYNAMO_PORT}"),
    }
}

/// One process's client: transactions over DynamoDB, control over gRPC.
pub struct DynamoControlClient {
    data: Arc<dyn KvTarget>,
    control: Arc<dyn KvTarget>,
}

impl KvTarget for DynamoControlClient {
    fn node(&self) -> &str {
        self.data.node()
    }
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>> {
        self.data.read(key)
    }
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>> {
        self.data.write(key, value)
    }
    /// The DynamoDB data client: its transactions (and no cas).
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
    fn start_split_migration(
        &self,
        request: SplitRequest,
    ) -> BoxFuture<'_, CallResult<SplitReply>> {
        self.control.start_split_migration(request)
    }
    fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>> {
        self.control.status(group)
    }
    fn read_at(&self, key: &[u8], ts: u64) -> BoxFuture<'_, CallResult<ReadReply>> {
        self.control.read_at(key, ts)
    }
    fn latest_commit_ts(&self, key: &[u8]) -> BoxFuture<'_, CallResult<Option<u64>>> {
        self.control.latest_commit_ts(key)
    }
    fn watch_catalog(&self, after_version: u64) -> BoxFuture<'_, CallResult<CatalogStream>> {
        self.control.watch_catalog(after_version)
    }
    /// The split nemesis asks the gRPC side which transactions are in flight.
    fn as_txn_hold(&self) -> Option<&dyn TxnHoldControl> {
        self.control.as_txn_hold()
    }
}

/// Makes [`DynamoControlClient`]s over a gRPC connector and a DynamoDB connector of the same
/// nodes.
pub struct DynamoControlConnector {
    pub grpc: Arc<dyn Connector>,
    pub dynamo: DynamoConnector,
}

impl DynamoControlConnector {
    pub fn new(grpc: Arc<dyn Connector>, options: &ClientOptions) -> DynamoControlConnector {
        let dynamo = DynamoConnector::new(DynamoOptions {
            call_timeout: options.call_timeout,
            connect_timeout: options.connect_timeout,
            append_tables: options.dynamo_tables,
        });
        DynamoControlConnector { grpc, dynamo }
    }
}

impl Connector for DynamoControlConnector {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>> {
        Ok(Arc::new(DynamoControlClient {
            data: Arc::new(self.dynamo.client(&dynamo_endpoint(node))),
            control: self.grpc.connect(node)?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_dynamodb_endpoint_is_its_ip_at_the_dynamodb_port_under_the_same_name() {
        let node = NodeEndpoint {
            name: "n3".into(),
            addr: "10.77.3.13:50051".into(),
        };
        assert_eq!(
            dynamo_endpoint(&node),
            NodeEndpoint {
                name: "n3".into(),
                addr: "10.77.3.13:8000".into()
            }
        );
    }
}
