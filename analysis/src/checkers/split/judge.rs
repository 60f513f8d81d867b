//! Judging one split: was the parent hot, did the split key follow the load, was the
//! parent itself a child split again within the cooldown, and did the split relieve it.
//!
//! Criteria. *Evidence* = the keyed client invokes in the parent's range from its
//! creation (its first observation; the start of the history for initial routes), at most
//! `evidence_window_s` seconds back, up to the split's first observation. Using the
//! parent's life rather than only the last seconds keeps a p50 split of sequential keys
//! (which the detector computed over its own, possibly longer, windows) inside the
//! evidence. Loads are counted by key range, not by the route ops were routed to.
//! - **cold**: the parent's load over the `cold_window_s` seconds before the split was
//!   below `cold_min_ops_per_s`, or below `cold_fraction` × the hottest route's load
//!   (routes of the catalog in force just before the split). Judged only when client ops
//!   cover that whole window (one at or before its start, one at or after the split): a
//!   split before the clients began, or after they stopped, shows no load because nobody
//!   was sending any, which is too little evidence to call the route cold;
//! - **unjustified** (judged with at least `min_evidence_ops` evidence ops): the split is
//!   justified when every child got at least `min_child_share` of the evidence, or of
//!   some recent part of it (its last `n` ops, `n` ≥ `min_evidence_ops`: a detector's p50
//!   over its own short windows, [`best_recent_share`]), or when
//!   one key carried at least `hot_key_share` of it and a split key is that key or its
//!   successor (key + NUL: hot-key isolation). Otherwise — typically a byte midpoint
//!   outside the span of keys the route ever saw, leaving one child nothing — it is
//!   unjustified;
//! - **ping-pong**: the parent was itself created by an auto-split less than `cooldown_s`
//!   (minus `cooldown_tolerance_s` for watcher lag) earlier; the second half of a hot-key
//!   isolation (split at the route's start + NUL) is exempt, it follows at once by design.
//!
//! Relief (reported, never judged): the parent's load over the `window_s` seconds before
//! the split against its busiest child's over the `window_s` seconds after (cut short at
//! the end of the history; not measured under one second).
//!
//! Forced splits (asked for by the split nemesis) are reported but not judged.

use super::events::SplitEvent;
use super::load::{rate_stats, KeyedInvoke, LoadTable, NS_PER_S};
use super::SplitOptions;
use crate::catalog::{route_contains, CatalogTimeline};
use crate::history::RouteRecord;
use rustc_hash::FxHashMap;
use serde_json::{json, Value};

/// What the evidence window says about a parent's keys.
struct Evidence {
    ops: u64,
    /// Of `ops`, micro-ops of transactions.
    txn_ops: u64,
    child_shares: Vec<f64>,
    top_key: Option<String>,
    top_key_share: f64,
    split_key_quantile: Option<f64>,
    /// The most recent part of the evidence (at least `min_evidence_ops` ops, ending at the
    /// split) in which the least-loaded child got its largest share: (ops, that share).
    best_recent: Option<(u64, f64)>,
}

/// The keyed invokes in the parent's range from `since` to the split.
fn parent_invokes<'a, 'h>(
    load: &'a LoadTable<'h>,
    split: &'a SplitEvent,
    since: u64,
) -> impl Iterator<Item = &'a KeyedInvoke<'h>> + 'a {
    load.invokes_between(since, split.time)
        .iter()
        .filter(|i| route_contains(&split.parent, &i.key))
}

fn evidence(load: &LoadTable, split: &SplitEvent, since: u64, min_ops: u64) -> Evidence {
    let inside: Vec<_> = parent_invokes(load, split, since).collect();
    let txn_ops = inside.iter().filter(|i| i.in_txn).count() as u64;
    let keys: Vec<&str> = inside.iter().map(|i| i.key.as_ref()).collect();
    let n = keys.len() as f64;
    let child_of: Vec<Option<usize>> = keys
        .iter()
        .map(|k| split.children.iter().position(|c| route_contains(c, k)))
        .collect();
    let mut per_child = vec![0u64; split.children.len()];
    let mut per_key: FxHashMap<&str, u64> = FxHashMap::default();
    for (k, child) in keys.iter().zip(&child_of) {
        if let Some(c) = child {
            per_child[*c] += 1;
        }
        *per_key.entry(k).or_default() += 1;
    }
    let top = per_key
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)));
    let below_first_key = split
        .split_keys
        .first()
        .map(|s| keys.iter().filter(|k| **k < s.as_str()).count());
    Evidence {
        ops: keys.len() as u64,
        txn_ops,
        child_shares: per_child
            .iter()
            .map(|&c| if n > 0.0 { c as f64 / n } else { 0.0 })
            .collect(),
        top_key: top.map(|(k, _)| k.to_string()),
        top_key_share: top.map_or(0.0, |(_, &c)| c as f64 / n.max(1.0)),
        split_key_quantile: below_first_key.filter(|_| n > 0.0).map(|b| b as f64 / n),
        best_recent: best_recent_share(&child_of, split.children.len(), min_ops),
    }
}

