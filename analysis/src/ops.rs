//! The client operation names (`Op.f`) faultline's histories use, declared once: the
//! readers, the checkers, the registry and the workloads name an operation through these
//! constants, never through a string literal of their own.
//!
//! Invariant: every name here is part of the public history format
//! (`docs/history-format.md`); renaming one breaks every history on disk.

/// Register read of one key (value: `null` on the invoke, the value read on the `ok`).
pub const READ: &str = "read";
/// Register write of one key.
pub const WRITE: &str = "write";
/// Compare-and-set of one key (value `[expected, new]`).
pub const CAS: &str = "cas";
/// Knossos' spelling of [`CAS`].
pub const COMPARE_AND_SET: &str = "compare-and-set";
/// Key-value read (the `kv` model's spelling of [`READ`]).
pub const GET: &str = "get";
/// Key-value write (the `kv` model's spelling of [`WRITE`]).
pub const PUT: &str = "put";
/// Append to a key's string value (the `kv` model).
pub const APPEND: &str = "append";
/// Set-full: add one element.
pub const ADD: &str = "add";
/// Set-full: read the whole set.
pub const READ_SET: &str = "read-set";
/// Set-full: read a key range.
pub const SCAN: &str = "scan";
/// Delete a key (a write, for epoch-authority).
pub const DELETE: &str = "delete";
/// Insert a key (a write, for epoch-authority).
pub const INSERT: &str = "insert";
/// A stale client's write (see `docs/history-format.md`), judged by epoch-authority.
pub const STALE_WRITE: &str = "stale-write";
/// A transaction: a list of micro-ops (see [`crate::history::txn`]).
pub const TXN: &str = crate::history::txn::TXN;

/// The functions that read a single key's value (a `fail`/`info` read carries no value).
pub const SINGLE_KEY_READS: &[&str] = &[READ, GET];

/// Whether `f` reads a single key's value.
pub fn is_single_key_read(f: &str) -> bool {
    SINGLE_KEY_READS.contains(&f)
}

/// Sorted set: `ZADD key score member` (value `[member, score]`).
pub const ZADD: &str = "zadd";
/// Sorted set: `ZINCRBY key delta member` (value `[member, delta]`; `ok` value `[member, new score]`).
pub const ZINCRBY: &str = "zincrby";
/// Sorted set: `ZREM key member` (value `member`; `ok` value `[member, removed]`).
pub const ZREM: &str = "zrem";
/// Sorted set: `ZRANGE key 0 -1 WITHSCORES` (`ok` value `[[member, score], …]`).
pub const ZRANGE: &str = "zrange";
/// Sorted set: `ZRANGEBYSCORE key lo hi WITHSCORES` (value `[lo, hi]`; `ok` value as `zrange`).
pub const ZRANGEBYSCORE: &str = "zrangebyscore";
/// Queue: send one message (`key` its group, value its body).
pub const SEND: &str = "send";
/// Queue: receive messages (`ok` value `[{"group", "body"}, …]`).
pub const RECEIVE: &str = "receive";
/// Queue: delete one received message (`key` its group, value its body).
pub const DELETE_MESSAGE: &str = "delete-message";
