//! A small builder for hand-written histories used by the epoch-authority, split and
//! vacuity tests: a clock in milliseconds, client ops as invoke/complete pairs, catalog
//! snapshots from the watcher and nemesis events.
#![allow(dead_code)]

use analysis::history::{
    CatalogSnapshot, CommitMeta, History, Op, OpType, Process, RouteRecord, SplitJobRecord,
};
use serde_json::{json, Value};

pub const MS: u64 = 1_000_000;

#[derive(Default)]
pub struct HistoryBuilder {
    ops: Vec<Op>,
    now: u64,
}

/// A route record: `route(id, start, end, group, epoch)`; `end` "" = unbounded.
pub fn route(id: u64, start: &str, end: &str, group: u64, epoch: u64) -> RouteRecord {
    RouteRecord {
        id,
        start: start.into(),
        end: end.into(),
        group,
        state: "ACTIVE".into(),
        epoch,
        parent: None,
    }
}

/// A route record with a parent.
pub fn child(id: u64, start: &str, end: &str, group: u64, epoch: u64, parent: u64) -> RouteRecord {
    RouteRecord {
        parent: Some(parent),
        ..route(id, start, end, group, epoch)
    }
}

pub fn job(
    id: u64,
    route_id: u64,
    split_key: &str,
    source: u64,
    target: u64,
    phase: &str,
) -> SplitJobRecord {
    SplitJobRecord {
        id,
        route_id,
        split_key: split_key.into(),
        source_group: source,
        target_group: target,
        phase: phase.into(),
        new_epoch: None,
    }
}

