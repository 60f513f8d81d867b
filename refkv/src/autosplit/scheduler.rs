//! The split scheduler: turns the detector's proposals into `SplitRange` calls for the server,
//! choosing a target group and enforcing the budgets and the runtime kill switch.
//!
//! Target choice: the least-loaded group (by the window's per-group score), but only when
//! moving the right child there lowers the busier of the two groups — otherwise the split stays
//! in the source group. Planned moves update the projected loads, so several splits in one
//! cycle spread over groups. Budgets: at most `splits_per_cycle` calls per cycle, never more
//! than `max_routes` routes in the catalog. A route with a call in flight (issued, outcome not
//! reported, younger than `in_flight_timeout`) is not planned again.
//!
//! The seeded `split-midpoint` bug is applied where split keys are chosen
//! ([`super::split_key`]), so a midpoint split still goes through hysteresis, cooldown and
//! these budgets: only routes that crossed the threshold are split, at the wrong key.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::config::AutoSplitConfig;
use super::detector::{Decline, SplitProposal};
use super::split_key::{DeclineReason, SplitReason};
use super::stats::ClusterWindow;
use super::view::CatalogView;

/// One `Distribution.SplitRange` call for the server to execute.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SplitRangeCall {
    /// The catalog version the plan was made against (the RPC's CAS).
    pub expected_catalog_version: u64,
    pub route_id: u64,
    pub split_key: Vec<u8>,
    /// Group that receives the right child; equal to `source_group_id` for a same-group split.
    pub target_group_id: u64,
    pub source_group_id: u64,
    pub reason: SplitReason,
    /// The route's score when planned, weighted ops per minute.
    pub score: f64,
}

/// What became of a [`SplitRangeCall`], reported back by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitOutcome {
    /// `SplitRange` succeeded (the children will show up in the catalog).
    Committed,
    /// `SplitRange` failed (version conflict, not leader, timeout, …); the route may be
    /// planned again.
    Failed,
}

/// Runtime on/off switch, cheap to clone and flip from an admin RPC.
#[derive(Debug, Clone)]
pub struct KillSwitch(Arc<AtomicBool>);

impl KillSwitch {
    pub fn new(enabled: bool) -> KillSwitch {
        KillSwitch(Arc::new(AtomicBool::new(enabled)))
    }

    pub fn set_enabled(&self, enabled: bool) {
        self.0.store(enabled, Ordering::SeqCst);
    }

    pub fn is_enabled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The calls planned for one cycle and the proposals that were held back.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Schedule {
    pub calls: Vec<SplitRangeCall>,
    pub declines: Vec<Decline>,
}

/// Scheduler state across cycles (the in-flight set).
#[derive(Debug)]
pub struct Scheduler {
    cfg: AutoSplitConfig,
    switch: KillSwitch,
    in_flight: HashMap<u64, Instant>,
}

impl Scheduler {
    pub fn new(cfg: AutoSplitConfig) -> Scheduler {
        let switch = KillSwitch::new(cfg.enabled);
        Scheduler {
            cfg,
            switch,
            in_flight: HashMap::new(),
        }
    }

    /// A handle on the kill switch (shares state with the scheduler).
    pub fn kill_switch(&self) -> KillSwitch {
        self.switch.clone()
    }

    /// Plans this cycle's calls. `group_load` is each group's score (see [`group_loads`]).
    pub fn plan(
        &mut self,
        now: Instant,
        proposals: &[SplitProposal],
        catalog: &CatalogView,
        group_load: &BTreeMap<u64, f64>,
    ) -> Schedule {
        let timeout = self.cfg.in_flight_timeout;
        self.in_flight.retain(|id, since| {
            now.saturating_duration_since(*since) < timeout && catalog.route(*id).is_some()
        });
        let mut loads: BTreeMap<u64, f64> =
            catalog.all_groups().into_iter().map(|g| (g, 0.0)).collect();
        for (group, load) in group_load {
            loads.insert(*group, *load);
        }
        let mut ordered: Vec<&SplitProposal> = proposals.iter().collect();
        ordered.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.route_id.cmp(&b.route_id))
        });
        let mut routes = catalog.routes.len();
        let mut schedule = Schedule::default();
        for p in ordered {
            let hold = |reason| Decline {
                route_id: p.route_id,
                score: p.score,
                reason,
            };
            let route = catalog.route(p.route_id);
            let reason = if !self.switch.is_enabled() {
                Some(DeclineReason::Disabled)
            } else if route.is_none() {
                Some(DeclineReason::UnknownRoute)
            } else if self.in_flight.contains_key(&p.route_id) {
                Some(DeclineReason::InFlight)
            } else if schedule.calls.len() >= self.cfg.splits_per_cycle {
                Some(DeclineReason::CycleBudget)
            } else if routes >= self.cfg.max_routes {
                Some(DeclineReason::MaxRoutes { routes })
            } else {
                None
            };
            if let Some(reason) = reason {
                schedule.declines.push(hold(reason));
                continue;
            }
            let source = route.map_or(p.group_id, |r| r.group_id);
            let moved = p.score * p.right_share.clamp(0.0, 1.0);
            let target = self.pick_target(source, moved, &loads);
            if target != source {
                *loads.entry(source).or_default() -= moved;
                *loads.entry(target).or_default() += moved;
            }
            routes += 1;
            self.in_flight.insert(p.route_id, now);
            schedule.calls.push(SplitRangeCall {
                expected_catalog_version: catalog.version,
                route_id: p.route_id,
                split_key: p.split_key.clone(),
                target_group_id: target,
                source_group_id: source,
                reason: p.reason.clone(),
                score: p.score,
            });
        }
        schedule
    }

    fn pick_target(&self, source: u64, moved: f64, loads: &BTreeMap<u64, f64>) -> u64 {
        if !self.cfg.move_to_least_loaded {
            return source;
        }
        let source_load = loads.get(&source).copied().unwrap_or(0.0);
        let least = loads
            .iter()
            .filter(|(g, _)| **g != source)
            .min_by(|a, b| a.1.total_cmp(b.1).then(a.0.cmp(b.0)))
            .map(|(g, l)| (*g, *l));
        match least {
            Some((group, load)) if load + moved < source_load => group,
            _ => source,
        }
    }

    /// Records what became of a call for `route_id`.
    pub fn report_outcome(&mut self, route_id: u64, outcome: SplitOutcome) {
        match outcome {
            // Stay in flight until the route leaves the catalog, so it is not planned twice
            // while the split (or a cross-group move) completes.
            SplitOutcome::Committed => {}
            SplitOutcome::Failed => {
                self.in_flight.remove(&route_id);
            }
        }
    }

    /// Route ids with a call in flight.
    pub fn in_flight(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.in_flight.keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

/// Each group's load this window: the sum of its routes' scores (0 for groups without load).
pub fn group_loads(window: &ClusterWindow, catalog: &CatalogView) -> BTreeMap<u64, f64> {
    let mut loads: BTreeMap<u64, f64> =
        catalog.all_groups().into_iter().map(|g| (g, 0.0)).collect();
    for route in &catalog.routes {
        *loads.entry(route.group_id).or_default() += window.score(route.route_id);
    }
    loads
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
