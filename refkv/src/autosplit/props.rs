//! Property tests over the whole pipeline (real sampler → merge → detector → scheduler, with
//! a simulated catalog that applies the calls): no split during cooldown, never an empty
//! child, at most the budget per cycle, only routes that crossed the threshold, never a
//! midpoint unless the bug knob is set, and hot-key isolation when one key dominates.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::keys::{byte_midpoint, in_route, strictly_inside, successor};
use super::*;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// A test's traffic: a celebrity key and up to four hot spots, fixed for the whole run, and
/// per window how hard each is hit (so routes stay hot over consecutive windows, several at
/// once, and the celebrity's share moves around the isolation threshold).
#[derive(Debug, Clone)]
struct Scenario {
    celebrity: u32,
    spots: Vec<(u32, u32)>,
    windows: Vec<Traffic>,
}

#[derive(Debug, Clone)]
struct Traffic {
    spot_ops: Vec<u32>,
    write_pct: u32,
    celebrity_pct: u32,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let spot = (0u32..60_000, 1u32..5_000);
    let window = (
        prop::collection::vec(0u32..900, 4),
        0u32..=100,
        prop_oneof![Just(0u32), 0u32..=100],
    )
        .prop_map(|(spot_ops, write_pct, celebrity_pct)| Traffic {
            spot_ops,
            write_pct,
            celebrity_pct,
        });
    (
        0u32..65_000,
        prop::collection::vec(spot, 1..=4),
        prop::collection::vec(window, 1..40),
    )
        .prop_map(|(celebrity, spots, windows)| Scenario {
            celebrity,
            spots,
            windows,
        })
}

/// The keys of one window, with whether each is a write.
fn window_ops(s: &Scenario, t: &Traffic) -> Vec<(Vec<u8>, bool)> {
    let mut ops = Vec::new();
    for (spot, (lo, width)) in s.spots.iter().enumerate() {
        for j in 0..t.spot_ops[spot] {
            let mix = j.wrapping_add(spot as u32 * 7).wrapping_mul(2_654_435_761);
            let k = if mix % 100 < t.celebrity_pct {
                key(s.celebrity)
            } else {
                key(lo + (mix >> 8) % width)
            };
            ops.push((k, (mix >> 3) % 100 < t.write_pct));
        }
    }
    ops
}

fn config() -> impl Strategy<Value = AutoSplitConfig> {
    (
        1u32..4,
        0u64..12,
        1usize..4,
        2usize..12,
        0.3f64..0.95,
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.9),
    )
        .prop_map(
            |(hysteresis, cooldown_s, per_cycle, max_routes, share, bug, enabled)| {
                AutoSplitConfig {
                    enabled,
                    hysteresis_windows: hysteresis,
                    cooldown: Duration::from_secs(cooldown_s),
                    splits_per_cycle: per_cycle,
                    max_routes,
                    hot_key_share: share,
                    split_midpoint_bug: bug,
                    ..Default::default()
                }
            },
        )
}

/// The simulated server: a catalog that applies successful calls.
struct Cluster {
    catalog: CatalogView,
    next_id: u64,
    created: HashMap<u64, Instant>,
    /// Child route id → the isolation key it was split off for (first isolation step).
    isolation_child: HashMap<u64, Vec<u8>>,
}

impl Cluster {
    fn new() -> Cluster {
        let root = RouteInfo {
            route_id: 1,
            start: vec![],
            end: vec![],
            group_id: 1,
            active: true,
            parent_route_id: None,
        };
        Cluster {
            catalog: CatalogView {
                version: 1,
                routes: vec![root],
                group_ids: vec![1, 2, 3],
            },
            next_id: 2,
            created: HashMap::new(),
            isolation_child: HashMap::new(),
        }
    }

    fn route_of(&self, key: &[u8]) -> u64 {
        self.catalog
            .routes
            .iter()
            .find(|r| in_route(key, &r.start, &r.end))
            .map(|r| r.route_id)
            .expect("routes tile the key space")
    }

