//! Table-driven detector tests: hysteresis, cooldown through lineage, inactive routes and the
//! two-step hot-key isolation.

use std::time::Duration;

use super::*;
use crate::autosplit::stats::{HotKey, KeySegment, RouteLoad};

const T: f64 = 50_000.0;

fn route(route_id: u64, start: &str, end: &str, parent: Option<u64>) -> RouteInfo {
    RouteInfo {
        route_id,
        start: start.into(),
        end: end.into(),
        group_id: 1,
        active: true,
        parent_route_id: parent,
    }
}

fn catalog(version: u64, routes: Vec<RouteInfo>) -> CatalogView {
    CatalogView {
        version,
        routes,
        group_ids: vec![1, 2, 3],
    }
}

/// A load spread evenly over `[lo, hi]`, plus optional hot keys with their load units.
fn spread(score: f64, lo: &str, hi: &str, hot: &[(&str, u64)]) -> RouteLoad {
    let base = 1_000;
    let hot_load: u64 = hot.iter().map(|(_, n)| n).sum();
    let mut segments = vec![KeySegment {
        lo: lo.into(),
        hi: hi.into(),
        count: base,
    }];
    segments.extend(hot.iter().map(|(k, n)| KeySegment {
        lo: (*k).into(),
        hi: (*k).into(),
        count: *n,
    }));
    segments.sort_by(|a, b| a.lo.cmp(&b.lo));
    RouteLoad {
        score,
        load: base + hot_load,
        segments,
        hot_keys: hot
            .iter()
            .map(|(k, n)| HotKey {
                key: (*k).into(),
                count: *n,
                error: 0,
            })
            .collect(),
        ..Default::default()
    }
}

fn window(loads: Vec<(u64, RouteLoad)>) -> ClusterWindow {
    ClusterWindow {
        routes: loads.into_iter().collect(),
        nodes: 1,
        skipped_nodes: 0,
    }
}

/// One character per window: `P` proposal, `C` cooldown decline, `N` not-active decline,
/// `E` no-evidence decline, `-` nothing.
fn outcome_char(out: &Evaluation, route_id: u64) -> char {
    if out.proposals.iter().any(|p| p.route_id == route_id) {
        return 'P';
    }
    match out
        .declines
        .iter()
        .find(|d| d.route_id == route_id)
        .map(|d| &d.reason)
    {
        Some(DeclineReason::Cooldown { .. }) => 'C',
        Some(DeclineReason::NotActive) => 'N',
        Some(DeclineReason::NoEvidence) => 'E',
        Some(other) => panic!("unexpected decline {other:?}"),
        None => '-',
    }
}

#[test]
fn hysteresis_table() {
    struct Case {
        name: &'static str,
        cfg: AutoSplitConfig,
        scores: &'static [f64],
        expect: &'static str,
    }
    let base = AutoSplitConfig::default();
    let cases = [
        Case {
            name: "three hot windows make a candidate",
            cfg: base.clone(),
            scores: &[60e3, 60e3, 60e3],
            expect: "--P",
        },
        Case {
            name: "exactly the threshold counts as hot",
            cfg: base.clone(),
            scores: &[T, T, T],
            expect: "--P",
        },
        Case {
            name: "a cold window resets warming",
            cfg: base.clone(),
            scores: &[60e3, 60e3, 30e3, 60e3, 60e3, 60e3],
            expect: "-----P",
        },
        Case {
            name: "a near miss inside the band also resets warming",
            cfg: base.clone(),
            scores: &[60e3, 60e3, 45e3, 60e3, 60e3],
            expect: "-----",
        },
        Case {
            name: "a candidate stays one inside the band",
            cfg: base.clone(),
            scores: &[60e3, 60e3, 60e3, 45e3, 41e3, 60e3],
            expect: "--PPPP",
        },
        Case {
            name: "a candidate drops out below 0.8x",
            cfg: base.clone(),
            scores: &[60e3, 60e3, 60e3, 39e3, 60e3, 60e3],
            expect: "--P---",
        },
        Case {
            name: "a cold route never proposes",
            cfg: base.clone(),
            scores: &[1e3; 8],
            expect: "--------",
        },
        Case {
            name: "hysteresis of one window",
            cfg: AutoSplitConfig {
                hysteresis_windows: 1,
                ..base.clone()
            },
            scores: &[60e3, 10e3, 60e3],
            expect: "P-P",
        },
        Case {
            name: "a wider band keeps candidacy longer",
            cfg: AutoSplitConfig {
                down_band: 0.5,
                ..base.clone()
            },
            scores: &[60e3, 60e3, 60e3, 30e3, 24e3],
            expect: "--PP-",
        },
    ];
    for case in cases {
        let mut detector = Detector::new(case.cfg.clone());
        let t0 = Instant::now();
        let cat = catalog(1, vec![route(1, "a", "z", None)]);
        let got: String = case
            .scores
            .iter()
            .enumerate()
            .map(|(i, score)| {
                let w = window(vec![(1, spread(*score, "b", "y", &[]))]);
                outcome_char(
                    &detector.evaluate(t0 + Duration::from_secs(2 * i as u64), &w, &cat),
                    1,
                )
            })
            .collect();
        assert_eq!(got, case.expect, "{}", case.name);
    }
}

