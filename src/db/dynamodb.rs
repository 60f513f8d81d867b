//! `--client dynamodb` for a target that also speaks refkv's gRPC (refkv, elastickv): a
//! process's transactions and registers go through the AWS SDK to its own node's
//! DynamoDB-compatible endpoint ([`DYNAMO_PORT`] on the node's IP), everything else over
//! gRPC ([`super::data_control`]).

use super::data_control::DataControlConnector;
use std::sync::Arc;
use workloads::client::dynamodb::{DynamoConnector, DynamoOptions};
use workloads::client::Connector;
use workloads::ClientOptions;

/// The DynamoDB-compatible API's port on every node (elastickv's `--dynamoAddress`,
/// refkv's `--dynamo-listen`).
pub const DYNAMO_PORT: u16 = 8000;

/// The connector of `--client dynamodb`: DynamoDB data calls, gRPC control calls.
pub fn connector(grpc: Arc<dyn Connector>, options: &ClientOptions) -> DataControlConnector {
    let dynamo = DynamoConnector::new(DynamoOptions {
        call_timeout: options.call_timeout,
        connect_timeout: options.connect_timeout,
        value_types: options.value_types,
        append_tables: options.dynamo_tables,
    });
    DataControlConnector {
        grpc,
        data: Arc::new(dynamo),
        port: DYNAMO_PORT,
    }
}
