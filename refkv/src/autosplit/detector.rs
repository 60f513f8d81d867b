//! The hotspot detector: turns one merged window per call into split proposals.
//!
//! Per route and window: score (weighted ops/min, from [`ClusterWindow`]); hysteresis (a route
//! becomes a *candidate* after `hysteresis_windows` consecutive windows at or above the
//! threshold, and stays one while its score is at least `down_band × threshold`); cooldown (a
//! route that appears in the catalog as the child of a split — or whose span changed — is not
//! promoted for `cooldown`, measured on the monotonic clock the caller passes in); split-key
//! choice from the evidence ([`choose_split_key`]). Fenced or migrating routes lose their
//! candidacy. The one exception to cooldown and hysteresis is the second half of a hot-key
//! isolation: after `[s, e)` was split at the hot key `k`, the child `[k, e)` may be split at
//! `k ++ [0]` right away (within `hysteresis_windows` windows) if `k` still dominates it.

use std::collections::HashMap;
use std::time::Instant;

use serde::Serialize;

use super::config::AutoSplitConfig;
use super::split_key::{choose_split_key, DeclineReason, KeyChoice, SplitReason};
use super::stats::ClusterWindow;
use super::view::{CatalogView, RouteInfo};

/// A hot route and where to split it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SplitProposal {
    pub route_id: u64,
    /// The route's current group.
    pub group_id: u64,
    pub split_key: Vec<u8>,
    pub reason: SplitReason,
    /// The route's score this window, weighted ops per minute.
    pub score: f64,
    /// Expected share of the route's load in the right child (the one a move relocates).
    pub right_share: f64,
}

/// A hot route that was not split, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decline {
    pub route_id: u64,
    pub score: f64,
    pub reason: DeclineReason,
}

/// The detector's output for one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Evaluation {
    /// Highest score first.
    pub proposals: Vec<SplitProposal>,
    pub declines: Vec<Decline>,
}

/// A route's detector state, for logs and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteStatus {
    /// Consecutive windows at or above the threshold.
    pub windows_over: u32,
    pub candidate: bool,
    pub cooldown_until: Option<Instant>,
}

#[derive(Debug, Default)]
struct RouteState {
    status: RouteStatus,
    /// Second step of a hot-key isolation: the key, and windows left to do it.
    isolation_follow_up: Option<(Vec<u8>, u32)>,
}

/// Detector state across windows. Runs on the default-group leader; a new leader starts
/// with a fresh detector (routes re-earn their hysteresis; cooldowns of splits made before
/// it started are not known).
#[derive(Debug)]
pub struct Detector {
    cfg: AutoSplitConfig,
    states: HashMap<u64, RouteState>,
    /// Span of every route in the previous catalog view.
    known: HashMap<u64, (Vec<u8>, Vec<u8>)>,
    seen_catalog: bool,
    /// Parent route id → hot key, for isolations whose first split was proposed.
    pending_isolation: HashMap<u64, Vec<u8>>,
}

impl Detector {
    pub fn new(cfg: AutoSplitConfig) -> Detector {
        Detector {
            cfg,
            states: HashMap::new(),
            known: HashMap::new(),
            seen_catalog: false,
            pending_isolation: HashMap::new(),
        }
    }

    pub fn config(&self) -> &AutoSplitConfig {
        &self.cfg
    }

    /// The route's state, if the detector has seen it.
    pub fn route_status(&self, route_id: u64) -> Option<RouteStatus> {
        self.states.get(&route_id).map(|s| s.status)
    }

    /// Starts a cooldown for `route_id` now (e.g. for a route the server split by hand).
    pub fn start_cooldown(&mut self, route_id: u64, now: Instant) {
        let state = self.states.entry(route_id).or_default();
        state.status = RouteStatus {
            windows_over: 0,
            candidate: false,
            cooldown_until: Some(now + self.cfg.cooldown),
        };
    }

