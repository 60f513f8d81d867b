//! The linearizability checker: is there a total order of the client operations, each
//! placed between its invocation and its completion, that a sequential register (or
//! cas-register, or kv store) would accept?
//!
//! Pipeline, one file per concern:
//! - [`prepare`]: pair invokes with completions, split by key (P-compositionality: a
//!   history is linearizable iff each key's sub-history is), intern values ([`values`]),
//!   drop what took no effect (`fail`) or returned nothing (indeterminate reads);
//! - [`prune`]: drop indeterminate writes nobody could have observed;
//! - [`search`]: Wing & Gong / Lowe search per key over the entry list ([`entries`]) with
//!   a configuration cache ([`cache`]), indeterminate ops in a [`pool`], dead writes
//!   swept ([`dead`]), under a per-key [`budget`], keys in parallel (rayon), against a
//!   sequential [`model`] ([`register`], [`kv`]);
//! - [`fast`]: before the search, the exact O(n log n) path for keys whose written values
//!   are unique; the search runs only where it does not apply;
//! - [`schedule`]: the fast path on every key first, then the searches smallest first,
//!   each with a short budget before its full one;
//! - [`first_verdict`]: once a key is invalid, the others get a bounded grace;
//! - [`witness`] and [`report`]: the `CheckerResult`;
//! - [`parts`]: the same check of a history cut into parts by key, one part at a time.

/// Checker name in `results.json`.
pub const NAME: &str = "linearizable";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::{bare_linearizable_model, CHECKER, KV_FUNCTIONS, REGISTER_FUNCTIONS};

pub mod budget;
pub mod cache;
pub mod dead;
pub mod entries;
pub mod fast;
pub mod first_verdict;
pub mod kv;
pub mod model;
pub mod parts;
pub mod pool;
pub mod prepare;
pub mod prune;
pub mod register;
mod report;
mod schedule;
pub mod search;
pub mod values;
pub mod witness;

use crate::history::History;
use crate::verdict::CheckerResult;
use std::time::Duration;

/// The sequential specification to check against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Model {
    /// `read`/`write` (also spelled `get`/`put`).
    Register,
    /// `read`/`write`/`cas` with `cas` value `[expected, new]`.
    CasRegister,
    /// `get`/`put`/`append` per key, strings, `append` concatenates.
    Kv,
}

impl Model {
    pub const ALL: [Model; 3] = [Model::Register, Model::CasRegister, Model::Kv];

    pub fn name(self) -> &'static str {
        match self {
            Model::Register => "register",
            Model::CasRegister => "cas-register",
            Model::Kv => "kv",
        }
    }

    /// Parses a model name; `kv-append` (the label used by the shared histories) is
    /// accepted for `kv`.
    pub fn from_name(name: &str) -> Option<Model> {
        match name {
            "kv-append" => Some(Model::Kv),
            _ => Model::ALL.into_iter().find(|m| m.name() == name),
        }
    }

    /// The `f`s the model checks.
    pub fn functions(self) -> &'static str {
        match self {
            Model::Register => "read/get, write/put",
            Model::CasRegister => "read/get, write/put, cas",
            Model::Kv => "get/read, put/write, append",
        }
    }
}

/// What a read that returned `null` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NullReads {
    /// Always "the key was absent".
    Absent,
    /// "Absent" when the key can be absent (initial `null` or some op writes `null`);
    /// otherwise "value unknown" (Knossos' convention), and the read is dropped.
    Auto,
}

#[derive(Debug, Clone)]
pub struct LinearizableOptions {
    pub model: Model,
    /// The value every key starts at (`null` = absent).
    pub initial: serde_json::Value,
    /// Wall-time budget of one key's search; past it the key is `unknown`.
    pub per_key_time: Duration,
    /// Wall-time budget of the whole check: once spent, keys still searching (or not yet
    /// started) are `unknown`, so many hard keys cannot add up to a hang.
    pub total_time: Duration,
    /// Memory budget of one key's search (cache, model, entry list).
    pub per_key_memory_bytes: u64,
    /// Keys with at most this many ops use the exact configuration cache; larger keys use
    /// 128-bit fingerprints (see [`cache`]).
    pub exact_cache_max_ops: usize,
    /// Prune indeterminate writes of values nobody observed (see [`prune`]).
    pub prune: bool,
    pub null_reads: NullReads,
    /// Decide keys whose written values are unique with the exact [`fast`] path; the
    /// search runs only for the others (off: always the search, for comparisons).
    pub fast_path: bool,
    /// Once a key is invalid, the other keys get this much more time and are then
    /// reported not checked; `None` checks every key (`--all-anomalies`).
    pub first_invalid_grace: Option<Duration>,
}

impl Default for LinearizableOptions {
    fn default() -> Self {
        LinearizableOptions {
            model: Model::CasRegister,
            initial: serde_json::Value::Null,
            per_key_time: Duration::from_secs(60),
            total_time: Duration::from_secs(600),
            per_key_memory_bytes: 512 << 20,
            exact_cache_max_ops: 4096,
            prune: true,
            null_reads: NullReads::Auto,
            fast_path: true,
            first_invalid_grace: Some(Duration::from_millis(100)),
        }
    }
}

/// Checks `history` for linearizability under `opts.model`, key by key in parallel: the
/// whole history as one part ([`parts::KeyParts`]).
pub fn check(history: &History, opts: &LinearizableOptions) -> CheckerResult {
    let mut parts = parts::KeyParts::new(opts.clone());
    parts.absorb(history, |_| {});
    parts.finish()
}
