//! The client side of a test: what a workload needs from a store ([`KvTarget`]), the gRPC
//! implementation for refkv and elastickv ([`grpc::KvClient`]), and the classification of
//! failed calls as definite or indeterminate ([`classify`]).
//!
//! [`KvTarget`] is deliberately small and store-neutral (bytes in, bytes out, analysis
//! types for catalog data) so that another store's client (etcd) can implement it and reuse
//! the processes, workloads, watcher and final reads unchanged; [`redis::RedisClient`] speaks
//! the Redis protocol ([`redis_classify`] its error rules). What only some clients can do
//! (compare-and-set, transactions) is a small trait each ([`capability`]), asked for with
//! [`KvTarget::as_cas`] / [`KvTarget::as_txn`]. Operations a store cannot perform return a
//! definite `unimplemented` [`CallError`].

pub mod aws;
pub mod capability;
pub mod classify;
pub mod convert;
pub mod dynamodb;
pub mod grpc;
pub mod protocol;
pub mod redis;
pub mod redis_classify;
pub mod resp_double;
pub mod s3;
pub mod sqs;

use analysis::history::{CatalogSnapshot, CommitMeta, RouteRecord, SplitJobRecord};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use std::sync::Arc;

pub use capability::{
    CasClient, ClientCapability, Lacking, ObjectClient, PinnedWrites, QueueClient, SplitJobs,
    SplitMigration, TxnClient, TxnHoldControl, VersionedReads, ZsetClient,
};
pub use classify::{CallError, CallKind, Certainty};
pub use protocol::{Protocol, SetRead};

crate::named_enum! {
    /// Which node a process's single-key reads go to (`--read-path`).
    ///
    /// `Node`: through the node the process is bound to, as a store's own clients read (the
    /// node serves or forwards the read as the store decides). `Leader`: to the leader of the
    /// key's group, found by the harness (for stores where that differs from `Node`).
    pub enum ReadPath "read path" {
        Node = "node",
        Leader = "leader",
    }
}

/// Where a test talks to: a node's name (as the history records it) and its client address.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeEndpoint {
    /// Node name as recorded in the history's `node` field, e.g. `n1`.
    pub name: String,
    /// Client address, `ip:port`.
    pub addr: String,
}

/// Result of a successful single-key read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadReply {
    /// `None` when the key is absent.
    pub value: Option<Vec<u8>>,
    pub meta: Option<CommitMeta>,
}

/// Result of a write, compare-and-set or delete the store answered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteReply {
    /// False when the store definitely did not apply it (a compare-and-set whose expected
    /// value did not match).
    pub applied: bool,
    pub meta: Option<CommitMeta>,
}

/// Result of a range scan.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScanReply {
    /// Key/value pairs in key order.
    pub pairs: Vec<(Vec<u8>, Vec<u8>)>,
    /// One entry per route the scan read from, in key order (when the store reports it).
    pub metas: Vec<CommitMeta>,
}

/// A Raft group's state as one node sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupStatus {
    pub group: u64,
    /// The answering node's own id (empty if not reported).
    pub node_id: String,
    /// Whether the answering node is the group's leader.
    pub is_leader: bool,
    /// `LEADER`, `FOLLOWER`, `CANDIDATE`, `SHUTDOWN` or `UNKNOWN`.
    pub state: String,
    pub leader_id: String,
    pub leader_address: String,
    pub term: u64,
    pub commit_index: u64,
    pub applied_index: u64,
}

/// A request to split a route (and optionally move its right child to another group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitRequest {
    pub expected_catalog_version: u64,
    pub route_id: u64,
    pub split_key: Vec<u8>,
    /// `None` (or the route's own group) = same-group split.
    pub target_group: Option<u64>,
}

/// The store's answer to a split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitReply {
    pub catalog_version: u64,
    pub left: Option<RouteRecord>,
    pub right: Option<RouteRecord>,
    /// The split job moving the right child, for cross-group splits.
    pub job_id: Option<u64>,
    /// The store's answer was an error after the commit point and the split was found in
    /// the catalog afterwards: the error, as the store sent it.
    pub resolved_from: Option<String>,
}

/// One event of a catalog watch stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogEvent {
    /// The whole catalog at `snapshot.version` (replaces what the watcher knew).
    Reset(CatalogSnapshot),
    /// Changes from `previous_version` to `version`.
    Delta {
        previous_version: u64,
        version: u64,
        upserts: Vec<RouteRecord>,
        deleted_routes: Vec<u64>,
        jobs: Vec<SplitJobRecord>,
    },
}

pub use analysis::history::txn_move::{HoldCommand, HoldPoint, TxnInFlight};

pub type CallResult<T> = Result<T, CallError>;
pub type CatalogStream = BoxStream<'static, CallResult<CatalogEvent>>;

