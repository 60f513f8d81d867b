//! Split checker: no split, a good split that relieves its parent, a byte-midpoint split
//! of a hot-range workload, ping-pong, cold splits, hot-key isolation, forced splits.

mod epoch_support;

use analysis::checkers::split::{check, SplitOptions};
use analysis::verdict::{CheckerResult, Validity};
use epoch_support::*;
use serde_json::json;

/// `rate` puts per second from `from_s` to `to_s`, the n-th op (counted from 0 over the
/// whole history) writing `key(n)`.
fn load(
    h: &mut HistoryBuilder,
    from_s: u64,
    to_s: u64,
    rate: u64,
    n0: &mut u64,
    key: impl Fn(u64) -> String,
) {
    let step_ms = 1000 / rate;
    let mut t = from_s * 1000;
    while t < to_s * 1000 {
        h.at_ms(t);
        h.acked(*n0 % 8, "put", &key(*n0), json!(*n0), None);
        *n0 += 1;
        t += step_ms;
    }
}

fn seq(n: u64) -> String {
    format!("hot/{n:09}")
}

/// A scrambled but deterministic key in `hot/000000000 ..= hot/000000999`.
fn uniform(n: u64) -> String {
    format!("hot/{:09}", (n * 7919) % 1000)
}

fn opts() -> SplitOptions {
    SplitOptions {
        hot_prefix: Some("hot/".into()),
        cooldown_s: Some(30.0),
        ..SplitOptions::default()
    }
}

fn splits(r: &CheckerResult) -> &Vec<serde_json::Value> {
    r.details["splits"].as_array().expect("splits array")
}

#[test]
fn no_split_is_unknown_nothing_tested() {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut h, 0, 5, 50, &mut 0, seq);
    let r = check(&h.build(), &opts());
    assert_eq!(r.valid, Validity::Unknown);
    assert_eq!(
        r.reason.as_deref(),
        Some("no split happened — nothing was tested")
    );
    // The load table is still there for the report.
    assert_eq!(r.details["route_load"][0]["total_ops"], 250);
}

#[test]
fn no_watcher_is_unknown() {
    let mut h = HistoryBuilder::new();
    load(&mut h, 0, 2, 10, &mut 0, seq);
    assert_eq!(check(&h.build(), &opts()).valid, Validity::Unknown);
}

#[test]
fn p50_split_of_uniform_hot_range_is_valid_and_relieves_the_parent() {
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut h, 2, 15, 100, &mut n, uniform);
    h.at_ms(15_000).catalog(
        2,
        vec![
            child(2, "", "hot/000000500", 1, 1, 1),
            child(3, "hot/000000500", "", 2, 2, 1),
        ],
        vec![],
    );
    load(&mut h, 15, 30, 100, &mut n, uniform);
    let r = check(&h.build(), &opts());
    assert_eq!(r.valid, Validity::Valid, "{:?} {:?}", r.reason, r.anomalies);
    assert_eq!(r.counts["splits"], 1);
    assert_eq!(r.counts["judged-splits"], 1);
    assert_eq!(r.counts["relieved-splits"], 1);
    let s = &splits(&r)[0];
    let q = s["split_key_quantile"].as_f64().unwrap();
    assert!((0.4..0.6).contains(&q), "p50 split at quantile {q}");
    assert!((s["parent_ops_per_s_before"].as_f64().unwrap() - 100.0).abs() < 2.0);
    assert!(s["max_child_ops_per_s_after"].as_f64().unwrap() < 60.0);
    let latency = r.details["detection_latency_s"].as_f64().unwrap();
    assert!(
        (latency - 13.0).abs() < 0.1,
        "hot load started at 2 s, split seen at 15 s: {latency}"
    );
    assert!(s["cluster_after"]["top_share"].as_f64().unwrap() < 0.6);
    assert_eq!(r.counts["moves"], 0);
}

/// Sequential keys (`hot/000000123`, like timestamps) split at the byte midpoint of the
/// route versus at the p50 of recent keys.
fn sequential_split(split_key: &str) -> CheckerResult {
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut h, 0, 20, 100, &mut n, seq);
    h.at_ms(20_000).catalog(
        2,
        vec![
            child(2, "", split_key, 1, 1, 1),
            child(3, split_key, "", 1, 1, 1),
        ],
        vec![],
    );
    load(&mut h, 20, 30, 100, &mut n, seq);
    check(&h.build(), &opts())
}

