//! `--client s3` for a target that also speaks refkv's gRPC (elastickv): a process's
//! register reads and writes go through the AWS SDK to its own node's S3-compatible
//! endpoint ([`S3_PORT`] on the node's IP), everything else over gRPC
//! ([`super::data_control`]).

use super::data_control::DataControlConnector;
use std::sync::Arc;
use workloads::client::s3::{S3Connector, S3Options};
use workloads::client::Connector;
use workloads::ClientOptions;

/// The S3-compatible API's port on every node (elastickv's `--s3Address`).
pub const S3_PORT: u16 = 9000;

/// The connector of `--client s3`: S3 data calls, gRPC control calls.
pub fn connector(grpc: Arc<dyn Connector>, options: &ClientOptions) -> DataControlConnector {
    let s3 = S3Connector::new(S3Options {
        call_timeout: options.call_timeout,
        connect_timeout: options.connect_timeout,
    });
    DataControlConnector {
        grpc,
        data: Arc::new(s3),
        port: S3_PORT,
    }
}
