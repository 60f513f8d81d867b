//! Client capabilities: what a store's client can do beyond the key-value calls every
//! client makes (read, write, delete, scan, catalog and status). A workload names the ones
//! it needs ([`crate::generators::WorkloadSpec`]); a target declares, per protocol, which its
//! client has (faultline's `db::Capability::Client`), so a workload is offered only where it
//! can run and a run is refused up front, with the protocols that would serve it, when the
//! chosen client lacks one.
//!
//! Invariant: a client that lacks a capability still answers a call that needs it, with a
//! definite `unimplemented` error sent nowhere, so a mismatch between what a target declares
//! and what its client does shows as failed operations, never as applied ones.

crate::named_enum! {
    /// One thing a client may be able to do.
    pub enum ClientCapability "client capability" {
        /// Compare-and-set (`KvTarget::cas`): without it the register workloads are reads
        /// and writes only.
        Cas = "cas",
        /// A transaction of micro-ops ([`super::Transactional`]): the `append` and
        /// `rw-register` workloads need it.
        Txn = "txn",
    }
}

impl ClientCapability {
    /// What the capability runs, for messages (`--workload append runs transactions, ...`).
    pub fn what(self) -> &'static str {
        match self {
            ClientCapability::Cas => "compare-and-sets",
            ClientCapability::Txn => "transactions",
        }
    }
}