#[test]
fn byte_midpoint_split_of_a_sequential_hot_range_is_unjustified() {
    // The midpoint of ["", unbounded) in bytes: far above every "hot/..." key.
    let r = sequential_split("\u{7f}");
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(anomaly_kinds(&r), ["unjustified-split"]);
    assert_eq!(r.counts["unjustified-splits"], 1);
    assert_eq!(splits(&r)[0]["split_key_quantile"], 1.0);
    // The midpoint between the hot prefix and the end of the keyspace is no better.
    assert_eq!(sequential_split("\u{3a}").valid, Validity::Invalid);
}

#[test]
fn p50_split_of_a_sequential_hot_range_is_justified() {
    // p50 of the last 10 s of sequential keys: op 1500 of ops 1000..2000.
    let r = sequential_split(&seq(1500));
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.anomalies);
    // Sequential inserts all land in the right child afterwards: justified, not relieving.
    assert_eq!(splits(&r)[0]["relieved"], false);
}

fn ping_pong_history(second_split_ms: u64) -> CheckerResult {
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut h, 0, 15, 100, &mut n, uniform);
    h.at_ms(15_000).catalog(
        2,
        vec![
            child(2, "", "hot/000000500", 1, 1, 1),
            child(3, "hot/000000500", "", 1, 1, 1),
        ],
        vec![],
    );
    load(&mut h, 15, second_split_ms / 1000, 100, &mut n, uniform);
    h.at_ms(second_split_ms).catalog(
        3,
        vec![
            child(2, "", "hot/000000500", 1, 1, 1),
            child(4, "hot/000000500", "hot/000000750", 1, 1, 3),
            child(5, "hot/000000750", "", 1, 1, 3),
        ],
        vec![],
    );
    load(
        &mut h,
        second_split_ms / 1000,
        second_split_ms / 1000 + 5,
        100,
        &mut n,
        uniform,
    );
    check(&h.build(), &opts())
}

#[test]
fn child_split_again_within_cooldown_is_ping_pong() {
    let r = ping_pong_history(25_000);
    assert_eq!(r.valid, Validity::Invalid);
    assert_eq!(anomaly_kinds(&r), ["ping-pong"]);
    assert_eq!(r.anomalies[0]["route"], 3);
    // After the cooldown the same second split is fine.
    let later = ping_pong_history(50_000);
    assert_eq!(later.valid, Validity::Valid, "{:?}", later.anomalies);
    assert_eq!(later.counts["splits"], 2);
}

#[test]
fn split_of_a_cold_route_is_flagged() {
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(
        1,
        vec![route(1, "", "c", 1, 1), route(2, "c", "", 1, 1)],
        vec![],
    );
    load(&mut h, 0, 15, 100, &mut n, uniform);
    h.at_ms(15_000).catalog(
        2,
        vec![
            child(3, "", "b", 1, 1, 1),
            child(4, "b", "c", 1, 1, 1),
            route(2, "c", "", 1, 1),
        ],
        vec![],
    );
    load(&mut h, 15, 20, 100, &mut n, uniform);
    let r = check(&h.build(), &opts());
    assert_eq!(anomaly_kinds(&r), ["cold-split"]);
    assert_eq!(r.anomalies[0]["route"], 1);
}

#[test]
fn hot_key_isolation_is_justified() {
    // 80 % of the load on one celebrity key, the rest below it; the split isolates the
    // celebrity key in its own left piece (split at its successor), so the right child
    // gets nothing of the window — justified by the hot key, not by balance.
    let key = |n: u64| {
        if matches!(n % 5, 0) {
            format!("hot/a{:03}", n % 97)
        } else {
            "hot/z".to_string()
        }
    };
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut h, 0, 15, 100, &mut n, key);
    h.at_ms(15_000).catalog(
        2,
        vec![
            child(2, "", "hot/z\u{0}", 1, 1, 1),
            child(3, "hot/z\u{0}", "", 2, 2, 1),
        ],
        vec![],
    );
    load(&mut h, 15, 20, 100, &mut n, key);
    let r = check(&h.build(), &opts());
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.anomalies);
    assert_eq!(splits(&r)[0]["top_key"], "hot/z");
    assert_eq!(r.counts["moves"], 0, "children are new routes, not moves");
}

