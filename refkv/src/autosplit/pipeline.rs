//! [`AutoSplit`]: the detector and scheduler behind one call per window, for the
//! default-group leader.

use std::collections::BTreeMap;
use std::time::Instant;

use super::config::{AutoSplitConfig, ConfigError};
use super::detector::{Decline, Detector, SplitProposal};
use super::scheduler::{group_loads, KillSwitch, Scheduler, SplitOutcome, SplitRangeCall};
use super::stats::{ClusterWindow, WindowStats};
use super::view::CatalogView;

/// Everything one cycle decided, for the server to execute and log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickReport {
    /// Calls to execute, in order.
    pub calls: Vec<SplitRangeCall>,
    /// What the detector proposed (before budgets and the kill switch).
    pub proposals: Vec<SplitProposal>,
    /// Hot routes not split this cycle, with the reason (detector and scheduler).
    pub declines: Vec<Decline>,
    /// Each group's score this window, weighted ops per minute.
    pub group_loads: BTreeMap<u64, f64>,
    /// The merged window the decisions were made on.
    pub window: ClusterWindow,
}

/// Detector + scheduler state of the default-group leader.
#[derive(Debug)]
pub struct AutoSplit {
    cfg: AutoSplitConfig,
    detector: Detector,
    scheduler: Scheduler,
}

impl AutoSplit {
    /// Validates `cfg` and starts with no history.
    pub fn new(cfg: AutoSplitConfig) -> Result<AutoSplit, ConfigError> {
        cfg.validate()?;
        Ok(AutoSplit {
            detector: Detector::new(cfg.clone()),
            scheduler: Scheduler::new(cfg.clone()),
            cfg,
        })
    }

    pub fn config(&self) -> &AutoSplitConfig {
        &self.cfg
    }

    /// The runtime kill switch (clone it into the admin RPC handler).
    pub fn kill_switch(&self) -> KillSwitch {
        self.scheduler.kill_switch()
    }

    /// One cycle: merge the nodes' windows, detect, schedule. Call once per window with the
    /// window of every node that answered and the current catalog.
    pub fn tick(
        &mut self,
        now: Instant,
        node_windows: &[WindowStats],
        catalog: &CatalogView,
    ) -> TickReport {
        let window = ClusterWindow::merge(node_windows, &self.cfg);
        let evaluation = self.detector.evaluate(now, &window, catalog);
        let loads = group_loads(&window, catalog);
        let schedule = self
            .scheduler
            .plan(now, &evaluation.proposals, catalog, &loads);
        let mut declines = evaluation.declines;
        declines.extend(schedule.declines);
        TickReport {
            calls: schedule.calls,
            proposals: evaluation.proposals,
            declines,
            group_loads: loads,
            window,
        }
    }

    /// Turns splitting on or off at runtime (same as flipping [`AutoSplit::kill_switch`]).
    pub fn set_enabled(&self, enabled: bool) {
        self.scheduler.kill_switch().set_enabled(enabled);
    }

    pub fn is_enabled(&self) -> bool {
        self.scheduler.kill_switch().is_enabled()
    }

    /// Reports what became of a call returned by [`AutoSplit::tick`].
    pub fn report_outcome(&mut self, route_id: u64, outcome: SplitOutcome) {
        self.scheduler.report_outcome(route_id, outcome);
    }

    /// Starts a cooldown for a route split outside auto-split (optional: children of any split
    /// seen in the catalog get one anyway).
    pub fn start_cooldown(&mut self, route_id: u64, now: Instant) {
        self.detector.start_cooldown(route_id, now);
    }

    pub fn detector(&self) -> &Detector {
        &self.detector
    }

    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::autosplit::keys::strictly_inside;
    use crate::autosplit::sampler::{AccessKind, Sampler};
    use crate::autosplit::view::RouteInfo;

    fn route(route_id: u64, start: &str, end: &str, group_id: u64) -> RouteInfo {
        RouteInfo {
            route_id,
            start: start.into(),
            end: end.into(),
            group_id,
            active: true,
            parent_route_id: None,
        }
    }

    /// Applies a call the way refkv's SplitRange does: the parent is replaced by two children.
    fn apply(catalog: &mut CatalogView, call: &SplitRangeCall, next_id: &mut u64) {
        let index = catalog
            .routes
            .iter()
            .position(|r| r.route_id == call.route_id)
            .unwrap();
        let parent = catalog.routes.remove(index);
        let left = RouteInfo {
            route_id: *next_id,
            end: call.split_key.clone(),
            parent_route_id: Some(parent.route_id),
            ..parent.clone()
        };
        let right = RouteInfo {
            route_id: *next_id + 1,
            start: call.split_key.clone(),
            group_id: call.target_group_id,
            parent_route_id: Some(parent.route_id),
            ..parent
        };
        *next_id += 2;
        catalog.routes.extend([left, right]);
        catalog.routes.sort_by(|a, b| a.start.cmp(&b.start));
        catalog.version += 1;
    }

