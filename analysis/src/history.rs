//! The operation history: Jepsen's model of what clients, the nemesis and the catalog
//! watcher did, one event per line.
//!
//! A client operation appears twice: an `invoke` when the client sends it and a completion
//! (`ok`, `fail` or `info`) when it learns the outcome, both with the same `process`. A
//! process runs one operation at a time, so a completion always belongs to the latest
//! invoke of its process. Nemesis and watcher events are single `info` entries whose
//! `process` is `"nemesis"` or `"watcher"`.
//!
//! The on-disk form (JSON Lines, one [`Op`] per line) is a public interface described in
//! `docs/history-format.md`.

use serde::{Deserialize, Serialize};
use std::fmt;

mod fault;
mod job_phase;
pub mod split_answer;
pub mod store_keys;
pub mod turn_facts;
pub mod txn;
pub mod txn_move;
pub mod txn_table;

/// The short texts of an [`Op`] (`f`, `key`, `node`, `error`): kept inline up to 24 bytes,
/// so the entries of a long history hold no separate allocation for them.
pub type Text = compact_str::CompactString;

pub use fault::{fault_events, FaultEdge, FaultEvent, FaultValue};
pub use job_phase::{normalized_name as job_phase_name, JobPhase};
pub use split_answer::{SplitAnswer, SplitDetail};
pub use turn_facts::{JobFacts, ProcessFacts};

/// What an entry records: a call, or one of the three ways a call can end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpType {
    /// The client sent the operation.
    Invoke,
    /// The operation took effect (and, for reads, returned `value`).
    Ok,
    /// The operation definitely did not take effect.
    Fail,
    /// The outcome is unknown: it may have taken effect at any time after its invocation,
    /// or never. Also the type of nemesis and watcher events.
    Info,
}

impl OpType {
    pub fn is_completion(self) -> bool {
        !matches!(self, OpType::Invoke)
    }

    /// Its name in the history format (`invoke`, `ok`, `fail`, `info`).
    pub fn name(self) -> &'static str {
        match self {
            OpType::Invoke => "invoke",
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
        }
    }
}

/// Who performed an entry: a numbered client process, the nemesis, or the catalog watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Process {
    Client(u64),
    Nemesis,
    Watcher,
}

impl Process {
    pub fn client(self) -> Option<u64> {
        match self {
            Process::Client(p) => Some(p),
            _ => None,
        }
    }
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Process::Client(p) => write!(f, "{p}"),
            Process::Nemesis => f.write_str("nemesis"),
            Process::Watcher => f.write_str("watcher"),
        }
    }
}

impl Serialize for Process {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Process::Client(p) => s.serialize_u64(*p),
            Process::Nemesis => s.serialize_str("nemesis"),
            Process::Watcher => s.serialize_str("watcher"),
        }
    }
}