#[test]
fn split_children_inherit_a_cooldown_then_re_earn_hysteresis() {
    let cfg = AutoSplitConfig::default();
    let mut d = Detector::new(cfg.clone());
    let t0 = Instant::now();
    let at = |s: u64| t0 + Duration::from_secs(s);
    let parent = catalog(1, vec![route(1, "", "", None)]);
    let hot = |id| window(vec![(id, spread(80e3, "k000", "k999", &[]))]);
    for s in [0, 2] {
        assert_eq!(outcome_char(&d.evaluate(at(s), &hot(1), &parent), 1), '-');
    }
    let out = d.evaluate(at(4), &hot(1), &parent);
    assert_eq!(out.proposals.len(), 1);
    assert!(matches!(
        out.proposals[0].reason,
        SplitReason::SubRangeMedian { .. }
    ));
    let key = out.proposals[0].split_key.clone();
    assert!(key.as_slice() > b"k000".as_slice() && key.as_slice() < b"k999".as_slice());

    let k = String::from_utf8_lossy(&key).into_owned();
    let children = catalog(
        2,
        vec![route(2, "", &k, Some(1)), route(3, &k, "", Some(1))],
    );
    let both_hot = |_| {
        window(vec![
            (2, spread(80e3, "k000", "k499", &[])),
            (3, spread(80e3, "k500", "k999", &[])),
        ])
    };
    let mut timeline = String::new();
    for s in (6..=50).step_by(2) {
        let out = d.evaluate(at(s), &both_hot(()), &children);
        timeline.push(outcome_char(&out, 3));
        assert_eq!(
            outcome_char(&out, 2),
            outcome_char(&out, 3),
            "children behave alike at {s}s"
        );
    }
    // Cooldown from 6 s to 36 s (15 windows of C), then three hot windows: P at 40 s.
    assert_eq!(timeline, format!("{}--PPPPPP", "C".repeat(15)));
    let status = d.route_status(3).unwrap();
    assert!(status.candidate && status.cooldown_until.is_none());
}

#[test]
fn cooldown_declines_report_the_time_left() {
    let mut d = Detector::new(AutoSplitConfig::default());
    let t0 = Instant::now();
    d.start_cooldown(1, t0);
    let cat = catalog(1, vec![route(1, "a", "z", None)]);
    let out = d.evaluate(
        t0 + Duration::from_secs(10),
        &window(vec![(1, spread(90e3, "b", "y", &[]))]),
        &cat,
    );
    assert_eq!(
        out.declines[0].reason,
        DeclineReason::Cooldown {
            remaining_ms: 20_000
        }
    );
}

#[test]
fn a_known_route_whose_span_changed_is_treated_as_a_split_child() {
    let cfg = AutoSplitConfig {
        hysteresis_windows: 1,
        ..Default::default()
    };
    let mut d = Detector::new(cfg);
    let t0 = Instant::now();
    let w = window(vec![(1, spread(90e3, "b", "y", &[]))]);
    assert_eq!(
        outcome_char(
            &d.evaluate(t0, &w, &catalog(1, vec![route(1, "a", "z", None)])),
            1
        ),
        'P'
    );
    // The server kept id 1 for the left child.
    let after = catalog(
        2,
        vec![route(1, "a", "m", None), route(9, "m", "z", Some(1))],
    );
    let out = d.evaluate(t0 + Duration::from_secs(2), &w, &after);
    assert_eq!(outcome_char(&out, 1), 'C');
}

#[test]
fn routes_seen_in_the_first_catalog_start_without_cooldown() {
    let cfg = AutoSplitConfig {
        hysteresis_windows: 1,
        ..Default::default()
    };
    let mut d = Detector::new(cfg);
    let cat = catalog(5, vec![route(7, "a", "z", Some(3))]);
    let out = d.evaluate(
        Instant::now(),
        &window(vec![(7, spread(90e3, "b", "y", &[]))]),
        &cat,
    );
    assert_eq!(outcome_char(&out, 7), 'P');
}

#[test]
fn inactive_routes_are_declined_and_lose_candidacy() {
    let mut d = Detector::new(AutoSplitConfig::default());
    let t0 = Instant::now();
    let hot = window(vec![(1, spread(90e3, "b", "y", &[]))]);
    let active = catalog(1, vec![route(1, "a", "z", None)]);
    let mut fenced = active.clone();
    fenced.routes[0].active = false;
    let seq = [&active, &active, &fenced, &active, &active, &active];
    let got: String = seq
        .iter()
        .enumerate()
        .map(|(i, c)| outcome_char(&d.evaluate(t0 + Duration::from_secs(i as u64), &hot, c), 1))
        .collect();
    assert_eq!(got, "--N--P");
}

