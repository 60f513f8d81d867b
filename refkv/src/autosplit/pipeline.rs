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
        Ok(AutoSplit { detector: Detector::new(cfg.clone()), scheduler: Scheduler::new(cfg.clone()), cfg })
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
    pub fn tick(&mut self, now: Instant, node_windows: &[WindowStats], catalog: &CatalogView) -> TickReport {
        let window = ClusterWindow::merge(node_windows, &self.cfg);
        let evaluation = self.detector.evaluate(now, &window, catalog);
        let loads = group_loads(&window, catalog);
        let schedule = self.scheduler.plan(now, &evaluation.proposals, catalog, &loads);
        let mut declines = evaluation.declines;
        declines.extend(schedule.declines);
        TickReport { calls: schedule.calls, proposals: evaluation.proposals, declines, group_loads: loads, window }
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
