//! The split checker: in a hotspot run, did the store split its hot range, how quickly,
//! at a point the load justified, without splitting cold routes or re-splitting a fresh
//! child within its cooldown — and did the split relieve the hot shard?
//!
//! Splits come from the catalog watcher's observations ([`events`]); load comes from the
//! client invokes, each key mapped through the catalog in force at its time ([`load`]);
//! each auto-split is judged by documented criteria ([`judge`]). The result is `unknown`
//! when no split happened (nothing was tested), `invalid` on a ping-pong, cold or
//! unjustified auto-split, else `valid`; `details` carries the per-split judgements,
//! detection latency, moves, and a compact per-route time series (ops per one-second
//! bucket) for the report's plots. See `docs/checkers.md`.

pub mod events;
pub mod judge;
pub mod load;

use crate::catalog::{route_contains, CatalogTimeline, Lineage};
use crate::checkers::epoch_authority::WRITE_FNS;
use crate::history::{History, RouteRecord};
use crate::verdict::{CheckerResult, Validity};
use events::{catalog_changes, mark_forced, CatalogChanges};
use load::{LoadTable, NS_PER_S};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Checker name in `results.json`.
pub const NAME: &str = "split";

/// Its registry entry (when it judges a history, how it is called).
pub mod entry;
pub use entry::CHECKER;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SplitOptions {
    /// Key prefix of the hot range; inferred (the initial route with most writes) if absent.
    pub hot_prefix: Option<String>,
    /// The store's per-route split cooldown, seconds; no ping-pong check without it.
    pub cooldown_s: Option<f64>,
    /// Allowance for watcher lag when comparing split times with the cooldown.
    pub cooldown_tolerance_s: f64,
    /// Longest look-back (seconds) for a split's evidence: the parent's keys since its
    /// creation, at most this far back. Split-point shares and the hot key use it.
    pub evidence_window_s: f64,
    /// Recent-load window (seconds) before a split for the coldness test.
    pub cold_window_s: f64,
    /// Comparison windows before and after each split (load relief), seconds.
    pub window_s: f64,
    /// Each child must get this share of the parent's evidence ops (unless hot-key isolation).
    pub min_child_share: f64,
    /// A key with this share of the parent's evidence is a hot key worth isolating.
    pub hot_key_share: f64,
    /// Fewer evidence ops than this: the split point is not judged.
    pub min_evidence_ops: u64,
    /// A parent below this many ops/s in the evidence window is cold.
    pub cold_min_ops_per_s: f64,
    /// A parent below this fraction of the hottest route's ops/s is cold.
    pub cold_fraction: f64,
    /// A split relieved its parent when the busiest child carries at most this fraction
    /// of the parent's former load (reported, not judged).
    pub relief_ratio: f64,
    /// A `start-split` nemesis event without a split key claims a split observed within
    /// this many seconds after it.
    pub forced_match_s: f64,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions {
            hot_prefix: None,
            cooldown_s: None,
            cooldown_tolerance_s: 0.5,
            evidence_window_s: 60.0,
            cold_window_s: 5.0,
            window_s: 10.0,
            min_child_share: 0.02,
            hot_key_share: 0.25,
            min_evidence_ops: 20,
            cold_min_ops_per_s: 1.0,
            cold_fraction: 0.05,
            relief_ratio: 0.8,
            forced_match_s: 10.0,
        }
    }
}

/// The key range the hot load targets.
enum HotRange {
    Prefix(String),
    Route(RouteRecord),
}

impl HotRange {
    fn contains(&self, key: &str) -> bool {
        match self {
            HotRange::Prefix(p) => key.starts_with(p.as_str()),
            HotRange::Route(r) => route_contains(r, key),
        }
    }

    fn intersects(&self, r: &RouteRecord) -> bool {
        match self {
            HotRange::Prefix(p) => {
                (r.end.is_empty() || p.as_str() < r.end.as_str())
                    && (r.start.as_str() <= p.as_str() || r.start.starts_with(p.as_str()))
            }
            HotRange::Route(h) => {
                (h.end.is_empty() || r.start < h.end) && (r.end.is_empty() || h.start < r.end)
            }
        }
    }