/// Over every recent part of the evidence — its last `len` ops for each `len` from
/// `min_ops` up to all of it — the least-loaded child's share; returns the part where that
/// share is largest (ops, share). A detector that takes the p50 of its own recent windows
/// splits sequential keys (timestamps) near the end of a long-lived route's keys: over the
/// route's whole life one child then holds a sliver, over the detector's windows each holds
/// its half. A split point outside every key the route saw leaves one child nothing in
/// every part.
fn best_recent_share(
    child_of: &[Option<usize>],
    children: usize,
    min_ops: u64,
) -> Option<(u64, f64)> {
    let mut counts = vec![0u64; children];
    let mut best: Option<(u64, f64)> = None;
    for (taken, child) in child_of.iter().rev().enumerate() {
        if let Some(c) = child {
            counts[*c] += 1;
        }
        let len = taken as u64 + 1;
        if len < min_ops.max(1) {
            continue;
        }
        let least = counts.iter().copied().min().unwrap_or(0) as f64 / len as f64;
        if best.is_none_or(|(_, share)| least > share) {
            best = Some((len, least));
        }
    }
    best
}

/// The judgement of one split, as JSON, plus the anomalies it raises.
pub struct Judgement {
    pub json: Value,
    pub anomalies: Vec<Value>,
    pub judged: bool,
    pub relieved: Option<bool>,
}

pub fn judge(
    split: &SplitEvent,
    auto_created_at: &FxHashMap<u64, u64>,
    parent_since: u64,
    load: &LoadTable,
    timeline: &CatalogTimeline,
    opts: &SplitOptions,
) -> Judgement {
    let evidence_since = split
        .time
        .saturating_sub(secs_to_ns(opts.evidence_window_s))
        .max(parent_since);
    let routes_before: &[RouteRecord] = timeline
        .observed_before(split.time)
        .map_or(&[], |o| &o.snapshot.routes[..]);
    let routes_after: &[RouteRecord] = timeline
        .in_force_at(split.time)
        .map_or(&[], |o| &o.snapshot.routes[..]);
    let view = detector_view(split, load, routes_before, opts);
    let ev = evidence(load, split, evidence_since, opts.min_evidence_ops);
    let relief = relief(split, load, routes_before, routes_after, view.parent_load, opts);
    let (anomalies, judged) = findings(split, auto_created_at, &view, &ev, opts);
    let json = json!({
        "catalog_op": split.catalog_op, "catalog_version": split.version,
        "time_s": split.time as f64 / NS_PER_S as f64, "forced": split.forced,
        "parent": route_json(&split.parent),
        "split_keys": split.split_keys,
        "children": split.children.iter().zip(&ev.child_shares).zip(&relief.child_after).map(|((c, share), after)| {
            let mut j = route_json(c);
            j["share_of_parent_before"] = json!(share);
            j["ops_per_s_after"] = json!(after);
            j
        }).collect::<Vec<_>>(),
        "evidence_ops": ev.ops,
        "split_key_quantile": ev.split_key_quantile,
        "recent_evidence_ops": ev.best_recent.map(|(ops, _)| ops),
        "recent_min_child_share": ev.best_recent.map(|(_, share)| share),
        "evidence_txn_ops": ev.txn_ops, "top_key": ev.top_key, "top_key_share": ev.top_key_share,
        "evidence_from_s": evidence_since as f64 / NS_PER_S as f64,
        "parent_ops_per_s_recent": view.parent_load,
        "hottest_ops_per_s_recent": view.hottest,
        "parent_ops_per_s_before": relief.parent_before,
        "max_child_ops_per_s_after": relief.max_child_after,
        "cluster_before": rate_stats(&relief.rates_before),
        "cluster_after": rate_stats(&relief.rates_after),
        "after_window_s": relief.after_window_s,
        "relieved": relief.relieved,
        "cold_window_covered": view.cold_window_covered,
        "judged": judged,
        "findings": anomalies.iter().map(|a| a["kind"].clone()).collect::<Vec<_>>(),
    });
    Judgement {
        json,
        anomalies,
        judged,
        relieved: relief.relieved,
    }
}

