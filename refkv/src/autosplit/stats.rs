//! Window statistics: what one node's sampler reports per window ([`WindowStats`], serde so
//! it can travel to the default-group leader) and the cluster-wide merge the detector scores
//! ([`ClusterWindow`]).
//!
//! Loads are in *load units*: `write_weight` per write plus `read_weight` per read (4 and 1 by
//! default), so sub-range segments and hot keys are measured in the same unit as the score.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::config::AutoSplitConfig;

/// One node's counts for one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowStats {
    /// The node that sampled (informational).
    pub node_id: u64,
    /// Sequence number of the window on that node, starting at 1.
    pub window_seq: u64,
    /// Measured length of the window (monotonic clock), in milliseconds.
    pub duration_ms: u64,
    /// Routes that saw at least one request, by route id.
    pub routes: Vec<RouteWindow>,
    /// Records dropped because the sampler already tracked `max_tracked_routes` routes.
    pub dropped_records: u64,
}

/// One route's counts in one window on one node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouteWindow {
    pub route_id: u64,
    pub reads: u64,
    pub writes: u64,
    /// Weighted load (`write_weight × writes + read_weight × reads`).
    pub load: u64,
    /// Where in the key space the load fell, sorted by `lo`; counts add up to `load`.
    pub segments: Vec<KeySegment>,
    /// Heaviest keys by the space-saving sketch, heaviest first.
    pub hot_keys: Vec<HotKey>,
    /// Upper bound of the load of any key missing from `hot_keys` (0 when the sketch never
    /// filled up, i.e. `hot_keys` is exact).
    pub hot_floor: u64,
    /// A uniform sample of this window's request keys; weights add up to about `load`.
    #[serde(default)]
    pub samples: Vec<SampledKey>,
}

/// A sampled request key standing for `weight` load units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampledKey {
    pub key: Vec<u8>,
    pub weight: f64,
}

/// Load observed for keys in `[lo, hi]` (approximately: bounds are bucket edges clamped to the
/// keys actually seen; keys longer than 64 bytes are represented by their prefix).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySegment {
    pub lo: Vec<u8>,
    pub hi: Vec<u8>,
    pub count: u64,
}

/// A heavy key: its true load is within `[count - error, count]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HotKey {
    pub key: Vec<u8>,
    pub count: u64,
    pub error: u64,
}

impl HotKey {
    /// Guaranteed load of this key.
    pub fn lower_bound(&self) -> u64 {
        self.count.saturating_sub(self.error)
    }
}

/// One route's load merged over every node's window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteLoad {
    pub reads_per_min: f64,
    pub writes_per_min: f64,
    /// Weighted ops per minute: the detector's score.
    pub score: f64,
    /// Total load units observed (the sum over nodes; the denominator of hot-key shares).
    pub load: u64,
    /// Every node's segments, sorted by `lo`.
    pub segments: Vec<KeySegment>,
    /// Merged hot keys, by guaranteed load, heaviest first.
    pub hot_keys: Vec<HotKey>,
    /// Every node's sampled keys, sorted by key.
    pub samples: Vec<SampledKey>,
}

/// The cluster's load in one window: every node's [`WindowStats`] merged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterWindow {
    pub routes: BTreeMap<u64, RouteLoad>,
    /// Node windows merged.
    pub nodes: usize,
    /// Node windows ignored because their duration was zero.
    pub skipped_nodes: usize,
}

impl ClusterWindow {
    /// Merges one window from each node. Rates are normalised per node (each node's counts
    /// divided by its own measured window) and then summed, so windows of slightly different
    /// lengths merge correctly.
    pub fn merge(windows: &[WindowStats], cfg: &AutoSplitConfig) -> ClusterWindow {
        let mut merged = ClusterWindow::default();
        let mut hot_inputs: BTreeMap<u64, Vec<(&[HotKey], u64)>> = BTreeMap::new();
        for window in windows {
            if window.duration_ms == 0 {
                merged.skipped_nodes += 1;
                continue;
            }
            merged.nodes += 1;
            let per_min = 60_000.0 / window.duration_ms as f64;
            for route in &window.routes {
                let entry = merged.routes.entry(route.route_id).or_default();
                entry.reads_per_min += route.reads as f64 * per_min;
                entry.writes_per_min += route.writes as f64 * per_min;
                entry.score += cfg.weighted(route.writes, route.reads) as f64 * per_min;
                entry.load = entry.load.saturating_add(route.load);
                entry.segments.extend(route.segments.iter().cloned());
                entry.samples.extend(route.samples.iter().cloned());
                hot_inputs
                    .entry(route.route_id)
                    .or_default()
                    .push((&route.hot_keys, route.hot_floor));
            }
        }
        for (route_id, inputs) in hot_inputs {
            if let Some(route) = merged.routes.get_mut(&route_id) {
                route
                    .segments
                    .sort_by(|a, b| a.lo.cmp(&b.lo).then_with(|| a.hi.cmp(&b.hi)));
                route.samples.sort_by(|a, b| a.key.cmp(&b.key));
                route.hot_keys = merge_hot_keys(&inputs);
            }
        }
        merged
    }

    /// The route's merged load, if any node saw it this window.
    pub fn route(&self, route_id: u64) -> Option<&RouteLoad> {
        self.routes.get(&route_id)
    }