/// Full commit metadata: group, term, log index, route, epoch.
pub fn meta(group: u64, term: u64, log_index: u64, route: u64, epoch: u64) -> CommitMeta {
    CommitMeta {
        group: Some(group),
        term: Some(term),
        log_index: Some(log_index),
        route_id: Some(route),
        route_epoch: Some(epoch),
        node: None,
        catalog_version: None,
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

    fn push(
        &mut self,
        kind: OpType,
        process: Process,
        f: &str,
        key: Option<&str>,
        value: Value,
        meta: Option<CommitMeta>,
    ) -> u64 {
        let index = self.ops.len() as u64;
        self.ops.push(Op {
            index,
            kind,
            process,
            f: f.into(),
            key: key.map(Into::into),
            value,
            time: self.now,
            node: None,
            error: None,
            meta: meta.map(Box::new),
        });
        self.now += 1;
        index
    }

    pub fn invoke(&mut self, process: u64, f: &str, key: &str, value: Value) -> u64 {
        self.push(
            OpType::Invoke,
            Process::Client(process),
            f,
            Some(key),
            value,
            None,
        )
    }

    pub fn complete(
        &mut self,
        kind: OpType,
        process: u64,
        f: &str,
        key: &str,
        value: Value,
        meta: Option<CommitMeta>,
    ) -> u64 {
        self.push(kind, Process::Client(process), f, Some(key), value, meta)
    }

    /// A transaction's invoke (`f: txn`, no key, `value` the micro-ops).
    pub fn invoke_txn(&mut self, process: u64, mops: Value) -> u64 {
        self.push(
            OpType::Invoke,
            Process::Client(process),
            "txn",
            None,
            mops,
            None,
        )
    }

    /// A transaction's completion.
    pub fn complete_txn(&mut self, kind: OpType, process: u64, mops: Value) -> u64 {
        self.push(kind, Process::Client(process), "txn", None, mops, None)
    }

    /// An acknowledged op invoked now and completed 1 ms later; returns the `ok` index.
    pub fn acked(
        &mut self,
        process: u64,
        f: &str,
        key: &str,
        value: Value,
        meta: Option<CommitMeta>,
    ) -> u64 {
        self.invoke(process, f, key, value.clone());
        self.now += MS;
        self.complete(OpType::Ok, process, f, key, value, meta)
    }

    /// An acknowledged `put` with metadata; returns the `ok` index.
    pub fn put(&mut self, process: u64, key: &str, value: i64, m: CommitMeta) -> u64 {
        self.acked(process, "put", key, json!(value), Some(m))
    }

    /// A catalog observation by the watcher; returns its index.
    pub fn catalog(
        &mut self,
        version: u64,
        routes: Vec<RouteRecord>,
        jobs: Vec<SplitJobRecord>,
    ) -> u64 {
        let snapshot = CatalogSnapshot {
            version,
            routes,
            jobs,
        };
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
    r.anomalies
        .iter()
        .map(|a| a["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The validity of one epoch-authority rule from the result's details.
pub fn rule_validity(r: &analysis::verdict::CheckerResult, rule: &str) -> Value {
    r.details["rules"]
        .as_array()
        .and_then(|rules| rules.iter().find(|x| x["rule"] == rule))
        .map(|x| x["valid"].clone())
        .unwrap_or(Value::Null)
}

/// A clean synthetic hotspot history with full commit metadata, for scale tests: `ops`
/// entries (invoke + ok pairs) over uniformly chosen keys `hot/000000000 ..
/// hot/000099999`, one entry every 24 µs, 80 % puts and 20 % gets (returning the latest
/// put: the ops run one at a time, so the history is linearizable); every `split_every_s`
/// seconds the widest route is split at its middle key (a same-group split, observed by
/// the watcher) and its right child is then moved to the next group under a new epoch
/// (a second catalog version with the job DONE). A start/stop kill pair sits at 1 s.
pub fn synthetic_history(ops: usize, split_every_s: u64, seed: u64) -> History {
    struct R {
        rec: RouteRecord,
        lo: u64,
        hi: u64,
    }
    const KEYS: u64 = 100_000;
    let key = |i: u64| format!("hot/{i:09}");
    let mut h = HistoryBuilder::new();
    let mut routes = vec![R {
        rec: route(1, "", "", 1, 1),
        lo: 0,
        hi: KEYS,
    }];
    let (mut version, mut next_id, mut job_id) = (1u64, 2u64, 1u64);
    let mut log_index = [0u64; 4];
    let mut rng = seed | 1;
    let snapshot = |routes: &[R]| routes.iter().map(|r| r.rec.clone()).collect::<Vec<_>>();
    h.catalog(version, snapshot(&routes), vec![]);
    let mut next_split = split_every_s * 1_000_000_000;
    let mut nemesis_done = false;
    // Ops run one at a time, so each get returns the key's latest put (linearizable).
    let mut last: std::collections::HashMap<u64, String> = std::collections::HashMap::new();
    while h.ops.len() + 2 <= ops {
        if !nemesis_done && h.now >= 1_000_000_000 {
            h.nemesis(
                "start-kill",
                json!({"targets": ["n1"], "effective": true, "leader": true}),
            );
            h.nemesis("stop-kill", json!({"targets": ["n1"], "effective": true}));
            nemesis_done = true;
        }
        if h.now >= next_split {
            next_split += split_every_s * 1_000_000_000;
            let widest = (0..routes.len())
                .max_by_key(|&i| routes[i].hi - routes[i].lo)
                .unwrap_or(0);
            let p = routes.remove(widest);
            let mid = (p.lo + p.hi) / 2;
            let left = R {
                rec: child(
                    next_id,
                    &p.rec.start,
                    &key(mid),
                    p.rec.group,
                    p.rec.epoch,
                    p.rec.id,
                ),
                lo: p.lo,
                hi: mid,
            };
            let right = R {
                rec: child(
                    next_id + 1,
                    &key(mid),
                    &p.rec.end,
                    p.rec.group,
                    p.rec.epoch,
                    p.rec.id,
                ),
                lo: mid,
                hi: p.hi,
            };
            next_id += 2;
            let target = p.rec.group % 3 + 1;
            routes.insert(widest, right);
            routes.insert(widest, left);
            version += 1;
            h.catalog(
                version,
                snapshot(&routes),
                vec![job(
                    job_id,
                    p.rec.id,
                    &key(mid),
                    p.rec.group,
                    target,
                    "PLANNED",
                )],
            );
            let moved = &mut routes[widest + 1].rec;
            moved.group = target;
            moved.epoch += 1;
            version += 1;
            h.catalog(
                version,
                snapshot(&routes),
                vec![job(
                    job_id,
                    p.rec.id,
                    &key(mid),
                    p.rec.group,
                    target,
                    "DONE",
                )],
            );
            job_id += 1;
        }
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = (rng >> 33) % KEYS;
        let r = &routes[routes.partition_point(|r| r.hi <= k)].rec;
        let g = r.group as usize;
        log_index[g] += 1;
        let m = meta(r.group, 1, log_index[g], r.id, r.epoch);
        let process = (rng >> 20) % 30;
        let (f, invoke_value, ok_value) = if matches!((rng >> 40) % 5, 0) {
            (
                "get",
                Value::Null,
                last.get(&k).map_or(Value::Null, |v| json!(v)),
            )
        } else {
            let v = format!("v{}", h.ops.len());
            last.insert(k, v.clone());
            ("put", json!(v), json!(v))
        };
        h.invoke(process, f, &key(k), invoke_value);
        h.now += 24_000;
        h.complete(OpType::Ok, process, f, &key(k), ok_value, Some(m));
        h.now += 24_000;
    }
    History::new(std::mem::take(&mut h.ops))
}