    /// The default settings on the test scenario: 3 nodes, a hot range of sequential inserts
    /// (plus reads of recent keys) at 1,000 ops/s, 30 ops/s of cold background, 60 s.
    #[test]
    fn a_hot_range_at_1000_ops_per_s_is_split_early_and_not_ping_ponged() {
        let cfg = AutoSplitConfig {
            enabled: true,
            ..Default::default()
        };
        let t0 = Instant::now();
        let samplers: Vec<Sampler> = (1..=3).map(|n| Sampler::new(n, &cfg, t0)).collect();
        let mut auto = AutoSplit::new(cfg.clone()).unwrap();
        let mut catalog = CatalogView {
            version: 1,
            routes: vec![
                route(1, "", "g", 1),
                route(2, "g", "p", 2),
                route(3, "p", "", 3),
            ],
            group_ids: vec![1, 2, 3],
        };
        let mut next_id = 10;
        let mut seq = 0u64;
        let mut splits: Vec<(Duration, SplitRangeCall)> = Vec::new();
        for window in 1..=30u32 {
            let now = t0 + cfg.window * window;
            let route_of = |catalog: &CatalogView, key: &[u8]| {
                catalog
                    .routes
                    .iter()
                    .find(|r| crate::autosplit::keys::in_route(key, &r.start, &r.end))
                    .unwrap()
                    .route_id
            };
            for op in 0..2_000u64 {
                let node = &samplers[(op % 3) as usize];
                let (key, kind) = if op % 10 < 7 {
                    seq += 1;
                    (format!("hot/{seq:08}"), AccessKind::Write)
                } else {
                    (
                        format!("hot/{:08}", seq.saturating_sub(op % 50)),
                        AccessKind::Read,
                    )
                };
                node.record(route_of(&catalog, key.as_bytes()), key.as_bytes(), kind);
            }
            for op in 0..60u64 {
                let key = format!("{}cold/{op:04}", ["a", "h", "x"][(op % 3) as usize]);
                samplers[(op % 3) as usize].record(
                    route_of(&catalog, key.as_bytes()),
                    key.as_bytes(),
                    AccessKind::Write,
                );
            }
            let windows: Vec<WindowStats> =
                samplers.iter().map(|s| s.snapshot_and_reset(now)).collect();
            let report = auto.tick(now, &windows, &catalog);
            for call in report.calls {
                let parent = catalog.route(call.route_id).unwrap().clone();
                assert!(strictly_inside(&call.split_key, &parent.start, &parent.end));
                splits.push((now - t0, call.clone()));
                apply(&mut catalog, &call, &mut next_id);
                auto.report_outcome(call.route_id, SplitOutcome::Committed);
            }
        }
        for (at, call) in &splits {
            eprintln!(
                "split at {at:?}: route {} at {:?} -> group {}",
                call.route_id,
                String::from_utf8_lossy(&call.split_key),
                call.target_group_id
            );
        }
        let (first_at, first) = &splits[0];
        assert_eq!(first.route_id, 2, "the hot route is split first");
        assert!(
            *first_at <= Duration::from_secs(8),
            "first split planned at {first_at:?}"
        );
        // Window 3 inserted hot/00002801..hot/00004200: its median is a sampled key near 3500.
        let key = first.split_key.as_slice();
        assert!(
            key >= b"hot/00003000".as_slice() && key < b"hot/00004000".as_slice(),
            "{:?}",
            String::from_utf8_lossy(key)
        );
        assert_ne!(
            first.target_group_id, 2,
            "the right child moves off the hot group"
        );
        // Children are never split again before the cooldown has passed.
        for pair in splits.windows(2) {
            assert!(
                pair[1].0 - pair[0].0 >= cfg.cooldown,
                "{:?}",
                splits.iter().map(|s| s.0).collect::<Vec<_>>()
            );
        }
        assert!(
            splits.len() >= 2 && splits.len() <= 3,
            "{} splits in 60 s",
            splits.len()
        );
    }

    #[test]
    fn the_kill_switch_stops_calls_but_not_detection() {
        let cfg = AutoSplitConfig {
            enabled: true,
            hysteresis_windows: 1,
            ..Default::default()
        };
        let t0 = Instant::now();
        let sampler = Sampler::new(1, &cfg, t0);
        let mut auto = AutoSplit::new(cfg.clone()).unwrap();
        let catalog = CatalogView {
            version: 1,
            routes: vec![route(1, "", "", 1)],
            group_ids: vec![1, 2],
        };
        let run = |auto: &mut AutoSplit, at: u32| {
            for i in 0..2_000 {
                sampler.record(1, format!("k{i:05}").as_bytes(), AccessKind::Write);
            }
            let now = t0 + cfg.window * at;
            auto.tick(now, &[sampler.snapshot_and_reset(now)], &catalog)
        };
        auto.set_enabled(false);
        assert!(!auto.is_enabled());
        let off = run(&mut auto, 1);
        assert!(off.calls.is_empty());
        assert_eq!(off.proposals.len(), 1, "the detector keeps working");
        assert_eq!(
            off.declines[0].reason,
            crate::autosplit::DeclineReason::Disabled
        );
        auto.kill_switch().set_enabled(true);
        assert_eq!(run(&mut auto, 2).calls.len(), 1);
    }

    #[test]
    fn a_bad_config_is_refused_with_the_field_named() {
        let err = AutoSplit::new(AutoSplitConfig {
            buckets: 0,
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(err.field, "buckets");
    }
}