#[test]
fn forced_splits_are_observed_but_not_judged() {
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    h.at_ms(1000).nemesis(
        "start-split",
        json!({"targets": [], "effective": true, "split_key": "q"}),
    );
    h.at_ms(1100).catalog(
        2,
        vec![child(2, "", "q", 1, 1, 1), child(3, "q", "", 1, 1, 1)],
        vec![],
    );
    h.at_ms(1200)
        .nemesis("stop-split", json!({"targets": [], "effective": true}));
    let r = check(&h.build(), &opts());
    assert_eq!(r.valid, Validity::Valid);
    assert_eq!((r.counts["forced-splits"], r.counts["auto-splits"]), (1, 0));
    // The same split without the nemesis asking for it is an auto-split; with no client op
    // around it, it is not judged (not cold: nobody was sending load), so unknown.
    let mut auto = HistoryBuilder::new();
    auto.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    auto.at_ms(1100).catalog(
        2,
        vec![child(2, "", "q", 1, 1, 1), child(3, "q", "", 1, 1, 1)],
        vec![],
    );
    let r = check(&auto.build(), &opts());
    assert_eq!(
        (
            r.counts["forced-splits"],
            r.counts["auto-splits"],
            r.counts["judged-splits"]
        ),
        (0, 1, 0)
    );
    assert_eq!(r.valid, Validity::Unknown, "{:?}", r.anomalies);
    // faultline's split nemesis records `key` and logs its start after the split returned.
    let mut late = HistoryBuilder::new();
    late.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    late.at_ms(1100).catalog(
        2,
        vec![child(2, "", "q", 1, 1, 1), child(3, "q", "", 1, 1, 1)],
        vec![],
    );
    late.at_ms(1104).nemesis(
        "start-split",
        json!({"targets": [], "effective": true, "key": "q", "route_id": 1}),
    );
    assert_eq!(check(&late.build(), &opts()).counts["forced-splits"], 1);
    // A refused nemesis split (no key) does not claim a nearby auto-split.
    let mut refused = HistoryBuilder::new();
    refused.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    refused.at_ms(1000).nemesis(
        "start-split",
        json!({"targets": [], "effective": false, "detail": "no hot key to split yet"}),
    );
    refused.at_ms(1100).catalog(
        2,
        vec![child(2, "", "q", 1, 1, 1), child(3, "q", "", 1, 1, 1)],
        vec![],
    );
    assert_eq!(check(&refused.build(), &opts()).counts["forced-splits"], 0);
    // A nemesis split at another key does not claim an auto-split.
    let mut other = HistoryBuilder::new();
    other.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    other.at_ms(1100).catalog(
        2,
        vec![child(2, "", "q", 1, 1, 1), child(3, "q", "", 1, 1, 1)],
        vec![],
    );
    other.at_ms(1104).nemesis(
        "start-split",
        json!({"targets": [], "effective": true, "key": "r"}),
    );
    assert_eq!(check(&other.build(), &opts()).counts["forced-splits"], 0);
}

#[test]
fn a_move_fault_claims_only_the_split_it_started_itself() {
    let split_then = |event: serde_json::Value| {
        let mut h = HistoryBuilder::new();
        h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
        h.at_ms(1100).catalog(
            2,
            vec![child(2, "", "q", 1, 1, 1), child(3, "q", "", 1, 1, 1)],
            vec![],
        );
        h.at_ms(1500).nemesis("start-move", event);
        check(&h.build(), &opts()).counts["forced-splits"]
    };
    // The move fault started the split (its event names the key): forced.
    assert_eq!(
        split_then(
            json!({"targets": ["n1"], "effective": true, "split_key": "q", "job_split_key": "q"})
        ),
        1
    );
    // It aimed at a job the store started itself (no `split_key`): the split stays the store's.
    assert_eq!(
        split_then(json!({"targets": ["n1"], "effective": true, "job_split_key": "q"})),
        0
    );
}

