//! Client capabilities: what a store's client can do beyond the key-value calls every
//! client makes (read, write, delete, scan, catalog and status). Each is a small trait
//! ([`CasClient`], [`TxnClient`], [`ZsetClient`], [`QueueClient`]) implemented by the clients that can, and asked for through
//! the client's accessor (`KvTarget::as_cas`, `KvTarget::as_txn`). A workload names the
//! ones it needs ([`ClientCapability`] in its `WorkloadSpec`); a target declares, per
//! protocol, which its client has (faultline's `db::Capability::Client`), so a workload is
//! offered only where it can run and a run is refused up front, with the protocols that
//! would serve it, when the chosen client lacks one.
//!
//! Invariant: an operation that needs a capability the client lacks fails definitely with
//! `unimplemented`, sent nowhere, so a mismatch between what a target declares and what its
//! client has shows as failed operations, never as applied ones.

use super::{CallResult, HoldCommand, TxnInFlight, WriteReply};
use futures::future::BoxFuture;

crate::named_enum! {
    /// One thing a client may be able to do.
    pub enum ClientCapability "client capability" {
        /// Compare-and-set ([`super::CasClient`]): without it the register workloads are reads
        /// and writes only.
        Cas = "cas",
        /// A transaction of micro-ops ([`super::TxnClient`]): the `append` and
        /// `rw-register` workloads need it.
        Txn = "txn",
        /// Object puts (single and multipart) and gets ([`super::ObjectClient`]): the
        /// `objects` workload needs it.
        Objects = "objects",
        /// Redis sorted sets ([`super::ZsetClient`]): the `zset` workload needs it.
        Zset = "zset",
        /// An SQS FIFO queue ([`super::QueueClient`]): the `queue` workload needs it.
        Queue = "queue",
    }
}

impl ClientCapability {
    /// What the capability runs, for messages (`--workload append runs transactions, ...`).
    pub fn what(self) -> &'static str {
        match self {
            ClientCapability::Cas => "compare-and-sets",
            ClientCapability::Txn => "transactions",
            ClientCapability::Objects => "object puts and gets",
            ClientCapability::Zset => "sorted-set calls",
            ClientCapability::Queue => "queue calls",
        }
    }
}

/// Compare-and-set of a register.
pub trait CasClient: Send + Sync {
    /// Writes `new` only if the current value is `expected` (`None` = the key must be
    /// absent). `applied == false` means the comparison failed.
    fn cas(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: &[u8],
    ) -> BoxFuture<'_, CallResult<WriteReply>>;
}

/// Test only, and no workload's need: control of the node's hold of a transaction at a
/// commit point (refkv's `RefkvTxn.TxnHold`), which the `txn-move` fault drives. Asked for
/// with `KvTarget::as_txn_hold`.
pub trait TxnHoldControl: Send + Sync {
    /// Arms, releases or only lists the hold; the transactions this node coordinates whose
    /// locks are live.
    fn txn_hold(&self, command: HoldCommand) -> BoxFuture<'_, CallResult<Vec<TxnInFlight>>>;
}

/// A transaction of micro-ops (the capability the `append` and `rw-register` workloads
/// need).
pub trait TxnClient: Send + Sync {
    /// Runs `mops` as one transaction. On success, one value per micro-op, in order: what a
    /// read returned (a JSON list for a list read, a value or `null` for a register read);
    /// anything for a write (ignored). A failure is classified as for every call: definite
    /// only when the transaction certainly did not take effect.
    fn transact<'a>(
        &'a self,
        mops: &'a [crate::txn::Mop],
    ) -> BoxFuture<'a, CallResult<Vec<serde_json::Value>>>;
}

/// Objects of an S3-compatible store (the capability the `objects` workload needs).
pub trait ObjectClient: Send + Sync {
    /// Puts `body` as the object `key`, as `upload` says. A failure is classified as for
    /// every call: definite only when the object certainly did not change.
    fn put_object<'a>(
        &'a self,
        key: &'a str,
        body: Vec<u8>,
        upload: crate::objects::Upload,
    ) -> BoxFuture<'a, CallResult<()>>;
    /// The object's whole body, `None` when there is no such object.
    fn get_object<'a>(&'a self, key: &'a str) -> BoxFuture<'a, CallResult<Option<Vec<u8>>>>;
}

/// Redis sorted sets (the capability the `zset` workload needs).
pub trait ZsetClient: Send + Sync {
    /// Runs `call` on the sorted set at `key`. On success, the `ok` value the history
    /// records (`docs/history-format.md` § Sorted sets); a failure is classified as for
    /// every call.
    fn zset<'a>(
        &'a self,
        key: &'a str,
        call: &'a crate::zset::ZsetCall,
    ) -> BoxFuture<'a, CallResult<serde_json::Value>>;
}

/// An SQS FIFO queue (the capability the `queue` workload needs). The client keeps what
/// its process received and has not deleted yet ([`crate::queue::Held`]), so a delete
/// names a message this process received, by the receipt handle of its latest receive.
pub trait QueueClient: Send + Sync {
    /// Sends `body` to the message group `group`. On success, the `ok` value the history
    /// records (what the server said of the message: its id, its sequence number).
    fn send<'a>(
        &'a self,
        group: &'a str,
        body: &'a str,
    ) -> BoxFuture<'a, CallResult<serde_json::Value>>;
    /// Receives up to `max` messages, each hidden from other receives for `visibility_s`
    /// seconds, in the order returned; the client holds them until they are taken for a
    /// delete ([`QueueClient::take_held`]).
    fn receive(
        &self,
        max: u32,
        visibility_s: u32,
    ) -> BoxFuture<'_, CallResult<Vec<crate::queue::Received>>>;
    /// Deletes a received message by its receipt handle.
    fn delete_message<'a>(&'a self, receipt: &'a str) -> BoxFuture<'a, CallResult<()>>;
    /// The oldest message this client received and has not yet taken for a delete.
    fn take_held(&self) -> Option<crate::queue::Received>;
    /// Whether its latest `ok` receive returned nothing.
    fn found_empty(&self) -> bool;
    /// Whether this client's latest receive found the queue empty at least a visibility
    /// timeout (and a margin) after both the client's start and its latest delivery
    /// ([`crate::queue::Held::drained`]).
    fn drained(&self) -> bool;
}