/// The detector's view just before the split: the parent's recent load, the hottest
/// route's, and whether the clients ran through the whole cold window.
struct DetectorView {
    parent_load: f64,
    hottest: f64,
    cold_window_covered: bool,
}

fn detector_view(
    split: &SplitEvent,
    load: &LoadTable,
    routes_before: &[RouteRecord],
    opts: &SplitOptions,
) -> DetectorView {
    let cold_ns = secs_to_ns(opts.cold_window_s);
    let cold_since = split.time.saturating_sub(cold_ns);
    let cold_window_covered = split.time >= cold_ns && load.clients_cover(cold_since, split.time);
    let recent = load.range_rates(routes_before, cold_since, split.time);
    let parent_load = recent.iter().find(|r| r.0 == split.parent.id).map_or_else(
        || parent_invokes(load, split, cold_since).count() as f64 / opts.cold_window_s.max(1e-9),
        |r| r.1,
    );
    let hottest = recent.iter().map(|r| r.1).fold(parent_load, f64::max);
    DetectorView {
        parent_load,
        hottest,
        cold_window_covered,
    }
}

/// Relief: the load of the parent in the window before the split against its children's
/// in the window after (cut at the last invoke).
struct Relief {
    rates_before: Vec<(u64, f64)>,
    rates_after: Vec<(u64, f64)>,
    parent_before: f64,
    child_after: Vec<f64>,
    max_child_after: f64,
    after_window_s: f64,
    relieved: Option<bool>,
}

fn relief(
    split: &SplitEvent,
    load: &LoadTable,
    routes_before: &[RouteRecord],
    routes_after: &[RouteRecord],
    parent_load: f64,
    opts: &SplitOptions,
) -> Relief {
    let window_ns = secs_to_ns(opts.window_s);
    let last_invoke = load.invokes.last().map_or(0, |i| i.time + 1);
    let before = (split.time.saturating_sub(window_ns), split.time);
    let after = (
        split.time,
        (split.time + window_ns).min(last_invoke).max(split.time),
    );
    let rates_before = load.range_rates(routes_before, before.0, before.1);
    let rates_after = load.range_rates(routes_after, after.0, after.1);
    let parent_before = rates_before
        .iter()
        .find(|r| r.0 == split.parent.id)
        .map_or(parent_load, |r| r.1);
    let child_after: Vec<f64> = split
        .children
        .iter()
        .map(|c| {
            rates_after
                .iter()
                .find(|r| r.0 == c.id)
                .map_or(0.0, |r| r.1)
        })
        .collect();
    let max_child_after = child_after.iter().copied().fold(0.0, f64::max);
    let measured_after = after.1 - after.0 >= NS_PER_S;
    let relieved = (parent_before > 0.0 && measured_after)
        .then_some(max_child_after <= opts.relief_ratio * parent_before);
    Relief {
        rates_before,
        rates_after,
        parent_before,
        child_after,
        max_child_after,
        after_window_s: (after.1 - after.0) as f64 / NS_PER_S as f64,
        relieved,
    }
}