#[test]
fn route_load_series_counts_ops_per_second_through_the_catalog_in_force() {
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut h, 0, 3, 10, &mut n, uniform);
    h.at_ms(3_000).catalog(
        2,
        vec![
            child(2, "", "hot/000000500", 1, 1, 1),
            child(3, "hot/000000500", "", 1, 1, 1),
        ],
        vec![],
    );
    load(&mut h, 3, 5, 10, &mut n, |_| "hot/000000900".into());
    let r = check(&h.build(), &opts());
    let series = r.details["route_load"].as_array().unwrap();
    let by_id = |id: u64| series.iter().find(|s| s["id"] == id).unwrap().clone();
    assert_eq!(by_id(1)["ops_per_s"], json!([10, 10, 10]));
    assert_eq!(by_id(3)["ops_per_s"], json!([10, 10]));
    assert_eq!(by_id(3)["first_bucket_s"], 3);
    assert!(series.iter().all(|s| s["id"] != 2), "route 2 got no load");
}

#[test]
fn refkv_style_two_step_hot_key_isolation_is_neither_ping_pong_nor_unjustified() {
    // 80 % on "hot/m", the rest spread on both sides. Step 1 splits at the key, step 2
    // a second later splits the right child at key + NUL, leaving "hot/m" alone.
    let key = |n: u64| match n % 10 {
        0 => format!("hot/a{:03}", n % 89),
        1 => format!("hot/z{:03}", n % 83),
        _ => "hot/m".to_string(),
    };
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut h, 0, 15, 100, &mut n, key);
    h.at_ms(15_000).catalog(
        2,
        vec![
            child(2, "", "hot/m", 1, 1, 1),
            child(3, "hot/m", "", 1, 1, 1),
        ],
        vec![],
    );
    load(&mut h, 15, 16, 100, &mut n, key);
    h.at_ms(16_000).catalog(
        3,
        vec![
            child(2, "", "hot/m", 1, 1, 1),
            child(4, "hot/m", "hot/m\u{0}", 1, 1, 3),
            child(5, "hot/m\u{0}", "", 2, 2, 3),
        ],
        vec![],
    );
    load(&mut h, 16, 25, 100, &mut n, key);
    let r = check(&h.build(), &opts());
    assert_eq!(r.valid, Validity::Valid, "{:?}", r.anomalies);
    assert_eq!(r.counts["judged-splits"], 2);
    // The same second split at an arbitrary key inside the fresh child is ping-pong.
    let mut pp = HistoryBuilder::new();
    let mut n = 0;
    pp.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut pp, 0, 15, 100, &mut n, key);
    pp.at_ms(15_000).catalog(
        2,
        vec![
            child(2, "", "hot/m", 1, 1, 1),
            child(3, "hot/m", "", 1, 1, 1),
        ],
        vec![],
    );
    load(&mut pp, 15, 16, 100, &mut n, key);
    pp.at_ms(16_000).catalog(
        3,
        vec![
            child(2, "", "hot/m", 1, 1, 1),
            child(4, "hot/m", "hot/n", 1, 1, 3),
            child(5, "hot/n", "", 2, 2, 3),
        ],
        vec![],
    );
    assert!(anomaly_kinds(&check(&pp.build(), &opts())).contains(&"ping-pong".to_string()));
}

#[test]
fn byte_midpoint_split_of_a_sequential_child_route_is_unjustified() {
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut h, 0, 20, 100, &mut n, seq);
    h.at_ms(20_000).catalog(
        2,
        vec![
            child(2, "", &seq(1500), 1, 1, 1),
            child(3, &seq(1500), "", 1, 1, 1),
        ],
        vec![],
    );
    load(&mut h, 20, 40, 100, &mut n, seq);
    // refkv's byte midpoint of ["hot/000001500", unbounded) lies far above every hot key.
    h.at_ms(40_000).catalog(
        3,
        vec![
            child(2, "", &seq(1500), 1, 1, 1),
            child(4, &seq(1500), "\u{b4}", 1, 1, 3),
            child(5, "\u{b4}", "", 2, 2, 3),
        ],
        vec![],
    );
    load(&mut h, 40, 45, 100, &mut n, seq);
    let r = check(
        &h.build(),
        &SplitOptions {
            hot_prefix: Some("hot/".into()),
            ..SplitOptions::default()
        },
    );
    assert_eq!(anomaly_kinds(&r), ["unjustified-split"]);
    assert_eq!(r.anomalies[0]["route"], 3);
    assert_eq!(
        r.counts["judged-splits"], 2,
        "the first (p50) split was judged and passed"
    );
}

