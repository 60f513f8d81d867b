//! A small builder for hand-written histories used by the epoch-authority, split and
//! vacuity tests: a clock in milliseconds, client ops as invoke/complete pairs, catalog
//! snapshots from the watcher and nemesis events.
#![allow(dead_code)]

use analysis::history::{CatalogSnapshot, CommitMeta, History, Op, OpType, Process, RouteRecord, SplitJobRecord};
use serde_json::{json, Value};

pub const MS: u64 = 1_000_000;

#[derive(Default)]
pub struct HistoryBuilder {
    ops: Vec<Op>,
    now: u64,
}

/// A route record: `route(id, start, end, group, epoch)`; `end` "" = unbounded.
pub fn route(id: u64, start: &str, end: &str, group: u64, epoch: u64) -> RouteRecord {
    RouteRecord { id, start: start.into(), end: end.into(), group, state: "ACTIVE".into(), epoch, parent: None }
}

/// A route record with a parent.
pub fn child(id: u64, start: &str, end: &str, group: u64, epoch: u64, parent: u64) -> RouteRecord {
    RouteRecord { parent: Some(parent), ..route(id, start, end, group, epoch) }
}

pub fn job(id: u64, route_id: u64, split_key: &str, source: u64, target: u64, phase: &str) -> SplitJobRecord {
    SplitJobRecord {
        id, route_id, split_key: split_key.into(), source_group: source, target_group: target, phase: phase.into(),
    }
}

/// Full commit metadata: group, term, log index, route, epoch.
pub fn meta(group: u64, term: u64, log_index: u64, route: u64, epoch: u64) -> CommitMeta {
    CommitMeta {
        group: Some(group), term: Some(term), log_index: Some(log_index),
        route_id: Some(route), route_epoch: Some(epoch), node: None, catalog_version: None,
    }
}

impl HistoryBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Set the clock (milliseconds since the test start).
    pub fn at_ms(&mut self, ms: u64) -> &mut Self {
        self.now = ms * MS;
        self
    }

    pub fn now_ms(&self) -> u64 {
        self.now / MS
    }

    fn push(&mut self, kind: OpType, process: Process, f: &str, key: Option<&str>, value: Value, meta: Option<CommitMeta>) -> u64 {
        let index = self.ops.len() as u64;
        self.ops.push(Op {
            index, kind, process, f: f.into(), key: key.map(str::to_string), value, time: self.now,
            node: None, error: None, meta,
        });
        self.now += 1;
        index
    }

    pub fn invoke(&mut self, process: u64, f: &str, key: &str, value: Value) -> u64 {
        self.push(OpType::Invoke, Process::Client(process), f, Some(key), value, None)
    }

    pub fn complete(&mut self, kind: OpType, process: u64, f: &str, key: &str, value: Value, meta: Option<CommitMeta>) -> u64 {
        self.push(kind, Process::Client(process), f, Some(key), value, meta)
    }

    /// An acknowledged op invoked now and completed 1 ms later; returns the `ok` index.
    pub fn acked(&mut self, process: u64, f: &str, key: &str, value: Value, meta: Option<CommitMeta>) -> u64 {
        self.invoke(process, f, key, value.clone());
        self.now += MS;
        self.complete(OpType::Ok, process, f, key, value, meta)
    }

    /// An acknowledged `put` with metadata; returns the `ok` index.
    pub fn put(&mut self, process: u64, key: &str, value: i64, m: CommitMeta) -> u64 {
        self.acked(process, "put", key, json!(value), Some(m))
    }

    /// A catalog observation by the watcher; returns its index.
    pub fn catalog(&mut self, version: u64, routes: Vec<RouteRecord>, jobs: Vec<SplitJobRecord>) -> u64 {
        let snapshot = CatalogSnapshot { version, routes, jobs };
        let value = serde_json::to_value(snapshot).expect("snapshot serialises");
        self.push(OpType::Info, Process::Watcher, "catalog", None, value, None)
    }

    /// A nemesis event (`start-kill`, `stop-partition`, ...).
    pub fn nemesis(&mut self, f: &str, value: Value) -> u64 {
        self.push(OpType::Info, Process::Nemesis, f, None, value, None)
    }

    pub fn build(&self) -> History {
        History::new(self.ops.clone())
    }
}

/// Kinds of the anomalies of a result, in order.
pub fn anomaly_kinds(r: &analysis::verdict::CheckerResult) -> Vec<String> {
    r.anomalies.iter().map(|a| a["kind"].as_str().unwrap_or("?").to_string()).collect()
}

/// The validity of one epoch-authority rule from the result's details.
pub fn rule_validity(r: &analysis::verdict::CheckerResult, rule: &str) -> Value {
    r.details["rules"]
        .as_array()
        .and_then(|rules| rules.iter().find(|x| x["rule"] == rule))
        .map(|x| x["valid"].clone())
        .unwrap_or(Value::Null)
}
