//! Per-route load from the history: each client invoke's key mapped through the catalog
//! in force at its time, counted in one-second buckets. A transaction counts once per
//! micro-op, at the micro-op's key (its keys are what loads the routes), so a run of
//! transactions gives the split judge the same evidence as one of single-key ops.

use crate::catalog::{route_containing, CatalogTimeline};
use crate::history::{History, OpType, Process, RouteRecord};
use rustc_hash::FxHashMap;
use serde_json::{json, Value};
use std::borrow::Cow;

pub const NS_PER_S: u64 = 1_000_000_000;

/// One keyed client invoke (or one micro-op of a transaction), for looking at the key
/// distribution inside a window.
#[derive(Debug, Clone)]
pub struct KeyedInvoke<'h> {
    pub time: u64,
    pub key: Cow<'h, str>,
    pub is_write: bool,
    /// A micro-op of a transaction (not a single-key op).
    pub in_txn: bool,
}

pub struct LoadTable<'h> {
    /// Route id → invokes per one-second bucket (bucket `b` = `[b, b+1)` s of test time).
    pub per_route: FxHashMap<u64, Vec<u32>>,
    /// Keyed client invokes in time order.
    pub invokes: Vec<KeyedInvoke<'h>>,
    /// Invokes whose key no route in force covered.
    pub unmapped: u64,
    pub buckets: usize,
    /// Time of the first and the last client op (any type, keyed or not): the span over
    /// which the clients were running.
    pub client_span: Option<(u64, u64)>,
}

/// The keys of the transaction at `position`, one per micro-op, each with whether the
/// micro-op writes (borrowed from the op's value when the history keeps it there).
fn micro_op_keys(history: &History, position: usize) -> Vec<(Cow<'_, str>, bool)> {
    match history.txn_value(position) {
        Cow::Borrowed(value) => mop_keys(value).collect(),
        Cow::Owned(value) => mop_keys(&value)
            .map(|(k, w)| (Cow::Owned(k.into_owned()), w))
            .collect(),
    }
}

fn mop_keys(value: &Value) -> impl Iterator<Item = (Cow<'_, str>, bool)> {
    value
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|m| {
            let is_write = crate::checkers::vacuity::WRITE_MICRO_OPS.contains(&m.get(0)?.as_str()?);
            let key = match m.get(1)? {
                Value::String(s) => Cow::Borrowed(s.as_str()),
                other => Cow::Owned(other.to_string()),
            };
            Some((key, is_write))
        })
}

pub fn bucket_of(time: u64) -> usize {
    (time / NS_PER_S) as usize
}

impl<'h> LoadTable<'h> {
    pub fn build(history: &'h History, timeline: &CatalogTimeline, write_fns: &[&str]) -> Self {
        let mut invokes: Vec<KeyedInvoke<'h>> = Vec::new();
        for (position, op) in history.ops.iter().enumerate() {
            if op.kind != OpType::Invoke || !matches!(op.process, Process::Client(_)) {
                continue;
            }
            if let Some(key) = op.key.as_deref() {
                invokes.push(KeyedInvoke {
                    time: op.time,
                    key: Cow::Borrowed(key),
                    is_write: write_fns.contains(&op.f.as_str()),
                    in_txn: false,
                });
            } else if op.f == crate::ops::TXN {
                invokes.extend(micro_op_keys(history, position).into_iter().map(
                    |(key, is_write)| KeyedInvoke {
                        time: op.time,
                        key,
                        is_write,
                        in_txn: true,
                    },
                ));
            }
        }
        invokes.sort_by_key(|i| i.time);
        let buckets = invokes.last().map_or(0, |i| bucket_of(i.time) + 1);
        let mut per_route: FxHashMap<u64, Vec<u32>> = FxHashMap::default();
        let mut unmapped = 0;
        for inv in &invokes {
            match timeline
                .in_force_at(inv.time)
                .and_then(|obs| obs.route_for(&inv.key))
            {
                Some(route) => {
                    per_route
                        .entry(route.id)
                        .or_insert_with(|| vec![0; buckets])[bucket_of(inv.time)] += 1
                }
                None => unmapped += 1,
            }
        }
        let client_times = history
            .ops
            .iter()
            .filter(|op| matches!(op.process, Process::Client(_)))
            .map(|op| op.time);
        let client_span = client_times.fold(None, |span: Option<(u64, u64)>, t| match span {
            None => Some((t, t)),
            Some((a, b)) => Some((a.min(t), b.max(t))),
        });
        LoadTable {
            per_route,
            invokes,
            unmapped,
            buckets,
            client_span,
        }
    }