#[test]
fn an_unjustified_split_is_explained_in_words_not_rust_debug_values() {
    let r = sequential_split("\u{7f}");
    let explanation = r.anomalies[0]["explanation"].as_str().unwrap();
    assert!(
        !explanation.contains("Some(")
            && !explanation.contains("None")
            && !explanation.contains("[\""),
        "{explanation}"
    );
    assert!(
        explanation.contains("split at \"\u{7f}\","),
        "{explanation}"
    );
    assert!(explanation.contains("hottest key \"hot/"), "{explanation}");
}

/// An auto-split of the one route at `split_ms`, with `rate` puts per second from `from_s`
/// to `to_s` (none when `rate` is 0).
fn lone_split(split_ms: u64, from_s: u64, to_s: u64, rate: u64) -> CheckerResult {
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    if split_ms / 1000 <= from_s {
        h.at_ms(split_ms).catalog(
            2,
            vec![
                child(2, "", "hot/000000500", 1, 1, 1),
                child(3, "hot/000000500", "", 1, 1, 1),
            ],
            vec![],
        );
        load(&mut h, from_s, to_s, rate, &mut n, uniform);
    } else {
        load(&mut h, from_s, to_s, rate, &mut n, uniform);
        h.at_ms(split_ms).catalog(
            2,
            vec![
                child(2, "", "hot/000000500", 1, 1, 1),
                child(3, "hot/000000500", "", 1, 1, 1),
            ],
            vec![],
        );
    }
    check(&h.build(), &opts())
}

#[test]
fn a_split_before_any_client_operation_is_not_judged_cold() {
    let r = lone_split(1_000, 2, 10, 100);
    assert_eq!(
        r.valid,
        Validity::Unknown,
        "{:?} {:?}",
        r.reason,
        r.anomalies
    );
    assert_eq!(r.counts["cold-splits"], 0);
    assert_eq!(r.counts["judged-splits"], 0);
    assert_eq!(splits(&r)[0]["judged"], false);
}

#[test]
fn a_split_after_the_clients_stopped_is_not_judged_cold() {
    // Load until 10 s, the split seen at 30 s: nothing covers the 5 s before it.
    let r = lone_split(30_000, 0, 10, 1);
    assert_eq!(
        r.valid,
        Validity::Unknown,
        "{:?} {:?}",
        r.reason,
        r.anomalies
    );
    assert_eq!(r.counts["cold-splits"], 0);
}

#[test]
fn a_split_whose_cold_window_the_clients_cover_is_judged_cold() {
    // A put every two seconds from 0 s to 28 s, the split seen at 20.5 s: clients cover its
    // cold window, which carried 3 puts in 5 s, below the 1 op/s floor.
    let mut h = HistoryBuilder::new();
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    for (n, s) in (0..30).step_by(2).enumerate() {
        h.at_ms(s * 1000);
        h.acked(0, "put", &uniform(n as u64), json!(n), None);
        if s == 20 {
            h.at_ms(20_500).catalog(
                2,
                vec![
                    child(2, "", "hot/000000500", 1, 1, 1),
                    child(3, "hot/000000500", "", 1, 1, 1),
                ],
                vec![],
            );
        }
    }
    let r = check(&h.build(), &opts());
    assert_eq!(anomaly_kinds(&r), ["cold-split"], "{:?}", r.reason);
}