    fn to_json(&self) -> Value {
        match self {
            HotRange::Prefix(p) => json!({"prefix": p}),
            HotRange::Route(r) => json!({"inferred_route": r.id, "start": r.start, "end": r.end}),
        }
    }
}

/// The initial route that received the most write invokes over the whole history.
fn infer_hot_route(load: &LoadTable, timeline: &CatalogTimeline) -> Option<RouteRecord> {
    let first = timeline.in_time_order().next()?;
    let mut writes: FxHashMap<u64, u64> = FxHashMap::default();
    for inv in load.invokes.iter().filter(|i| i.is_write) {
        if let Some(r) = first.route_for(&inv.key) {
            *writes.entry(r.id).or_default() += 1;
        }
    }
    let (&id, _) = writes
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
    first.snapshot.routes.iter().find(|r| r.id == id).cloned()
}

pub fn check(history: &History, opts: &SplitOptions) -> CheckerResult {
    let timeline = CatalogTimeline::from_history(history);
    check_with_timeline(history, &timeline, opts)
}

pub fn check_with_timeline(
    history: &History,
    timeline: &CatalogTimeline,
    opts: &SplitOptions,
) -> CheckerResult {
    if timeline.is_empty() {
        let mut r = CheckerResult::new(Validity::Unknown);
        r.reason = Some(
            "no catalog observations (watcher events) in the history: splits cannot be seen".into(),
        );
        return r;
    }
    let mut changes = catalog_changes(timeline);
    mark_forced(history, &mut changes.splits, opts.forced_match_s);
    let load = LoadTable::build(history, timeline, WRITE_FNS);
    let hot = match &opts.hot_prefix {
        Some(p) => Some(HotRange::Prefix(p.clone())),
        None => infer_hot_route(&load, timeline).map(HotRange::Route),
    };
    let lineage = timeline.lineage();
    let judged = judge_every_split(&changes.splits, &lineage, &load, timeline, opts);
    let mut result = CheckerResult::new(Validity::Valid);
    result.anomalies = judged.anomalies;
    let auto = changes.splits.iter().filter(|s| !s.forced).count() as u64;
    (result.valid, result.reason) = validity(&result.anomalies, &changes, auto, judged.judged, opts);
    let judged_relieved = (judged.judged, judged.relieved);
    result.counts = counts(&result.anomalies, &changes, auto, judged_relieved, load.unmapped);
    result.details = details(hot.as_ref(), &changes, &load, &lineage, judged.json, opts);
    result
}

/// What judging every split gave.
struct Judged {
    anomalies: Vec<Value>,
    json: Vec<Value>,
    /// Splits judged at all, and of them those the split relieved.
    judged: u64,
    relieved: u64,
}

/// Judges each split in order; a child of an automatic split is known as auto-created from
/// that split's time on.
fn judge_every_split(
    splits: &[events::SplitEvent],
    lineage: &Lineage,
    load: &LoadTable,
    timeline: &CatalogTimeline,
    opts: &SplitOptions,
) -> Judged {
    let mut auto_created_at: FxHashMap<u64, u64> = FxHashMap::default();
    let mut out = Judged {
        anomalies: Vec::new(),
        json: Vec::new(),
        judged: 0,
        relieved: 0,
    };
    for split in splits {
        let since = match lineage.first_seen.get(&split.parent.id) {
            Some((_, _, t)) if !lineage.initial.contains(&split.parent.id) => *t,
            _ => 0,
        };
        let j = judge::judge(split, &auto_created_at, since, load, timeline, opts);
        if !split.forced {
            for c in &split.children {
                auto_created_at.insert(c.id, split.time);
            }
        }
        out.judged += j.judged as u64;
        out.relieved += (j.relieved == Some(true)) as u64;
        out.anomalies.extend(j.anomalies);
        out.json.push(j.json);
    }
    out
}

/// Invalid on any anomaly; unknown when nothing split, or when every split was automatic
/// and none could be judged.
fn validity(
    anomalies: &[Value],
    changes: &CatalogChanges,
    auto: u64,
    judged: u64,
    opts: &SplitOptions,
) -> (Validity, Option<String>) {
    let splits = changes.splits.len() as u64;
    if !anomalies.is_empty() {
        return (Validity::Invalid, Some(summarise_anomalies(anomalies)));
    }
    if splits == 0 {
        return (Validity::Unknown, Some("no split happened — nothing was tested".into()));
    }
    if auto > 0 && judged == 0 && auto == splits {
        let why = format!(
            "{auto} auto-split(s) observed but none could be judged: none had client ops covering the {} s before it \
             (cold) nor {} evidence ops (split point)",
            opts.cold_window_s, opts.min_evidence_ops
        );
        return (Validity::Unknown, Some(why));
    }
    (Validity::Valid, None)
}

