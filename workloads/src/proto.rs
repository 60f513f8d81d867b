//! Generated gRPC stubs for faultline's proto files (`proto/`): the package-less RawKV,
//! RaftAdmin and Distribution services (elastickv's names and field numbers plus refkv's
//! extension fields) and `grpc.health.v1`. Clients are used by this crate; the server
//! traits exist so that tests can run an in-process fake store.

#![allow(clippy::all, missing_docs)]

/// RawKV, RaftAdmin and Distribution (declared without a proto package).
pub mod kv {
    tonic::include_proto!("_");
}

/// The standard gRPC health-checking protocol.
pub mod health {
    tonic::include_proto!("grpc.health.v1");
}
