//! Table-driven scheduler tests: target choice, budgets, kill switch, in-flight calls.

use std::time::Duration;

use super::*;
use crate::autosplit::view::RouteInfo;

fn route(route_id: u64, group_id: u64) -> RouteInfo {
    let start = vec![route_id as u8 * 10];
    let end = vec![route_id as u8 * 10 + 10];
    RouteInfo {
        route_id,
        start,
        end,
        group_id,
        active: true,
        parent_route_id: None,
    }
}

fn proposal(route_id: u64, group_id: u64, score: f64, right_share: f64) -> SplitProposal {
    SplitProposal {
        route_id,
        group_id,
        split_key: vec![route_id as u8 * 10 + 5],
        reason: SplitReason::SubRangeMedian {
            left_share: 1.0 - right_share,
            sampled: true,
        },
        score,
        right_share,
    }
}

struct Case {
    name: &'static str,
    cfg: AutoSplitConfig,
    routes: Vec<RouteInfo>,
    loads: Vec<(u64, f64)>,
    proposals: Vec<SplitProposal>,
    /// (route, target group) of every call, in order.
    calls: Vec<(u64, u64)>,
    declines: Vec<(u64, DeclineReason)>,
}

fn enabled() -> AutoSplitConfig {
    AutoSplitConfig {
        enabled: true,
        ..Default::default()
    }
}

#[test]
fn scheduling_table() {
    let cases = vec![
        Case {
            name: "the right child moves to the least-loaded group",
            cfg: enabled(),
            routes: vec![route(1, 1), route(2, 2), route(3, 3)],
            loads: vec![(1, 100e3), (2, 30e3), (3, 10e3)],
            proposals: vec![proposal(1, 1, 100e3, 0.5)],
            calls: vec![(1, 3)],
            declines: vec![],
        },
        Case {
            name: "a group without routes is a valid target",
            cfg: enabled(),
            routes: vec![route(1, 1), route(2, 2)],
            loads: vec![(1, 100e3), (2, 30e3)],
            proposals: vec![proposal(1, 1, 100e3, 0.5)],
            calls: vec![(1, 3)],
            declines: vec![],
        },
        Case {
            name: "no move when it would overload the target",
            cfg: enabled(),
            routes: vec![route(1, 1), route(2, 2)],
            loads: vec![(1, 100e3), (2, 90e3), (3, 95e3)],
            proposals: vec![proposal(1, 1, 60e3, 0.5)],
            calls: vec![(1, 1)],
            declines: vec![],
        },
        Case {
            name: "moves disabled: same-group split",
            cfg: AutoSplitConfig {
                move_to_least_loaded: false,
                ..enabled()
            },
            routes: vec![route(1, 1)],
            loads: vec![(1, 100e3), (2, 0.0)],
            proposals: vec![proposal(1, 1, 100e3, 0.5)],
            calls: vec![(1, 1)],
            declines: vec![],
        },
        Case {
            name: "one split per cycle by default, hottest first",
            cfg: enabled(),
            routes: vec![route(1, 1), route(2, 1)],
            loads: vec![(1, 200e3), (2, 0.0), (3, 0.0)],
            proposals: vec![proposal(1, 1, 80e3, 0.5), proposal(2, 1, 120e3, 0.5)],
            calls: vec![(2, 2)],
            declines: vec![(1, DeclineReason::CycleBudget)],
        },
        Case {
            name: "two splits per cycle spread over groups",
            cfg: AutoSplitConfig {
                splits_per_cycle: 2,
                ..enabled()
            },
            routes: vec![route(1, 1), route(2, 1)],
            loads: vec![(1, 200e3), (2, 0.0), (3, 0.0)],
            proposals: vec![proposal(1, 1, 100e3, 0.5), proposal(2, 1, 100e3, 0.5)],
            calls: vec![(1, 2), (2, 3)],
            declines: vec![],
        },
        Case {
            name: "the route cap holds",
            cfg: AutoSplitConfig {
                splits_per_cycle: 5,
                max_routes: 3,
                ..enabled()
            },
            routes: vec![route(1, 1), route(2, 1)],
            loads: vec![(1, 200e3)],
            proposals: vec![proposal(1, 1, 100e3, 0.5), proposal(2, 1, 90e3, 0.5)],
            calls: vec![(1, 2)],
            declines: vec![(2, DeclineReason::MaxRoutes { routes: 3 })],
        },
        Case {
            name: "the kill switch holds everything",
            cfg: AutoSplitConfig {
                enabled: false,
                ..Default::default()
            },
            routes: vec![route(1, 1)],
            loads: vec![(1, 100e3)],
            proposals: vec![proposal(1, 1, 100e3, 0.5)],
            calls: vec![],
            declines: vec![(1, DeclineReason::Disabled)],
        },
        Case {
            name: "a proposal for a route missing from the catalog",
            cfg: enabled(),
            routes: vec![route(1, 1)],
            loads: vec![],
            proposals: vec![proposal(9, 1, 100e3, 0.5)],
            calls: vec![],
            declines: vec![(9, DeclineReason::UnknownRoute)],
        },
    ];
    for case in cases {
        let mut s = Scheduler::new(case.cfg.clone());
        let catalog = CatalogView {
            version: 7,
            routes: case.routes.clone(),
            group_ids: vec![1, 2, 3],
        };
        let loads: BTreeMap<u64, f64> = case.loads.iter().copied().collect();
        let plan = s.plan(Instant::now(), &case.proposals, &catalog, &loads);
        let calls: Vec<(u64, u64)> = plan
            .calls
            .iter()
            .map(|c| (c.route_id, c.target_group_id))
            .collect();
        assert_eq!(calls, case.calls, "{}", case.name);
        assert!(
            plan.calls.iter().all(|c| c.expected_catalog_version == 7),
            "{}",
            case.name
        );
        let declines: Vec<(u64, DeclineReason)> = plan
            .declines
            .iter()
            .map(|d| (d.route_id, d.reason.clone()))
            .collect();
        assert_eq!(declines, case.declines, "{}", case.name);
    }
}

