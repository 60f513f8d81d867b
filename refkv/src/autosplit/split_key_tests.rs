//! Table-driven tests of the split-key choice: hot-key isolation, sampled and interpolated
//! medians, declines, the span guard and the seeded midpoint bug.

use super::*;
use crate::autosplit::stats::{HotKey, SampledKey};

fn route(start: &[u8], end: &[u8]) -> RouteInfo {
    RouteInfo {
        route_id: 1,
        start: start.to_vec(),
        end: end.to_vec(),
        group_id: 1,
        active: true,
        parent_route_id: None,
    }
}

fn seg(lo: &str, hi: &str, count: u64) -> KeySegment {
    KeySegment {
        lo: lo.as_bytes().to_vec(),
        hi: hi.as_bytes().to_vec(),
        count,
    }
}

fn load(segments: Vec<KeySegment>, hot_keys: Vec<(&str, u64)>) -> RouteLoad {
    let total = segments.iter().map(|s| s.count).sum();
    RouteLoad {
        score: 100_000.0,
        load: total,
        segments,
        hot_keys: hot_keys
            .into_iter()
            .map(|(k, c)| HotKey {
                key: k.as_bytes().to_vec(),
                count: c,
                error: 0,
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn table_of_split_key_choices() {
    let cfg = AutoSplitConfig::default();
    struct Case {
        name: &'static str,
        route: RouteInfo,
        load: Option<RouteLoad>,
        expect: Result<(&'static [u8], &'static str), DeclineReason>,
    }
    let cases = vec![
        Case {
            name: "dominant key in the middle: split at the key, isolation continues",
            route: route(b"a", b"z"),
            load: Some(load(vec![seg("b", "y", 100)], vec![("m", 80), ("c", 5)])),
            expect: Ok((b"m", "isolate")),
        },
        Case {
            name: "dominant key at the route start: split at its successor",
            route: route(b"m", b"z"),
            load: Some(load(vec![seg("m", "y", 100)], vec![("m", 90)])),
            expect: Ok((b"m\0", "isolate")),
        },
        Case {
            name: "single-key route cannot be split",
            route: route(b"m", b"m\0"),
            load: Some(load(vec![seg("m", "m", 100)], vec![("m", 100)])),
            expect: Err(DeclineReason::SingleKeyRoute),
        },
        Case {
            name: "no dominant key: weighted median of the segments",
            route: route(b"", b""),
            load: Some(load(
                vec![
                    seg("k10", "k19", 25),
                    seg("k20", "k29", 25),
                    seg("k30", "k39", 50),
                ],
                vec![("k31", 10)],
            )),
            expect: Ok((b"k29", "median")),
        },
        Case {
            name: "no window at all",
            route: route(b"a", b"z"),
            load: None,
            expect: Err(DeclineReason::NoEvidence),
        },
        Case {
            name: "evidence outside the route is ignored",
            route: route(b"a", b"c"),
            load: Some(load(vec![seg("x", "y", 10)], vec![])),
            expect: Err(DeclineReason::NoEvidence),
        },
        Case {
            name: "median at the route start is not interior",
            route: route(b"k", b"z"),
            load: Some(load(vec![seg("k", "k", 60), seg("p", "q", 40)], vec![])),
            expect: Err(DeclineReason::NoInteriorKey),
        },
        Case {
            name: "load on one untracked key cannot be split by median",
            route: route(b"a", b"z"),
            load: Some(load(vec![seg("k", "k", 100)], vec![])),
            expect: Err(DeclineReason::LoadOnOneKey),
        },
    ];
    for case in cases {
        let got = choose_split_key(&case.route, case.load.as_ref(), &cfg);
        match (&case.expect, &got) {
            (Ok((key, kind)), Ok(choice)) => {
                assert_eq!(choice.split_key, key.to_vec(), "{}", case.name);
                let matches = match choice.reason {
                    SplitReason::IsolateHotKey { .. } => *kind == "isolate",
                    SplitReason::SubRangeMedian { .. } => *kind == "median",
                    SplitReason::ByteMidpointBug => *kind == "midpoint",
                };
                assert!(matches, "{}: {:?}", case.name, choice.reason);
            }
            (Err(want), Err(got)) => assert_eq!(want, got, "{}", case.name),
            _ => panic!("{}: expected {:?}, got {:?}", case.name, case.expect, got),
        }
    }
}

#[test]
fn isolation_at_the_last_key_needs_one_split() {
    let cfg = AutoSplitConfig::default();
    let r = route(b"a", b"m\0");
    let choice = choose_split_key(
        &r,
        Some(&load(vec![seg("b", "m", 10)], vec![("m", 9)])),
        &cfg,
    )
    .unwrap();
    assert_eq!(choice.split_key, b"m".to_vec());
    assert!(matches!(
        choice.reason,
        SplitReason::IsolateHotKey {
            completes_isolation: true,
            ..
        }
    ));
}

#[test]
fn a_hot_key_below_the_share_falls_back_to_the_median() {
    let cfg = AutoSplitConfig {
        hot_key_share: 0.9,
        ..Default::default()
    };
    let l = load(vec![seg("a", "c", 50), seg("m", "m", 50)], vec![("m", 50)]);
    let choice = choose_split_key(&route(b"", b""), Some(&l), &cfg).unwrap();
    assert!(matches!(choice.reason, SplitReason::SubRangeMedian { .. }));
    assert!(
        choice.split_key.as_slice() > b"a".as_slice()
            && choice.split_key.as_slice() <= b"m".as_slice()
    );
}

#[test]
fn the_median_balances_load_and_reports_the_right_share() {
    let cfg = AutoSplitConfig::default();
    let l = load(vec![seg("hot/000000", "hot/000999", 1_000)], vec![]);
    let choice = choose_split_key(&route(b"hot/", b"hot0"), Some(&l), &cfg).unwrap();
    assert!(
        (choice.right_share - 0.5).abs() < 0.01,
        "{}",
        choice.right_share
    );
    assert!(
        choice.split_key.starts_with(b"hot/0005") || choice.split_key.starts_with(b"hot/0004"),
        "{:?}",
        choice.split_key
    );
}

#[test]
fn min_child_span_declines_a_too_narrow_child() {
    let cfg = AutoSplitConfig {
        min_child_span: 0.25,
        ..Default::default()
    };
    let l = load(vec![seg("\x01", "\x02", 10)], vec![]);
    assert!(matches!(
        choose_split_key(&route(b"", b""), Some(&l), &cfg),
        Err(DeclineReason::SpanTooSmall { .. })
    ));
    let wide = load(
        vec![
            seg("\x40", "\x7f", 5),
            KeySegment {
                lo: vec![0x80],
                hi: vec![0xc0],
                count: 5,
            },
        ],
        vec![],
    );
    assert!(choose_split_key(&route(b"", b""), Some(&wide), &cfg).is_ok());
}

#[test]
fn the_midpoint_bug_ignores_the_evidence() {
    let cfg = AutoSplitConfig {
        split_midpoint_bug: true,
        ..Default::default()
    };
    let l = load(vec![seg("a", "b", 10)], vec![("a", 9)]);
    let choice = choose_split_key(&route(b"", b""), Some(&l), &cfg).unwrap();
    assert_eq!(choice.split_key, vec![0x80]);
    assert_eq!(choice.reason, SplitReason::ByteMidpointBug);
    assert_eq!(choice.right_share, 0.0);
    assert_eq!(
        choose_split_key(&route(b"k", b"k\0"), Some(&l), &cfg),
        Err(DeclineReason::SingleKeyRoute)
    );
}

fn sampled(keys: &[(&str, f64)]) -> RouteLoad {
    let samples: Vec<SampledKey> = keys
        .iter()
        .map(|(k, w)| SampledKey {
            key: k.as_bytes().to_vec(),
            weight: *w,
        })
        .collect();
    let total = samples.iter().map(|s| s.weight).sum::<f64>() as u64;
    let segments = vec![KeySegment {
        lo: keys[0].0.into(),
        hi: keys[keys.len() - 1].0.into(),
        count: total,
    }];
    RouteLoad {
        score: 100_000.0,
        load: total,
        segments,
        samples,
        ..Default::default()
    }
}

#[test]
fn the_median_is_a_sampled_key_that_halves_the_load() {
    let cfg = AutoSplitConfig::default();
    let keys: Vec<String> = (1..=100).map(|i| format!("hot/{i:04}")).collect();
    let l = sampled(&keys.iter().map(|k| (k.as_str(), 1.0)).collect::<Vec<_>>());
    let choice = choose_split_key(&route(b"", b""), Some(&l), &cfg).unwrap();
    assert_eq!(choice.split_key, b"hot/0051".to_vec());
    assert_eq!(
        choice.reason,
        SplitReason::SubRangeMedian {
            left_share: 0.5,
            sampled: true
        }
    );
}

#[test]
fn sample_weights_move_the_median() {
    let cfg = AutoSplitConfig::default();
    // Writes (weight 4) on a..d, reads (weight 1) on e..l: half of 24 is reached after c,
    // where an unweighted median would have split at g.
    let l = sampled(&[
        ("a", 4.0),
        ("b", 4.0),
        ("c", 4.0),
        ("d", 4.0),
        ("e", 1.0),
        ("f", 1.0),
        ("g", 1.0),
        ("h", 1.0),
        ("i", 1.0),
        ("j", 1.0),
        ("k", 1.0),
        ("l", 1.0),
    ]);
    let choice = choose_split_key(&route(b"", b""), Some(&l), &cfg).unwrap();
    assert_eq!(choice.split_key, b"d".to_vec());
    assert!((choice.right_share - 0.5).abs() < 1e-9);
}

#[test]
fn samples_of_one_key_cannot_be_halved() {
    let cfg = AutoSplitConfig {
        hot_key_share: 1.0,
        ..Default::default()
    };
    let l = sampled(&[("k", 1.0); 10]);
    assert_eq!(
        choose_split_key(&route(b"a", b"z"), Some(&l), &cfg),
        Err(DeclineReason::LoadOnOneKey)
    );
}

#[test]
fn few_samples_fall_back_to_the_segments() {
    let cfg = AutoSplitConfig::default();
    let l = sampled(&[("b", 1.0), ("x", 1.0)]);
    let choice = choose_split_key(&route(b"a", b"z"), Some(&l), &cfg).unwrap();
    assert!(matches!(
        choice.reason,
        SplitReason::SubRangeMedian { sampled: false, .. }
    ));
    assert!(
        choice.split_key.as_slice() > b"b".as_slice()
            && choice.split_key.as_slice() < b"x".as_slice()
    );
}

#[test]
fn samples_outside_the_route_are_ignored() {
    let cfg = AutoSplitConfig::default();
    let keys: Vec<String> = (0..20).map(|i| format!("z{i:02}")).collect();
    let mut l = sampled(&keys.iter().map(|k| (k.as_str(), 1.0)).collect::<Vec<_>>());
    l.segments = vec![KeySegment {
        lo: b"b".to_vec(),
        hi: b"d".to_vec(),
        count: 20,
    }];
    let choice = choose_split_key(&route(b"a", b"m"), Some(&l), &cfg).unwrap();
    assert!(matches!(
        choice.reason,
        SplitReason::SubRangeMedian { sampled: false, .. }
    ));
}
