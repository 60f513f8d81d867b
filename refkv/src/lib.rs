//! # refkv — the reference cluster faultline tests
//!
//! A durable, range-sharded, multi-Raft key-value store (openraft + redb) that speaks the
//! subset of elastickv's gRPC API that faultline uses, plus extension fields carrying the
//! commit metadata the checkers need. See docs/refkv.md.
//!
//! Layers, bottom up: [`catalog`] and [`ownership`] (pure rules), [`sm`] (a group's
//! deterministic state), [`store`] (redb persistence for openraft), [`network`] (Raft over
//! gRPC), [`node`] (groups of one process), [`exec`] and [`router`] (leader execution and
//! forwarding), the gRPC services, [`jobs`] (cross-group moves), [`server`] and [`ctl`].
//! Transactions: [`mvcc`] (a transactional key's versions and lock, pure), [`tso`] (the
//! timestamp oracle in the default group) and [`txn`] (the two-phase-commit coordinator);
//! [`txn_hold`] lists transactions in flight and holds one at its commit point (test only).

pub mod api_distribution;
pub mod api_kv;
pub mod api_txn;
pub mod autosplit;
pub mod bugs;
pub mod catalog;
pub mod ctl;
pub mod dynamo;
pub mod exec;
pub mod jobs;
pub mod keys;
pub mod logstore;
pub mod mvcc;
pub mod network;
pub mod node;
pub mod ownership;
pub mod panic_after;
pub mod proto;
pub mod router;
pub mod server;
pub mod sm;
pub mod splitter;
pub mod storage_io;
pub mod store;
pub mod tso;
pub mod txn;
pub mod txn_hold;
pub mod types;