    fn apply(&mut self, call: &SplitRangeCall, now: Instant) -> SplitOutcome {
        if call.expected_catalog_version != self.catalog.version {
            return SplitOutcome::Failed;
        }
        let index = self
            .catalog
            .routes
            .iter()
            .position(|r| r.route_id == call.route_id)
            .expect("call for a catalog route");
        let parent = self.catalog.routes.remove(index);
        let (left_id, right_id) = (self.next_id, self.next_id + 1);
        self.next_id += 2;
        let left = RouteInfo {
            route_id: left_id,
            end: call.split_key.clone(),
            parent_route_id: Some(parent.route_id),
            ..parent.clone()
        };
        let right = RouteInfo {
            route_id: right_id,
            start: call.split_key.clone(),
            group_id: call.target_group_id,
            parent_route_id: Some(parent.route_id),
            ..parent
        };
        if let SplitReason::IsolateHotKey {
            key,
            completes_isolation: false,
            ..
        } = &call.reason
        {
            self.isolation_child.insert(right_id, key.clone());
        }
        self.catalog.routes.push(left);
        self.catalog.routes.push(right);
        self.catalog.routes.sort_by(|a, b| a.start.cmp(&b.start));
        self.catalog.version += 1;
        self.created.insert(left_id, now);
        self.created.insert(right_id, now);
        SplitOutcome::Committed
    }
}