impl<'de> Deserialize<'de> for Process {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Process;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative process number, \"nemesis\" or \"watcher\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Process, E> {
                Ok(Process::Client(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Process, E> {
                u64::try_from(v)
                    .map(Process::Client)
                    .map_err(|_| E::custom(format!("process number {v} is negative")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Process, E> {
                match v {
                    "nemesis" => Ok(Process::Nemesis),
                    "watcher" => Ok(Process::Watcher),
                    other => Err(E::custom(format!(
                        "unknown process {other:?}: expected a number, \"nemesis\" or \"watcher\""
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Commit metadata a store may report with a completed write or read (refkv does; stock
/// elastickv does not). Every field is optional so that partial reports are representable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitMeta {
    /// Raft group that committed (or served) the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u64>,
    /// Raft term of the committing leader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub term: Option<u64>,
    /// Raft log index of the committed entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_index: Option<u64>,
    /// Route that owned the key when the operation was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_id: Option<u64>,
    /// Ownership epoch of that route at apply time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_epoch: Option<u64>,
    /// Node id of the server that committed/served it (the group leader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Catalog version the serving node routed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_version: Option<u64>,
}

/// One history entry.
///
/// `value` is free-form JSON whose meaning depends on `f`:
/// - `read`/`get`: `null` on invoke; the value read on `ok` (`null` = key absent).
/// - `write`/`put`: the value written.
/// - `cas`: `[expected, new]`.
/// - `append`: the string appended.
/// - `add`: the unique element added (set workloads).
/// - `read-set` / `scan`: `null` on invoke; on `ok` the array of elements/keys read.
/// - nemesis and watcher events: an object describing the event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// Position in the history, 0-based and strictly increasing.
    pub index: u64,
    #[serde(rename = "type")]
    pub kind: OpType,
    pub process: Process,
    /// The function: `read`, `write`, `cas`, `get`, `put`, `append`, `add`, `read-set`,
    /// `scan`, `delete`, or a nemesis/watcher event name such as `start-partition`.
    pub f: Text,
    /// The key the operation addressed; absent for single-register histories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<Text>,
    #[serde(default)]
    pub value: serde_json::Value,
    /// Monotonic time in nanoseconds since the start of the test.
    #[serde(default)]
    pub time: u64,
    /// The node the client talked to (or the nemesis targeted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Text>,
    /// Error text for `fail`/`info` completions (e.g. `timed-out`, `not-leader`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Text>,
    /// Boxed: most entries carry none, and an `Op` stays small in a long history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<CommitMeta>>,
}

/// A whole history, in index order.
///
/// `txn_table`, when present, holds the micro-ops of client `txn` ops in compact form
/// ([`txn_table::TxnTable`]) and the `value` of every op it holds is `null` in `ops`
/// (a reader saves the memory of the JSON form): [`History::txn_value`] gives the JSON back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    pub ops: Vec<Op>,
    pub txn_table: Option<txn_table::TxnTable>,
}

impl History {
    pub fn new(ops: Vec<Op>) -> Self {
        History {
            ops,
            txn_table: None,
        }
    }

    /// A history whose transactions' micro-ops are in `table` (their ops' `value` is `null`).
    pub fn with_txn_table(ops: Vec<Op>, table: txn_table::TxnTable) -> Self {
        History {
            ops,
            txn_table: Some(table),
        }
    }

    /// The `value` of the op at `position`: from the compact table when the op is in it,
    /// else the op's own. Panics if `position` is out of range.
    pub fn txn_value(&self, position: usize) -> std::borrow::Cow<'_, serde_json::Value> {
        let op = &self.ops[position];
        match self
            .txn_table
            .as_ref()
            .and_then(|t| t.value_json(position, op.index))
        {
            Some(v) => std::borrow::Cow::Owned(v),
            None => std::borrow::Cow::Borrowed(&op.value),
        }
    }

    /// The compact table of the transactions: the one the reader built, else one built now
    /// from the ops' values.
    pub fn txn_table(&self) -> std::borrow::Cow<'_, txn_table::TxnTable> {
        match &self.txn_table {
            Some(t) => std::borrow::Cow::Borrowed(t),
            None => std::borrow::Cow::Owned(txn_table::TxnTable::from_ops(&self.ops)),
        }
    }
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// Names of watcher events (the `f` of entries whose process is `watcher`). Nemesis
/// events are typed instead: [`FaultEvent`] reads and writes `start-<fault>` /
/// `stop-<fault>`, the faults themselves being named by the nemesis's registry.
///
/// The node watcher (process `watcher`) records the server processes' lifecycle:
/// [`events::NODE_WATCH`] when it starts watching, [`events::NODE_EXIT`] for each exit it
/// sees, [`events::NODE_RESTART`] when `--restart-crashed` starts a node again and
/// [`events::NODE_WATCH_END`] after its last look. The `crashes` checker judges them.
pub mod events {
    /// A catalog snapshot seen by the watcher. `value` is a [`super::CatalogSnapshot`].
    pub const CATALOG: &str = "catalog";
    /// Where the store keeps the client's keys, recorded once before the workload starts:
    /// `value` is a [`super::store_keys::StoreKeys`] (`{"layout": …}`).
    pub const STORE_KEYS: &str = "store-keys";
    /// The node watcher started: `value` `{"nodes": [names], "cluster": kind}`.
    pub const NODE_WATCH: &str = "node-watch";
    /// A server process exited: `node` names it; `value` `{"expected", "exit_code",
    /// "signal", "crash_line", "log_tail"}` (see `docs/history-format.md`).
    pub const NODE_EXIT: &str = "node-exit";
    /// The watcher started a crashed node again (`--restart-crashed`): `value` `{"ok", "error"}`.
    pub const NODE_RESTART: &str = "node-restart";
    /// The node watcher stopped: `value` `{"final_poll_ok": bool, "polls", "failed_polls"}`.
    pub const NODE_WATCH_END: &str = "node-watch-end";
}

/// One route of the catalog as the watcher records it. Keys are UTF-8 strings; `end` empty
/// means "to the end of the keyspace".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteRecord {
    pub id: u64,
    pub start: String,
    pub end: String,
    pub group: u64,
    /// `ACTIVE`, `WRITE_FENCED`, `MIGRATING_SOURCE` or `MIGRATING_TARGET`.
    pub state: String,
    #[serde(default)]
    pub epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u64>,
}

/// A split job as the catalog reports it (refkv; other stores may have none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitJobRecord {
    pub id: u64,
    pub route_id: u64,
    pub split_key: String,
    pub source_group: u64,
    pub target_group: u64,
    /// `PLANNED`, `BACKFILL`, `FENCE`, `DELTA_COPY`, `CUTOVER`, `CLEANUP`, `DONE`,
    /// `ABANDONING`, `ABANDONED`, or elastickv's `FAILED` (a retry waypoint), with or
    /// without the `SPLIT_JOB_PHASE_` prefix, as the store reported it; order and meaning
    /// in `docs/checkers.md`. [`SplitJobRecord::job_phase`] reads it.
    pub phase: String,
    /// The epoch the moved range gets at CUTOVER (refkv's extension; absent when the store
    /// does not say). An abandoned job never publishes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_epoch: Option<u64>,
}

impl SplitJobRecord {
    /// The recorded phase, if it is one faultline knows.
    pub fn job_phase(&self) -> Option<JobPhase> {
        JobPhase::parse(&self.phase)
    }
}

/// The `value` of a `catalog` watcher event: the whole catalog at one version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogSnapshot {
    pub version: u64,
    pub routes: Vec<RouteRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<SplitJobRecord>,
}

/// Where the test's actors (client processes, the nemesis, the catalog watcher) record
/// history entries while a test runs. The implementation assigns `index` and `time`
/// (nanoseconds on the test's monotonic clock) at the moment of recording, writes the entry
/// durably (streamed JSON Lines) and returns the assigned index. Recording never fails from
/// the caller's point of view: a sink that cannot write keeps the entry in memory and
/// reports the I/O problem itself, so no recorded operation is lost.
pub trait HistorySink: Send + Sync {
    fn record(&self, op: Op) -> u64;
}