    /// The route's score in weighted ops per minute (0 when no node saw it).
    pub fn score(&self, route_id: u64) -> f64 {
        self.route(route_id).map_or(0.0, |r| r.score)
    }
}

/// Merges per-node sketches: counts add up; a key missing from a node's sketch may still have
/// had up to that node's `hot_floor` there, which widens its error.
fn merge_hot_keys(inputs: &[(&[HotKey], u64)]) -> Vec<HotKey> {
    let mut merged: BTreeMap<&[u8], HotKey> = BTreeMap::new();
    for (keys, _) in inputs {
        for hot in keys.iter() {
            merged.entry(hot.key.as_slice()).or_insert_with(|| HotKey {
                key: hot.key.clone(),
                count: 0,
                error: 0,
            });
        }
    }
    for hot in merged.values_mut() {
        for (keys, floor) in inputs {
            match keys.iter().find(|k| k.key == hot.key) {
                Some(k) => {
                    hot.count += k.count;
                    hot.error += k.error;
                }
                None => {
                    hot.count += floor;
                    hot.error += floor;
                }
            }
        }
    }
    let mut out: Vec<HotKey> = merged.into_values().collect();
    out.sort_by(|a, b| {
        b.lower_bound()
            .cmp(&a.lower_bound())
            .then_with(|| a.key.cmp(&b.key))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hot(key: &[u8], count: u64, error: u64) -> HotKey {
        HotKey {
            key: key.to_vec(),
            count,
            error,
        }
    }

    fn route(
        route_id: u64,
        reads: u64,
        writes: u64,
        hot_keys: Vec<HotKey>,
        hot_floor: u64,
    ) -> RouteWindow {
        let load = 4 * writes + reads;
        let segments = vec![KeySegment {
            lo: b"a".to_vec(),
            hi: b"z".to_vec(),
            count: load,
        }];
        let samples = vec![SampledKey {
            key: b"m".to_vec(),
            weight: load as f64,
        }];
        RouteWindow {
            route_id,
            reads,
            writes,
            load,
            segments,
            hot_keys,
            hot_floor,
            samples,
        }
    }

    #[test]
    fn merge_normalises_each_node_to_ops_per_minute() {
        let cfg = AutoSplitConfig::default();
        let a = WindowStats {
            node_id: 1,
            window_seq: 1,
            duration_ms: 2_000,
            routes: vec![route(7, 100, 50, vec![], 0)],
            dropped_records: 0,
        };
        let b = WindowStats {
            node_id: 2,
            window_seq: 1,
            duration_ms: 1_000,
            routes: vec![route(7, 10, 0, vec![], 0)],
            dropped_records: 0,
        };
        let merged = ClusterWindow::merge(&[a, b], &cfg);
        let r = merged.route(7).unwrap();
        // Node 1: (4×50 + 100) per 2 s = 9,000/min; node 2: 10 per 1 s = 600/min.
        assert!((r.score - 9_600.0).abs() < 1e-9, "{}", r.score);
        assert!((r.reads_per_min - 3_600.0).abs() < 1e-9);
        assert!((r.writes_per_min - 1_500.0).abs() < 1e-9);
        assert_eq!(r.load, 310);
        assert_eq!(r.segments.len(), 2);
        assert_eq!(r.samples.iter().map(|s| s.weight).sum::<f64>(), 310.0);
        assert_eq!(merged.nodes, 2);
        assert_eq!(merged.score(99), 0.0);
    }

    #[test]
    fn zero_length_windows_are_skipped_not_divided_by() {
        let cfg = AutoSplitConfig::default();
        let w = WindowStats {
            duration_ms: 0,
            routes: vec![route(1, 5, 5, vec![], 0)],
            ..Default::default()
        };
        let merged = ClusterWindow::merge(&[w], &cfg);
        assert_eq!(merged.skipped_nodes, 1);
        assert!(merged.routes.is_empty());
    }

    #[test]
    fn hot_key_merge_widens_error_by_the_other_nodes_floor() {
        let cfg = AutoSplitConfig::default();
        let a = WindowStats {
            duration_ms: 1_000,
            routes: vec![route(
                1,
                100,
                0,
                vec![hot(b"k", 60, 0), hot(b"j", 10, 0)],
                0,
            )],
            ..Default::default()
        };
        let b = WindowStats {
            duration_ms: 1_000,
            routes: vec![route(1, 100, 0, vec![hot(b"j", 30, 5)], 4)],
            ..Default::default()
        };
        let merged = ClusterWindow::merge(&[a, b], &cfg);
        let keys = &merged.route(1).unwrap().hot_keys;
        assert_eq!(keys[0], hot(b"k", 64, 4));
        assert_eq!(keys[1], hot(b"j", 40, 5));
    }

    #[test]
    fn window_stats_round_trip_through_json() {
        let w = WindowStats {
            node_id: 3,
            window_seq: 9,
            duration_ms: 2_000,
            routes: vec![route(1, 1, 2, vec![hot(b"\x00\xff", 3, 1)], 1)],
            dropped_records: 4,
        };
        let text = serde_json::to_string(&w).unwrap();
        assert_eq!(serde_json::from_str::<WindowStats>(&text).unwrap(), w);
    }
}