/// `hot_run`: per route, (current, longest) run of consecutive windows at or above the
/// threshold since the route was created.
fn check_call(
    cfg: &AutoSplitConfig,
    cluster: &Cluster,
    call: &SplitRangeCall,
    now: Instant,
    hot_run: &HashMap<u64, (u32, u32)>,
) -> Result<(), TestCaseError> {
    let route = cluster
        .catalog
        .route(call.route_id)
        .expect("planned route exists");
    prop_assert!(
        strictly_inside(&call.split_key, &route.start, &route.end),
        "empty child: {:?} in {:?}",
        call.split_key,
        route
    );
    prop_assert!(
        call.score >= cfg.threshold_ops_per_min * cfg.down_band,
        "cold route split: {}",
        call.score
    );
    let follow_up = matches!(&call.reason, SplitReason::IsolateHotKey { key, completes_isolation: true, .. }
        if cluster.isolation_child.get(&call.route_id) == Some(key) && *key == route.start);
    prop_assert!(
        follow_up || hot_run.get(&call.route_id).map_or(0, |r| r.1) >= cfg.hysteresis_windows,
        "split before hysteresis"
    );
    if let Some(created) = cluster.created.get(&call.route_id) {
        prop_assert!(
            follow_up || now.duration_since(*created) >= cfg.cooldown,
            "split {:?} after child creation: in cooldown",
            now.duration_since(*created)
        );
    }
    if cfg.split_midpoint_bug {
        prop_assert_eq!(
            Some(call.split_key.clone()),
            byte_midpoint(&route.start, &route.end)
        );
    } else {
        prop_assert!(call.reason != SplitReason::ByteMidpointBug);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn pipeline_invariants_hold(cfg in config(), scenario in scenario()) {
        let t0 = Instant::now();
        let sampler = Sampler::new(1, &cfg, t0);
        let mut auto = AutoSplit::new(cfg.clone()).expect("valid config");
        let mut cluster = Cluster::new();
        let mut hot_run: HashMap<u64, (u32, u32)> = HashMap::new();
        for (i, t) in scenario.windows.iter().enumerate() {
            let now = t0 + cfg.window * (i as u32 + 1);
            for (k, write) in window_ops(&scenario, t) {
                let kind = if write { AccessKind::Write } else { AccessKind::Read };
                sampler.record(cluster.route_of(&k), &k, kind);
            }
            let stats = sampler.snapshot_and_reset(now);
            let report = auto.tick(now, &[stats], &cluster.catalog);
            for route in &cluster.catalog.routes {
                let (run, longest) = hot_run.entry(route.route_id).or_default();
                *run = if report.window.score(route.route_id) >= cfg.threshold_ops_per_min { *run + 1 } else { 0 };
                *longest = (*longest).max(*run);
            }
            prop_assert!(report.calls.len() <= cfg.splits_per_cycle);
            if !cfg.enabled {
                prop_assert!(report.calls.is_empty());
            }
            for call in &report.calls {
                check_call(&cfg, &cluster, call, now, &hot_run)?;
            }
            let routes_before = cluster.catalog.routes.len();
            for call in &report.calls {
                let outcome = cluster.apply(call, now);
                auto.report_outcome(call.route_id, outcome);
            }
            prop_assert!(cluster.catalog.routes.len() <= cfg.max_routes.max(routes_before));
        }
    }

    #[test]
    fn a_dominant_key_is_isolated(k in 100u32..60_000, below in 1u32..90, above in 1u32..90, share in 0.55f64..0.95) {
        let cfg = AutoSplitConfig { enabled: true, hysteresis_windows: 1, move_to_least_loaded: false, ..Default::default() };
        let t0 = Instant::now();
        let sampler = Sampler::new(1, &cfg, t0);
        let mut auto = AutoSplit::new(cfg.clone()).unwrap();
        let mut cluster = Cluster::new();
        let hot = key(k);
        let mut now = t0;
        for step in 0..2 {
            now += cfg.window;
            let cold = 1_000u32;
            let hot_ops = (cold as f64 * share / (1.0 - share)) as u32;
            for j in 0..cold {
                let c = if j % 2 == 0 { k - 1 - j % below.min(k - 1) } else { k + 1 + j % above };
                sampler.record(cluster.route_of(&key(c)), &key(c), AccessKind::Write);
            }
            for _ in 0..hot_ops {
                sampler.record(cluster.route_of(&hot), &hot, AccessKind::Write);
            }
            let report = auto.tick(now, &[sampler.snapshot_and_reset(now)], &cluster.catalog);
            prop_assert_eq!(report.calls.len(), 1, "step {}: {:?}", step, report.declines);
            let call = &report.calls[0];
            let expected = if step == 0 { hot.clone() } else { successor(&hot) };
            prop_assert_eq!(&call.split_key, &expected);
            cluster.apply(call, now);
            auto.report_outcome(call.route_id, SplitOutcome::Committed);
        }
        let isolated = cluster.catalog.routes.iter().find(|r| r.start == hot).unwrap();
        prop_assert_eq!(&isolated.end, &successor(&hot));
    }

    #[test]
    fn never_a_midpoint_unless_the_bug_is_set(lo in 0u32..30_000, width in 10u32..20_000, bug in any::<bool>()) {
        let cfg = AutoSplitConfig { enabled: true, hysteresis_windows: 1, split_midpoint_bug: bug, ..Default::default() };
        let t0 = Instant::now();
        let sampler = Sampler::new(1, &cfg, t0);
        let mut auto = AutoSplit::new(cfg.clone()).unwrap();
        // Route [k00000, k99999): its byte midpoint lies outside the loaded keys k0xxxx-k4xxxx.
        let route = RouteInfo { route_id: 1, start: key(0), end: b"k99999".to_vec(), group_id: 1, active: true, parent_route_id: None };
        let catalog = CatalogView { version: 1, routes: vec![route.clone()], group_ids: vec![1] };
        for j in 0..2_000u32 {
            sampler.record(1, &key(lo + 1 + (j * 7_919) % width), AccessKind::Write);
        }
        let now = t0 + cfg.window;
        let report = auto.tick(now, &[sampler.snapshot_and_reset(now)], &catalog);
        prop_assert_eq!(report.calls.len(), 1, "{:?}", report.declines);
        let split = &report.calls[0].split_key;
        let midpoint = byte_midpoint(&route.start, &route.end).unwrap();
        if bug {
            prop_assert_eq!(split, &midpoint);
        } else {
            prop_assert!(split != &midpoint);
            prop_assert!(split.as_slice() > key(lo).as_slice() && split.as_slice() <= key(lo + width).as_slice(), "{:?}", String::from_utf8_lossy(split));
        }
    }
}
