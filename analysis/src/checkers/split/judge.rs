//! Judging one split: was the parent hot, did the split key follow the load, was the
//! parent itself a child split again within the cooldown, and did the split relieve it.
//!
//! Criteria (evidence window `W` = the `window_s` seconds before the split was observed,
//! evidence = keyed client invokes in the parent's range during `W`):
//! - **cold**: the parent's load in `W` was below `cold_min_ops_per_s`, or below
//!   `cold_fraction` × the hottest route's load in `W`;
//! - **unjustified**: with at least `min_evidence_ops` evidence ops, the split is
//!   justified when every child got at least `min_child_share` of the evidence (a p50
//!   split gives each half about 50 %), or when a single key carried at least
//!   `hot_key_share` of it and a split key is that key or its immediate successor (key
//!   + NUL: hot-key isolation). Anything else — e.g. a byte midpoint far from where the
//!   keys are, leaving one child with (almost) nothing — is unjustified;
//! - **ping-pong**: the parent was itself created by an auto-split less than `cooldown_s`
//!   (minus `cooldown_tolerance_s` for watcher lag) before this split.
//!
//! Forced splits (asked for by the split nemesis) are reported but not judged.

use super::events::SplitEvent;
use super::load::{bucket_of, LoadTable, NS_PER_S};
use super::SplitOptions;
use crate::catalog::{route_contains, CatalogTimeline};
use crate::history::RouteRecord;
use rustc_hash::FxHashMap;
use serde_json::{json, Value};

/// What the evidence window says about a parent's keys.
struct Evidence {
    ops: u64,
    child_shares: Vec<f64>,
    top_key: Option<String>,
    top_key_share: f64,
    split_key_quantile: Option<f64>,
}