/// What faultline needs from a store's client, one instance per (process, node): the
/// key-value and cluster calls every client answers, and an accessor per optional
/// capability ([`capability`]: `as_cas`, `as_txn`, …, `as_split_jobs`, `as_versioned`),
/// `None` unless the client has it.
///
/// Every method has a deadline (the implementation's configured call timeout) and returns
/// either the store's answer or a classified [`CallError`].
pub trait KvTarget: Send + Sync {
    /// The node this client talks to (history `node`).
    fn node(&self) -> &str;
    fn read(&self, key: &[u8]) -> BoxFuture<'_, CallResult<ReadReply>>;
    fn write(&self, key: &[u8], value: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>>;
    /// The client this one wraps, if it is a wrapper that adds or reroutes some calls
    /// (leader reads, elastickv's Redis data client beside its gRPC control client): every
    /// capability it does not answer itself is the wrapped client's, so a wrapper needs no
    /// change when a capability is added.
    fn wrapped(&self) -> Option<&dyn KvTarget> {
        None
    }
    /// The client's compare-and-set, if it has one (`None`: the register workloads run
    /// without cas against it, and a cas sent anyway fails definitely, unsent).
    fn as_cas(&self) -> Option<&dyn CasClient> {
        self.wrapped().and_then(|w| w.as_cas())
    }
    fn delete(&self, key: &[u8]) -> BoxFuture<'_, CallResult<WriteReply>>;
    /// Keys in `[start, end)`; an empty `end` means unbounded; `limit` 0 = no limit. A
    /// client may read the range in pages (each page a separate request), so a scan is
    /// atomic only per page.
    fn scan(&self, start: &[u8], end: &[u8], limit: u64) -> BoxFuture<'_, CallResult<ScanReply>>;
    /// The whole route catalog (with split jobs where the store reports them).
    fn list_routes(&self) -> BoxFuture<'_, CallResult<CatalogSnapshot>>;
    fn split(&self, request: SplitRequest) -> BoxFuture<'_, CallResult<SplitReply>>;
    /// Raft status of `group` as this node sees it (0 = the default group).
    fn status(&self, group: u64) -> BoxFuture<'_, CallResult<GroupStatus>>;
    /// The client's transactions, if it can run them (`None`: the transaction workloads do
    /// not run against it, and a transaction sent anyway fails definitely, unsent).
    fn as_txn(&self) -> Option<&dyn TxnClient> {
        self.wrapped().and_then(|w| w.as_txn())
    }
    /// The client's object calls, if it has them (`None`: the `objects` workload does not
    /// run against it, and an object call sent anyway fails definitely, unsent).
    fn as_objects(&self) -> Option<&dyn ObjectClient> {
        self.wrapped().and_then(|w| w.as_objects())
    }
    /// The client's sorted sets, if it has them (`None`: the `zset` workload does not run
    /// against it, and a sorted-set call sent anyway fails definitely, unsent).
    fn as_zset(&self) -> Option<&dyn ZsetClient> {
        self.wrapped().and_then(|w| w.as_zset())
    }
    /// The client's SQS queue, if it has one (`None`: the `queue` workload does not run
    /// against it, and a queue call sent anyway fails definitely, unsent).
    fn as_queue(&self) -> Option<&dyn QueueClient> {
        self.wrapped().and_then(|w| w.as_queue())
    }
    /// Test only: the client's control of a node's transaction hold (refkv's
    /// `RefkvTxn.TxnHold`), if it has one; a wrapping client forwards to the client it wraps.
    fn as_txn_hold(&self) -> Option<&dyn TxnHoldControl> {
        self.wrapped().and_then(|w| w.as_txn_hold())
    }
    /// Test only: refkv's pinned (stale-client) writes, if the client has them; `None`: a
    /// move fault's stale write fails definitely, unsent ([`capability::Lacking`]).
    fn as_pinned_writes(&self) -> Option<&dyn PinnedWrites> {
        self.wrapped().and_then(|w| w.as_pinned_writes())
    }
    /// elastickv's cross-group split, if the client has it; `None`: a move fails
    /// definitely, unsent ([`capability::Lacking`]).
    fn as_split_migration(&self) -> Option<&dyn SplitMigration> {
        self.wrapped().and_then(|w| w.as_split_migration())
    }
    /// elastickv's split-job calls, if the client has them; `None`: each fails definitely,
    /// unsent ([`capability::Lacking`]), which callers record.
    fn as_split_jobs(&self) -> Option<&dyn SplitJobs> {
        self.wrapped().and_then(|w| w.as_split_jobs())
    }
    /// Reads of the store's own versions, if the client has them; `None`: each fails
    /// definitely, unsent ([`capability::Lacking`]).
    fn as_versioned(&self) -> Option<&dyn VersionedReads> {
        self.wrapped().and_then(|w| w.as_versioned())
    }
    /// A stream of catalog changes after `after_version`. Stores without one return a
    /// definite `unimplemented` error, and the watcher polls [`KvTarget::list_routes`].
    fn watch_catalog(&self, after_version: u64) -> BoxFuture<'_, CallResult<CatalogStream>> {
        let _ = after_version;
        Box::pin(async {
            Err(CallError::new(
                Certainty::Definite,
                "unimplemented",
                "no catalog watch",
            ))
        })
    }
}

/// Makes clients: one per process (a fresh connection for each new process, as Jepsen
/// opens a new client when it replaces a crashed process).
pub trait Connector: Send + Sync {
    fn connect(&self, node: &NodeEndpoint) -> anyhow::Result<Arc<dyn KvTarget>>;
}
