//! `--client sqs` for a target that also speaks refkv's gRPC (elastickv): a process's
//! queue calls go through the AWS SDK to its own node's SQS-compatible endpoint
//! ([`SQS_PORT`] on the node's IP), everything else over gRPC
//! ([`super::data_control`]). One queue per run, named when the connector is made.

use super::data_control::DataControlConnector;
use std::sync::Arc;
use workloads::client::sqs::{run_queue_name, SqsConnector, SqsOptions};
use workloads::client::Connector;
use workloads::ClientOptions;

/// The SQS-compatible API's port on every node (elastickv's `--sqsAddress`; its own
/// suite's port).
pub const SQS_PORT: u16 = 9324;

/// The connector of `--client sqs`: SQS queue calls, gRPC control calls.
pub fn connector(grpc: Arc<dyn Connector>, options: &ClientOptions) -> DataControlConnector {
    let sqs = SqsConnector::new(SqsOptions {
        call_timeout: options.call_timeout,
        connect_timeout: options.connect_timeout,
        queue: run_queue_name(),
    });
    DataControlConnector {
        grpc,
        data: Arc::new(sqs),
        port: SQS_PORT,
    }
}