#[test]
fn calls_carry_the_proposal() {
    let mut s = Scheduler::new(enabled());
    let catalog = CatalogView {
        version: 3,
        routes: vec![route(1, 1)],
        group_ids: vec![1, 2],
    };
    let p = proposal(1, 1, 100e3, 0.5);
    let call = s
        .plan(
            Instant::now(),
            std::slice::from_ref(&p),
            &catalog,
            &BTreeMap::from([(1, 100e3)]),
        )
        .calls
        .remove(0);
    assert_eq!(
        call,
        SplitRangeCall {
            expected_catalog_version: 3,
            route_id: 1,
            split_key: p.split_key,
            target_group_id: 2,
            source_group_id: 1,
            reason: p.reason,
            score: 100e3,
        }
    );
}

#[test]
fn in_flight_calls_block_until_failed_gone_or_timed_out() {
    let cfg = AutoSplitConfig {
        in_flight_timeout: Duration::from_secs(10),
        ..enabled()
    };
    let mut s = Scheduler::new(cfg);
    let t0 = Instant::now();
    let catalog = CatalogView {
        version: 1,
        routes: vec![route(1, 1), route(2, 1)],
        group_ids: vec![1],
    };
    let loads = BTreeMap::new();
    let p1 = [proposal(1, 1, 100e3, 0.5)];
    assert_eq!(s.plan(t0, &p1, &catalog, &loads).calls.len(), 1);
    assert_eq!(s.in_flight(), vec![1]);
    let again = s.plan(t0 + Duration::from_secs(2), &p1, &catalog, &loads);
    assert_eq!(again.declines[0].reason, DeclineReason::InFlight);
    // A failed call frees the route at once.
    s.report_outcome(1, SplitOutcome::Failed);
    assert_eq!(
        s.plan(t0 + Duration::from_secs(4), &p1, &catalog, &loads)
            .calls
            .len(),
        1
    );
    // A committed call keeps blocking while the route is still in the catalog…
    s.report_outcome(1, SplitOutcome::Committed);
    assert_eq!(
        s.plan(t0 + Duration::from_secs(6), &p1, &catalog, &loads)
            .calls
            .len(),
        0
    );
    // …until it times out.
    assert_eq!(
        s.plan(t0 + Duration::from_secs(15), &p1, &catalog, &loads)
            .calls
            .len(),
        1
    );
    // A route that left the catalog is no longer in flight.
    let without_1 = CatalogView {
        version: 2,
        routes: vec![route(2, 1)],
        group_ids: vec![1],
    };
    s.plan(t0 + Duration::from_secs(16), &[], &without_1, &loads);
    assert!(s.in_flight().is_empty());
}

#[test]
fn the_kill_switch_can_be_flipped_at_runtime() {
    let mut s = Scheduler::new(AutoSplitConfig::default());
    let switch = s.kill_switch();
    let catalog = CatalogView {
        version: 1,
        routes: vec![route(1, 1)],
        group_ids: vec![1],
    };
    let p = [proposal(1, 1, 100e3, 0.5)];
    let t0 = Instant::now();
    assert!(s.plan(t0, &p, &catalog, &BTreeMap::new()).calls.is_empty());
    switch.set_enabled(true);
    assert_eq!(s.plan(t0, &p, &catalog, &BTreeMap::new()).calls.len(), 1);
    switch.set_enabled(false);
    s.report_outcome(1, SplitOutcome::Failed);
    assert!(s.plan(t0, &p, &catalog, &BTreeMap::new()).calls.is_empty());
}

#[test]
fn group_loads_sum_route_scores_and_include_empty_groups() {
    use crate::autosplit::stats::{ClusterWindow, RouteLoad};
    let catalog = CatalogView {
        version: 1,
        routes: vec![route(1, 1), route(2, 1), route(3, 2)],
        group_ids: vec![1, 2, 3],
    };
    let mut window = ClusterWindow::default();
    for (id, score) in [(1, 10.0), (2, 5.0), (3, 7.0), (99, 1e9)] {
        window.routes.insert(
            id,
            RouteLoad {
                score,
                ..Default::default()
            },
        );
    }
    assert_eq!(
        group_loads(&window, &catalog),
        BTreeMap::from([(1, 15.0), (2, 7.0), (3, 0.0)])
    );
}
