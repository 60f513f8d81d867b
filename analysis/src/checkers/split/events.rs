//! Splits and moves as the catalog watcher saw them.
//!
//! A split is the first observation in which new route ids name a parent that an earlier
//! observation held; its split keys are the children's starts inside the parent. A move is
//! a route id whose group changed between observations. Splits that a `start-split`
//! nemesis event asked for are *forced*; the others were decided by the store's detector
//! (auto-splits) and are the ones whose judgement the split checker examines.

use crate::catalog::CatalogTimeline;
use crate::history::{fault_events, FaultEdge, History, RouteRecord};
use rustc_hash::{FxHashMap, FxHashSet};

const NS_PER_S: f64 = 1e9;

/// The nemesis fault whose events ask for splits (`start-split`).
pub const SPLIT_FAULT: &str = "split";

/// Faults aimed at moves that start a split themselves when no job is live; their start
/// event names its key (`split_key`) only when they did, and claims only that split.
pub const MOVE_FAULTS: [&str; 3] = ["move", "abort-move", "txn-move"];

#[derive(Debug, Clone)]
pub struct SplitEvent {
    pub parent: RouteRecord,
    /// Children present in the observation, sorted by start.
    pub children: Vec<RouteRecord>,
    /// Interior boundaries between the children, sorted.
    pub split_keys: Vec<String>,
    /// Watcher op that first showed the children, its time and catalog version.
    pub catalog_op: u64,
    pub time: u64,
    pub version: u64,
    /// Asked for by the split nemesis rather than decided by the store.
    pub forced: bool,
}

#[derive(Debug, Clone)]
pub struct MoveEvent {
    pub route: u64,
    pub from_group: u64,
    pub to_group: u64,
    pub epoch: u64,
    pub catalog_op: u64,
    pub time: u64,
}

/// Splits and moves in time order, plus how many new routes had an unobserved parent.
pub struct CatalogChanges {
    pub splits: Vec<SplitEvent>,
    pub moves: Vec<MoveEvent>,
    pub unobserved_parents: u64,
}

pub fn catalog_changes(timeline: &CatalogTimeline) -> CatalogChanges {
    let mut last: FxHashMap<u64, RouteRecord> = FxHashMap::default();
    let mut out = CatalogChanges {
        splits: Vec::new(),
        moves: Vec::new(),
        unobserved_parents: 0,
    };
    for (n, obs) in timeline.in_time_order().enumerate() {
        let mut by_parent: FxHashMap<u64, Vec<RouteRecord>> = FxHashMap::default();
        for r in &obs.snapshot.routes {
            match last.get(&r.id) {
                Some(old) if old.group != r.group => out.moves.push(MoveEvent {
                    route: r.id,
                    from_group: old.group,
                    to_group: r.group,
                    epoch: r.epoch,
                    catalog_op: obs.op_index,
                    time: obs.time,
                }),
                Some(_) => {}
                None if n > 0 => match r.parent.filter(|p| last.contains_key(p)) {
                    Some(p) => by_parent.entry(p).or_default().push(r.clone()),
                    None => out.unobserved_parents += 1,
                },
                None => {}
            }
        }
        let mut parents: Vec<u64> = by_parent.keys().copied().collect();
        parents.sort_unstable();
        for p in parents {
            let parent = last[&p].clone();
            let mut children = by_parent.remove(&p).unwrap_or_default();
            // The parent may survive as one of the pieces (a split that keeps its id).
            if let Some(kept) = obs.snapshot.routes.iter().find(|r| r.id == p) {
                children.push(kept.clone());
            }
            children.sort_by(|a, b| a.start.cmp(&b.start));
            let split_keys = children
                .iter()
                .map(|c| c.start.clone())
                .filter(|s| *s != parent.start)
                .collect();
            out.splits.push(SplitEvent {
                parent,
                children,
                split_keys,
                catalog_op: obs.op_index,
                time: obs.time,
                version: obs.snapshot.version,
                forced: false,
            });
        }
        for r in &obs.snapshot.routes {
            last.insert(r.id, r.clone());
        }
    }
    out
}

/// Mark the splits that the nemesis asked for: a `start-split` event (or a `start-move` /
/// `start-abort-move` naming the key of the split it started itself) within
/// `match_s` seconds of the split's observation (either side: a nemesis may record its
/// start only once the split RPC returned) whose `split_key` (or `key`) is one of the
/// split's keys, or — when the event names no key — the nearest such event. Events with
/// `effective: false` (refused or never attempted) claim nothing.
pub fn mark_forced(history: &History, splits: &mut [SplitEvent], match_s: f64) {
    let requests: Vec<(u64, Option<String>)> = fault_events(&history.ops)
        .filter(|(_, e)| e.edge == FaultEdge::Start)
        .filter(|(_, e)| match e.fault.as_str() {
            // A split the store refused (or the nemesis never attempted) claims nothing.
            SPLIT_FAULT => e.value.effective != Some(false),
            f => MOVE_FAULTS.contains(&f) && e.value.split_key().is_some(),
        })
        .map(|(op, e)| (op.time, e.value.split_key().map(str::to_string)))
        .collect();
    let window = (match_s * NS_PER_S) as u64;
    let mut claimed: FxHashSet<usize> = FxHashSet::default();
    for split in splits.iter_mut() {
        let found = requests.iter().enumerate().find(|(i, (t, key))| {
            !claimed.contains(i)
                && t.abs_diff(split.time) <= window
                && key
                    .as_deref()
                    .is_none_or(|k| split.split_keys.iter().any(|s| s == k))
        });
        if let Some((i, _)) = found {
            claimed.insert(i);
            split.forced = true;
        }
    }
}
