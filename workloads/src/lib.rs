//! # workloads — faultline's clients and generators
//!
//! Jepsen's *client* and *generator*: an elastickv-compatible gRPC client (RawKV,
//! Distribution, RaftAdmin) that classifies every outcome as definite or indeterminate,
//! and the workloads (`hotspot`, `register`, `set`) that decide which operations the
//! test's processes invoke.