/// `rate` list-append transactions per second from `from_s` to `to_s`, each appending to
/// two sequential keys (`key(n)` and `key(n + 1)`) and reading the first.
fn txn_load(
    h: &mut HistoryBuilder,
    from_s: u64,
    to_s: u64,
    rate: u64,
    n0: &mut u64,
    key: impl Fn(u64) -> String,
) {
    let step_ms = 1000 / rate;
    let mut t = from_s * 1000;
    while t < to_s * 1000 {
        h.at_ms(t);
        let (a, b) = (key(*n0), key(*n0 + 1));
        let process = *n0 % 8;
        h.invoke_txn(
            process,
            json!([["append", a, *n0], ["append", b, *n0], ["r", a, null]]),
        );
        h.complete_txn(
            analysis::history::OpType::Ok,
            process,
            json!([["append", a, *n0], ["append", b, *n0], ["r", a, [*n0]]]),
        );
        *n0 += 1;
        t += step_ms;
    }
}

#[test]
fn a_split_of_a_range_loaded_by_transactions_is_not_cold_and_its_point_is_not_judged_from_them() {
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    txn_load(&mut h, 0, 20, 50, &mut n, seq);
    // The byte midpoint, which a single-key hot range would call unjustified (above).
    h.at_ms(20_000).catalog(
        2,
        vec![
            child(2, "", "\u{7f}", 1, 1, 1),
            child(3, "\u{7f}", "", 1, 1, 1),
        ],
        vec![],
    );
    txn_load(&mut h, 20, 30, 50, &mut n, seq);
    let r = check(&h.build(), &opts());
    assert_eq!(r.valid, Validity::Valid, "{:?} {:?}", r.reason, r.anomalies);
    assert_eq!(
        (
            r.counts["cold-splits"],
            r.counts["judged-splits"],
            r.counts["unjustified-splits"]
        ),
        (0, 1, 0)
    );
    let s = &splits(&r)[0];
    assert!(
        s["parent_ops_per_s_before"].as_f64().unwrap() > 100.0,
        "three micro-ops a transaction, 50 a second: {s}"
    );
    assert!(s["evidence_txn_ops"].as_u64().unwrap() > 0);
}

/// Sequential keys for 120 s on one long-lived route (longer than the 60 s evidence
/// window), then a split at `split_key(n)`, `n` being the number of keys written so far.
fn long_lived_sequential_split(split_key: impl Fn(u64) -> String) -> CheckerResult {
    let mut h = HistoryBuilder::new();
    let mut n = 0;
    h.catalog(1, vec![route(1, "", "", 1, 1)], vec![]);
    load(&mut h, 0, 120, 100, &mut n, seq);
    let split_key = split_key(n);
    h.at_ms(120_000).catalog(
        2,
        vec![
            child(2, "", &split_key, 1, 1, 1),
            child(3, &split_key, "", 1, 1, 1),
        ],
        vec![],
    );
    load(&mut h, 120, 130, 100, &mut n, seq);
    check(&h.build(), &opts())
}

#[test]
fn p50_of_recent_windows_on_a_long_lived_sequential_route_is_justified() {
    // Split at the p50 of the last 2 s (100 ops/s), as a detector with short sampling
    // windows does. Over the 60 s of evidence the right child holds 1 s of 60 (1.7 %,
    // under the 2 % share), over the last 2 s each child holds half: the load justifies
    // the split.
    let r = long_lived_sequential_split(|n| seq(n - 100));
    assert_eq!(r.valid, Validity::Valid, "{:?} {:?}", r.reason, r.anomalies);
    assert_eq!(r.counts["judged-splits"], 1);
    let s = &splits(&r)[0];
    assert!(s["split_key_quantile"].as_f64().unwrap() > 0.98, "{s}");
    let recent = s["recent_min_child_share"].as_f64().unwrap();
    assert!((0.45..=0.5).contains(&recent), "{s}");
}

#[test]
fn a_split_above_every_key_of_a_long_lived_route_stays_unjustified() {
    let r = long_lived_sequential_split(|_| "hot/\u{7f}".to_string());
    assert_eq!(anomaly_kinds(&r), ["unjustified-split"]);
    let explanation = r.anomalies[0]["explanation"].as_str().unwrap();
    assert!(
        explanation.contains("at most 0.0 % in any recent part"),
        "{explanation}"
    );
}
