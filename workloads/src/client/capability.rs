//! Client capabilities: what a store's client can do beyond the key-value calls every
//! client makes (read, write, delete, scan, catalog and status). Each is a small trait
//! ([`CasClient`], [`TxnClient`], [`ZsetClient`], [`QueueClient`]) implemented by the clients that can, and asked for through
//! the client's accessor (`KvTarget::as_cas`, `KvTarget::as_txn`). A workload names the
//! ones it needs ([`ClientCapability`] in its `WorkloadSpec`); a target declares, per
//! protocol, which its client has (faultline's `db::Capability::Client`), so a workload is
//! offered only where it can run and a run is refused up front, with the protocols that
//! would serve it, when the chosen client lacks one.
//!
//! The harness' own calls that only some stores answer are capabilities of the same shape
//! outside [`ClientCapability`] (no workload needs them): refkv's pinned writes
//! ([`PinnedWrites`]), elastickv's cross-group split ([`SplitMigration`]) and split-job
//! calls ([`SplitJobs`]), versioned reads ([`VersionedReads`]) and refkv's transaction hold
//! ([`TxnHoldControl`]). A caller asks with the accessor and, where the client has none,
//! calls [`Lacking`], which answers every such call as a client without it does.
//!
//! Invariant: an operation that needs a capability the client lacks fails definitely with
//! `unimplemented`, sent nowhere, so a mismatch between what a target declares and what its
//! client has shows as failed operations, never as applied ones.

use super::{
    CallError, CallResult, Certainty, HoldCommand, ReadReply, SplitReply, SplitRequest,
    TxnInFlight, WriteReply,
};
use analysis::history::SplitJobRecord;
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

/// refkv's stale-client write (its RawPut extension), which the move faults send.
/// Asked for with `KvTarget::as_pinned_writes`.
pub trait PinnedWrites: Send + Sync {
    /// `value` written to `key` straight at `group` as if routed under route `epoch`,
    /// refused rather than re-routed if that group does not own the key.
    fn write_pinned(
        &self,
        key: &[u8],
        value: &[u8],
        group: u64,
        epoch: u64,
    ) -> BoxFuture<'_, CallResult<WriteReply>>;
}

/// elastickv's cross-group split (`StartSplitMigration`, its milestone-2 RPC): the right
/// child moves to `request.target_group` through a split job. Asked for with
/// `KvTarget::as_split_migration`.
pub trait SplitMigration: Send + Sync {
    fn start_split_migration(&self, request: SplitRequest)
        -> BoxFuture<'_, CallResult<SplitReply>>;
}

/// elastickv's milestone-2 split-job introspection and control (`GetSplitJob`,
/// `ListSplitJobs`, `AbandonSplitJob`, `RetrySplitJob`). Asked for with
/// `KvTarget::as_split_jobs`; callers record a client without it (`unimplemented`), they
/// never substitute another call for one.
pub trait SplitJobs: Send + Sync {
    fn split_job(&self, job_id: u64) -> BoxFuture<'_, CallResult<SplitJobRecord>>;
    fn list_split_jobs(&self) -> BoxFuture<'_, CallResult<Vec<SplitJobRecord>>>;
    fn abandon_split_job(&self, job_id: u64) -> BoxFuture<'_, CallResult<()>>;
    fn retry_split_job(&self, job_id: u64) -> BoxFuture<'_, CallResult<()>>;
}

/// Reads of the store's own versions (elastickv: HLC timestamps, RawGet with `ts` and
/// RawLatestCommitTS), which the runner's store-version probes make. Asked for with
/// `KvTarget::as_versioned`.
pub trait VersionedReads: Send + Sync {
    /// `key` as of the store's own timestamp `ts`.
    fn read_at(&self, key: &[u8], ts: u64) -> BoxFuture<'_, CallResult<ReadReply>>;
    /// The commit timestamp of the newest version of `key` (`None` = absent).
    fn latest_commit_ts(&self, key: &[u8]) -> BoxFuture<'_, CallResult<Option<u64>>>;
}

/// What a client without one of the capabilities above answers: every call a definite
/// `unimplemented`, sent nowhere, naming what is missing. A caller uses it where the
/// accessor answers `None` (`client.as_split_jobs().unwrap_or(&Lacking)`).
pub struct Lacking;

/// A definite `unimplemented` failure saying `what` the client does not have.
fn lacking<T: Send + 'static>(what: &'static str) -> BoxFuture<'static, CallResult<T>> {
    Box::pin(async move { Err(CallError::new(Certainty::Definite, "unimplemented", what)) })
}

impl PinnedWrites for Lacking {
    fn write_pinned(
        &self,
        _: &[u8],
        _: &[u8],
        _: u64,
        _: u64,
    ) -> BoxFuture<'_, CallResult<WriteReply>> {
        lacking("no pinned writes")
    }
}

impl SplitMigration for Lacking {
    fn start_split_migration(&self, _: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>> {
        lacking("no StartSplitMigration")
    }
}

impl SplitJobs for Lacking {
    fn split_job(&self, _: u64) -> BoxFuture<'_, CallResult<SplitJobRecord>> {
        lacking("no GetSplitJob")
    }
    fn list_split_jobs(&self) -> BoxFuture<'_, CallResult<Vec<SplitJobRecord>>> {
        lacking("no ListSplitJobs")
    }
    fn abandon_split_job(&self, _: u64) -> BoxFuture<'_, CallResult<()>> {
        lacking("no AbandonSplitJob")
    }
    fn retry_split_job(&self, _: u64) -> BoxFuture<'_, CallResult<()>> {
        lacking("no RetrySplitJob")
    }
}

impl VersionedReads for Lacking {
    fn read_at(&self, _: &[u8], _: u64) -> BoxFuture<'_, CallResult<ReadReply>> {
        lacking("no versioned reads")
    }
    fn latest_commit_ts(&self, _: &[u8]) -> BoxFuture<'_, CallResult<Option<u64>>> {
        lacking("no commit timestamps")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unimplemented<T: std::fmt::Debug>(r: CallResult<T>) -> String {
        let e = r.expect_err("a lacking capability never answers ok");
        assert_eq!((e.certainty, e.tag), (Certainty::Definite, "unimplemented"));
        e.message
    }

    #[tokio::test]
    async fn a_lacking_capability_fails_every_call_definitely_naming_it() {
        let request = SplitRequest {
            expected_catalog_version: 1,
            route_id: 1,
            split_key: b"k".to_vec(),
            target_group: Some(2),
        };
        let texts = [
            unimplemented(Lacking.write_pinned(b"k", b"v", 1, 1).await),
            unimplemented(Lacking.start_split_migration(request).await),
            unimplemented(Lacking.split_job(7).await),
            unimplemented(Lacking.list_split_jobs().await),
            unimplemented(Lacking.abandon_split_job(7).await),
            unimplemented(Lacking.retry_split_job(7).await),
            unimplemented(Lacking.read_at(b"k", 9).await),
            unimplemented(Lacking.latest_commit_ts(b"k").await),
        ];
        assert_eq!(
            texts,
            [
                "no pinned writes",
                "no StartSplitMigration",
                "no GetSplitJob",
                "no ListSplitJobs",
                "no AbandonSplitJob",
                "no RetrySplitJob",
                "no versioned reads",
                "no commit timestamps",
            ]
        );
    }
}