fn evidence(load: &LoadTable, split: &SplitEvent, window_ns: u64) -> Evidence {
    let keys: Vec<&str> = load
        .invokes_between(split.time.saturating_sub(window_ns), split.time)
        .iter()
        .filter(|i| route_contains(&split.parent, i.key))
        .map(|i| i.key)
        .collect();
    let n = keys.len() as f64;
    let mut per_child = vec![0u64; split.children.len()];
    let mut per_key: FxHashMap<&str, u64> = FxHashMap::default();
    for k in &keys {
        if let Some(c) = split.children.iter().position(|c| route_contains(c, k)) {
            per_child[c] += 1;
        }
        *per_key.entry(k).or_default() += 1;
    }
    let top = per_key.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)));
    let below_first_key = split.split_keys.first().map(|s| keys.iter().filter(|k| **k < s.as_str()).count());
    Evidence {
        ops: keys.len() as u64,
        child_shares: per_child.iter().map(|&c| if n > 0.0 { c as f64 / n } else { 0.0 }).collect(),
        top_key: top.map(|(k, _)| k.to_string()),
        top_key_share: top.map_or(0.0, |(_, &c)| c as f64 / n.max(1.0)),
        split_key_quantile: below_first_key.filter(|_| n > 0.0).map(|b| b as f64 / n),
    }
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
    load: &LoadTable,
    timeline: &CatalogTimeline,
    opts: &SplitOptions,
) -> Judgement {
    let w = opts.window_s.max(1) as usize;
    let b = bucket_of(split.time);
    // The bucket holding the split is mixed, so it belongs to neither side; the after
    // window is cut short where the history ends.
    let before = (b.saturating_sub(w), b);
    let after = (b + 1, (b + 1 + w).min(load.buckets));
    let routes_before = route_ids(timeline.observed_before(split.time).map(|o| &o.snapshot.routes[..]));
    let routes_after = route_ids(timeline.in_force_at(split.time).map(|o| &o.snapshot.routes[..]));
    let parent_before = load.rate(split.parent.id, before.0, before.1);
    let hottest_before = routes_before.iter().map(|&r| load.rate(r, before.0, before.1)).fold(0.0, f64::max);
    let ev = evidence(load, split, opts.window_s.max(1) * NS_PER_S);
    let child_after: Vec<f64> = split.children.iter().map(|c| load.rate(c.id, after.0, after.1)).collect();
    let max_child_after = child_after.iter().copied().fold(0.0, f64::max);
    let measured_after = after.1 > after.0;
    let relieved = (parent_before > 0.0 && measured_after).then(|| max_child_after <= opts.relief_ratio * parent_before);

    let mut anomalies = Vec::new();
    let mut judged = false;
    if !split.forced {
        let mut flag = |kind: &str, why: String| anomalies.push(anomaly(split, kind, why));
        if let Some(&created) = auto_created_at.get(&split.parent.id) {
            let age_s = (split.time.saturating_sub(created)) as f64 / NS_PER_S as f64;
            if let Some(cooldown) = opts.cooldown_s {
                if age_s < cooldown - opts.cooldown_tolerance_s {
                    flag("ping-pong", format!(
                        "route {} was created by an auto-split {age_s:.1} s earlier and split again within the {cooldown} s cooldown",
                        split.parent.id));
                }
            }
        }
        if parent_before < opts.cold_min_ops_per_s || parent_before < opts.cold_fraction * hottest_before {
            judged = true;
            flag("cold-split", format!(
                "route {} carried {parent_before:.1} ops/s in the {w} s before its split (hottest route: {hottest_before:.1} ops/s)",
                split.parent.id));
        } else if ev.ops >= opts.min_evidence_ops {
            judged = true;
            if let Some(why) = unjustified(split, &ev, opts) {
                flag("unjustified-split", why);
            }
        }
    }
    let json = json!({
        "catalog_op": split.catalog_op, "catalog_version": split.version,
        "time_s": split.time as f64 / NS_PER_S as f64, "forced": split.forced,
        "parent": route_json(&split.parent),
        "split_keys": split.split_keys,
        "children": split.children.iter().zip(&ev.child_shares).zip(&child_after).map(|((c, share), after)| {
            let mut j = route_json(c);
            j["share_of_parent_before"] = json!(share);
            j["ops_per_s_after"] = json!(after);
            j
        }).collect::<Vec<_>>(),
        "evidence_ops": ev.ops,
        "split_key_quantile": ev.split_key_quantile,
        "top_key": ev.top_key, "top_key_share": ev.top_key_share,
        "parent_ops_per_s_before": parent_before,
        "hottest_ops_per_s_before": hottest_before,
        "max_child_ops_per_s_after": max_child_after,
        "cluster_before": load.window_stats(&routes_before, before.0, before.1),
        "cluster_after": load.window_stats(&routes_after, after.0, after.1.max(after.0)),
        "relieved": relieved,
        "judged": judged,
        "findings": anomalies.iter().map(|a| a["kind"].clone()).collect::<Vec<_>>(),
    });
    Judgement { json, anomalies, judged, relieved }
}

fn unjustified(split: &SplitEvent, ev: &Evidence, opts: &SplitOptions) -> Option<String> {
    let min_share = ev.child_shares.iter().copied().fold(f64::INFINITY, f64::min);
    if min_share >= opts.min_child_share {
        return None;
    }
    if let Some(top) = &ev.top_key {
        let successor = format!("{top}\u{0}");
        let isolates = split.split_keys.iter().any(|k| *k == *top || *k == successor);
        if ev.top_key_share >= opts.hot_key_share && isolates {
            return None;
        }
    }
    Some(format!(
        "route {} was split at {:?}, but in the {} evidence ops before the split one child got only {:.1} % of the \
         parent's load (split key at quantile {}; hottest key {:?} with {:.1} %): the load does not justify this split point",
        split.parent.id, split.split_keys, ev.ops, min_share * 100.0,
        ev.split_key_quantile.map_or("n/a".to_string(), |q| format!("{q:.3}")),
        ev.top_key, ev.top_key_share * 100.0))
}

fn anomaly(split: &SplitEvent, kind: &str, explanation: String) -> Value {
    json!({
        "kind": kind, "catalog_op": split.catalog_op, "catalog_version": split.version,
        "route": split.parent.id, "split_keys": split.split_keys, "explanation": explanation,
    })
}

fn route_ids(routes: Option<&[RouteRecord]>) -> Vec<u64> {
    routes.map(|rs| rs.iter().map(|r| r.id).collect()).unwrap_or_default()
}

pub fn route_json(r: &RouteRecord) -> Value {
    json!({"id": r.id, "start": r.start, "end": r.end, "group": r.group, "epoch": r.epoch, "parent": r.parent})
}