    /// Whether client ops were running over the whole of `[from, to]`: one at or before
    /// `from`, one at or after `to`.
    pub fn clients_cover(&self, from: u64, to: u64) -> bool {
        self.client_span
            .is_some_and(|(first, last)| first <= from && to <= last)
    }

    /// Keyed invokes with time in `[from, to)` ns.
    pub fn invokes_between(&self, from: u64, to: u64) -> &[KeyedInvoke<'h>] {
        let a = self.invokes.partition_point(|i| i.time < from);
        let b = self.invokes.partition_point(|i| i.time < to);
        &self.invokes[a..b.max(a)]
    }

    /// Ops per second of each of `routes` (sorted by start) over `[from, to)` ns, counting
    /// invokes by key range — independent of which catalog the ops were routed with, so a
    /// route created inside the window is not diluted by the time before it existed.
    pub fn range_rates(&self, routes: &[RouteRecord], from: u64, to: u64) -> Vec<(u64, f64)> {
        let seconds = to.saturating_sub(from) as f64 / NS_PER_S as f64;
        let mut counts: FxHashMap<u64, u64> = FxHashMap::default();
        for inv in self.invokes_between(from, to) {
            if let Some(r) = route_containing(routes, &inv.key) {
                *counts.entry(r.id).or_default() += 1;
            }
        }
        routes
            .iter()
            .map(|r| {
                (
                    r.id,
                    if seconds > 0.0 {
                        counts.get(&r.id).copied().unwrap_or(0) as f64 / seconds
                    } else {
                        0.0
                    },
                )
            })
            .collect()
    }

    /// Compact per-route series: ops per one-second bucket from the route's first loaded
    /// bucket to its last.
    pub fn series_json(&self, describe: impl Fn(u64) -> Value) -> Vec<Value> {
        let mut ids: Vec<u64> = self.per_route.keys().copied().collect();
        ids.sort_unstable();
        ids.into_iter()
            .map(|id| {
                let s = &self.per_route[&id];
                let first = s.iter().position(|&c| c > 0).unwrap_or(0);
                let last = s.iter().rposition(|&c| c > 0).map_or(first, |l| l + 1);
                let mut entry = describe(id);
                if let Value::Object(m) = &mut entry {
                    m.insert("id".into(), json!(id));
                    m.insert(
                        "total_ops".into(),
                        json!(s.iter().map(|&c| c as u64).sum::<u64>()),
                    );
                    m.insert("first_bucket_s".into(), json!(first));
                    m.insert("ops_per_s".into(), json!(&s[first..last.max(first)]));
                }
                entry
            })
            .collect()
    }
}

/// Max, median and top share of a set of per-route rates.
pub fn rate_stats(rates: &[(u64, f64)]) -> Value {
    let mut sorted: Vec<(u64, f64)> = rates.to_vec();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = sorted.iter().map(|r| r.1).sum();
    let n = sorted.len();
    let median = match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2].1,
        _ => (sorted[n / 2 - 1].1 + sorted[n / 2].1) / 2.0,
    };
    let max = sorted.first().map_or(0.0, |r| r.1);
    json!({
        "routes": n,
        "hottest_route": sorted.first().map(|r| r.0),
        "max_ops_per_s": max,
        "median_ops_per_s": median,
        "top_share": if total > 0.0 { max / total } else { 0.0 },
    })
}