/// The checker's counts.
fn counts(
    anomalies: &[Value],
    changes: &CatalogChanges,
    auto: u64,
    (judged, relieved): (u64, u64),
    unmapped: u64,
) -> BTreeMap<String, u64> {
    let splits = changes.splits.len() as u64;
    [
        ("splits", splits),
        ("auto-splits", auto),
        ("forced-splits", splits - auto),
        ("judged-splits", judged),
        ("relieved-splits", relieved),
        ("moves", changes.moves.len() as u64),
        ("ping-pong", count_kind(anomalies, "ping-pong")),
        ("cold-splits", count_kind(anomalies, "cold-split")),
        ("unjustified-splits", count_kind(anomalies, "unjustified-split")),
        ("unmapped-ops", unmapped),
        ("splits-with-unobserved-parent", changes.unobserved_parents),
    ]
    .into_iter()
    .map(|(name, n)| (name.to_string(), n))
    .collect()
}

/// The first split of the hot range: the first automatic one touching it, else the first
/// forced one.
fn first_hot_split<'a>(
    hot: Option<&HotRange>,
    splits: &'a [events::SplitEvent],
) -> Option<&'a events::SplitEvent> {
    let h = hot?;
    let touches = |s: &&events::SplitEvent| h.intersects(&s.parent);
    splits
        .iter()
        .filter(|s| !s.forced)
        .find(touches)
        .or_else(|| splits.iter().find(touches))
}

/// The checker's details: the hot range and how soon it split, every judgement, the moves
/// and each route's load series.
fn details(
    hot: Option<&HotRange>,
    changes: &CatalogChanges,
    load: &LoadTable,
    lineage: &Lineage,
    judgements: Vec<Value>,
    opts: &SplitOptions,
) -> Value {
    let hot_start = hot.and_then(|h| load.invokes.iter().find(|i| h.contains(&i.key)).map(|i| i.time));
    let first_hot_split = first_hot_split(hot, &changes.splits);
    let latency_s = match (hot_start, first_hot_split) {
        (Some(t0), Some(s)) => Some(s.time.saturating_sub(t0) as f64 / NS_PER_S as f64),
        _ => None,
    };
    json!({
        "hot_range": hot.map(HotRange::to_json),
        "hot_load_start_s": hot_start.map(|t| t as f64 / NS_PER_S as f64),
        "first_hot_split_op": first_hot_split.map(|s| s.catalog_op),
        "detection_latency_s": latency_s,
        "splits": judgements,
        "moves": changes.moves.iter().map(|m| json!({
            "route": m.route, "from_group": m.from_group, "to_group": m.to_group, "epoch": m.epoch,
            "catalog_op": m.catalog_op, "time_s": m.time as f64 / NS_PER_S as f64,
        })).collect::<Vec<_>>(),
        "route_load": load.series_json(|id| match lineage.first_seen.get(&id) {
            Some((r, _, t)) => json!({"start": r.start, "end": r.end, "group": r.group, "parent": r.parent,
                                      "first_seen_s": *t as f64 / NS_PER_S as f64}),
            None => json!({}),
        }),
        "options": opts,
    })
}

fn count_kind(anomalies: &[Value], kind: &str) -> u64 {
    anomalies.iter().filter(|a| a["kind"] == kind).count() as u64
}

fn summarise_anomalies(anomalies: &[Value]) -> String {
    let mut kinds: Vec<String> = Vec::new();
    for kind in ["ping-pong", "cold-split", "unjustified-split"] {
        let n = count_kind(anomalies, kind);
        if n > 0 {
            kinds.push(format!("{n} {kind}"));
        }
    }
    let first = anomalies
        .first()
        .and_then(|a| a["explanation"].as_str())
        .unwrap_or_default();
    format!("{}; first: {first}", kinds.join(", "))
}