#[test]
fn hot_routes_without_evidence_are_declined() {
    let cfg = AutoSplitConfig {
        hysteresis_windows: 1,
        ..Default::default()
    };
    let mut d = Detector::new(cfg);
    let load = RouteLoad {
        score: 90e3,
        ..Default::default()
    };
    let out = d.evaluate(
        Instant::now(),
        &window(vec![(1, load)]),
        &catalog(1, vec![route(1, "a", "z", None)]),
    );
    assert_eq!(outcome_char(&out, 1), 'E');
}

#[test]
fn a_dominant_key_is_isolated_in_two_steps_despite_the_cooldown() {
    let cfg = AutoSplitConfig {
        hysteresis_windows: 1,
        ..Default::default()
    };
    let mut d = Detector::new(cfg);
    let t0 = Instant::now();
    let hot_m = |id| window(vec![(id, spread(90e3, "b", "y", &[("m", 9_000)]))]);
    let out = d.evaluate(t0, &hot_m(1), &catalog(1, vec![route(1, "a", "z", None)]));
    assert_eq!(out.proposals[0].split_key, b"m".to_vec());
    assert!(matches!(
        out.proposals[0].reason,
        SplitReason::IsolateHotKey {
            completes_isolation: false,
            ..
        }
    ));
    assert!(
        out.proposals[0].right_share >= 0.9,
        "{}",
        out.proposals[0].right_share
    );

    let children = catalog(
        2,
        vec![route(2, "a", "m", Some(1)), route(3, "m", "z", Some(1))],
    );
    let w = window(vec![
        (3, spread(90e3, "m", "y", &[("m", 9_000)])),
        (2, spread(90e3, "b", "l", &[])),
    ]);
    let out = d.evaluate(t0 + Duration::from_secs(2), &w, &children);
    assert_eq!(outcome_char(&out, 2), 'C', "the left child is in cooldown");
    assert_eq!(out.proposals.len(), 1);
    assert_eq!(out.proposals[0].route_id, 3);
    assert_eq!(out.proposals[0].split_key, b"m\0".to_vec());
    assert!(matches!(
        out.proposals[0].reason,
        SplitReason::IsolateHotKey {
            completes_isolation: true,
            ..
        }
    ));

    // After the second split, the single-key route [m, m\0) is in cooldown like any child.
    let isolated = catalog(
        3,
        vec![
            route(2, "a", "m", Some(1)),
            route(4, "m", "m\0", Some(3)),
            route(5, "m\0", "z", Some(3)),
        ],
    );
    let w = window(vec![(4, spread(90e3, "m", "m", &[("m", 9_000)]))]);
    assert_eq!(
        outcome_char(&d.evaluate(t0 + Duration::from_secs(4), &w, &isolated), 4),
        'C'
    );
}

#[test]
fn the_isolation_follow_up_lapses_when_the_key_cools_down() {
    let cfg = AutoSplitConfig {
        hysteresis_windows: 1,
        ..Default::default()
    };
    let mut d = Detector::new(cfg);
    let t0 = Instant::now();
    d.evaluate(
        t0,
        &window(vec![(1, spread(90e3, "b", "y", &[("m", 9_000)]))]),
        &catalog(1, vec![route(1, "a", "z", None)]),
    );
    let children = catalog(
        2,
        vec![route(2, "a", "m", Some(1)), route(3, "m", "z", Some(1))],
    );
    // Still hot, but the load moved off "m": no exempt follow-up, normal cooldown.
    let w = window(vec![(3, spread(90e3, "n", "y", &[]))]);
    assert_eq!(
        outcome_char(&d.evaluate(t0 + Duration::from_secs(2), &w, &children), 3),
        'C'
    );
}

#[test]
fn proposals_come_hottest_first() {
    let cfg = AutoSplitConfig {
        hysteresis_windows: 1,
        ..Default::default()
    };
    let mut d = Detector::new(cfg);
    let cat = catalog(
        1,
        vec![
            route(1, "a", "f", None),
            route(2, "f", "p", None),
            route(3, "p", "", None),
        ],
    );
    let w = window(vec![
        (1, spread(60e3, "b", "e", &[])),
        (2, spread(90e3, "g", "o", &[])),
        (3, spread(70e3, "q", "y", &[])),
    ]);
    let ids: Vec<u64> = d
        .evaluate(Instant::now(), &w, &cat)
        .proposals
        .iter()
        .map(|p| p.route_id)
        .collect();
    assert_eq!(ids, vec![2, 3, 1]);
}