/// The findings on an automatic split (a forced one is never faulted) and whether it was
/// judged at all (cold, or enough evidence to judge its split point).
fn findings(
    split: &SplitEvent,
    auto_created_at: &FxHashMap<u64, u64>,
    view: &DetectorView,
    ev: &Evidence,
    opts: &SplitOptions,
) -> (Vec<Value>, bool) {
    let mut anomalies = Vec::new();
    let mut judged = false;
    if split.forced {
        return (anomalies, judged);
    }
    let mut flag = |kind: &str, why: String| anomalies.push(anomaly(split, kind, why));
    if let Some(why) = ping_pong(split, auto_created_at, opts) {
        flag("ping-pong", why);
    }
    let (parent_load, hottest) = (view.parent_load, view.hottest);
    let cold = parent_load < opts.cold_min_ops_per_s || parent_load < opts.cold_fraction * hottest;
    if cold && view.cold_window_covered {
        judged = true;
        flag("cold-split", format!(
            "route {} carried {parent_load:.1} ops/s in the {} s before its split (hottest route: {hottest:.1} ops/s)",
            split.parent.id, opts.cold_window_s));
    } else if ev.ops >= opts.min_evidence_ops {
        judged = true;
        // A transaction's client-side micro-ops are not the store's per-key work (lock
        // waits, resolves, retries add load the history does not show), so a split point
        // is judged only from single-key ops.
        if ev.txn_ops == 0 {
            if let Some(why) = unjustified(split, ev, opts) {
                flag("unjustified-split", why);
            }
        }
    }
    (anomalies, judged)
}

fn secs_to_ns(s: f64) -> u64 {
    (s.max(0.0) * NS_PER_S as f64) as u64
}

/// A route created by an auto-split that is split again within the cooldown — except the
/// second half of a hot-key isolation (split at `start ++ NUL`, leaving the route's first
/// key alone), which the detector issues right away by design.
fn ping_pong(
    split: &SplitEvent,
    auto_created_at: &FxHashMap<u64, u64>,
    opts: &SplitOptions,
) -> Option<String> {
    let cooldown = opts.cooldown_s?;
    let created = *auto_created_at.get(&split.parent.id)?;
    let isolation_follow_up = split.split_keys.len() == 1
        && split.split_keys[0] == format!("{}\u{0}", split.parent.start);
    let age_s = split.time.saturating_sub(created) as f64 / NS_PER_S as f64;
    (age_s < cooldown - opts.cooldown_tolerance_s && !isolation_follow_up).then(|| format!(
        "route {} was created by an auto-split {age_s:.1} s earlier and split again within the {cooldown} s cooldown",
        split.parent.id))
}

fn unjustified(split: &SplitEvent, ev: &Evidence, opts: &SplitOptions) -> Option<String> {
    let min_share = ev
        .child_shares
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    if min_share >= opts.min_child_share {
        return None;
    }
    if ev
        .best_recent
        .is_some_and(|(_, share)| share >= opts.min_child_share)
    {
        return None; // justified by the load just before the split
    }
    if let Some(top) = &ev.top_key {
        let successor = format!("{top}\u{0}");
        let isolates = split
            .split_keys
            .iter()
            .any(|k| *k == *top || *k == successor);
        if ev.top_key_share >= opts.hot_key_share && isolates {
            return None;
        }
    }
    let hottest = match &ev.top_key {
        Some(k) => format!(
            "hottest key {} with {:.1} %",
            quoted(k),
            ev.top_key_share * 100.0
        ),
        None => "no key seen".to_string(),
    };
    let split_at: Vec<String> = split.split_keys.iter().map(|k| quoted(k)).collect();
    let recent = match ev.best_recent {
        Some((ops, share)) => format!(
            ", and at most {:.1} % in any recent part of them (best: the last {ops} ops)",
            share * 100.0
        ),
        None => String::new(),
    };
    Some(format!(
        "route {} was split at {}, but in the {} evidence ops before the split one child got only {:.1} % of the \
         parent's load{recent} (split key at quantile {}; {hottest}): the load does not justify this split point",
        split.parent.id, split_at.join(", "), ev.ops, min_share * 100.0,
        ev.split_key_quantile.map_or("n/a".to_string(), |q| format!("{q:.3}"))))
}

/// A key as a JSON string (quoted, control bytes escaped), the way results.json shows it.
fn quoted(key: &str) -> String {
    serde_json::Value::from(key).to_string()
}

fn anomaly(split: &SplitEvent, kind: &str, explanation: String) -> Value {
    json!({
        "kind": kind, "catalog_op": split.catalog_op, "catalog_version": split.version,
        "route": split.parent.id, "split_keys": split.split_keys, "explanation": explanation,
    })
}

pub fn route_json(r: &RouteRecord) -> Value {
    json!({"id": r.id, "start": r.start, "end": r.end, "group": r.group, "epoch": r.epoch, "parent": r.parent})
}