    /// Scores one window. Call exactly once per window, with the catalog as of now.
    pub fn evaluate(
        &mut self,
        now: Instant,
        window: &ClusterWindow,
        catalog: &CatalogView,
    ) -> Evaluation {
        self.track_lineage(now, catalog);
        let mut routes: Vec<&RouteInfo> = catalog.routes.iter().collect();
        routes.sort_by_key(|r| r.route_id);
        let mut out = Evaluation::default();
        for route in routes {
            self.evaluate_route(now, route, window, &mut out);
        }
        out.proposals.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.route_id.cmp(&b.route_id))
        });
        out
    }

    /// New routes that descend from a known route, and known routes whose span changed, are
    /// split children: they start in cooldown (and may carry an isolation follow-up).
    fn track_lineage(&mut self, now: Instant, catalog: &CatalogView) {
        for route in &catalog.routes {
            let span_changed = match self.known.get(&route.route_id) {
                Some((start, end)) => *start != route.start || *end != route.end,
                None => false,
            };
            let parent_known = route
                .parent_route_id
                .is_some_and(|p| self.known.contains_key(&p));
            let is_new_child = !self.known.contains_key(&route.route_id) && parent_known;
            if !self.seen_catalog || !(span_changed || is_new_child) {
                continue;
            }
            let follow_up = route
                .parent_route_id
                .and_then(|p| self.pending_isolation.get(&p))
                .filter(|key| **key == route.start)
                .map(|key| (key.clone(), self.cfg.hysteresis_windows));
            let cooldown_until = Some(now + self.cfg.cooldown);
            self.states.insert(
                route.route_id,
                RouteState {
                    status: RouteStatus {
                        cooldown_until,
                        ..Default::default()
                    },
                    isolation_follow_up: follow_up,
                },
            );
        }
        self.known = catalog
            .routes
            .iter()
            .map(|r| (r.route_id, (r.start.clone(), r.end.clone())))
            .collect();
        self.states.retain(|id, _| self.known.contains_key(id));
        self.pending_isolation
            .retain(|id, _| self.known.contains_key(id));
        self.seen_catalog = true;
    }

    fn evaluate_route(
        &mut self,
        now: Instant,
        route: &RouteInfo,
        window: &ClusterWindow,
        out: &mut Evaluation,
    ) {
        let threshold = self.cfg.threshold_ops_per_min;
        let load = window.route(route.route_id);
        let score = load.map_or(0.0, |l| l.score);
        let hot = score >= threshold;
        let warm = score >= threshold * self.cfg.down_band;
        let state = self.states.entry(route.route_id).or_default();
        let decline = |reason| Decline {
            route_id: route.route_id,
            score,
            reason,
        };

        if !route.active {
            state.status.windows_over = 0;
            state.status.candidate = false;
            if hot {
                out.declines.push(decline(DeclineReason::NotActive));
            }
            return;
        }

        if let Some((key, windows_left)) = state.isolation_follow_up.take() {
            if windows_left > 1 {
                state.isolation_follow_up = Some((key.clone(), windows_left - 1));
            }
            if warm {
                if let Ok(choice) = choose_split_key(route, load, &self.cfg) {
                    if matches!(&choice.reason, SplitReason::IsolateHotKey { key: k, .. } if *k == key)
                    {
                        out.proposals.push(proposal(route, score, choice));
                        return;
                    }
                }
            }
        }

        if let Some(until) = state.status.cooldown_until {
            if now < until {
                state.status.windows_over = 0;
                state.status.candidate = false;
                if hot {
                    let remaining_ms = until
                        .duration_since(now)
                        .as_millis()
                        .min(u128::from(u64::MAX)) as u64;
                    out.declines
                        .push(decline(DeclineReason::Cooldown { remaining_ms }));
                }
                return;
            }
            state.status.cooldown_until = None;
        }

        update_hysteresis(&mut state.status, hot, warm, self.cfg.hysteresis_windows);
        if !state.status.candidate {
            return;
        }
        match choose_split_key(route, load, &self.cfg) {
            Ok(choice) => {
                match &choice.reason {
                    SplitReason::IsolateHotKey {
                        key,
                        completes_isolation: false,
                        ..
                    } => {
                        self.pending_isolation.insert(route.route_id, key.clone());
                    }
                    _ => {
                        self.pending_isolation.remove(&route.route_id);
                    }
                }
                out.proposals.push(proposal(route, score, choice));
            }
            Err(reason) => out.declines.push(decline(reason)),
        }
    }
}

fn update_hysteresis(status: &mut RouteStatus, hot: bool, warm: bool, needed: u32) {
    if status.candidate {
        if !warm {
            status.candidate = false;
            status.windows_over = 0;
        } else if hot {
            status.windows_over = status.windows_over.saturating_add(1);
        }
    } else if hot {
        status.windows_over = status.windows_over.saturating_add(1);
        status.candidate = status.windows_over >= needed;
    } else {
        status.windows_over = 0;
    }
}

fn proposal(route: &RouteInfo, score: f64, choice: KeyChoice) -> SplitProposal {
    SplitProposal {
        route_id: route.route_id,
        group_id: route.group_id,
        split_key: choice.split_key,
        reason: choice.reason,
        score,
        right_share: choice.right_share,
    }
}

#[cfg(test)]
#[path = "detector_tests.rs"]
mod tests;
