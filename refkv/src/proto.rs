//! Generated gRPC/protobuf code: the elastickv-compatible client API (package-less) and
//! refkv's internal service.

#![allow(clippy::all, missing_docs)]

/// RawKV, RaftAdmin, Distribution (package-less protos).
pub mod api {
    tonic::include_proto!("_");
}

/// Raft transport, forwarding and admin between refkv nodes.
pub mod internal {
    tonic::include_proto!("refkv.internal");
}
